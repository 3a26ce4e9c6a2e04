/**
 * Reliability suite (issue 9): three `ehrbench worker` processes on one PostgreSQL work through a
 * 2,000-instance run while workers are SIGKILLed and restarted at random moments, the database goes
 * away twice, and the model endpoint answers 429 (Retry-After), 500 and hangs. Afterwards:
 *   - exactly N results, each instance once, and no instance failed
 *   - aggregates and every prediction equal an undisturbed run of the same benchmark
 *   - `ehrbench audit verify` passes for every worker's witnesses (one linear, gap-free chain)
 *   - no prompt text in any log or output of any process
 *   - no worker process died of anything but our SIGKILLs
 * Correctness only: nothing here asserts a duration.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { type App, openApp } from '../../src/app';
import { startModelServer, type ModelServer } from '../../src/demo/model-server';
import { writeSyntheticDefinition } from '../../src/bench/harness';
import { localCaller, Operations } from '../../src/operations';
import { executeRun, requestRun } from '../../src/runs/engine';
import { freePort, makeHome, type TestHome } from '../helpers/home';
import { type ModelServerProcess, readIfExists, runCli, startFaultyServer, startWorker, stopWorker, waitStarted, type WorkerProcess, workerHome } from './processes';

const N = 2000;
const WORKERS = 3;
const BENCHMARK = 'reliability_synthetic';
/** Every question carries this marker; finding it in any output means prompt text leaked. */
const MARKER = 'RLBMARK';
/** Progress points (share of instances done) at which a worker is SIGKILLed and restarted. */
const KILL_AT = [0, 0.08, 0.18, 0.27, 0.36, 0.5, 0.6, 0.7, 0.82, 0.9, 0.95];
/** Progress points at which the database "restarts" (see dropConnections). */
const OUTAGE_AT = [0.42, 0.76];

/** Deterministic pseudo-random numbers (mulberry32): the chaos differs per seed, not per run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A public benchmark of synthetic yes/no questions, each with the marker and a unique number. */
function writeBenchmark(dir: string): void {
  const folder = writeSyntheticDefinition(dir, BENCHMARK, 'Reliability benchmark (synthetic)');
  const rows = Array.from({ length: N }, (_, i) =>
    JSON.stringify({ id: `r${i}`, question: `${MARKER}-${i} synthetic question: is ${(i * 7919) % 97} below 50?`, label: (i * 7919) % 97 < 50 ? 'yes' : 'no' }),
  );
  writeFileSync(join(folder, 'data.jsonl'), rows.join('\n') + '\n');
}

/**
 * A database restart as its clients see it. The PostgreSQL server is a shared system cluster (other
 * tests use it at the same time), so it is not restarted; instead every backend of the suite's
 * database is terminated, over and over for a window, which is exactly what clients see when the
 * server goes down and comes back: connections cut mid-statement and mid-transaction, new ones cut.
 */
async function dropConnections(adminUrl: string, database: string, windowMs: number): Promise<number> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  let terminated = 0;
  try {
    const until = Date.now() + windowMs;
    while (Date.now() < until) {
      const rows = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
      terminated += rows.rows.filter((r) => r.ok).length;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await admin.end();
  }
  return terminated;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const suite = process.env.TEST_DATABASE_URL ? describe : describe.skip;
if (!process.env.TEST_DATABASE_URL) {
  process.stdout.write('reliability suite SKIPPED: TEST_DATABASE_URL is not set (it needs a PostgreSQL server, e.g. postgres://postgres@127.0.0.1:5432/test)\n');
}

suite('three workers on one PostgreSQL under SIGKILLs, database restarts and endpoint faults', () => {
  let home: TestHome;
  let app: App;
  let clean: ModelServer;
  let faulty: ModelServerProcess | undefined;
  let workers: WorkerProcess[] = [];
  let dbUrl: string;
  let dbName: string;
  // A new chaos schedule each time, reproducible from the seed printed with it.
  const seed = Number(process.env.RELIABILITY_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const rand = random(seed);

  beforeAll(async () => {
    home = await makeHome('postgres');
    dbUrl = home.store.url as string;
    dbName = new URL(dbUrl).pathname.slice(1);
    const siteDir = join(home.home, 'site-benchmarks');
    writeBenchmark(siteDir);

    // The site configuration, with absolute paths so every worker's own config folder can use it.
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    config.catalog = { dirs: [siteDir], siteData: join(home.home, 'site-data.json') };
    config.keys = { dir: join(home.home, 'keys') };
    config.policies = { endpoints: join(home.home, 'access-policies', 'endpoints.json'), principals: join(home.home, 'access-policies', 'principals.json') };
    if (config.deid?.siteLexicons)
      config.deid.siteLexicons = Object.fromEntries(Object.entries(config.deid.siteLexicons as Record<string, string>).map(([kind, file]) => [kind, join(home.home, file)]));
    config.database = { ...config.database, poolSize: 6 };
    // Short leases, so a killed worker's instances come back within seconds. Every SIGKILL costs
    // an attempt of each instance the worker had claimed (a worker-killing instance must be capped),
    // so the cap is set above what the kills of this suite can use up; hitting it would be a finding.
    config.runs = { concurrencyPerEndpoint: 8, maxAttempts: 12, leaseSeconds: 5, claimBatch: 16 };
    config.models = { timeoutMs: 1500, maxRetries: 4, maxBackoffMs: 2000 };
    config.server = { workers: 1, pollSeconds: 0.2 };
    config.audit = { checkpointEvery: 500 };
    writeFileSync(home.configFile, JSON.stringify(config, null, 2));

    const policyFile = join(home.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
    const demo = policy.endpoints[0];
    const cleanPort = await freePort();
    policy.endpoints.push(
      { ...demo, id: 'faulty', tls: { caFile: join(home.home, 'keys', 'dev-ca.pem') }, limits: { concurrency: 8 * WORKERS } },
      { ...demo, id: 'clean', url: `https://localhost:${cleanPort}/v1`, tls: { caFile: join(home.home, 'keys', 'dev-ca.pem') } },
    );
    writeFileSync(policyFile, JSON.stringify(policy, null, 2));

    clean = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: cleanPort,
    });
    app = await openApp({ file: home.configFile, env: home.env });
    workers = Array.from({ length: WORKERS }, (_, i) => workerHome(join(home.home, 'workers'), `w${i + 1}`, config));
  });

  afterAll(async () => {
    // Each step on its own: a failed test leaves processes mid-way, and the database must still go.
    await Promise.all(workers.map((w) => stopWorker(w, 'SIGKILL')));
    await faulty?.stop().catch(() => undefined);
    await clean?.close().catch(() => undefined);
    await app?.close().catch(() => undefined);
    // RELIABILITY_KEEP=1 keeps the folders (logs, witnesses) and the database for a post-mortem.
    if (process.env.RELIABILITY_KEEP) process.stdout.write(`reliability suite kept ${home?.home} and ${dbUrl}\n`);
    else await home?.cleanup();
  });

  it('finishes every instance exactly once with the results of an undisturbed run', async () => {
    process.stdout.write(`reliability suite: RELIABILITY_SEED=${seed}\n`);
    const requester = await new Operations(app).require(localCaller(app), 'run.request');

    // The reference: the same benchmark, undisturbed, in this process against a fault-free server.
    const reference = await requestRun(app.engine, { benchmarkId: BENCHMARK, endpointId: 'clean', requester, maxInstances: N });
    const refSummary = await executeRun(app.engine, reference.run_id);
    expect(refSummary.status).toBe('completed');
    expect(refSummary.counts.done).toBe(N);

    faulty = await startFaultyServer(home.home, home.port, 20, join(home.home, 'model-server.log'));
    for (const w of workers) startWorker(w, dbUrl);
    const run = await requestRun(app.engine, { benchmarkId: BENCHMARK, endpointId: 'faulty', requester, maxInstances: N });

    const kills = [...KILL_AT];
    const outages = [...OUTAGE_AT];
    let terminated = 0;
    let status = 'approved';
    const deadline = Date.now() + 8 * 60_000;
    while (!['completed', 'failed', 'halted', 'cancelled'].includes(status)) {
      if (Date.now() > deadline) throw new Error(`run still ${status} after 8 minutes (RELIABILITY_SEED=${seed})`);
      // A worker that died of anything but our SIGKILL is the finding: stop here, not at the deadline.
      const crashed = workers.find((w) => w.crashes.length > 0);
      if (crashed) {
        const tail = readIfExists(join(crashed.dir, 'stderr.log')).slice(-3000);
        throw new Error(`worker ${crashed.name} crashed (${JSON.stringify(crashed.crashes)}, RELIABILITY_SEED=${seed}); its stderr ends:\n${tail}`);
      }
      await sleep(150);
      let done: number;
      try {
        status = (await app.engine.store.getRun(run.run_id))?.status ?? 'missing';
        done = (await app.engine.store.counts(run.run_id)).done;
      } catch {
        continue; // this process's connections are cut by the outages too
      }
      if (kills.length > 0 && status === 'running' && done >= (kills[0] as number) * N) {
        kills.shift();
        const victim = workers[Math.floor(rand() * WORKERS)] as WorkerProcess;
        await sleep(Math.floor(rand() * 300));
        await stopWorker(victim, 'SIGKILL');
        await sleep(Math.floor(rand() * 800));
        startWorker(victim, dbUrl);
      }
      if (outages.length > 0 && done >= (outages[0] as number) * N) {
        outages.shift();
        // A worker is also killed while the database is away, and restarted before it is back.
        const victim = workers[Math.floor(rand() * WORKERS)] as WorkerProcess;
        const outage = dropConnections(process.env.TEST_DATABASE_URL as string, dbName, 3000);
        await sleep(500 + Math.floor(rand() * 1000));
        await stopWorker(victim, 'SIGKILL');
        startWorker(victim, dbUrl);
        terminated += await outage;
      }
    }
    // Graceful stop: each worker gives back its leases and seals the trail to its own witness.
    await Promise.all(workers.map((w) => waitStarted(w, deadline)));
    const exitCodes = await Promise.all(workers.map((w) => stopWorker(w, 'SIGTERM', deadline)));
    const served = await faulty.stop();
    faulty = undefined;

    // The chaos happened: workers were killed, the database cut connections, the endpoint failed.
    // The last kill point may be passed by the run's completion between two looks at its progress.
    expect(workers.reduce((n, w) => n + w.killed, 0)).toBeGreaterThanOrEqual(KILL_AT.length + OUTAGE_AT.length - 1);
    expect(terminated).toBeGreaterThan(0);
    const injected = /faults 429=(\d+) 500=(\d+) hang=(\d+)/.exec(served);
    expect(injected).not.toBeNull();
    expect(Number(injected?.[1])).toBeGreaterThan(0);
    expect(Number(injected?.[2])).toBeGreaterThan(0);
    expect(Number(injected?.[3])).toBeGreaterThan(0);
    // No worker died of anything but our SIGKILLs, and each stopped cleanly when asked.
    expect(workers.flatMap((w) => w.crashes)).toEqual([]);
    expect(exitCodes).toEqual(workers.map(() => 0));

    // Exactly N results, each instance once, none failed or left behind.
    expect(status).toBe('completed');
    const db = app.db;
    const [items] = await db.query<{ total: number; keys: number; done: number; with_result: number }>(
      `SELECT count(*)::integer AS total, count(DISTINCT item_key)::integer AS keys,
              count(*) FILTER (WHERE state = 'done')::integer AS done,
              count(*) FILTER (WHERE prediction IS NOT NULL AND finished_at IS NOT NULL)::integer AS with_result
         FROM run_items WHERE run_id = $1::uuid`,
      [run.run_id],
    );
    expect(items).toEqual({ total: N, keys: N, done: N, with_result: N });
    const [attempts] = await db.query<{ max: number }>('SELECT max(attempts)::integer AS max FROM run_items WHERE run_id = $1::uuid', [run.run_id]);
    process.stdout.write(`reliability suite: most claims of one instance ${attempts?.max} (cap ${app.config.runs.maxAttempts})\n`);

    // Identical to the undisturbed run: every prediction and every aggregate.
    const differing = await db.query<{ item_key: string }>(
      `SELECT a.item_key FROM run_items a JOIN run_items b ON b.item_key = a.item_key AND b.run_id = $2::uuid
        WHERE a.run_id = $1::uuid AND (a.prediction IS DISTINCT FROM b.prediction OR a.scores IS DISTINCT FROM b.scores)`,
      [run.run_id, reference.run_id],
    );
    expect(differing).toEqual([]);
    const aggregates = await app.engine.store.results(run.run_id);
    expect(aggregates.length).toBeGreaterThan(0);
    expect(aggregates).toEqual(await app.engine.store.results(reference.run_id));

    // The audit trail: one completion of the run, retried calls recorded, one linear chain.
    const [events] = await db.query<{ completes: number; retries: number; seqs: number; head: number }>(
      `SELECT count(*) FILTER (WHERE event_type = 'run.complete' AND run_id = $1)::integer AS completes,
              count(*) FILTER (WHERE event_type = 'endpoint.call' AND run_id = $1 AND (detail->>'attempt')::integer > 1)::integer AS retries,
              count(DISTINCT seq)::integer AS seqs, max(seq)::integer AS head
         FROM audit_events`,
      [run.run_id],
    );
    expect(events?.completes).toBe(1);
    expect(events?.retries).toBeGreaterThan(0);
    expect(events?.seqs).toBe(events?.head);
    for (const configFile of [home.configFile, ...workers.map((w) => w.configFile)]) {
      const verified = await runCli(['--config', configFile, 'audit', 'verify'], { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_DATABASE_URL: dbUrl });
      expect({ configFile, code: verified.code, out: verified.code === 0 ? '' : verified.stdout + verified.stderr }).toEqual({ configFile, code: 0, out: '' });
    }

    // The outages reached the workers, and they said so with codes only.
    const outputs = [
      readIfExists(join(home.home, 'model-server.log')),
      readIfExists(app.config.logging.file),
      ...workers.flatMap((w) => ['stdout.log', 'stderr.log', join('logs', 'ehrbench.log')].map((f) => readIfExists(join(w.dir, f)))),
    ];
    const all = outputs.join('\n');
    expect(all).toMatch(/db\.unavailable|audit\.unavailable/);
    // No prompt text anywhere: not the marker, not the question wording.
    expect(all.includes(MARKER)).toBe(false);
    expect(all.includes('synthetic question')).toBe(false);
    expect(readdirSync(join(home.home, 'workers')).length).toBe(WORKERS);
  });
});
