/**
 * npm run bench:scale [-- --json] [--instances N] [--latency MS] [--workers 1,2,4] [--memory-instances N]
 * Scale-out on one PostgreSQL (a fresh database on $BENCH_DATABASE_URL's server, default the local
 * test server): instances/s with 1, 2 and 4 `ehrbench worker` processes against the loopback model
 * server (its own process) with a realistic latency (300 ms), each worker keeping 16 calls in flight
 * and the endpoint allowing 16 per worker; then the peak memory of one worker through a long run
 * (100,000 instances by default) whose memory must not grow with the run. A measurement, not a test.
 *
 * Each set of workers runs the benchmark twice: the first run in fresh processes (their code not yet
 * compiled, no connection to the model server yet: `workers_N_first_run_instances_per_s`), then the
 * measured one, as the long-running workers of a deployment run (`workers_N_instances_per_s`), the
 * way bench:run measures after a warm-up run. Both are whole runs, from the request to the last result.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp, type App } from '../app';
import { localCaller, Operations } from '../operations';
import { PACKAGE_ROOT } from '../paths';
import { requestRun } from '../runs';
import { argFlag, argNumber, benchHome, peakRssBytes, scratchDatabase, startServerProcess, writeSyntheticDefinition } from './harness';

const PER_WORKER = 16;
const BENCHMARK = 'scale_synthetic';

/** A public benchmark of `rows` synthetic multiple-choice questions (JSON lines, streamed to disk). */
async function writeBenchmark(dir: string, rows: number): Promise<void> {
  const folder = writeSyntheticDefinition(dir, BENCHMARK, 'Scale benchmark (synthetic)');
  const out = createWriteStream(join(folder, 'data.jsonl'));
  for (let i = 0; i < rows; i++) {
    const line = JSON.stringify({ id: `q${i}`, question: `Synthetic question ${i}: is ${i % 7} less than 4?`, label: i % 7 < 4 ? 'yes' : 'no' }) + '\n';
    if (!out.write(line)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((r) => out.end(() => r()));
}

/** A worker as deployed (deploy/): its own process, with the bounded V8 heap of the unit and image. */
function startWorker(home: string, url: string): ChildProcess {
  return spawn(process.execPath, ['--max-old-space-size=256', join(PACKAGE_ROOT, 'bin', 'ehrbench.js'), 'worker', '--workers', '1'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: home, EHRBENCH_DATABASE_URL: url },
    // stderr passes through: a worker that dies (a crash, an exhausted heap) says why here.
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

function stopWorker(w: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (w.exitCode !== null) return resolve();
    w.once('exit', () => resolve());
    w.kill('SIGTERM');
  });
}

/** Times one run to its end; a worker that exits before then fails the measurement instead of hanging it. */
async function timeRun(app: App, instances: number, workers: ChildProcess[]): Promise<{ seconds: number; done: number }> {
  const requester = await new Operations(app).require(localCaller(app), 'run.request');
  const t0 = performance.now();
  const run = await requestRun(app.engine, { benchmarkId: BENCHMARK, endpointId: 'scale-endpoint', requester, maxInstances: instances });
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const dead = workers.find((w) => w.exitCode !== null || w.signalCode !== null);
    if (dead) throw new Error(`worker ${dead.pid} exited (code ${dead.exitCode}, signal ${dead.signalCode}) before the run finished`);
    const row = await app.engine.store.getRun(run.run_id);
    if (row && ['completed', 'failed', 'halted', 'cancelled'].includes(row.status)) {
      const counts = await app.engine.store.counts(run.run_id);
      return { seconds: (performance.now() - t0) / 1000, done: counts.done };
    }
  }
}

async function bench(): Promise<void> {
  const instances = argNumber('instances', 2000);
  const latencyMs = argNumber('latency', 300);
  const memoryInstances = argNumber('memory-instances', 100_000);
  const workerCounts = (process.argv.includes('--workers') ? String(process.argv[process.argv.indexOf('--workers') + 1]) : '1,2,4').split(',').map(Number);
  const json = argFlag('json');
  const say = (line: string) => !json && process.stdout.write(line + '\n');

  const admin = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const scratch = await scratchDatabase(admin, 'BENCH_DATABASE_URL', 'scale');
  const dbUrl = scratch.url;

  const home = await benchHome('bench-scale', 'postgres');
  const maxWorkers = Math.max(...workerCounts);
  const siteDir = join(home.home, 'site-benchmarks');
  await writeBenchmark(siteDir, Math.max(instances, memoryInstances));
  const configFile = join(home.home, 'config.json');
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  config.catalog = { dirs: [siteDir] };
  config.runs = { ...config.runs, concurrencyPerEndpoint: PER_WORKER, leaseSeconds: 30, claimBatch: 64 };
  config.server = { pollSeconds: 0.2, workers: 1 };
  config.audit = { checkpointEvery: 10000 };
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const policyFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
  policy.endpoints.push({ ...policy.endpoints[0], id: 'scale-endpoint', limits: { concurrency: PER_WORKER * maxWorkers } });
  writeFileSync(policyFile, JSON.stringify(policy, null, 2));

  const figures: Record<string, unknown> = { latency_ms: latencyMs, instances_per_measurement: instances, calls_in_flight_per_worker: PER_WORKER, store: 'postgres' };
  const env = { ...process.env, EHRBENCH_DATABASE_URL: dbUrl };
  let server = await startServerProcess(home.home, home.port, latencyMs);
  const app = await openApp({ file: configFile, env });
  // Every worker started, stopped on the way out too: a failed measurement must not leave them polling.
  const started: ChildProcess[] = [];
  try {
    for (const w of workerCounts) {
      const workers = Array.from({ length: w }, () => startWorker(home.home, dbUrl));
      started.push(...workers);
      await new Promise((r) => setTimeout(r, 1500));
      const first = await timeRun(app, instances, workers);
      const { seconds, done } = await timeRun(app, instances, workers);
      await Promise.all(workers.map(stopWorker));
      const rate = done / seconds;
      const firstRate = first.done / first.seconds;
      figures[`workers_${w}_instances_per_s`] = Number(rate.toFixed(1));
      figures[`workers_${w}_first_run_instances_per_s`] = Number(firstRate.toFixed(1));
      say(
        `${w} worker(s): ${done} instances in ${seconds.toFixed(1)} s = ${rate.toFixed(1)} instances/s (ideal ${((PER_WORKER * w) / (latencyMs / 1000)).toFixed(0)}; ` +
          `the first run of the fresh processes ${firstRate.toFixed(1)} /s)`,
      );
    }

    if (memoryInstances > 0) {
      // Memory does not depend on latency: a short one keeps this part quick.
      await server.stop();
      server = await startServerProcess(home.home, home.port, 2);
      const worker = startWorker(home.home, dbUrl);
      started.push(worker);
      let peak = 0;
      // 0 once the process is gone.
      const sampler = setInterval(() => (peak = Math.max(peak, peakRssBytes(worker.pid as number) / 1024 / 1024)), 500);
      await new Promise((r) => setTimeout(r, 1500));
      const { seconds, done } = await timeRun(app, memoryInstances, [worker]);
      peak = Math.max(peak, peakRssBytes(worker.pid as number) / 1024 / 1024);
      clearInterval(sampler);
      await stopWorker(worker);
      figures.memory_run_instances = done;
      figures.memory_run_s = Number(seconds.toFixed(1));
      figures.worker_peak_rss_mb = Number(peak.toFixed(1));
      say(`memory: one worker through ${done} instances in ${seconds.toFixed(0)} s, peak RSS ${peak.toFixed(1)} MB`);
    }
  } finally {
    await Promise.all(started.map(stopWorker));
    await app.close();
    await server.stop();
    await scratch.drop().catch(() => undefined);
    home.remove();
  }
  if (json) process.stdout.write(JSON.stringify(figures) + '\n');
}

bench().catch((err: unknown) => {
  process.stderr.write(`bench:scale failed: ${(err as Error).message}\n`);
  process.exit(1);
});
