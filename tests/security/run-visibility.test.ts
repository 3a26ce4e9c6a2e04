/**
 * Who sees a run's exact figures (instance counts, scores, aggregates, token usage) before anything is
 * released: for an approval-required or private run, its requester and compliance officers only.
 * Admins and auditors see the run's metadata (ids, status, benchmark, tier, timestamps), with the
 * figures null and the rule that withheld them named, through the daemon's API and the operations
 * the CLI calls alike. Public runs are shown in full to everyone who may see them.
 */
import { scoresFromRuns } from '../../src/export';
import { type Caller, Operations, type RunView } from '../../src/operations';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

let t: TestDaemon;
let privateRun: string;
let publicRun: string;

async function waitForRun(runId: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    if (['completed', 'failed', 'halted', 'cancelled'].includes(r.json.status)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('run did not finish');
}

function callerOf(id: string): Caller {
  const principal = t.app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

const FIGURES = ['instanceCount', 'counts', 'mainScore', 'aggregates', 'promptTokens', 'completionTokens', 'estimatedCostUsd'] as const;

function expectWithheld(view: Partial<RunView> & Record<string, unknown>, runId: string): void {
  // Metadata stays: an admin can operate the run, an auditor can follow it.
  expect(view).toMatchObject({ runId, status: 'completed', benchmarkId: 'site_private', tier: 'private', requestedBy: 'alice', approvedBy: 'dave' });
  expect(typeof view.createdAt).toBe('string');
  expect(typeof view.finishedAt).toBe('string');
  for (const f of FIGURES) expect([f, view[f] ?? null]).toEqual([f, null]);
  expect(view.withheld).toBe('visibility.run-figures.withheld');
}

function expectShown(view: Partial<RunView> & Record<string, unknown>): void {
  expect(view.counts).toMatchObject({ done: 12 });
  expect(view.instanceCount).toBe(12);
  expect(typeof view.mainScore).toBe('number');
  expect(view.aggregates?.length).toBeGreaterThan(0);
  expect(view.withheld ?? null).toBeNull();
}

beforeAll(async () => {
  t = await startTestDaemon({ workers: 1, rows: 12 });
  const approval = await t.call('carol', 'POST', '/v1/approvals', {
    protocolNumber: 'IRB-VIS-1',
    principalInvestigator: 'alice',
    personnel: ['alice'],
    benchmarks: ['site_private'],
    purpose: 'visibility test',
  });
  expect(approval.status).toBe(200);
  const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId: approval.json.approvalId });
  privateRun = requested.json.runId;
  expect((await t.call('dave', 'POST', `/v1/runs/${privateRun}/approve`, {})).status).toBe(200);
  await waitForRun(privateRun);
  const pub = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 12 });
  publicRun = pub.json.runId;
  await waitForRun(publicRun);
});
afterAll(() => t.close());

describe("another researcher's private run, before any release", () => {
  it.each(['erin', 'ivan'])('%s (auditor / admin) gets its metadata and no exact n or scores through the API', async (who) => {
    const shown = await t.call(who, 'GET', `/v1/runs/${privateRun}`);
    expect(shown.status).toBe(200);
    expectWithheld(shown.json, privateRun);
    const listed = (await t.call(who, 'GET', '/v1/runs')).json as RunView[];
    const entry = listed.find((r) => r.runId === privateRun) as RunView & Record<string, unknown>;
    expectWithheld(entry, privateRun);
  });

  it.each(['erin', 'ivan'])('%s gets the same through the operations the CLI calls', async (who) => {
    const ops = new Operations(t.app);
    expectWithheld((await ops.showRun(callerOf(who), privateRun)) as RunView & Record<string, unknown>, privateRun);
    const entry = (await ops.listRuns(callerOf(who))).find((r) => r.runId === privateRun) as RunView & Record<string, unknown>;
    expectWithheld(entry, privateRun);
  });

  it.each(['alice', 'carol', 'dave'])('%s (the requester / compliance) sees the exact figures', async (who) => {
    expectShown((await t.call(who, 'GET', `/v1/runs/${privateRun}`)).json);
    expectShown((await new Operations(t.app).showRun(callerOf(who), privateRun)) as RunView & Record<string, unknown>);
  });

  it('refuses a leaderboard of the run to them, naming the rule, rather than showing an empty cell', async () => {
    const ops = new Operations(t.app);
    const refused = (async () => scoresFromRuns([await ops.showRun(callerOf('erin'), privateRun)]))();
    await expect(refused).rejects.toMatchObject({ rule: 'visibility.run-figures.withheld' });
    expect(scoresFromRuns([await ops.showRun(callerOf('carol'), privateRun)]).scores['vpc-private']?.site_private).toEqual(expect.any(Number));
  });

  it('shows a public run in full to admins and auditors', async () => {
    for (const who of ['erin', 'ivan']) expectShown((await t.call(who, 'GET', `/v1/runs/${publicRun}`)).json);
  });

  it('withholds the figures from an admin who halts the run, too', async () => {
    const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private' });
    expect(requested.json.status).toBe('requested');
    const halted = await t.call('ivan', 'POST', `/v1/runs/${requested.json.runId}/cancel`, { reason: 'maintenance' });
    expect(halted.status).toBe(200);
    expect(halted.json).toMatchObject({ runId: requested.json.runId, counts: null, aggregates: null, withheld: 'visibility.run-figures.withheld' });
  });
});
