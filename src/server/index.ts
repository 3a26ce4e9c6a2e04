/**
 * The daemon's HTTPS API (fastify): mutual TLS (TLS 1.2+, client certificates from the configured CAs
 * only), a principal for every request, a request schema on every route (unknown fields are a 400,
 * never silently dropped; size-limited bodies) and a response schema that serialises only listed
 * fields, rate limits per principal and, for refused identities, per client address and certificate
 * (src/server/denials.ts), request, header and idle timeouts enforced within a second, caps on the
 * connections held open in total and per client certificate (src/server/connections.ts), health and
 * readiness, and a graceful shutdown that stops the workers and seals the audit trail.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Server as HttpServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { App } from '../app';
import type { EndpointPolicy } from '../egress';
import { connectionsCheckingIntervalMs } from '../config';
import { formatSchemaErrors, requestValidator } from '../schema';
import { type ErrorCode, errorEntry, PolicyDenied, UserError, describeError } from '../errors';
import { type Caller, Operations } from '../operations';
import { RunScheduler } from '../runs';
import { registerBrowserSecurity } from '../console';
import { enableProcessMetrics, metricsText, observeStore, restrictLabelsToPolicies, startLocalListener } from '../observability';
import { pemFingerprints, serviceActor } from '../identity';
import { limitConnections } from './connections';
import { DenialLimiter } from './denials';
import { isSiteFault, SERVICE_UNAVAILABLE_MESSAGE, SiteFaultLog } from './faults';
import { refuseUnverifiedClients } from './handshake';
import { identify, type IdentifyOptions } from './identity';
import { apiSchema, servedOpenApi } from './openapi';
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
  /** The node HTTPS server (its timeouts are the configuration's). */
  server: HttpsServer;
  close(): Promise<void>;
}

function readPem(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError(
      'server.tls-file-missing',
      `${file}: ${what} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); run "${commandPrefix()} pki init" or fix the server section of the config`,
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
  // A fault of the site's configuration or policies: the operators' to fix (the log has the detail).
  // The requester learns which benchmark or endpoint cannot be served when the error names one.
  if (isSiteFault(err)) return answer('service.unavailable', err.forRequester ?? SERVICE_UNAVAILABLE_MESSAGE);
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

/** The client address as the audit trail may hold it (an IPv6 zone id is dropped). */
function clientAddress(req: FastifyRequest): string {
  const address = (req.ip ?? '').replace(/%.*$/, '');
  return /^[0-9A-Fa-f:.]{1,64}$/.test(address) ? address : 'unknown';
}

/**
 * The CAs whose certificates are issued outside ehrbench (the hospital's PKI): accepted without an
 * issuance record. The ehrbench site CA is never one of them, or its unrecorded certificates would pass.
 */
function externalIssuers(app: App): IdentifyOptions {
  const external = new Set(app.config.server.externalClientCaFiles.flatMap((f) => pemFingerprints(readPem(f, 'external client CA'))));
  const siteCa = join(app.config.pkiDir, 'ca.pem');
  const site = existsSync(siteCa) ? pemFingerprints(readPem(siteCa, 'site CA')) : [];
  if (site.some((fp) => external.has(fp))) {
    throw new UserError(
      'config.invalid',
      `${app.config.file}: server.externalClientCaFiles holds the ehrbench site CA (${siteCa}); its certificates are accepted only when recorded, list it in server.clientCaFiles instead`,
    );
  }
  return { externalIssuers: external };
}

/**
 * Test endpoints (the loopback stand-in of init --test-endpoints) said at start-up, so none stays by
 * mistake. An allowlist invalid at start has none to say: its own error is already in the log.
 */
function warnOfTestEndpoints(app: App): void {
  let endpoints: EndpointPolicy['endpoints'];
  try {
    endpoints = app.endpoints().endpoints;
  } catch {
    return;
  }
  for (const e of endpoints.filter((x) => x.test)) app.logger.warn('endpoint.test-configured', { endpointId: e.id, tier: e.classification.maxTier });
}

export async function startDaemon(app: App, opts: ServeOptions = {}): Promise<Daemon> {
  const cfg = app.config.server;
  const timeouts = cfg.timeouts;
  const identifyOptions = externalIssuers(app);
  const ops = new Operations(app);
  const scheduler = new RunScheduler(app.engine, { workers: opts.workers ?? cfg.workers, pollSeconds: cfg.pollSeconds, tick: () => app.canary.tick() });
  const server: FastifyInstance = Fastify({
    https: {
      key: readPem(cfg.keyFile, 'server key'),
      cert: readPem(cfg.certFile, 'server certificate'),
      ca: [...cfg.clientCaFiles.map((f) => readPem(f, 'client CA')), ...cfg.externalClientCaFiles.map((f) => readPem(f, 'external client CA'))],
      requestCert: true,
      // Not Node's refusal, which destroys the socket before anyone can say why: refuseUnverifiedClients
      // (src/server/handshake.ts) destroys every unverified socket before HTTP reads from it, and logs it.
      rejectUnauthorized: false,
      minVersion: 'TLSv1.2',
      // A slow client holds a socket only so long: the TLS handshake and the headers each get
      // headersSeconds, the whole request requestSeconds (fastify sets the idle and keep-alive ones).
      handshakeTimeout: timeouts.headersSeconds * 1000,
      headersTimeout: timeouts.headersSeconds * 1000,
      requestTimeout: timeouts.requestSeconds * 1000,
      // Node enforces the two above only when it looks (every 30 s by default): look often enough
      // that a client is closed within a second of its timeout (src/config/server-timeouts.ts).
      connectionsCheckingInterval: connectionsCheckingIntervalMs(timeouts),
    },
    requestTimeout: timeouts.requestSeconds * 1000,
    keepAliveTimeout: timeouts.keepAliveSeconds * 1000,
    connectionTimeout: timeouts.idleSeconds * 1000,
    bodyLimit: cfg.bodyLimitBytes,
    logger: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  // Installed before anything listens on the server: an unverified client never reaches HTTP, and
  // a certificate holds only so many sockets. The caps first: both prepend their listener, so the
  // refusal of unverified clients runs before the count (src/server/connections.ts).
  limitConnections(server.server as unknown as HttpsServer, { maxConnections: cfg.maxConnections, maxConnectionsPerCertificate: cfg.maxConnectionsPerCertificate }, app.logger);
  refuseUnverifiedClients(server.server as unknown as HttpsServer, app.logger);

  // Bodies: strict (no coercion, unknown fields rejected). Query strings and params: coerced from text.
  server.setValidatorCompiler(({ schema, httpPart }) => requestValidator(schema as Record<string, unknown>, httpPart === 'body' ? 'body' : 'text') as never);
  const faults = new SiteFaultLog(app.logger);
  server.setErrorHandler((err, req, reply) => {
    const { status, body } = errorReply(err);
    if (isSiteFault(err)) faults.report(err, { method: req.method, route: req.routeOptions?.url ?? 'unmatched' });
    else if (status >= 500) app.logger.error('server.error', { err });
    void reply.code(status).send(body);
  });
  // JSON only: a text/plain body is a 415, not a string that happens to fail the schema.
  server.removeContentTypeParser('text/plain');
  server.setNotFoundHandler((_req, reply) => {
    const { status, body } = answer('route.not-found', 'no such route');
    void reply.code(status).send(body);
  });

  // Refused identities: limited per address and certificate, and aggregated, before the trail sees them.
  const denials = new DenialLimiter({ max: cfg.rateLimit.deniedMax, windowMs: cfg.rateLimit.windowSeconds * 1000, record: (event) => app.audit.record(event) });
  server.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.url === '/health' || req.url === '/ready') return;
    // The policy files IT edits on the host (principals, site data, endpoints) are looked at before
    // each request, before its certificate is mapped: the request after an edit (a certificate signed
    // on the host, a binding) uses it, recorded first; a broken edit keeps the last good version and
    // is logged. config.json is not: a change to it is logged as needing a restart.
    await app.refreshPolicies();
    const who = await identify(app, req.raw.socket as TLSSocket, identifyOptions);
    if (!who.ok) {
      const peer = who.peer;
      const refusal = {
        rule: who.rule,
        reason: who.reason,
        address: clientAddress(req),
        ...(peer ? { certificate: { fingerprint: peer.fingerprint, serial: peer.serial, issuerFingerprint: peer.issuerFingerprint } } : {}),
        // (principals.json requires at least one role; the first names the holder in the trail.)
        ...(who.principal ? { holder: { principal: who.principal.id, role: who.principal.roles[0] ?? 'researcher', authMethod: 'mtls' as const } } : {}),
      };
      const limited = await denials.refused(refusal);
      const { status, body } = limited
        ? answer(
            'request.rate-limited',
            `more than ${cfg.rateLimit.deniedMax} refused requests in ${cfg.rateLimit.windowSeconds} s from this address or certificate; slow down`,
            'identity.denials-rate-limited',
          )
        : answer('identity.denied', who.reason, who.rule);
      // The socket goes with the answer: a refused certificate (revoked, unknown) cannot keep it
      // open by sending one refused request after another.
      return reply.code(status).header('connection', 'close').send(body);
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

  // The browser's own threats (forged cross-site requests, framing, caching) and the console's pages.
  let listening = 0;
  await registerBrowserSecurity(server, app, { pages: cfg.console, serverCertPem: readPem(cfg.certFile, 'server certificate'), port: () => listening });
  registerRoutes(server, app, ops, scheduler, apiSchema);
  // Prometheus metrics for operators and auditors (a scraper gets a client certificate of its own).
  // Not audited when served: a scrape every few seconds would drown the trail, and metrics hold no
  // patient data; a refusal is audited like any other (access.denied).
  restrictLabelsToPolicies(app);
  observeStore(app.db);
  enableProcessMetrics();
  server.get('/metrics', async (req, reply) => {
    await ops.require(req.caller as Caller, 'metrics.read');
    const m = await metricsText();
    return reply.type(m.contentType).header('cache-control', 'no-store').send(m.body);
  });
  // The API's OpenAPI document (src/server/openapi.ts), for any authenticated principal: no data in it.
  server.get('/v1/openapi.json', async (_req, reply) => reply.type('application/json').send(await servedOpenApi()));

  const port = opts.port ?? cfg.port;
  const host = opts.host ?? cfg.host;
  // The chain must still hold what the witnesses saw. If it does not (a rollback), the trail stops and
  // the daemon stays up only to say so (/health, /ready, the log): nothing is recorded, so nothing is
  // done, and no run is started.
  const stopped = await app.audit.checkWitnessedHead();
  await server.listen({ port, host });
  const address = server.server.address() as { port: number };
  listening = address.port;

  let health: HttpServer | undefined;
  const healthPort = opts.healthPort ?? cfg.healthPort;
  if (healthPort !== undefined) {
    // Probes that cannot present a certificate, on loopback only; /metrics there only when enabled.
    const ready = () => app.db.query('SELECT seq FROM audit_head').then(() => true);
    try {
      health = await startLocalListener({ port: healthPort, metrics: cfg.healthPortMetrics, ready, stoppedBy: () => app.audit.unavailable()?.rule });
    } catch (err) {
      await server.close();
      await denials.close();
      await scheduler.stop();
      throw new UserError(
        'server.health-port-unavailable',
        `127.0.0.1:${healthPort}: the health port cannot be opened (${(err as NodeJS.ErrnoException).code ?? 'error'}); choose another server.healthPort`,
      );
    }
  }
  const healthAddress = health?.address();
  // Recorded once everything listens: a start that failed (the health port in use) is no daemon.start.
  if (!stopped) {
    try {
      await app.audit.record({ type: 'daemon.start', action: 'E', outcome: 'success', rule: 'daemon.start', actor: serviceActor('daemon'), detail: { port: address.port } });
    } catch (err) {
      await server.close();
      health?.close();
      await denials.close();
      throw err;
    }
    scheduler.start();
    warnOfTestEndpoints(app);
  }

  let closing: Promise<void> | undefined;
  return {
    url: `https://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}`,
    port: address.port,
    ...(healthAddress && typeof healthAddress === 'object' ? { healthPort: healthAddress.port } : {}),
    scheduler,
    server: server.server as unknown as HttpsServer,
    close: () =>
      (closing ??= (async () => {
        await server.close();
        health?.close();
        await denials.close();
        await scheduler.stop();
        await app.audit.record({ type: 'daemon.stop', action: 'E', outcome: 'success', rule: 'daemon.stop', actor: serviceActor('daemon') }).catch(() => undefined);
        // A trail that stopped itself is not sealed: sealing over a rollback is what it refuses.
        if (!app.audit.unavailable()) await app.audit.seal();
      })()),
  };
}
