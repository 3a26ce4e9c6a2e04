/**
 * The plain-HTTP listener on 127.0.0.1 (server.healthPort): /health and /ready for probes that
 * cannot present a client certificate (a container HEALTHCHECK, systemd, a load balancer on the same
 * host), and /metrics for a Prometheus scraper on the same host when server.healthPortMetrics is on.
 * It is bound to loopback only: whoever can reach it is already on the host. Metrics carry no patient
 * data, but they do show activity (which benchmarks ran, how much), so they stay off unless enabled.
 */
import { createServer, type Server } from 'node:http';
import { metricsText } from './registry';

export interface LocalListenerOptions {
  port: number;
  /** Serve /metrics too (default false). */
  metrics: boolean;
  /** Readiness: resolves true when the process can do its work (the store answers). */
  ready: () => Promise<boolean>;
  /** The rule that stopped the process's audit trail (a rollback), named on /health and /ready. */
  stoppedBy?: () => string | undefined;
}

export const LOOPBACK = '127.0.0.1';

export async function startLocalListener(opts: LocalListenerOptions): Promise<Server> {
  const server = createServer((req, res) => {
    const send = (status: number, type: string, body: string) => res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
    const json = (status: number, body: unknown) => send(status, 'application/json', JSON.stringify(body));
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { status: 'method not allowed' });
    const path = (req.url ?? '/').split('?')[0];
    // Alive but stopped: a restart would stop again, so /health stays 200 and says why.
    const rule = opts.stoppedBy?.();
    if (path === '/health') return json(200, rule ? { status: 'audit-stopped', rule } : { status: 'ok' });
    if (path === '/ready') {
      if (rule) return json(503, { status: 'not ready', rule });
      return void opts.ready().then(
        (ok) => json(ok ? 200 : 503, { status: ok ? 'ready' : 'not ready' }),
        () => json(503, { status: 'not ready' }),
      );
    }
    if (path === '/metrics' && opts.metrics) {
      return void metricsText().then(
        (m) => send(200, m.contentType, m.body),
        () => json(500, { status: 'metrics unavailable' }),
      );
    }
    return json(404, { status: 'not found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, LOOPBACK, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
