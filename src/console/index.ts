/**
 * The web console: pages for each role, served by the daemon on its mutual-TLS listener. The browser
 * presents the principal's client certificate, exactly as the CLI does; the page is one more face on
 * the API (every action is an API call through the same operation and policy gate, every answer is
 * the API's response schema). This module owns what a browser adds to the API's threats:
 *
 * - security headers on every answer (helmet): a Content-Security-Policy with no inline script or
 *   style and no other origin, no framing, no sniffing, no referrer, same-origin resources only, and
 *   no caching of API answers;
 * - cross-site request forgery (./guard.ts): fetch metadata and Origin checks on every browser
 *   request, and a per-session token (@fastify/csrf, bound to the principal and its certificate) on
 *   every state-changing one, signed with a key every daemon of the site derives alike (tokenKey);
 *   refusals are audited and name their rule;
 * - the pages' assets, built by esbuild at build time into dist/console-pages (no other origin at run time).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { hkdfSync, X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import CSRF from '@fastify/csrf';
import cookie from '@fastify/cookie';
import helmet from '@fastify/helmet';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../app';
import { loadMacKeys } from '../audit';
import { PolicyDenied, UserError } from '../errors';
import { PACKAGE_ROOT } from '../paths';
import type { Caller } from '../operations';
import { mayAttempt, type RuleId } from '../policy';
import { decideBrowserRequest, needsToken, ownOrigins } from './guard';

export { decideBrowserRequest, isBrowserRequest, needsToken, ownOrigins, type BrowserHeaders, type GuardDecision, type RequestTarget } from './guard';

/** Where `npm run build` puts the pages (src/console/build.ts). */
export const CONSOLE_ASSETS = join(PACKAGE_ROOT, 'dist', 'console-pages');
const SESSION_COOKIE = '__Host-ehrbench-console';
export const TOKEN_HEADER = 'x-ehrbench-csrf';

export interface BrowserSecurityOptions {
  /** Serve the pages (server.console). The headers and the forgery checks apply either way. */
  pages: boolean;
  /** The daemon's certificate: its names are the daemon's origins. */
  serverCertPem: string;
  /** The port the daemon listens on (known once it listens: a getter). */
  port: () => number;
}

/** The policy of every answer: the console loads only what the daemon serves, runs no inline code. */
const CONTENT_SECURITY_POLICY = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'"],
    connectSrc: ["'self'"],
    fontSrc: ["'none'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
    objectSrc: ["'none'"],
  },
};

function certificateFingerprint(req: FastifyRequest): string {
  const cert = (req.raw.socket as TLSSocket).getPeerCertificate?.();
  return cert?.fingerprint256 ?? '';
}

/**
 * The key the session tokens are signed with: derived (HKDF-SHA256) from the current audit MAC key,
 * which every daemon writing the site's trail holds. So two API replicas behind one address accept
 * each other's tokens, and a restart does not end the console's sessions; the MAC key cannot be had
 * back from it. A MAC key rotated under one replica only gives "reload the console" until the others
 * restart with it.
 */
function tokenKey(app: App): Buffer {
  return Buffer.from(hkdfSync('sha256', loadMacKeys(app.config.keysDir).current.key, Buffer.alloc(0), 'ehrbench console session token key v1', 32));
}

/** The token is bound to who (principal) and with what (this certificate): another's cookie is no use. */
const userInfo = (req: FastifyRequest) => `${(req.caller as Caller).principal.id}|${certificateFingerprint(req)}`;

export async function registerBrowserSecurity(server: FastifyInstance, app: App, opts: BrowserSecurityOptions): Promise<void> {
  if (opts.pages && !existsSync(join(CONSOLE_ASSETS, 'index.html'))) {
    throw new UserError('server.console-assets-missing', `${CONSOLE_ASSETS}/index.html is missing: run "npm run build", or set server.console to false in the config`);
  }
  const names = new X509Certificate(opts.serverCertPem).subjectAltName;
  let origins: Set<string> | undefined;
  const own = () => (origins ??= ownOrigins(names, opts.port()));
  const tokens = new CSRF({ userInfo: true, hmacKey: tokenKey(app) });

  await server.register(helmet, {
    global: true,
    contentSecurityPolicy: CONTENT_SECURITY_POLICY,
    crossOriginResourcePolicy: { policy: 'same-origin' },
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginEmbedderPolicy: { policy: 'require-corp' },
    referrerPolicy: { policy: 'no-referrer' },
    frameguard: { action: 'deny' },
    // The daemon is HTTPS only; HSTS keeps a browser from ever trying it in the clear.
    strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: false },
  });
  await server.register(cookie);

  const refuse = async (req: FastifyRequest, rule: RuleId, reason: string): Promise<never> => {
    const caller = req.caller as Caller;
    await app.audit.record({
      type: 'access.denied',
      action: 'E',
      outcome: 'denied',
      rule,
      reason,
      actor: { principal: caller.principal.id, role: caller.principal.roles[0] ?? 'researcher', authMethod: caller.authMethod },
    });
    throw new PolicyDenied(rule, reason);
  };

  // After identity (registered before this): only a known principal's browser gets this far.
  server.addHook('onRequest', async (req: FastifyRequest) => {
    if (!req.caller) return;
    const h = req.headers;
    const decision = decideBrowserRequest(
      {
        origin: typeof h.origin === 'string' ? h.origin : undefined,
        secFetchSite: typeof h['sec-fetch-site'] === 'string' ? h['sec-fetch-site'] : undefined,
        secFetchMode: typeof h['sec-fetch-mode'] === 'string' ? h['sec-fetch-mode'] : undefined,
        cookie: typeof h.cookie === 'string' ? h.cookie : undefined,
      },
      own(),
      { method: req.method, path: req.url },
    );
    if (!decision.allowed) return refuse(req, decision.rule, decision.reason);
    if (!needsToken(req.method, decision.browser)) return;
    const secret = req.cookies[SESSION_COOKIE];
    const token = h[TOKEN_HEADER];
    if (!secret || typeof token !== 'string' || !tokens.verify(secret, token, userInfo(req))) {
      return refuse(req, 'console.csrf-token', `a browser's ${req.method} needs the console session's token in ${TOKEN_HEADER}; reload the console`);
    }
  });

  // API answers are never cached: they are one principal's view at one moment.
  server.addHook('onSend', async (req, reply: FastifyReply, payload) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    return payload;
  });

  if (!opts.pages) return;

  // The console's session: who you are, your roles, and the token for state-changing requests.
  server.get('/v1/console/session', { schema: { response: { 200: SESSION_SCHEMA } } }, async (req, reply) => {
    const caller = req.caller as Caller;
    let secret = req.cookies[SESSION_COOKIE];
    if (!secret) {
      secret = tokens.secretSync();
      reply.setCookie(SESSION_COOKIE, secret, { path: '/', secure: true, httpOnly: true, sameSite: 'strict' });
    }
    return {
      principal: caller.principal.id,
      displayName: caller.principal.displayName ?? null,
      roles: caller.principal.roles,
      // What the policy gate lets this person attempt: the menu and the pages offer these only; the API decides each request again.
      may: mayAttempt({ id: caller.principal.id, roles: caller.principal.roles }),
      csrfToken: tokens.create(secret, userInfo(req)),
      tokenHeader: TOKEN_HEADER,
    };
  });

  await server.register(fastifyStatic, {
    root: CONSOLE_ASSETS,
    prefix: '/console/',
    index: ['index.html'],
    // Pages change with each release; no-store keeps a browser from mixing two releases' files.
    cacheControl: false,
    etag: false,
    lastModified: false,
    dotfiles: 'deny',
    list: false,
  });
  server.get('/', async (_req, reply) => reply.redirect('/console/'));
  server.get('/console', async (_req, reply) => reply.redirect('/console/'));
  // Browsers ask for it on every page; no icon is a 204, not a 404 in the console's network log.
  server.get('/favicon.ico', async (_req, reply) => reply.code(204).send());
}

const SESSION_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['principal', 'displayName', 'roles', 'may', 'csrfToken', 'tokenHeader'],
  properties: {
    principal: { type: 'string' },
    displayName: { type: ['string', 'null'] },
    roles: { type: 'array', items: { type: 'string' } },
    may: { type: 'array', items: { type: 'string' } },
    csrfToken: { type: 'string' },
    tokenHeader: { type: 'string' },
  },
};
