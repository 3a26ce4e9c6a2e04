/**
 * An approval suspended or expiring while a run is in progress stops the run at its next instance:
 * the daemon's worker checks access before every instance. Over the real daemon (mutual TLS).
 */
import { deidentifiedPrompt } from '../../src/calls';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { executeRun } from '../../src/runs/engine';
import type { DeidStage } from '../../src/contracts';
import { PIPELINE_DEPTH } from '../../src/runs/worker';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(120_000);

// De-identification is not what these tests are about: prompts of the synthetic site benchmark pass
// through unchanged so that instances reach the model server and the stop is observable.
const passThrough: DeidStage = { version: 'test-pass-through', apply: (_c, _i, prompt) => ({ ok: true, prompt: deidentifiedPrompt(prompt), spans: 0 }) };

async function waitFor<T>(fn: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('approvals changing during a run', () => {
  let t: TestDaemon;
  let suspendedAt: number | undefined;
  afterEach(() => t.close());

  it('stops the run at its next instance when compliance suspends the approval', async () => {
    let approvalId = '';
    t = await startTestDaemon({
      rows: 80,
      latencyMs: 40,
      workers: 1,
      concurrency: 2,
      behaviour: (n) => {
        if (n === 10 && approvalId) {
          void t.call('carol', 'POST', `/v1/approvals/${approvalId}/suspend`, { reason: 'adverse event review' }).then(() => {
            suspendedAt = t.server.requestCount();
          });
        }
        return { kind: 'answer' };
      },
    });
    t.app.engine.deid = passThrough;
    const created = await t.call('carol', 'POST', '/v1/approvals', { protocolNumber: 'IRB-9', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['site_gated'], purpose: 'p' });
    approvalId = created.json.approvalId;
    const run = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated' });
    expect(run.json.status).toBe('approved');
    const ended = await waitFor(async () => {
      const r = await t.call('alice', 'GET', `/v1/runs/${run.json.runId}`);
      return ['halted', 'failed', 'completed'].includes(r.json.status) ? r.json : undefined;
    });
    expect(ended.status).toBe('halted');
    expect(ended.errorCode).toBe('approval.suspended');
    const received = t.server.requestCount();
    expect(received).toBeLessThan(80);
    // Access is checked as each instance starts. What went out after the suspension landed is at most
    // the instances already past that check: one per instance loop (concurrency x pipeline depth),
    // the calls in flight and those waiting for a call slot.
    expect(received - (suspendedAt as number)).toBeLessThanOrEqual(2 * PIPELINE_DEPTH);
    // The halt's audit event is written by the worker that stopped the run, right after the status: wait for it.
    const fail = await waitFor(async () => {
      const [row] = await t.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE event_type = 'run.fail' AND rule = 'approval.suspended' AND run_id = $1", [run.json.runId]);
      return row && row.n > 0 ? row : undefined;
    });
    expect(fail.n).toBe(1);
  });

  it('stops the run when the approval expires', async () => {
    // The access stage's clock passes the expiry once the model has answered five calls: the run is
    // then under way whatever the machine's load (a wall-clock expiry raced the run's planning).
    let answered = 0;
    t = await startTestDaemon({
      rows: 200,
      latencyMs: 40,
      workers: 0,
      concurrency: 1,
      behaviour: () => {
        answered++;
        return { kind: 'answer', text: 'A' };
      },
    });
    t.app.engine.deid = passThrough;
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    Object.assign(t.app.engine.access, { clock: () => (answered >= 5 ? new Date(Date.parse(expiresAt) + 1000) : new Date()) });
    const created = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-10',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_gated'],
      purpose: 'p',
      expiresAt,
    });
    expect(created.json.expiresAt).toBe(expiresAt);
    const run = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated' });
    await expect(executeRun(t.app.engine, run.json.runId)).rejects.toThrow(/denied by rule approval\.expired/);
    const after = await t.call('alice', 'GET', `/v1/runs/${run.json.runId}`);
    expect(after.json).toMatchObject({ status: 'halted', errorCode: 'approval.expired' });
    expect(after.json.counts.done).toBeGreaterThan(0);
    expect(after.json.counts.done).toBeLessThan(200);
  });
});

describe('the CLI against the daemon', () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ workers: 1, rows: 4 });
  });
  afterAll(() => t.close());

  function io(): Io & { out: () => string; err: () => string } {
    let out = '';
    let err = '';
    return { stdout: (s) => void (out += s), stderr: (s) => void (err += s), env: { PATH: process.env.PATH }, out: () => out, err: () => err };
  }
  const as = (who: string) => ['--server', `https://localhost:${t.daemon.port}`, '--cert', t.ids[who]!.certFile, '--key', t.ids[who]!.keyFile, '--ca', t.caFile];

  it('identifies the user by certificate', async () => {
    const c = io();
    expect(await main(['whoami', ...as('carol')], c)).toBe(0);
    expect(c.out()).toBe('carol: compliance via mtls\n');
  });

  it('requests, watches and shows a run; refuses what the role may not do in one line', async () => {
    const req = io();
    expect(await main(['runs', 'request', '--benchmark', 'medec', '--endpoint', 'demo-loopback', '--max-instances', '5', '--json', ...as('alice')], req)).toBe(0);
    const runId = JSON.parse(req.out()).runId as string;
    const watched = io();
    expect(await main(['runs', 'watch', runId, '--interval', '0.2', '--json', ...as('alice')], watched)).toBe(0);
    expect(JSON.parse(watched.out())).toMatchObject({ runId, status: 'completed', counts: { done: 5 } });

    const denied = io();
    process.exitCode = undefined;
    expect(await main(['runs', 'request', '--benchmark', 'medec', '--endpoint', 'demo-loopback', ...as('erin')], denied)).toBe(3);
    expect(denied.err()).toBe('ehrbench: denied by rule rbac.researcher-required: requesting a run needs the researcher role; erin holds auditor\n');

    const approvals = io();
    expect(await main(['approvals', 'add', '--protocol', 'IRB-CLI', '--pi', 'bob', '--personnel', 'bob', '--tiers', 'approval-required', '--purpose', 'p', '--json', ...as('dave')], approvals)).toBe(
      0,
    );
    expect(JSON.parse(approvals.out())).toMatchObject({ protocolNumber: 'IRB-CLI', status: 'active', createdBy: 'dave' });
  });
});
