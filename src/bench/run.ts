/**
 * npm run bench:run [-- --json] [--instances N] [--concurrency C] [--latency MS]
 * N instances of PubMedQA through the whole pipeline (access check, prompt, de-identification stage,
 * audit, egress guard + TLS, official SDK, scoring, persistence, aggregation) against the loopback
 * model server in another process with a fixed latency. Prints wall time against the ideal bound
 * N / concurrency x latency, CPU per instance and peak RSS. A measurement, not a test.
 */
import { openApp } from '../app';
import { executeRun, requestRun } from '../runs/engine';
import { DEMO_ENDPOINT_ID } from '../setup/init';
import { argFlag, argNumber, benchHome, startServerProcess } from './harness';

async function bench(): Promise<void> {
  const instances = argNumber('instances', 1000);
  const concurrency = argNumber('concurrency', 16);
  const latencyMs = argNumber('latency', 20);
  const json = argFlag('json');

  const home = await benchHome('bench-run');
  const server = await startServerProcess(home.home, home.port, latencyMs);
  const app = await openApp({ file: `${home.home}/config.json` });
  app.engine.settings.concurrency = concurrency;
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    const run = await requestRun(app.engine, {
      benchmarkId: 'pubmed_qa',
      endpointId: DEMO_ENDPOINT_ID,
      requester: { principal: 'bench', role: 'researcher', authMethod: 'service' },
      maxInstances: instances,
    });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const summary = await executeRun(app.engine, run.run_id);
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(sampler);
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    if (summary.counts.done !== instances) throw new Error(`expected ${instances} results, got ${summary.counts.done}`);
    const boundS = (instances / concurrency) * (latencyMs / 1000);
    const figures = {
      benchmark: 'pubmed_qa',
      store: app.db.backend,
      instances,
      concurrency,
      latency_ms: latencyMs,
      wall_s: Number(wallS.toFixed(3)),
      bound_s: Number(boundS.toFixed(3)),
      ratio: Number((wallS / boundS).toFixed(2)),
      cpu_ms_per_instance: Number(((cpu.user + cpu.system) / 1000 / instances).toFixed(3)),
      peak_rss_mb: Number((peakRss / 1024 / 1024).toFixed(1)),
    };
    if (json) process.stdout.write(JSON.stringify(figures) + '\n');
    else {
      process.stdout.write(
        `bench:run  ${instances} instances, concurrency ${concurrency}, model latency ${latencyMs} ms, store ${figures.store}\n` +
          `  wall ${figures.wall_s} s vs bound ${figures.bound_s} s: ratio ${figures.ratio}\n` +
          `  cpu ${figures.cpu_ms_per_instance} ms/instance, peak RSS ${figures.peak_rss_mb} MB\n`,
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
