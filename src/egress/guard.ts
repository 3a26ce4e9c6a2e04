/**
 * The egress guard: the only way a request leaves ehrbench. For one allowlisted endpoint it
 *   1. accepts a request URL only when it is canonical and exactly under the endpoint (url.ts);
 *   2. resolves the host once per connection (the `addresses` pin, the IP literal, or DNS with a
 *      timeout) and requires every answer to lie in the endpoint's allowedCidrs (resolve.ts);
 *   3. connects only to a checked address and verifies the socket's remote address, keeps the
 *      hostname for SNI and the certificate check, trusts only the endpoint's CA (or Node's bundled
 *      roots, never the process-wide store, so NODE_EXTRA_CA_CERTS widens nothing), enforces SPKI
 *      pins and presents client certificates when configured;
 *   4. never follows redirects, caps the (decoded) response size and the total time of a call, and
 *      keeps its connections to itself: one dispatcher per endpoint, no TLS session reuse.
 * Every refusal is an EgressDenied naming the endpoint, the rule and (when known) the address; it
 * never carries a request or response body.
 */
import type { RuleId } from '../policy';
import { X509Certificate, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import tls from 'node:tls';
import { Agent, type Dispatcher, Response as UndiciResponse, buildConnector } from 'undici';
import { UserError } from '../errors';
import { canonicalAddress } from './addresses';
import type { Endpoint } from '../contracts';
import { EgressAborted, EgressDenied } from './errors';
import { observeEgressEvent } from '../observability';
import { type CheckedAddress, DEFAULT_DNS_TIMEOUT_MS, type EndpointOrigin, type Resolver, endpointOrigin, resolveChecked, systemResolver } from './resolve';
import { parseCanonicalUrl } from './url';

export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 120_000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Checks a request URL against the endpoint and returns it parsed. Refuses (EgressDenied) anything
 * that is not canonical https, names another host or port, is an IP literal when the endpoint is a
 * name, or leaves the endpoint's path.
 */
export function checkRequestUrl(endpoint: Endpoint, raw: string): URL {
  const parsed = parseCanonicalUrl(raw);
  if ('problem' in parsed) throw new EgressDenied(parsed.problem.rule, parsed.problem.reason, endpoint.id);
  const origin = endpointOrigin(endpoint);
  const denial = originMismatch(origin, parsed.canonical);
  if (denial) throw new EgressDenied(denial.rule, denial.reason, endpoint.id);
  return parsed.canonical.url;
}

/** Why a canonical URL is not under the endpoint's origin and path, or undefined when it is. */
export function originMismatch(origin: EndpointOrigin, c: { hostname: string; port: string; hostKind: string; url: URL }): { rule: RuleId; reason: string } | undefined {
  if (c.hostKind !== 'name' && origin.hostKind === 'name') {
    return { rule: 'egress.url.ip-literal', reason: `an IP-address host is refused; the endpoint is reached by its name ${origin.hostname}` };
  }
  if (c.hostname !== origin.hostname) return { rule: 'egress.url.host', reason: `host is not the endpoint's host ${origin.hostname}` };
  if (c.port !== origin.port) return { rule: 'egress.url.port', reason: `port ${c.port} is not the endpoint's port ${origin.port}` };
  const path = c.url.pathname.endsWith('/') ? c.url.pathname : `${c.url.pathname}/`;
  if (!path.startsWith(origin.pathPrefix)) return { rule: 'egress.url.path', reason: `path is outside the endpoint's path ${origin.pathPrefix}` };
  return undefined;
}

/** base64 sha256 of a certificate's SubjectPublicKeyInfo (the HPKP pin format). */
export function spkiSha256(certDer: Buffer): string {
  const spki = new X509Certificate(certDer).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(spki).digest('base64');
}

function readPem(file: string, what: string, endpointId: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError('policy.file-unreadable', `endpoint ${endpointId}: ${what} ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** What the guard reports for audit: ids, addresses, rules, certificate key hashes; never bodies. */
export type EgressEvent =
  | {
      type: 'egress.connected';
      endpointId: string;
      address: string;
      cidr: string;
      resolution: 'addresses' | 'ip-literal' | 'dns';
      tlsProtocol: string | null;
      trust: 'endpoint-ca' | 'bundled-roots';
      serverSpkiSha256: string | null;
      pinChecked: boolean;
    }
  | { type: 'egress.denied'; endpointId: string; rule: RuleId; address?: string };

export interface TransportOptions {
  /** DNS for endpoints without an `addresses` pin (tests inject one). */
  resolver?: Resolver;
  dnsTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Total time of one call, request to last response byte; the endpoint's limits.timeoutMs wins. */
  timeoutMs?: number;
  /** Largest decoded response body; the endpoint's limits.maxResponseBytes wins. */
  maxResponseBytes?: number;
  onEvent?: (event: EgressEvent) => void;
  /** The clock the total deadline is read from between decoding layers (tests inject one). */
  now?: () => number;
}

export interface EndpointTransport {
  endpoint: Endpoint;
  /** fetch for the official SDK: only this endpoint, only checked addresses, no redirects. */
  fetch: typeof globalThis.fetch;
  /**
   * entra-id endpoints only: a bearer-token function whose token traffic goes through the guarded
   * transport of the endpoint's allowlisted authority (entra.ts).
   */
  tokenProvider?: (env?: NodeJS.ProcessEnv) => () => Promise<string>;
  close(): Promise<void>;
}

/** TLS verification failures by OpenSSL/Node code, as guard rules. */
const TLS_RULES: Record<string, RuleId> = {
  ERR_TLS_CERT_ALTNAME_INVALID: 'egress.tls.name-mismatch',
  CERT_HAS_EXPIRED: 'egress.tls.expired',
  CERT_NOT_YET_VALID: 'egress.tls.not-yet-valid',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'egress.tls.untrusted',
  UNABLE_TO_GET_ISSUER_CERT: 'egress.tls.untrusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'egress.tls.untrusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'egress.tls.untrusted',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'egress.tls.untrusted',
  CERT_SIGNATURE_FAILURE: 'egress.tls.untrusted',
  CERT_UNTRUSTED: 'egress.tls.untrusted',
  CERT_REJECTED: 'egress.tls.untrusted',
  INVALID_CA: 'egress.tls.untrusted',
  INVALID_PURPOSE: 'egress.tls.untrusted',
};

/** Turns a TLS failure into a refusal naming its rule; other errors (refused, reset) pass through. */
function tlsDenial(err: unknown, endpointId: string, address: string): Error {
  if (err instanceof EgressDenied) return err;
  const code = (err as { code?: unknown })?.code;
  if (typeof code !== 'string') return err as Error;
  const rule: RuleId | undefined = TLS_RULES[code] ?? (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') ? 'egress.tls.handshake-failed' : undefined);
  if (!rule) return err as Error;
  return new EgressDenied(rule, `TLS verification failed (${code}); no request was sent`, endpointId, address);
}

/**
 * Builds the transport of one endpoint. Resolution happens once per connection inside the connector,
 * so a DNS answer that changes between connections is checked again, and the socket goes to the
 * address that was checked, whatever the name resolves to by then.
 */
export function createEndpointTransport(endpoint: Endpoint, opts: TransportOptions = {}): EndpointTransport {
  const origin = endpointOrigin(endpoint);
  const resolver = opts.resolver ?? systemResolver;
  const dnsTimeoutMs = opts.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  const totalMs = endpoint.limits?.timeoutMs ?? opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const now = opts.now ?? Date.now;
  const maxBytes = endpoint.limits?.maxResponseBytes ?? opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const trust = endpoint.tls?.caFile ? 'endpoint-ca' : 'bundled-roots';
  // An explicit trust set on every connection: the process-wide store is never consulted.
  const ca = endpoint.tls?.caFile ? readPem(endpoint.tls.caFile, 'caFile', endpoint.id) : [...tls.rootCertificates];
  const clientCert = endpoint.tls?.clientCertFile ? readPem(endpoint.tls.clientCertFile, 'clientCertFile', endpoint.id) : undefined;
  const clientKey = endpoint.tls?.clientKeyFile ? readPem(endpoint.tls.clientKeyFile, 'clientKeyFile', endpoint.id) : undefined;
  const pins = endpoint.tls?.spkiSha256;
  const report = (event: EgressEvent) => {
    observeEgressEvent(event);
    try {
      opts.onEvent?.(event);
    } catch {
      // A failing observer must not change the decision.
    }
  };

  // Runs only after the chain has verified against `ca`: the name check first, then the pins.
  const checkServerIdentity =
    (address: string) =>
    (host: string, cert: tls.PeerCertificate): Error | undefined => {
      const nameError = tls.checkServerIdentity(host, cert);
      if (nameError) return nameError;
      if (pins && !pins.includes(spkiSha256(cert.raw))) {
        return new EgressDenied('egress.tls.pin-mismatch', `server key matches none of the ${pins.length} configured spkiSha256 pins; no request was sent`, endpoint.id, address);
      }
      return undefined;
    };

  const connectTo = (checked: CheckedAddress) =>
    buildConnector({
      ca,
      ...(clientCert && clientKey ? { cert: clientCert, key: clientKey } : {}),
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      // SNI and the certificate check use the endpoint's name; the socket uses the checked address.
      servername: origin.hostKind === 'name' ? origin.hostname : undefined,
      checkServerIdentity: checkServerIdentity(checked.address),
      timeout: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      // A fresh connector per connection: no TLS session resumption, every handshake fully checked.
      maxCachedSessions: 0,
    } as buildConnector.BuildOptions);

  const connect: buildConnector.connector = (options, callback) => {
    resolveChecked(endpoint, resolver, dnsTimeoutMs).then(
      (resolution) => {
        const checked = resolution.addresses[0] as CheckedAddress;
        // The socket goes to the checked address itself (no second lookup that DNS could answer
        // differently); SNI and the name check still use the endpoint's host name.
        connectTo(checked)({ ...options, hostname: checked.address }, (err, socket) => {
          if (err || !socket) {
            const e = tlsDenial(err ?? new Error('no socket'), endpoint.id, checked.address);
            if (e instanceof EgressDenied) report({ type: 'egress.denied', endpointId: endpoint.id, rule: e.rule, address: checked.address });
            return callback(e, null);
          }
          const remote = canonicalAddress((socket as Socket).remoteAddress ?? '');
          if (!remote || !resolution.addresses.some((a) => a.address === remote)) {
            socket.destroy();
            report({ type: 'egress.denied', endpointId: endpoint.id, rule: 'egress.address.remote-mismatch', ...(remote ? { address: remote } : {}) });
            return callback(new EgressDenied('egress.address.remote-mismatch', 'the socket reached an address that was not checked', endpoint.id, remote ?? 'unknown'), null);
          }
          const peer = (socket as tls.TLSSocket).getPeerCertificate?.();
          report({
            type: 'egress.connected',
            endpointId: endpoint.id,
            address: remote,
            cidr: checked.cidr,
            resolution: resolution.source,
            tlsProtocol: (socket as tls.TLSSocket).getProtocol?.() ?? null,
            trust,
            serverSpkiSha256: peer?.raw ? spkiSha256(peer.raw) : null,
            pinChecked: Boolean(pins),
          });
          callback(null, socket);
        });
      },
      (err: unknown) => {
        if (err instanceof EgressDenied) {
          report({ type: 'egress.denied', endpointId: endpoint.id, rule: err.rule, ...(err.address ? { address: err.address } : {}) });
        }
        callback(err as Error, null);
      },
    );
  };

  // One dispatcher per endpoint: its connections are never shared with another endpoint.
  // undici's limits are backstops: the guard's own decoded-size count and total deadline (below)
  // fire first and carry the guard's rule.
  const agent = new Agent({
    connect,
    maxResponseSize: maxBytes * 2 + 65_536,
    headersTimeout: totalMs + 1000,
    bodyTimeout: totalMs + 1000,
  });

  const guardedFetch = async (input: unknown, init?: Record<string, unknown>): Promise<Response> => {
    // Strings and URLs only: a Request object would carry a method and body this call would drop.
    const raw = typeof input === 'string' ? input : input instanceof URL ? input.href : undefined;
    let url: URL;
    try {
      url = checkRequestUrl(endpoint, typeof raw === 'string' ? raw : '');
    } catch (err) {
      if (err instanceof EgressDenied) report({ type: 'egress.denied', endpointId: endpoint.id, rule: err.rule });
      throw err;
    }
    // The total deadline covers the body too: undici's own timers are idle timers that a server
    // dripping one byte at a time would keep resetting.
    const deadline = new AbortController();
    const expiresAt = now() + totalMs;
    const overdue = () => new EgressAborted('egress.deadline', `no complete answer within ${totalMs} ms; call aborted`, endpoint.id);
    const timer = setTimeout(() => deadline.abort(overdue()), totalMs);
    timer.unref();
    // The caller's signal (the SDK's per-request one) aborts the deadline's controller too.
    const callerSignal = init?.signal as AbortSignal | undefined;
    if (callerSignal?.aborted) deadline.abort(callerSignal.reason);
    else callerSignal?.addEventListener('abort', () => deadline.abort(callerSignal.reason), { once: true });
    const signal = deadline.signal;
    const finish = () => clearTimeout(timer);
    let response: Dispatcher.ResponseData;
    try {
      // undici's request() on the endpoint's own dispatcher rather than its fetch(): the same
      // connections and checks, without a WHATWG Request, body streams and stream tee per call,
      // which cost the daemon more CPU than the rest of a call's pipeline on a loaded host.
      response = await agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: requestMethod(init?.method),
        headers: requestHeaders(init?.headers),
        body: requestBody(init?.body, endpoint.id),
        signal,
      });
    } catch (err) {
      finish();
      if (deadline.signal.aborted) throw deadline.signal.reason;
      // The connector's refusal may come wrapped; callers get the refusal itself.
      throw guardCause(err) ?? err;
    }
    const refuse = (e: Error): never => {
      finish();
      discard(response.body);
      throw e;
    };
    const header = (name: string): string | undefined => {
      const v = response.headers[name];
      return Array.isArray(v) ? v.join(', ') : v;
    };
    if (response.statusCode >= 300 && response.statusCode < 400) {
      report({ type: 'egress.denied', endpointId: endpoint.id, rule: 'egress.redirect.refused' });
      refuse(
        new EgressDenied(
          'egress.redirect.refused',
          `answered with a redirect (HTTP ${response.statusCode}) to ${redirectTarget(header('location') ?? null, url)}; redirects are never followed`,
          endpoint.id,
        ),
      );
    }
    const lengthHeader = header('content-length');
    const declared = lengthHeader === undefined || lengthHeader.trim() === '' ? Number.NaN : Number(lengthHeader);
    if (Number.isFinite(declared) && declared > maxBytes) {
      refuse(new EgressAborted('egress.response-too-large', `response declares ${declared} bytes, over the cap of ${maxBytes}; call aborted`, endpoint.id));
    }
    // Refused before the body is read: the number of codings is in the headers.
    const codings = contentCodings(header('content-encoding'));
    const stacked = codingsDenial(codings, endpoint.id);
    if (stacked) {
      report({ type: 'egress.denied', endpointId: endpoint.id, rule: stacked.rule });
      refuse(stacked);
    }
    // The whole body is read here, under the cap and the deadline, before the caller sees any of it:
    // the model API answers are single JSON documents, and a body the guard has not finished
    // checking never reaches the SDK.
    // Decoding takes time too: the deadline is read again before each layer, from the clock (the
    // timer's abort may wait behind the decoder's callbacks) and from the signal (the caller's abort).
    const checkDeadline = () => {
      if (signal.aborted) throw signal.reason;
      if (now() >= expiresAt) throw overdue();
    };
    let received: Buffer;
    let bytes: Buffer;
    try {
      received = await readCapped(response.body, maxBytes, endpoint.id);
      bytes = await decodedBody(received, codings, { maxBytes, endpointId: endpoint.id, checkDeadline });
    } catch (err) {
      discard(response.body);
      if (deadline.signal.aborted) throw deadline.signal.reason;
      throw err;
    } finally {
      finish();
    }
    // A decoded body no longer has the encoding or the length its headers declared.
    const decoded = bytes !== received;
    return new UndiciResponse(response.statusCode === 204 || response.statusCode === 304 || bytes.length === 0 ? null : bytes, {
      status: response.statusCode,
      headers: responseHeaders(response.headers, decoded ? ['content-encoding', 'content-length'] : []),
    }) as unknown as Response;
  };

  const transport: EndpointTransport = { endpoint, fetch: guardedFetch as typeof globalThis.fetch, close: () => agent.close() };
  if (endpoint.auth.type !== 'entra-id') return transport;

  // Loaded only for entra-id endpoints: @azure/identity is large and most sites use keys.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const entra = require('./entra') as typeof import('./entra');
  const authority = createEndpointTransport(entra.authorityEndpoint(endpoint), opts);
  return {
    ...transport,
    tokenProvider: (env) => entra.entraTokenProvider(endpoint, authority, env),
    close: async () => {
      await Promise.all([agent.close(), authority.close()]);
    },
  };
}

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/** The request's method, upper-case; only the ordinary HTTP methods (CONNECT would open a tunnel). */
function requestMethod(method: unknown): Dispatcher.HttpMethod {
  const m = typeof method === 'string' ? method.toUpperCase() : 'GET';
  if (!METHODS.has(m)) throw new TypeError(`egress guard: HTTP method ${m.slice(0, 16)} is not supported`);
  return m as Dispatcher.HttpMethod;
}

/** Request headers from a Headers object, a plain record or pairs (what fetch accepts), as a record. */
function requestHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return out;
  const pairs: Iterable<[string, string]> =
    typeof (headers as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function' ? (headers as Iterable<[string, string]>) : Object.entries(headers as Record<string, string>);
  for (const [name, value] of pairs) if (value !== undefined && value !== null) out[String(name).toLowerCase()] = String(value);
  // The Host header is the endpoint's, from the checked URL: a caller's own would name another virtual
  // host behind the same checked address and certificate. (undici refuses the connection-level ones.)
  if ('host' in out) throw new TypeError('egress guard: a request may not set its own Host header');
  return out;
}

/** A string or bytes body only: the SDK and the token client send nothing else; a stream would bypass no check but is not expected, so it is refused. */
function requestBody(body: unknown, endpointId: string): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof Uint8Array) return body;
  throw new TypeError(`endpoint ${endpointId}: the egress guard sends string or byte bodies only`);
}

/** Closes a body the guard will not read; the abort it reports is expected, not an error. */
function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** Reads a response body to its end, aborting past `maxBytes` (of the bytes on the wire). */
async function readCapped(body: Readable, maxBytes: number, endpointId: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > maxBytes) throw new EgressAborted('egress.response-too-large', `response exceeded the cap of ${maxBytes} bytes; call aborted`, endpointId);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received);
}

const DECODERS: Record<string, (buf: Buffer, opts: zlib.ZlibOptions | zlib.BrotliOptions) => Promise<Buffer>> = {
  gzip: promisify(zlib.gunzip),
  'x-gzip': promisify(zlib.gunzip),
  deflate: promisify(zlib.inflate),
  br: promisify(zlib.brotliDecompress),
};

/**
 * Content codings the guard decodes on one answer, at most. HTTP lets a server stack codings
 * (RFC 9110 8.4: "gzip, gzip" is legal), but servers send one, and ehrbench asks for none (no
 * Accept-Encoding). Two leaves room for a proxy that compresses an answer already compressed; every
 * further layer is only work an endpoint makes the daemon do (600 stacked gzip layers kept a 1 s call
 * inflating for 5 s), so more are refused before any is decoded.
 */
export const MAX_CONTENT_CODINGS = 2;

/** The codings of a Content-Encoding header in the order they were applied; `identity` is no coding. */
export function contentCodings(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c && c !== 'identity');
}

/** The refusal of an answer with more codings than MAX_CONTENT_CODINGS, or undefined. */
function codingsDenial(codings: readonly string[], endpointId: string): EgressDenied | undefined {
  if (codings.length <= MAX_CONTENT_CODINGS) return undefined;
  return new EgressDenied('egress.response-codings', `answered with ${codings.length} stacked content codings; at most ${MAX_CONTENT_CODINGS} are decoded`, endpointId);
}

export interface DecodeLimits {
  /** The cap on the bytes inflated by all layers together. */
  maxBytes: number;
  endpointId: string;
  /** Throws the call's refusal when its deadline has passed; called before each layer. */
  checkDeadline: () => void;
}

/**
 * The body after its content codings (at most MAX_CONTENT_CODINGS), the last applied decoded first.
 * The cap counts the output of every layer together, so layers each under the cap cannot add up to
 * more than one capped body (a small gzip body can inflate to gigabytes). No Accept-Encoding is sent,
 * so a compressed answer is unrequested but still decoded as fetch would; a coding the guard does not
 * know passes the body through as received (nothing is inflated, and it is under the cap on the wire).
 */
export async function decodedBody(raw: Buffer, codings: readonly string[], limits: DecodeLimits): Promise<Buffer> {
  const stacked = codingsDenial(codings, limits.endpointId);
  if (stacked) throw stacked;
  if (codings.some((c) => !DECODERS[c])) return raw;
  let bytes = raw;
  let inflated = 0;
  for (const coding of [...codings].reverse()) {
    limits.checkDeadline();
    bytes = await decodeLayer(DECODERS[coding] as (typeof DECODERS)[string], bytes, limits.maxBytes - inflated, limits);
    inflated += bytes.length;
  }
  return bytes;
}

/** One layer, its output limited to what is left of the cap. */
async function decodeLayer(decode: (typeof DECODERS)[string], input: Buffer, allowed: number, limits: DecodeLimits): Promise<Buffer> {
  const tooLarge = () => new EgressAborted('egress.response-too-large', `decoded response exceeded the cap of ${limits.maxBytes} bytes; call aborted`, limits.endpointId);
  // zlib refuses a maxOutputLength below 1: nothing left of the cap means the layer is too large.
  if (allowed < 1) throw tooLarge();
  try {
    return await decode(input, { maxOutputLength: allowed });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge();
    throw err;
  }
}

/** Response headers from undici's record (arrays for repeated headers) as pairs for a Response. */
function responseHeaders(headers: Record<string, string | string[] | undefined>, drop: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (drop.includes(name)) continue;
    if (Array.isArray(value)) for (const v of value) pairs.push([name, v]);
    else if (value !== undefined) pairs.push([name, value]);
  }
  return pairs;
}

/** The guard's own refusal inside a foreign error's cause chain, if any. */
function guardCause(err: unknown): EgressDenied | undefined {
  let current: unknown = err;
  for (let depth = 0; current && depth < 6; depth++) {
    if (current instanceof EgressDenied) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The host a redirect pointed to, for the refusal message only; bounded and never a body. */
function redirectTarget(location: string | null, base: URL): string {
  if (!location) return 'no location';
  try {
    const host = new URL(location, base).host;
    return /^[a-z0-9.\-:[\]]{1,255}$/.test(host) ? host : 'an unreadable host';
  } catch {
    return 'an unparseable location';
  }
}
