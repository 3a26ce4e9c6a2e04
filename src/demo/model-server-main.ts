/**
 * The loopback model server as its own process, for benchmarks: the model side must not share the
 * measured process's CPU. Usage: node dist/demo/model-server-main.js CERT KEY PORT LATENCY_MS
 * Prints "ready <port>" when listening; stops on SIGTERM.
 */
import { readFileSync } from 'node:fs';
import { startModelServer } from './model-server';

async function serve(): Promise<void> {
  const [cert, key, port, latency] = process.argv.slice(2);
  if (!cert || !key || !port) {
    process.stderr.write('usage: model-server-main CERT KEY PORT [LATENCY_MS]\n');
    process.exit(2);
  }
  const server = await startModelServer({
    certPem: readFileSync(cert, 'utf8'),
    keyPem: readFileSync(key, 'utf8'),
    port: Number(port),
    latencyMs: Number(latency ?? 0),
  });
  process.stdout.write(`ready ${server.port}\n`);
  process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
}

void serve();
