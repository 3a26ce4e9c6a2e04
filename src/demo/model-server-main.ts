/**
 * The loopback model server as its own process, for benchmarks and the reliability suite: the model
 * side must not share the measured process's CPU. Usage:
 *   node dist/demo/model-server-main.js CERT KEY PORT LATENCY_MS [faults]
 * "faults" injects transient 429/500/hangs (see faults.ts). Prints "ready <port>" when listening; on
 * SIGTERM prints the faults injected ("faults 429=.. 500=.. hang=..") and stops.
 */
import { readFileSync } from 'node:fs';
import { transientFaults } from './faults';
import { startModelServer } from './model-server';

async function serve(): Promise<void> {
  const [cert, key, port, latency, mode] = process.argv.slice(2);
  if (!cert || !key || !port) {
    process.stderr.write('usage: model-server-main CERT KEY PORT [LATENCY_MS] [faults]\n');
    process.exit(2);
  }
  const faults = mode === 'faults' ? transientFaults() : undefined;
  const server = await startModelServer({
    certPem: readFileSync(cert, 'utf8'),
    keyPem: readFileSync(key, 'utf8'),
    port: Number(port),
    latencyMs: Number(latency ?? 0),
    ...(faults ? { behaviour: faults.behaviour } : {}),
  });
  process.stdout.write(`ready ${server.port}\n`);
  process.on('SIGTERM', () => {
    if (faults) process.stdout.write(`faults 429=${faults.counts.tooMany} 500=${faults.counts.serverError} hang=${faults.counts.hang}\n`);
    void server.close().then(() => process.exit(0));
  });
}

void serve();
