/**
 * A health probe for places without a shell or curl (the container image's HEALTHCHECK, Kubernetes
 * exec probes): `node dist/observability/probe-main.js [PORT] [/health|/ready]` asks the local
 * listener on 127.0.0.1 and exits 0 on HTTP 200, 1 otherwise. PORT defaults to EHRBENCH_HEALTH_PORT.
 */
import { request } from 'node:http';

const PATHS = ['/health', '/ready'];

function main(argv: string[], env: NodeJS.ProcessEnv): void {
  const port = Number(argv[0] ?? env.EHRBENCH_HEALTH_PORT);
  const path = argv[1] ?? '/ready';
  if (!Number.isInteger(port) || port < 1 || port > 65535 || !PATHS.includes(path)) {
    process.stderr.write('usage: probe-main.js PORT [/health|/ready] (or set EHRBENCH_HEALTH_PORT)\n');
    process.exit(2);
  }
  const req = request({ host: '127.0.0.1', port, path, method: 'GET', timeout: 3000 }, (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', () => process.exit(1));
  req.end();
}

main(process.argv.slice(2), process.env);
