/**
 * Revocation reaches work already queued (issue 27, class 5). After a compliance officer revoked a
 * principal through the API, the API refused that principal at once, but a worker still ran the run
 * it had requested before: every note went out. Now the access stage checks revocations as the API
 * does, per instance (a run requested before a blanket revocation of its requester stops), the
 * revocation halts the requester's runs, and its audit record names them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from '../../src/app';
import { Revocations } from '../../src/identity';
import { type Caller, Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

describe.each(backends())('revoked and suspended requesters, on %s', (backend) => {
  let t: TestDaemon;
  let ops: Operations;
  let approvalId: string;
  beforeEach(async () => {
    t = await startTestDaemon({ backend, workers: 0, rows: 6 });
    ops = new Operations(t.app);
    approvalId = (
      await ops.createApproval(callerOf(t.app, 'carol'), {
        protocolNumber: 'IRB-REVOKE-1',
        principalInvestigator: 'alice',
        personnel: ['alice', 'bob'],
        benchmarks: ['site_gated'],
        purpose: 'revocation test',
      })
    ).approvalId;
  });
  afterEach(() => t.close());

  const request = async (who = 'alice') => (await ops.requestRun(callerOf(t.app, who), { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId })).runId;

  it('a revocation through the API halts the runs the principal requested, and its audit record names them', async () => {
    const first = await request();
    const second = await request();
    const bobs = await request('bob');
    const revoked = await t.call('carol', 'POST', '/v1/principals/alice/revoke', { reason: 'lost laptop' });
    expect(revoked.status).toBe(200);
    expect(revoked.json).toEqual({ principal: 'alice', revoked: 1, stoppedRuns: [first, second] });
    for (const runId of [first, second]) expect(await t.app.engine.store.getRun(runId)).toMatchObject({ status: 'halted' });
    expect(await t.app.engine.store.getRun(bobs)).toMatchObject({ status: 'approved' });
    const [event] = await t.app.db.query<{ detail: Record<string, unknown> }>("SELECT detail FROM audit_events WHERE event_type = 'pki.revoke' ORDER BY seq DESC LIMIT 1");
    expect(event?.detail).toMatchObject({ principal: 'alice', stoppedRunCount: 2 });
    expect(String(event?.detail.stoppedRuns).split('+')).toEqual([first, second]);
    const halts = await t.app.db.query<{ run_id: string; rule: string }>("SELECT run_id, rule FROM audit_events WHERE event_type = 'run.halt' ORDER BY seq");
    expect(halts.map((h) => h.run_id).sort()).toEqual([first, second].sort());
    // None of their instances reached the endpoint; bob's run is untouched.
    expect(t.server.requestCount()).toBe(0);
    // A worker handed the halted run does not run it.
    await executeRun(t.app.engine, first).catch(() => undefined);
    expect(await t.app.engine.store.getRun(first)).toMatchObject({ status: 'halted' });
    expect(t.server.requestCount()).toBe(0);
    expect((await executeRun(t.app.engine, bobs)).status).toBe('completed');
  });

  it('a worker that never saw the halt is refused at the instance: the access stage checks revocations as the API does', async () => {
    const runId = await request();
    // The revocation as another process records it (pki revoke on the host, another daemon): this
    // process's runs are not halted by it, only the access stage can stop them.
    const issuer = (t.app.principals().get('alice')?.certificates ?? [])[0]?.issuerFingerprint as string;
    await new Revocations(t.app.db).revokeAll(issuer, 'alice', 'lost laptop', 'carol', t.app.config.audit.witnessDirs);
    const err = await executeRun(t.app.engine, runId).catch((e: unknown) => e);
    expect(err).toMatchObject({ rule: 'principal.revoked' });
    expect(t.server.requestCount()).toBe(0);
    expect(await t.app.engine.store.getRun(runId)).toMatchObject({ status: 'halted', error_code: 'principal.revoked' });
  });

  it('a run requested after the revocation, with a certificate issued after it, runs', async () => {
    const before = await request();
    await t.call('carol', 'POST', '/v1/principals/alice/revoke', { reason: 'lost laptop' });
    const fresh = await t.issue('alice');
    const after = await t.call(fresh, 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId });
    expect(after.status).toBe(200);
    expect((await executeRun(t.app.engine, after.json.runId)).status).toBe('completed');
    expect(await t.app.engine.store.getRun(before)).toMatchObject({ status: 'halted' });
  });

  it('a suspended (disabled) requester: the run stops at its next instance', async () => {
    const runId = await request();
    const file = join(t.home.home, 'access-policies', 'principals.json');
    const principals = JSON.parse(readFileSync(file, 'utf8')) as { principals: { id: string; status: string }[] };
    (principals.principals.find((p) => p.id === 'alice') as { status: string }).status = 'disabled';
    writeFileSync(file, JSON.stringify(principals, null, 2));
    await t.app.refreshPrincipals();
    const err = await executeRun(t.app.engine, runId).catch((e: unknown) => e);
    expect(err).toMatchObject({ rule: 'principal.unknown-or-disabled' });
    expect(t.server.requestCount()).toBe(0);
  });
});
