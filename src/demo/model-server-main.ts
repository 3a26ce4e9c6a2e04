/**
 * The loopback model server as its own process, in the foreground until SIGTERM or SIGINT: for the
 * benchmarks and the reliability suite (the model side must not share the measured process's CPU),
 * and behind `ehrbench demo-server` (the test endpoints of `ehrbench init --test-endpoints`). Usage:
 *   node dist/demo/model-server-main.js CERT KEY PORT LATENCY_MS [faults|jury]
 * "faults" injects transient 429/500/hangs (see faults.ts); "jury" answers LLM-jury prompts with
 * valid scores (bench:run --jury). Prints "ready <port>" when listening; on SIGTERM prints the faults
 * injected ("faults 429=.. 500=.. hang=..") and stops.
 */
import { readFileSync } from 'node:fs';
import { transientFaults } from './faults';
import { type Behaviour, type ModelServer, startModelServer } from './model-server';

export interface ForegroundOptions {
  certPem: string;
  keyPem: string;
  port: number;
  latencyMs?: number;
  /** Inject transient faults (benchmarks); their counts are printed at the end. */
  faults?: boolean;
  /** Answer LLM-jury prompts as a judge would: valid JSON scores (the jury benchmark of bench:run). */
  jury?: boolean;
  /** Told once the server listens. */
  onReady: (server: ModelServer) => void;
  /** Told the last line to print when a signal stops it. */
  onStop?: (line: string | undefined) => void;
}

/** A judge's verdict on the three MedHELM criteria for a jury prompt; the stand-in's answer otherwise. */
export function judgeBehaviour(_n: number, prompt: string): Behaviour {
  if (!prompt.includes('<gold_response>')) return { kind: 'answer' };
  const score = (name: string, k: number) => `"${name}": {"score": ${1 + ((prompt.length + k) % 5)}, "explanation": "stand-in judge"}`;
  return { kind: 'answer', text: `{${score('accuracy', 0)}, ${score('completeness', 1)}, ${score('clarity', 2)}}` };
}

/** Serves until SIGTERM or SIGINT, then closes; resolves once closed. Rejects when it cannot listen. */
export async function serveInForeground(opts: ForegroundOptions): Promise<void> {
  const faults = opts.faults ? transientFaults() : undefined;
  const server = await startModelServer({
    certPem: opts.certPem,
    keyPem: opts.keyPem,
    port: opts.port,
    latencyMs: opts.latencyMs ?? 0,
    ...(faults ? { behaviour: faults.behaviour } : opts.jury ? { behaviour: judgeBehaviour } : {}),
  });
  opts.onReady(server);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  opts.onStop?.(faults ? `faults 429=${faults.counts.tooMany} 500=${faults.counts.serverError} hang=${faults.counts.hang}` : undefined);
  await server.close();
}

async function serveFromArgv(): Promise<void> {
  const [cert, key, port, latency, mode] = process.argv.slice(2);
  if (!cert || !key || !port) {
    process.stderr.write('usage: model-server-main CERT KEY PORT [LATENCY_MS] [faults|jury]\n');
    process.exit(2);
  }
  await serveInForeground({
    certPem: readFileSync(cert, 'utf8'),
    keyPem: readFileSync(key, 'utf8'),
    port: Number(port),
    latencyMs: Number(latency ?? 0),
    faults: mode === 'faults',
    jury: mode === 'jury',
    onReady: (server) => process.stdout.write(`ready ${server.port}\n`),
    onStop: (line) => {
      if (line) process.stdout.write(`${line}\n`);
    },
  });
  process.exit(0);
}

// Run as a script (benchmarks, the reliability suite); imported by `ehrbench demo-server`.
if (require.main === module) void serveFromArgv();
