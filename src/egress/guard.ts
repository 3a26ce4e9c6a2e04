/**
 * The egress guard: the only way a request leaves ehrbench. For one allowlisted endpoint it
 *   1. parses the URL once (WHATWG URL) and refuses anything that is not exactly under the endpoint;
 *   2. resolves the host once (the `addresses` pin, or DNS) and requires every answer to lie in the
 *      endpoint's allowedCidrs;
 *   3. connects only to a checked address, verifies the socket's remote address, keeps the hostname
 *      for SNI and the certificate check, trusts only the endpoint's CA (or Node's bundled roots,
 *      never the process-wide store) and enforces SPKI pins and client certificates when configured;
 *   4. never follows redirects, caps the response size and time.
 * Every refusal is an EgressDenied naming the endpoint, the rule and (when known) the address; it
 * never carries a request or response body.
 */
import { X509Certificate, createHash } from 'node:crypto';
import { promises as dns } from 'node:dns';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { PolicyDenied, UserError } from '../errors';
import type { Endpoint } from './endpoints';

export class EgressDenied extends PolicyDenied {
  constructor(
    rule: string,
    reason: string,
    readonly endpointId: string | undefined,
    readonly address?: string,
  ) {
    super(rule, `${endpointId ? `endpoint ${endpointId}: ` : ''}${reason}${address ? ` (address ${address})` : ''}`);
  }
}

export type Resolver = (hostname: string) => Promise<string[]>;

export const DEFAULT_DNS_TIMEOUT_MS = 5000;
export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

/** System resolver with every answer returned (not just the first) and a timeout. */
export function systemResolver(timeoutMs = DEFAULT_DNS_TIMEOUT_MS): Resolver {
  return async (hostname) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('dns timeout')), timeoutMs);
    });
    try {
      const answers = await Promise.race([dns.lookup(hostname, { all: true, verbatim: true }), timeout]);
      return answers.map((a) => a.address);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The parts of an endpoint URL the guard compares against. */
interface EndpointOrigin {
  hostname: string;
  port: string;
  pathPrefix: string;
}

function endpointOrigin(endpoint: Endpoint): EndpointOrigin {
  const u = new URL(endpoint.url);
  const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
  return { hostname: u.hostname, port: u.port || '443', pathPrefix: path };
}

/**
 * Checks a request URL against the endpoint and returns it parsed. Refuses (EgressDenied) anything
 * that is not https, has userinfo or a fragment, names another host or port, or leaves the
 * endpoint's path after normalisation.
 */
export function checkRequestUrl(endpoint: Endpoint, raw: string): URL {
  const deny = (rule: string, reason: string): never => {
    throw new EgressDenied(rule, reason, endpoint.id);
  };
  if (raw.length > 8192) deny('egress.url.too-long', 'URL longer than 8192 characters');
  if (/[\s\\\u0000-\u001f\u007f]/.test(raw)) deny('egress.url.bad-characters', 'URL contains whitespace, control characters or a backslash');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return deny('egress.url.unparseable', 'URL cannot be parsed');
  }
  if (url.protocol !== 'https:') deny('egress.url.scheme', `scheme ${url.protocol} refused; only https is allowed`);
  if (url.username || url.password || raw.slice(0, raw.indexOf(url.host) + 1).includes('@')) deny('egress.url.userinfo', 'URL carries userinfo');
  if (url.hash || raw.includes('#')) deny('egress.url.fragment', 'URL carries a fragment');
  const origin = endpointOrigin(endpoint);
  if (url.hostname !== origin.hostname) deny('egress.url.host', `host ${url.hostname} is not the endpoint's host`);
  if ((url.port || '443') !== origin.port) deny('egress.url.port', `port ${url.port || '443'} is not the endpoint's port`);
  const path = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
  if (!path.startsWith(origin.pathPrefix) || /%2e|%2f|%5c/i.test(url.pathname)) {
    deny('egress.url.path', `path is outside the endpoint's path ${origin.pathPrefix}`);
  }
  return url;
}

/** True when `address` lies in one of the CIDRs; unwraps IPv4-mapped IPv6 first; never throws. */
export function addressAllowed(address: string, cidrs: readonly string[]): boolean {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address);
  } catch {
    return false;
  }
  return cidrs.some((cidr) => {
    try {
      const [range, bits] = ipaddr.parseCIDR(cidr);
      return range.kind() === addr.kind() && addr.match([range, bits]);
    } catch {
      return false;
    }
  });
}

/** Resolves the endpoint's host once and checks every answer; returns the checked addresses. */
export async function resolveChecked(endpoint: Endpoint, resolver: Resolver): Promise<string[]> {
  const { hostname } = endpointOrigin(endpoint);
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  let answers: string[];
  if (endpoint.addresses) answers = endpoint.addresses;
  else if (ipaddr.isValid(bare)) answers = [bare];
  else {
    try {
      answers = await resolver(hostname);
    } catch {
      throw new EgressDenied('egress.dns.failed', `DNS resolution of ${hostname} failed or timed out`, endpoint.id);
    }
  }
  if (answers.length === 0) throw new EgressDenied('egress.dns.empty', `DNS returned no address for ${hostname}`, endpoint.id);
  for (const a of answers) {
    if (!addressAllowed(a, endpoint.allowedCidrs)) {
      throw new EgressDenied('egress.address.not-allowed', `resolved address not in ${endpoint.allowedCidrs.join(', ')}`, endpoint.id, a);
    }
  }
  return answers.map((a) => ipaddr.process(a).toString());
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

export interface TransportOptions {
  resolver?: Resolver;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

export interface EndpointTransport {
  endpoint: Endpoint;
  /** fetch for the official SDK: only this endpoint, only checked addresses, no redirects. */
  fetch: typeof globalThis.fetch;
  close(): Promise<void>;
}

/**
 * Builds the transport of one endpoint. Resolution happens once per connection inside the connector,
 * so a DNS answer that changes between connections is checked again and the socket goes to the
 * address that was checked.
 */
export function createEndpointTransport(endpoint: Endpoint, opts: TransportOptions = {}): EndpointTransport {
  const resolver = opts.resolver ?? systemResolver();
  const ca = endpoint.tls?.caFile ? readPem(endpoint.tls.caFile, 'caFile', endpoint.id) : [...tls.rootCertificates];
  const clientCert = endpoint.tls?.clientCertFile ? readPem(endpoint.tls.clientCertFile, 'clientCertFile', endpoint.id) : undefined;
  const clientKey = endpoint.tls?.clientKeyFile ? readPem(endpoint.tls.clientKeyFile, 'clientKeyFile', endpoint.id) : undefined;
  const pins = endpoint.tls?.spkiSha256;
  const { hostname } = endpointOrigin(endpoint);

  const checkServerIdentity = (host: string, cert: tls.PeerCertificate): Error | undefined => {
    const nameError = tls.checkServerIdentity(host, cert);
    if (nameError) return nameError;
    if (pins && !pins.includes(spkiSha256(cert.raw))) {
      return new EgressDenied('egress.tls.pin-mismatch', 'server key matches none of the configured spkiSha256 pins', endpoint.id);
    }
    return undefined;
  };

  const connectTo = (address: string) =>
    buildConnector({
      ca,
      ...(clientCert && clientKey ? { cert: clientCert, key: clientKey } : {}),
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
      servername: hostname.startsWith('[') || ipaddr.isValid(hostname) ? undefined : hostname,
      checkServerIdentity,
      timeout: opts.timeoutMs ?? 10_000,
      // Connect to the checked address, whatever the hostname would resolve to now.
      lookup: (_host: string, o: { all?: boolean }, cb: (err: Error | null, address: unknown, family?: number) => void) => {
        const family = ipaddr.parse(address).kind() === 'ipv6' ? 6 : 4;
        if (o?.all) cb(null, [{ address, family }]);
        else cb(null, address, family);
      },
    } as buildConnector.BuildOptions);

  const connect: buildConnector.connector = (options, callback) => {
    resolveChecked(endpoint, resolver).then(
      (addresses) => {
        const address = addresses[0] as string;
        connectTo(address)(options, (err, socket) => {
          if (err || !socket) return callback(err ?? new Error('no socket'), null);
          const remote = (socket as Socket).remoteAddress;
          if (!remote || !addresses.includes(ipaddr.process(remote).toString())) {
            socket.destroy();
            return callback(new EgressDenied('egress.address.remote-mismatch', 'connected to an address that was not checked', endpoint.id, remote), null);
          }
          callback(null, socket);
        });
      },
      (err: Error) => callback(err, null),
    );
  };

  const agent = new Agent({
    connect,
    maxResponseSize: endpoint.limits?.maxResponseBytes ?? opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    headersTimeout: endpoint.limits?.timeoutMs ?? opts.timeoutMs ?? 120_000,
    bodyTimeout: endpoint.limits?.timeoutMs ?? opts.timeoutMs ?? 120_000,
  });

  const guardedFetch = async (input: unknown, init?: Record<string, unknown>): Promise<Response> => {
    const raw = typeof input === 'string' ? input : input instanceof URL ? input.href : (input as { url: string }).url;
    const url = checkRequestUrl(endpoint, raw);
    const response = await undiciFetch(url, { ...(init ?? {}), redirect: 'manual', dispatcher: agent } as Parameters<typeof undiciFetch>[1]);
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      throw new EgressDenied('egress.redirect.refused', `answered with a redirect (HTTP ${response.status}); redirects are never followed`, endpoint.id);
    }
    return response as unknown as Response;
  };

  return { endpoint, fetch: guardedFetch as typeof globalThis.fetch, close: () => agent.close() };
}
