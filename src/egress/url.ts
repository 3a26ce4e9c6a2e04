/**
 * URL canonicalisation. A URL is parsed once, with the WHATWG parser, and accepted only when the
 * text it was given is already that parser's canonical serialisation: the WHATWG parser silently
 * rewrites `0x7f.1`, `2130706433`, `0177.0.0.1` and `127.1` to 127.0.0.1, maps full-width letters
 * to ASCII, drops default ports and resolves `..` and `%2e%2e`. Anything it would have had to
 * rewrite is refused, so the string a reviewer reads is the request that is made. The raw text is
 * looked at only to refuse (userinfo, fragments, odd characters), never to allow.
 *
 * Each refusal names its rule; messages never quote the URL (its query could carry anything).
 */
import type { RuleId } from '../policy';
import ipaddr from 'ipaddr.js';
import { ipv4Embedding } from './addresses';

/** Longest request URL accepted; Azure and OpenAI-compatible URLs are far shorter. */
export const MAX_URL_LENGTH = 4096;

export interface UrlProblem {
  rule: RuleId;
  reason: string;
}

/** The parts of a canonical https URL the guard compares. */
export interface CanonicalUrl {
  url: URL;
  /** WHATWG hostname: lower-case ASCII name, dotted-decimal IPv4, or bracketed compressed IPv6. */
  hostname: string;
  /** The explicit port, or '443'. */
  port: string;
  /** 'name', 'ipv4' or 'ipv6'. */
  hostKind: 'name' | 'ipv4' | 'ipv6';
}

const BAD_CHARACTERS = /[\u0000-\u0020\u007f-\u009f\\]/;
const FOUR_PART = /^(0|[1-9]\d{0,2})(\.(0|[1-9]\d{0,2})){3}$/;

function problem(rule: RuleId, reason: string): { problem: UrlProblem } {
  return { problem: { rule, reason } };
}

/**
 * Checks that `raw` is an https URL in canonical form with nothing that could smuggle another
 * destination past a reader: no userinfo, fragment, control characters, backslashes, non-ASCII or
 * percent-encoded host, trailing dot, non-canonical IP form, zone id or IPv4-embedding IPv6 address,
 * port 0, or path that normalisation would change. Endpoint-independent; never throws.
 */
export function parseCanonicalUrl(raw: string, maxLength = MAX_URL_LENGTH): { canonical: CanonicalUrl } | { problem: UrlProblem } {
  if (typeof raw !== 'string' || raw.length === 0) return problem('egress.url.unparseable', 'URL is empty');
  if (raw.length > maxLength) return problem('egress.url.too-long', `URL is longer than ${maxLength} characters`);
  if (BAD_CHARACTERS.test(raw)) return problem('egress.url.bad-characters', 'URL contains whitespace, control characters or a backslash');
  if (raw.includes('#')) return problem('egress.url.fragment', 'URL carries a fragment');

  const prefix = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(raw);
  if (!prefix || prefix[1]?.toLowerCase() !== 'https') return problem('egress.url.scheme', 'only https URLs are allowed');
  if (!raw.startsWith('https://')) return problem('egress.url.not-canonical', 'URL must start with "https://" (lower-case, two slashes)');
  const rest = raw.slice('https://'.length);
  const authorityEnd = rest.search(/[/?]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const afterAuthority = authorityEnd < 0 ? '' : rest.slice(authorityEnd);
  if (authority.includes('@')) return problem('egress.url.userinfo', 'URL carries userinfo (user@host)');
  const rawHost = authority.startsWith('[') ? authority.slice(0, authority.indexOf(']') + 1) : authority.replace(/:[^:]*$/, '');
  const rawPort = authority.slice(rawHost.length);
  if (rawHost.length === 0) return problem('egress.url.unparseable', 'URL has no host');
  if (/[^\u0000-\u007f]/.test(rawHost)) return problem('egress.url.host-not-ascii', 'host is not plain ASCII (IDNA look-alikes are refused; write the punycode name the endpoint uses)');
  if (rawHost.startsWith('[') && rawHost.includes('%')) return problem('egress.url.host-zone-id', 'IPv6 zone ids are not allowed');
  if (rawHost.includes('%')) return problem('egress.url.host-percent-encoded', 'host is percent-encoded');
  if (rawHost.endsWith('.')) return problem('egress.url.host-trailing-dot', 'host ends with a dot');

  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return problem('egress.url.unparseable', 'URL cannot be parsed');
  }
  if (url.protocol !== 'https:') return problem('egress.url.scheme', 'only https URLs are allowed');
  if (url.username || url.password) return problem('egress.url.userinfo', 'URL carries userinfo (user@host)');
  if (url.hash) return problem('egress.url.fragment', 'URL carries a fragment');

  const hostname = url.hostname;
  let hostKind: CanonicalUrl['hostKind'] = 'name';
  if (hostname.startsWith('[')) {
    hostKind = 'ipv6';
    let addr: ipaddr.IPv6;
    try {
      addr = ipaddr.IPv6.parse(hostname.slice(1, -1));
    } catch {
      return problem('egress.url.unparseable', 'IPv6 host cannot be parsed');
    }
    const embedded = ipv4Embedding(addr);
    if (embedded) return problem('egress.url.ipv6-embedded-ipv4', `host is an ${embedded} IPv6 address, which embeds an IPv4 address`);
    if (addr.range() === 'unspecified') return problem('egress.url.unspecified-address', 'host is the unspecified address');
    if (rawHost.toLowerCase() !== hostname) return problem('egress.url.ipv6-not-canonical', 'IPv6 host is not in compressed canonical form');
  } else if (FOUR_PART.test(hostname) && ipaddr.IPv4.isValidFourPartDecimal(hostname)) {
    hostKind = 'ipv4';
    // The WHATWG parser turns every numeric host into dotted decimal, so a difference from the raw
    // text means hex, octal, dword or shortened forms.
    if (rawHost !== hostname) return problem('egress.url.ipv4-non-canonical', 'IPv4 host is not in four-part decimal form (hex, octal, integer or shortened forms are refused)');
    if (ipaddr.IPv4.parse(hostname).range() === 'unspecified') return problem('egress.url.unspecified-address', 'host is the unspecified address');
  } else if (rawHost !== hostname) {
    return problem('egress.url.host-not-canonical', 'host is not in canonical form (lower-case ASCII)');
  }

  if (url.port === '0') return problem('egress.url.port', 'port 0 is not a port');
  if (rawPort !== (url.port ? `:${url.port}` : '')) {
    return problem('egress.url.port-not-canonical', 'port is not in canonical form (no default :443, no leading zeros, no empty port)');
  }
  const queryStart = afterAuthority.indexOf('?');
  const rawPath = queryStart < 0 ? afterAuthority : afterAuthority.slice(0, queryStart);
  const rawQuery = queryStart < 0 ? '' : afterAuthority.slice(queryStart);
  if ((rawPath || '/') !== url.pathname) {
    return problem('egress.url.path-not-canonical', 'path changes under normalisation (dot segments such as .. or %2e%2e, or characters that need encoding)');
  }
  if (/%2e|%2f|%5c/i.test(url.pathname)) return problem('egress.url.path-encoded', 'path carries an encoded dot, slash or backslash');
  if (rawQuery !== url.search && !(rawQuery === '?' && url.search === '')) {
    return problem('egress.url.query-not-canonical', 'query string changes under normalisation');
  }
  return { canonical: { url, hostname, port: url.port || '443', hostKind } };
}

/** The path prefix requests must stay under: the endpoint's path with a trailing slash. */
export function pathPrefix(url: URL): string {
  return url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
}
