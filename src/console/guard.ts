/**
 * Cross-site request forgery, decided per request. A browser that holds the principal's client
 * certificate presents it to any page that asks, so a certificate proves who, never that the person
 * meant it. A request is a browser's when it carries what only browsers send on their own (Origin,
 * Sec-Fetch-Site, a cookie); the CLI and other API clients send none of them and are not affected.
 *
 * For a browser's request, in this order:
 * 1. Fetch metadata: a request another site started (cross-site, same-site) is refused, reads too,
 *    but a link that opens the console's page (a top-level GET navigation, which reads no data);
 * 2. Origin, when sent: one of the daemon's own origins (the names in its server certificate, on its
 *    port), or refused;
 * 3. a state-changing method needs the console session's token (checked by the caller, which holds
 *    the session's secret): see `needsToken`.
 */
import ipaddr from 'ipaddr.js';
import type { RuleId } from '../policy';

export interface BrowserHeaders {
  origin?: string | undefined;
  secFetchSite?: string | undefined;
  secFetchMode?: string | undefined;
  cookie?: string | undefined;
}

/** What the request asks for: a page of the console may be opened from a link on another site. */
export interface RequestTarget {
  method: string;
  path: string;
}

export type GuardDecision = { allowed: true; browser: boolean } | { allowed: false; rule: Extract<RuleId, `console.${string}`>; reason: string };

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What a browser sends and other clients do not. */
export function isBrowserRequest(h: BrowserHeaders): boolean {
  return h.origin !== undefined || h.secFetchSite !== undefined || h.cookie !== undefined;
}

/**
 * A link on another site (the hospital's intranet) that opens the console: a top-level GET of the
 * console's page, which holds no data; everything the page then asks for is same-origin. Never an API
 * route, whose reads are audited and may be downloads.
 */
function isConsoleNavigation(h: BrowserHeaders, target: RequestTarget): boolean {
  const method = target.method.toUpperCase();
  const path = target.path.split('?')[0] ?? '';
  return (method === 'GET' || method === 'HEAD') && h.secFetchMode === 'navigate' && (path === '/' || path === '/console' || path === '/console/' || path === '/console/index.html');
}

/** The decision for one request, before any route runs; `ownOrigins` are `https://name:port` strings. */
export function decideBrowserRequest(h: BrowserHeaders, ownOrigins: ReadonlySet<string>, target?: RequestTarget): GuardDecision {
  if (!isBrowserRequest(h)) return { allowed: true, browser: false };
  // "none" is a navigation the user made (typed the address, a bookmark); same-origin is the console.
  const otherSite = h.secFetchSite !== undefined && h.secFetchSite !== 'same-origin' && h.secFetchSite !== 'none';
  if (otherSite && target && isConsoleNavigation(h, target) && h.origin === undefined) return { allowed: true, browser: true };
  if (otherSite) {
    return {
      allowed: false,
      rule: 'console.cross-site',
      reason: `a request started by another site (Sec-Fetch-Site: ${short(h.secFetchSite ?? '')}) is refused; open the console from the daemon itself`,
    };
  }
  if (h.origin !== undefined && !ownOrigins.has(h.origin.toLowerCase())) {
    return { allowed: false, rule: 'console.origin-mismatch', reason: `a request from origin ${short(h.origin)} is refused; open the console from the daemon's own address` };
  }
  return { allowed: true, browser: true };
}

/** A browser's request that changes state must carry the session token. */
export function needsToken(method: string, browser: boolean): boolean {
  return browser && !SAFE_METHODS.has(method.toUpperCase());
}

/** A header value as it may appear in a refusal: printable, short (it is the caller's own text). */
function short(value: string): string {
  const clean = value.replace(/[^\x20-\x7e]/g, '?');
  return clean.length > 80 ? `${clean.slice(0, 80)}...` : clean;
}

/**
 * The daemon's own origins: every DNS name and IP address in its server certificate, on the port it
 * listens on (and without the port when it is 443).
 */
export function ownOrigins(subjectAltName: string | undefined, port: number): Set<string> {
  const names = (subjectAltName ?? '')
    .split(/,\s*/)
    .map((entry) => entry.match(/^(?:DNS|IP Address):(.+)$/)?.[1])
    .filter((n): n is string => n !== undefined && n.length > 0)
    .map((n) => (n.includes(':') && ipaddr.isValid(n) ? `[${ipaddr.parse(n).toString()}]` : n.toLowerCase()));
  const origins = new Set<string>();
  for (const name of names) {
    origins.add(`https://${name}:${port}`);
    if (port === 443) origins.add(`https://${name}`);
  }
  return origins;
}
