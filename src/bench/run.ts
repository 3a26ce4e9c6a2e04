/**
 * npm run bench:run [-- --json] [--instances N] [--concurrency C] [--latency MS] [--warmup N] [--jury] [--profile FILE]
 * N instances of PubMedQA through the whole pipeline (access check, prompt, de-identification stage,
 * audit event before every call, budget check, egress guard + TLS, official SDK, scoring,
 * persistence, aggregation) against the loopback model server in another process with a fixed
 * latency. Store: the embedded PGlite, or PostgreSQL when EHRBENCH_DATABASE_URL is set (a new
 * database on the server it names, dropped afterwards: every measurement starts from an empty store).
 *
 * More instances than PubMedQA has (1,000): its records repeated under new ids (same prompts, same
 * sizes), so that memory can be compared at 1,000 and 10,000. --jury: ACI-Bench (repeated to N) with
 * an LLM jury of three judge endpoints on the loopback server, four calls per instance.
 *
 * A daemon is a long-running process, so the measured run follows a warm-up run in the same process
 * (JIT, TLS sessions, database caches); the cold figures of the warm-up are printed too. Prints wall
 * time against the ideal bound (every call of the run, model and judges, at its endpoint's
 * concurrency: calls x latency / (endpoints x concurrency)), CPU per instance (the whole process, and
 * its main thread, which serves the calls), and the process's peak RSS (VmHWM: from start, store
 * opening included). --profile FILE writes a CPU profile of the measured run (chrome devtools format).
 */
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { openApp } from '../app';
import { localCaller, Operations } from '../operations';
import { BUILTIN_BENCHMARK_DIR } from '../paths';
import { executeRun, requestRun } from '../runs';
import { DEMO_ENDPOINT_ID } from '../setup';
import { argFlag, argNumber, type BenchHome, benchHome, peakRssBytes, scratchDatabase, startServerProcess } from './harness';

const JUDGES = ['judge-gpt', 'judge-llama', 'judge-claude'];

/** CPU time (user + system) of a thread or process from its /proc stat file, in ms (clock ticks of 10 ms); NaN elsewhere. */
function procCpuMs(statFile: string): number {
  try {
    const fields = readFileSync(statFile, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** CPU time of the main thread (the event loop) in ms. */
const mainThreadCpuMs = () => procCpuMs(`/proc/self/task/${process.pid}/stat`);

/**
 * A copy of a shipped benchmark whose dataset is its records repeated to `n` under new ids, in the
 * site catalog folder `dir`. Returns the copy's id.
 */
function repeatedBenchmark(dir: string, id: string, n: number): string {
  const source = join(BUILTIN_BENCHMARK_DIR, id);
  const def = JSON.parse(readFileSync(join(source, 'benchmark.json'), 'utf8'));
  const copyId = `${id}_x${n}`;
  const folder = join(dir, copyId);
  mkdirSync(folder, { recursive: true });
  const read = (f: { path: string }) => JSON.parse(readFileSync(join(source, f.path), 'utf8'));
  // Written a record at a time: the bench's own copy of a large dataset must not be in this process's
  // memory (its peak RSS is what the bench reports).
  const out = openSync(join(folder, 'data.json'), 'w');
  if (def.dataset.format === 'json-object') {
    const records = Object.entries(Object.assign({}, ...def.dataset.files.map(read)) as Record<string, unknown>);
    writeSync(out, '{');
    for (let i = 0; i < n; i++) {
      const [key, value] = records[i % records.length] as [string, unknown];
      writeSync(out, `${i ? ',' : ''}${JSON.stringify(`${key}-r${Math.floor(i / records.length)}`)}:${JSON.stringify(value)}`);
    }
    writeSync(out, '}');
  } else {
    const field = def.dataset.arrayField as string;
    const idColumn = def.dataset.columns.id as string;
    const records = def.dataset.files.flatMap((f: { path: string }) => read(f)[field] as Record<string, unknown>[]);
    writeSync(out, `{${JSON.stringify(field)}:[`);
    for (let i = 0; i < n; i++) {
      const r = records[i % records.length] as Record<string, unknown>;
      writeSync(out, `${i ? ',' : ''}${JSON.stringify({ ...r, [idColumn]: `${r[idColumn]}-r${Math.floor(i / records.length)}` })}`);
    }
    writeSync(out, ']}');
  }
  closeSync(out);
  for (const f of [def.prompt.templateFile, def.jury?.promptFile].filter(Boolean)) writeFileSync(join(folder, f), readFileSync(join(source, f)));
  delete def.helm;
  writeFileSync(
    join(folder, 'benchmark.json'),
    JSON.stringify({ ...def, id: copyId, displayName: `${def.displayName} (repeated to ${n})`, dataset: { ...def.dataset, files: [{ path: 'data.json' }] } }),
  );
  return copyId;
}

/**
 * repeatedBenchmark in a child process: the peak RSS this process reports is the daemon's, and the
 * bench's own copy of a large dataset (parsed, repeated, serialised) would otherwise count in it.
 */
function preparedInChild(dir: string, id: string, n: number): string {
  execFileSync(process.execPath, [__filename, '--prepare-dataset', dir, id, String(n)], { stdio: ['ignore', 'ignore', 'inherit'] });
  return `${id}_x${n}`;
}

async function bench(): Promise<void> {
  const serverUrl = process.env.EHRBENCH_DATABASE_URL?.trim();
  const scratch = serverUrl ? await scratchDatabase(serverUrl, 'EHRBENCH_DATABASE_URL', 'run') : undefined;
  // Whatever fails, neither the new database nor the data folder outlives the bench.
  let home: BenchHome | undefined;
  try {
    home = await benchHome('bench-run');
    await benchIn(home, scratch?.url);
  } finally {
    home?.remove();
    await scratch?.drop();
  }
}

/** The bench in `home`, on the new PostgreSQL database `databaseUrl` or else the embedded store. */
async function benchIn(home: BenchHome, databaseUrl: string | undefined): Promise<void> {
  const jury = argFlag('jury');
  const instances = argNumber('instances', jury ? 480 : 1000);
  const concurrency = argNumber('concurrency', 16);
  const latencyMs = argNumber('latency', 20);
  const warmup = argNumber('warmup', jury ? 120 : 500);
  const json = argFlag('json');
  const profileAt = process.argv.includes('--profile') ? process.argv[process.argv.indexOf('--profile') + 1] : undefined;

  const shipped = jury ? 'aci_bench' : 'pubmed_qa';
  // PubMedQA up to its 1,000 records as shipped; beyond (and ACI-Bench's 120 always), repeated.
  const siteDir = join(home.home, 'site-benchmarks');
  const benchmarkId = !jury && Math.max(instances, warmup) <= 1000 ? shipped : preparedInChild(siteDir, shipped, Math.max(instances, warmup));
  const configFile = join(home.home, 'config.json');
  if (benchmarkId !== shipped || jury) {
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    config.catalog = { ...config.catalog, dirs: [siteDir] };
    writeFileSync(configFile, JSON.stringify(config, null, 2));
  }
  if (jury) {
    // Three judges on the loopback server, each its own endpoint (and capacity), of another family than the model.
    const policyFile = join(home.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
    const demo = policy.endpoints[0];
    for (const id of JUDGES) policy.endpoints.push({ ...demo, id, description: `judge ${id}`, model: id });
    writeFileSync(policyFile, JSON.stringify(policy, null, 2));
    writeFileSync(join(home.home, 'site-data.json'), JSON.stringify({ benchmarks: {}, jury: { judges: JUDGES } }));
  }
  const server = await startServerProcess(home.home, home.port, latencyMs, jury ? 'jury' : undefined);
  const app = await openApp({ file: configFile, env: databaseUrl ? { ...process.env, EHRBENCH_DATABASE_URL: databaseUrl } : process.env }).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  app.engine.settings.concurrency = concurrency;
  // The peak is the kernel's VmHWM where there is /proc (sampling RSS there cost the run itself up to
  // 0.3 ms a read on this VM); elsewhere, sampled.
  let sampled = process.memoryUsage.rss();
  const sampler = peakRssBytes() > 0 ? undefined : setInterval(() => (sampled = Math.max(sampled, process.memoryUsage.rss())), 20);
  const callsPerInstance = jury ? 1 + JUDGES.length : 1;
  const endpoints = callsPerInstance;
  // Every call of the run at its endpoint's concurrency, each taking the model latency.
  const boundOf = (n: number) => ((n * callsPerInstance) / (endpoints * concurrency)) * (latencyMs / 1000);
  try {
    const requester = await new Operations(app).require(localCaller(app), 'run.request');
    const measure = async (n: number, profile?: string) => {
      const run = await requestRun(app.engine, { benchmarkId, endpointId: DEMO_ENDPOINT_ID, requester, maxInstances: n });
      const session = profile ? new Session() : undefined;
      if (session) {
        session.connect();
        await new Promise<void>((r) => session.post('Profiler.enable', () => session.post('Profiler.start', () => r())));
      }
      const cpu0 = process.cpuUsage();
      const main0 = mainThreadCpuMs();
      const server0 = procCpuMs(`/proc/${server.child.pid}/stat`);
      const t0 = performance.now();
      const summary = await executeRun(app.engine, run.run_id);
      const wallS = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const mainMs = mainThreadCpuMs() - main0;
      const serverMs = procCpuMs(`/proc/${server.child.pid}/stat`) - server0;
      if (session && profile) {
        await new Promise<void>((r, j) => session.post('Profiler.stop', (err, res) => (err ? j(err) : (writeFileSync(profile, JSON.stringify(res.profile)), r()))));
        session.disconnect();
      }
      if (summary.counts.done !== n) throw new Error(`expected ${n} results, got ${summary.counts.done}`);
      return { wallS, cpuMsPerInstance: (cpu.user + cpu.system) / 1000 / n, mainMsPerInstance: mainMs / n, serverMsPerInstance: serverMs / n };
    };
    const cold = warmup > 0 ? await measure(warmup) : undefined;
    const warm = await measure(instances, profileAt);
    clearInterval(sampler);
    const peakRss = Math.max(sampled, process.memoryUsage.rss(), peakRssBytes());
    const boundS = boundOf(instances);
    const figures = {
      benchmark: benchmarkId,
      store: app.db.backend,
      instances,
      calls_per_instance: callsPerInstance,
      concurrency,
      latency_ms: latencyMs,
      wall_s: Number(warm.wallS.toFixed(3)),
      bound_s: Number(boundS.toFixed(3)),
      ratio: Number((warm.wallS / boundS).toFixed(2)),
      cpu_ms_per_instance: Number(warm.cpuMsPerInstance.toFixed(3)),
      main_thread_cpu_ms_per_instance: Number(warm.mainMsPerInstance.toFixed(3)),
      // The loopback model server's own CPU (not the daemon's), which shares the machine's cores.
      model_server_cpu_ms_per_instance: Number(warm.serverMsPerInstance.toFixed(3)),
      peak_rss_mb: Number((peakRss / 1024 / 1024).toFixed(1)),
      ...(cold
        ? {
            warmup_instances: warmup,
            cold_ratio: Number((cold.wallS / boundOf(warmup)).toFixed(2)),
            cold_cpu_ms_per_instance: Number(cold.cpuMsPerInstance.toFixed(3)),
          }
        : {}),
    };
    if (json) process.stdout.write(JSON.stringify(figures) + '\n');
    else {
      process.stdout.write(
        `bench:run  ${benchmarkId}: ${instances} instances x ${callsPerInstance} call(s), concurrency ${concurrency} per endpoint, model latency ${latencyMs} ms, store ${figures.store}\n` +
          `  wall ${figures.wall_s} s vs bound ${figures.bound_s} s: ratio ${figures.ratio} (after a ${warmup}-instance warm-up run)\n` +
          `  cpu ${figures.cpu_ms_per_instance} ms/instance (main thread ${figures.main_thread_cpu_ms_per_instance}; the model server ${figures.model_server_cpu_ms_per_instance}), peak RSS ${figures.peak_rss_mb} MB\n` +
          (cold ? `  cold (the warm-up run itself): ratio ${figures.cold_ratio}, cpu ${figures.cold_cpu_ms_per_instance} ms/instance\n` : '') +
          (profileAt ? `  CPU profile of the measured run: ${profileAt}\n` : ''),
      );
    }
  } finally {
    clearInterval(sampler);
    await app.close();
    await server.stop();
  }
}

if (process.argv[2] === '--prepare-dataset') {
  repeatedBenchmark(process.argv[3] as string, process.argv[4] as string, Number(process.argv[5]));
} else
  bench().catch((err: unknown) => {
    process.stderr.write(`bench:run failed: ${(err as Error).message}\n`);
    process.exit(1);
  });
