/**
 * `ehrbench demo`: the whole pipeline on the public benchmarks, on a fresh machine. Initialises the data
 * directory if needed, starts the loopback demo model server (HTTPS, certificate from the development
 * CA, an allowlisted development endpoint), runs PubMedQA, MedCalc-Bench and MEDEC through every stage
 * and prints the results. The stand-in's scores only show that the pipeline works.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../app';
import { configPath } from '../config';
import { UserError } from '../errors';
import { localCaller, Operations } from '../operations';
import { executeRun, readProgress, requestRun, type RunProgress, type RunSummary } from '../runs';
import { DEMO_ENDPOINT_ID, initHome } from '../setup';
import { startModelServer } from './model-server';

export { serveInForeground } from './model-server-main';

export const DEMO_BENCHMARKS = ['pubmed_qa', 'medcalc_bench', 'medec'];

export interface DemoOptions {
  home: string;
  configFile?: string;
  env: NodeJS.ProcessEnv;
  maxInstances?: number;
  log: (line: string) => void;
  /** Ctrl-C: the current run stops cleanly and no further benchmark starts. */
  signal?: AbortSignal;
  /** Told the id of each run as it starts (for the resume hint after an interruption). */
  onRun?: (runId: string) => void;
  /** Shows each run's progress while it executes (the CLI's display); stopped before the next log line. */
  follow?: (label: string, read: () => Promise<RunProgress>) => { stop(): Promise<void> };
}

export interface DemoResult {
  store: string;
  endpoint: string;
  summaries: RunSummary[];
}

export async function runDemo(opts: DemoOptions): Promise<DemoResult> {
  const file = configPath({ ...(opts.configFile ? { file: opts.configFile } : {}), env: opts.env });
  if (!existsSync(file)) {
    // The demo pins the store it was started with: PostgreSQL when EHRBENCH_DATABASE_URL is set.
    const report = initHome({ home: opts.home, database: opts.env.EHRBENCH_DATABASE_URL?.trim() ? 'postgres' : 'embedded' });
    opts.log(`initialised ${report.home} (${report.created.length} files)`);
  }
  const app = await openApp({ file, env: opts.env, consoleLog: false });
  try {
    // The demo runs as the operating-system account's principal, in its researcher role.
    const requester = await new Operations(app).require(localCaller(app), 'run.request');
    const endpoint = app.endpoints().get(DEMO_ENDPOINT_ID);
    const port = Number(new URL(endpoint.url).port);
    const keys = app.config.keysDir;
    const server = await startModelServer({
      certPem: readFileSync(join(keys, 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(keys, 'demo-model-server.key.pem'), 'utf8'),
      port,
    }).catch((err: NodeJS.ErrnoException) => {
      throw new UserError('demo.port-in-use', `demo model server cannot listen on 127.0.0.1:${port} (${err.code ?? 'error'}); free the port or change it in ${endpoint.policyFile}`);
    });
    opts.log(`demo model server (deterministic stand-in, not a model) at ${endpoint.url}`);
    try {
      const summaries: RunSummary[] = [];
      for (const benchmarkId of DEMO_BENCHMARKS) {
        const started = performance.now();
        const run = await requestRun(app.engine, {
          benchmarkId,
          endpointId: DEMO_ENDPOINT_ID,
          requester,
          purpose: 'demo',
          ...(opts.maxInstances ? { maxInstances: opts.maxInstances } : {}),
        });
        opts.onRun?.(run.run_id);
        const progress = opts.follow?.(benchmarkId, () => readProgress(app.engine.store, run.run_id));
        const summary = await executeRun(app.engine, run.run_id, opts.signal ? { signal: opts.signal } : {}).finally(() => progress?.stop());
        if (opts.signal?.aborted) break;
        summaries.push(summary);
        opts.log(`${benchmarkId}: ${summary.counts.done} instances in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      }
      return { store: app.store, endpoint: DEMO_ENDPOINT_ID, summaries };
    } finally {
      await server.close();
    }
  } finally {
    await app.close();
  }
}
