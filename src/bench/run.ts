/**
 * npm run bench:run [-- --json] [--instances N] [--concurrency C] [--latency MS] [--warmup N]
 * N instances of PubMedQA through the whole pipeline (access check, prompt, de-identification stage,
 * audit event before every call, budget check, egress guard + TLS, official SDK, scoring,
 * persistence, aggregation) against the loopback model server in another process with a fixed
 * latency. Store: the embedded PGlite, or PostgreSQL when EHRBENCH_DATABASE_URL is set.
 *
 * A daemon is a long-running process, so the measured run follows a warm-up run in the same process
 * (JIT, TLS sessions, database caches); the cold figures of the warm-up are printed too. Prints wall
 * time against the ideal bound N / concurrency x latency, CPU per instance and peak RSS.
 */
import { openApp } from '../app';
import { localCaller, Operations } from '../operations';
import { executeRun, requestRun } from '../runs';
import { DEMO_ENDPOINT_ID } from '../setup';
import { argFlag, argNumber, benchHome, startServerProcess } from './harness';

async function bench(): Promise<void> {
  const instances = argNumber('instances', 1000);
  const concurrency = argNumber('concurrency', 16);
  const latencyMs = argNumber('latency', 20);
  const warmup = argNumber('warmup', 500);
  const json = argFlag('json');

  const home = await benchHome('bench-run');
  const server = await startServerProcess(home.home, home.port, latencyMs);
  const app = await openApp({ file: `${home.home}/config.json` });
  app.engine.settings.concurrency = concurrency;
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    const requester = await new Operations(app).as(localCaller(app), 'researcher', 'benchmarking');
    const measure = async (n: number) => {
      const run = await requestRun(app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester, maxInstances: n });
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const summary = await executeRun(app.engine, run.run_id);
      const wallS = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      if (summary.counts.done !== n) throw new Error(`expected ${n} results, got ${summary.counts.done}`);
      return { wallS, cpuMsPerInstance: (cpu.user + cpu.system) / 1000 / n };
    };
    const cold = warmup > 0 ? await measure(warmup) : undefined;
    const warm = await measure(instances);
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    const boundS = (instances / concurrency) * (latencyMs / 1000);
    const figures = {
      benchmark: 'pubmed_qa',
      store: app.db.backend,
      instances,
      concurrency,
      latency_ms: latencyMs,
      wall_s: Number(warm.wallS.toFixed(3)),
      bound_s: Number(boundS.toFixed(3)),
      ratio: Number((warm.wallS / boundS).toFixed(2)),
      cpu_ms_per_instance: Number(warm.cpuMsPerInstance.toFixed(3)),
      peak_rss_mb: Number((peakRss / 1024 / 1024).toFixed(1)),
      ...(cold
        ? {
            warmup_instances: warmup,
            cold_ratio: Number((cold.wallS / ((warmup / concurrency) * (latencyMs / 1000))).toFixed(2)),
            cold_cpu_ms_per_instance: Number(cold.cpuMsPerInstance.toFixed(3)),
          }
        : {}),
    };
    if (json) process.stdout.write(JSON.stringify(figures) + '\n');
    else {
      process.stdout.write(
        `bench:run  ${instances} instances, concurrency ${concurrency}, model latency ${latencyMs} ms, store ${figures.store}\n` +
          `  wall ${figures.wall_s} s vs bound ${figures.bound_s} s: ratio ${figures.ratio} (after a ${warmup}-instance warm-up run)\n` +
          `  cpu ${figures.cpu_ms_per_instance} ms/instance, peak RSS ${figures.peak_rss_mb} MB\n` +
          (cold ? `  cold (the warm-up run itself): ratio ${figures.cold_ratio}, cpu ${figures.cold_cpu_ms_per_instance} ms/instance\n` : ''),
      );
    }
  } finally {
    clearInterval(sampler);
    await app.close();
    await server.stop();
    home.remove();
  }
}

bench().catch((err: unknown) => {
  process.stderr.write(`bench:run failed: ${(err as Error).message}\n`);
  process.exit(1);
});
