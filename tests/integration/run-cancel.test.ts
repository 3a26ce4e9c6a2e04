/**
 * A cancel stops the calls (issue 17, item 3): once `run.cancel` is in the audit trail, no new call
 * of the run starts; the calls already in flight finish, and the cancel says how many there were.
 * Cancelled through the daemon that executes the run, with `ehrbench runs cancel --server` (the real
 * binary), so the count is the daemon's.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { cancelRun } from '../../src/runs';
import { MAX_AGE_MS, RunWatch } from '../../src/runs/watch';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { backends } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Requests a run of `instances` as alice and waits until `done` instances are finished. */
async function runningRun(t: TestDaemon, done: number, instances = 200): Promise<string> {
  const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, maxInstances: instances, sample: 'first' });
  expect(requested.status).toBe(200);
  const runId = requested.json.runId as string;
  for (let i = 0; i < 600; i++) {
    const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    if ((r.json.counts?.done ?? 0) >= done) break;
    await sleep(20);
  }
  return runId;
}

/** Waits until the run's worker has given its leases back (its loops have stopped). */
async function drained(t: TestDaemon, runId: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const held = await t.app.db.query("SELECT 1 FROM run_items WHERE run_id = $1 AND state = 'claimed'", [runId]);
    if (held.length === 0) break;
    await sleep(50);
  }
  await sleep(300);
}

describe.each(backends())('cancelling a run the daemon executes (%s)', (backend) => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 1, concurrency: 4, latencyMs: 40 });
  });
  afterAll(() => t?.close());

  it('starts no call after run.cancel is recorded, and says how many calls in flight will finish', async () => {
    // Long enough to outlast the CLI's start on a loaded machine (200 instances are 2 s of calls). The
    // calls in flight are counted as the run stops: counted after the cancel's record and transition,
    // a loaded machine found the run already drained and the answer had no number (CI, twice).
    const runId = await runningRun(t, 20, 1000);
    const alice = t.ids.alice;
    if (!alice) throw new Error('no alice');
    const cancelled = await cli(
      ['runs', 'cancel', runId, '--reason', 'test', '--server', `https://localhost:${t.daemon.port}`, '--cert', alice.certFile, '--key', alice.keyFile, '--ca', t.caFile],
      t.home.env,
    );
    const receivedAtCancel = t.server.received.length;
    expect(cancelled.stderr).toBe('');
    expect(cancelled.code).toBe(0);
    // A loaded machine can catch the worker between two rounds of calls: then none was in flight.
    const said = /^run ([0-9a-f-]{36}) (?:cancelling; (\d+) calls? in flight will finish|cancelled; no call was in flight)\n$/.exec(cancelled.stdout);
    expect({ stdout: cancelled.stdout, matched: said !== null }).toEqual({ stdout: cancelled.stdout, matched: true });
    const inFlight = Number(said?.[2] ?? 0);
    // At most the worker's share of the endpoint's capacity (concurrency 4) is ever in flight.
    expect(inFlight).toBeLessThanOrEqual(4);

    await drained(t, runId);

    const events = await t.app.db.query<{ seq: string; event_type: string; outcome: string; detail: Record<string, unknown> | null }>(
      "SELECT seq, event_type, outcome, detail FROM audit_events WHERE run_id = $1 AND event_type IN ('run.cancel', 'endpoint.call') ORDER BY seq",
      [runId],
    );
    const cancel = events.find((e) => e.event_type === 'run.cancel' && e.outcome === 'success');
    expect(cancel).toBeDefined();
    const callsBefore = events.filter((e) => e.event_type === 'endpoint.call' && Number(e.seq) < Number(cancel?.seq));
    const callsAfter = events.filter((e) => e.event_type === 'endpoint.call' && Number(e.seq) > Number(cancel?.seq));
    expect(callsBefore.length).toBeGreaterThanOrEqual(20);
    // No attempt (first or retry) of the run is recorded, and so none is made, after the cancel.
    expect(callsAfter.map((e) => e.detail)).toEqual([]);
    // What reached the model after the cancel answered were calls already in flight.
    expect(t.server.received.length - receivedAtCancel).toBeLessThanOrEqual(inFlight);
    const run = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    expect(run.json.status).toBe('cancelled');
    expect(run.json.counts.done).toBeLessThan(1000);
  });
});

const postgresOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;

postgresOnly('cancelling a run another process executes', () => {
  let t: TestDaemon;
  beforeAll(async () => {
    // The whole run claimed at once: the worker's claim loop never looks at the run again, so only
    // the check before each call can see the cancel.
    t = await startTestDaemon({ backend: 'postgres', workers: 1, concurrency: 4, latencyMs: 200, prepare: (_home, config) => (config.runs = { ...config.runs, claimBatch: 500 }) });
  });
  afterAll(() => t?.close());

  it('is seen by its worker in the store: it starts a handful of calls at most after it', async () => {
    const runId = await runningRun(t, 8);
    // `ehrbench runs cancel` on the host: another app on the same store, whose gateway does not run it.
    const other = await openApp({ file: t.home.configFile, env: t.home.env });
    try {
      const stopped = await cancelRun(other.engine, runId, { principal: 'alice', role: 'researcher', authMethod: 'local-os-user' }, 'test');
      expect(stopped.run.status).toBe('cancelled');
      expect(stopped.callsInFlight).toBeUndefined();
      expect(other.engine.calls.callsInFlight(runId)).toBeUndefined();
    } finally {
      await other.close();
    }
    await drained(t, runId);
    const events = await t.app.db.query<{ seq: string; event_type: string }>(
      "SELECT seq, event_type FROM audit_events WHERE run_id = $1 AND event_type IN ('run.cancel', 'endpoint.call') ORDER BY seq",
      [runId],
    );
    const cancel = events.find((e) => e.event_type === 'run.cancel');
    const after = events.filter((e) => e.event_type === 'endpoint.call' && Number(e.seq) > Number(cancel?.seq));
    // Calls start on a status read at most MAX_AGE_MS old: at 4 calls of 200 ms at a time, a handful.
    // Counted, not timed: the time from the cancel to the last call grows with the machine's load.
    expect(after.length).toBeLessThanOrEqual(8);
  });
});

describe('RunWatch', () => {
  it('reads the status at most once per MAX_AGE_MS, shared by concurrent askers, and stops on any status but running', async () => {
    let now = 0;
    let status = 'running';
    let reads = 0;
    const store = { getRun: async () => (reads++, { status }) as never };
    const watch = new RunWatch(store, 'r', () => now);
    expect(await Promise.all([watch.active(), watch.active(), watch.active()])).toEqual([true, true, true]);
    expect(reads).toBe(1);
    now += MAX_AGE_MS - 1;
    status = 'cancelled';
    expect(await watch.active()).toBe(true);
    expect(reads).toBe(1);
    now += 1;
    expect(await watch.active()).toBe(false);
    expect(watch.stopped).toBe(true);
    expect(reads).toBe(2);
  });

  it('stops at once when told (a cancel in this process), without reading', async () => {
    const watch = new RunWatch({ getRun: () => Promise.reject(new Error('not read')) }, 'r');
    watch.stop();
    expect(await watch.active()).toBe(false);
  });
});
