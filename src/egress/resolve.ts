/**
 * Resolution, once per connection: the endpoint's `addresses` pin, its IP-literal host, or DNS with a
 * timeout. Every answer must lie in the endpoint's allowedCidrs; one answer outside refuses the
 * whole answer (a misconfigured private DNS zone that also returns the public address must fail
 * closed, not win half the time). No address class is special: loopback or link-local addresses
 * pass only when a CIDR names them.
 */
import { promises as dns } from 'node:dns';
import { canonicalAddress, matchingCidr } from './addresses';
import type { Endpoint } from '../contracts';
import { EgressDenied } from './errors';
import { parseCanonicalUrl, pathPrefix } from './url';

/** Returns every address the name has (not just the first). */
export type Resolver = (hostname: string) => Promise<string[]>;

export const DEFAULT_DNS_TIMEOUT_MS = 5000;

/** The system resolver (getaddrinfo, so /etc/hosts too): every answer, in the resolver's order. */
export const systemResolver: Resolver = async (hostname) => {
  const answers = await dns.lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

/** The parts of an endpoint URL the guard compares against. */
export interface EndpointOrigin {
  hostname: string;
  port: string;
  pathPrefix: string;
  hostKind: 'name' | 'ipv4' | 'ipv6';
}

/** The endpoint's own URL, which must be canonical (the loader checks it; this re-checks). */
export function endpointOrigin(endpoint: Endpoint): EndpointOrigin {
  const parsed = parseCanonicalUrl(endpoint.url);
  if ('problem' in parsed) {
    throw new EgressDenied('egress.endpoint.invalid-url', `the endpoint's own URL is refused: ${parsed.problem.reason}`, endpoint.id);
  }
  const c = parsed.canonical;
  return { hostname: c.hostname, port: c.port, pathPrefix: pathPrefix(c.url), hostKind: c.hostKind };
}

export interface CheckedAddress {
  address: string;
  /** The allowedCidrs entry that admitted it. */
  cidr: string;
}

export interface Resolution {
  source: 'addresses' | 'ip-literal' | 'dns';
  addresses: CheckedAddress[];
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no answer in time')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Resolves the endpoint's host once and checks every answer; returns the checked addresses with the
 * CIDR that admitted each. Refuses (EgressDenied) on a resolver failure, an empty answer, or any
 * answer outside allowedCidrs.
 */
export async function resolveChecked(endpoint: Endpoint, resolver: Resolver, timeoutMs = DEFAULT_DNS_TIMEOUT_MS): Promise<Resolution> {
  const origin = endpointOrigin(endpoint);
  let source: Resolution['source'];
  let answers: string[];
  if (origin.hostKind !== 'name') {
    source = 'ip-literal';
    answers = [origin.hostname.replace(/^\[|\]$/g, '')];
  } else if (endpoint.addresses) {
    source = 'addresses';
    answers = endpoint.addresses;
  } else {
    source = 'dns';
    try {
      answers = await withTimeout(resolver(origin.hostname), timeoutMs);
    } catch {
      throw new EgressDenied('egress.dns.failed', `resolving ${origin.hostname} failed or gave no answer within ${timeoutMs} ms`, endpoint.id);
    }
  }
  if (!Array.isArray(answers) || answers.length === 0) {
    throw new EgressDenied('egress.dns.empty', `resolving ${origin.hostname} gave no address`, endpoint.id);
  }
  const checked: CheckedAddress[] = [];
  for (const answer of answers) {
    const text = typeof answer === 'string' ? answer : String(answer);
    const cidr = matchingCidr(text, endpoint.allowedCidrs);
    const address = canonicalAddress(text);
    if (!cidr || !address) {
      throw new EgressDenied(
        'egress.address.not-allowed',
        `${source === 'dns' ? 'DNS answer' : 'address'} for ${origin.hostname} is not in allowedCidrs ${endpoint.allowedCidrs.join(', ')}`,
        endpoint.id,
        address ?? 'unparseable',
      );
    }
    checked.push({ address, cidr });
  }
  return { source, addresses: checked };
}
