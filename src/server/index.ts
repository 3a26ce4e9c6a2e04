/**
 * The daemon's HTTPS API (fastify): mutual TLS (TLS 1.2+, client certificates from the configured CAs
 * only), a principal for every request, a request schema on every route (unknown fields are a 400,
 * never silently dropped; size-limited bodies) and a response schema that serialises only listed
 * fields, rate limits per principal, health and readiness, and a graceful shutdown that stops the
 * workers and seals the audit trail.
 */
import { readFileSync } from 'node:fs';
import type { Server as HttpServer } from 'node:http';
import type { TLSSocket } from 'node:tls';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { App } from '../app';
import { formatSchemaErrors, loadSchema, requestValidator } from '../config';
import { type ErrorCode, errorEntry, PolicyDenied, UserError, describeError } from '../errors';
import { type Caller, Operations } from '../operations';
import { RunScheduler } from '../runs';
import { enableProcessMetrics, metricsText, observeStore, restrictIds, startLocalListener } from '../observability';
import { serviceActor } from '../identity';
import { identify } from './identity';
import { registerRoutes } from './routes';

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

export interface Daemon {
  url: string;
  port: number;
  /** The loopback health listener's port, when one is open. */
  healthPort?: number;
  scheduler: RunScheduler;
  close(): Promise<void>;
}

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError(
      'server.tls-file-missing',
      `${file}: ${what} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); run "ehrbench pki init" or fix the server section of the config`,
    );
  }
}

type ErrorBody = { error: string; rule?: string; message: string };

/** An answer whose status is the catalogue's for its code. */
const answer = (code: ErrorCode, message: string, rule?: string): { status: number; body: ErrorBody } => ({
  status: errorEntry(code).status,
  body: { error: code, ...(rule ? { rule } : {}), message },
});

/**
 * Maps an error to a status and a one-line body; never a stack trace, never data. The status is the
 * error catalogue's for the code (src/error-codes.ts); anything that is not an ehrbench error, or
 * carries a code the catalogue does not know, is an internal error (500).
 */
export function errorReply(err: unknown): { status: number; body: ErrorBody } {
  const e = err as { validation?: unknown; statusCode?: number; code?: string; validationContext?: string };
  if (e?.validation) {
    const lines = formatSchemaErrors(e.validation as never).map((l) => l.replace(/^\/: unknown key/, 'unknown field').replace(/^\//, `${e.validationContext ?? 'body'} /`));
    return answer('request.invalid', lines.join('; ') || 'request does not match its schema');
  }
  if (err instanceof PolicyDenied) return answer('policy.denied', err.message, err.rule);
  if (err instanceof UserError) return { status: errorEntry(err.code).status, body: { error: err.code, message: err.message } };
  // fastify's own refusals of a request, before any route ran.
  if (e?.statusCode === 413 || e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return answer('request.too-large', 'request body exceeds the size limit');
  if (e?.statusCode === 415 || e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return answer('request.media-type', 'send application/json');
  if (e?.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return answer('request.invalid', e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || e.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'body is not valid JSON' : `request refused (${e.code ?? e.statusCode})`);
  }
  return answer('internal', describeError(err).message);
}

export interface ServeOptions {
  /** Override the configured port (tests use 0). */
  port?: number;
  host?: string;
  workers?: number;
  /** Open the loopback health listener on this port instead of the configured one (tests use 0: any free port). */
  healthPort?: number;
}

export async function startDaemon(app: App, opts: ServeOptions = {}): Promise<Daemon> {
  const cfg = app.config.server;
  const ops = new Operations(app);
  const scheduler = new RunScheduler(app.engine, { workers: opts.workers ?? cfg.workers, pollSeconds: cfg.pollSeconds });
  const server: FastifyInstance = Fastify({
    https: {
      key: readPem(cfg.keyFile, 'server key'),
      cert: readPem(cfg.certFile, 'server certificate'),
      ca: cfg.clientCaFiles.map((f) => readPem(f, 'client CA')),
      requestCert: true,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
    },
    bodyLimit: cfg.bodyLimitBytes,
    logger: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  // Bodies: strict (no coercion, unknown fields rejected). Query strings and params: coerced from text.
  server.setValidatorCompiler(({ schema, httpPart }) => requestValidator(schema as Record<string, unknown>, httpPart === 'body' ? 'body' : 'text') as never);
  server.setErrorHandler((err, _req, reply) => {
    const { status, body } = errorReply(err);
    if (status >= 500) app.logger.error('server.error', { err });
    void reply.code(status).send(body);
  });
  // JSON only: a text/plain body is a 415, not a string that happens to fail the schema.
  server.removeContentTypeParser('text/plain');
  server.setNotFoundHandler((_req, reply) => {
    const { status, body } = answer('route.not-found', 'no such route');
    void reply.code(status).send(body);
  });

  server.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.url === '/health' || req.url === '/ready') return;
    const who = await identify(app, req.raw.socket as TLSSocket);
    if (!who.ok) {
      await app.audit.record({ type: 'access.denied', action: 'E', outcome: 'denied', rule: who.rule, reason: who.reason.slice(0, 200), actor: serviceActor('daemon') }).catch(() => undefined);
      const { status, body } = answer('identity.denied', who.reason, who.rule);
      return reply.code(status).send(body);
    }
    req.caller = { principal: who.principal, authMethod: 'mtls' };
  });
  await server.register(rateLimit, {
    hook: 'preHandler',
    max: cfg.rateLimit.max,
    timeWindow: cfg.rateLimit.windowSeconds * 1000,
    keyGenerator: (req) => req.caller?.principal.id ?? req.ip,
    // Thrown by the plugin, so the error handler answers it like any other (429 from the catalogue).
    errorResponseBuilder: (_req, ctx) => new UserError('request.rate-limited', `more than ${ctx.max} requests in ${Math.round(ctx.ttl / 1000)} s; slow down`),
  });

  registerRoutes(server, app, ops, scheduler, (name) => {
    const schema = loadSchema(name);
    delete schema.$schema;
    delete schema.title;
    return schema;
  });
  // Prometheus metrics for operators and auditors (a scraper gets a client certificate of its own).
  // Not audited when served: a scrape every few seconds would drown the trail, and metrics hold no
  // patient data; a refusal is audited like any other (access.denied).
  restrictIds({ benchmarks: app.catalog.list().map((b) => b.definition.id), endpoints: app.endpoints.endpoints.map((e) => e.id) });
  observeStore(app.db);
  enableProcessMetrics();
  server.get('/metrics', async (req, reply) => {
    await ops.asAny(req.caller as Caller, ['admin', 'auditor'], 'reading metrics');
    const m = await metricsText();
    return reply.type(m.contentType).header('cache-control', 'no-store').send(m.body);
  });

  const port = opts.port ?? cfg.port;
  const host = opts.host ?? cfg.host;
  await server.listen({ port, host });
  const address = server.server.address() as { port: number };
  await app.audit.record({ type: 'daemon.start', action: 'E', outcome: 'success', rule: 'daemon.start', actor: serviceActor('daemon'), detail: { port: address.port } });
  scheduler.start();

  let health: HttpServer | undefined;
  const healthPort = opts.healthPort ?? cfg.healthPort;
  if (healthPort !== undefined) {
    // Probes that cannot present a certificate, on loopback only; /metrics there only when enabled.
    const ready = () => app.db.query('SELECT seq FROM audit_head').then(() => true);
    try {
      health = await startLocalListener({ port: healthPort, metrics: cfg.healthPortMetrics, ready });
    } catch (err) {
      await server.close();
      await scheduler.stop();
      throw new UserError(
        'server.health-port-unavailable',
        `127.0.0.1:${healthPort}: the health port cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'}); choose another server.healthPort`,
      );
    }
  }
  const healthAddress = health?.address();

  let closing: Promise<void> | undefined;
  return {
    url: `https://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`,
    port: address.port,
    ...(healthAddress && typeof healthAddress === 'object' ? { healthPort: healthAddress.port } : {}),
    scheduler,
    close: () =>
      (closing ??= (async () => {
        await server.close();
        health?.close();
        await scheduler.stop();
        await app.audit.record({ type: 'daemon.stop', action: 'E', outcome: 'success', rule: 'daemon.stop', actor: serviceActor('daemon') }).catch(() => undefined);
        await app.audit.seal();
      })()),
  };
}
