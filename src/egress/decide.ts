/**
 * `ehrbench endpoints check`: the guard's decision for a URL without sending anything. The same
 * functions the transport uses decide: canonical URL, which endpoint it falls under, resolution
 * (pin, literal or DNS) and the CIDR check.
 */
import type { RuleId } from '../policy';
import type { EndpointPolicy } from './endpoints';
import { EgressDenied } from './errors';
import { originMismatch } from './guard';
import { DEFAULT_DNS_TIMEOUT_MS, endpointOrigin, type Resolver, resolveChecked, systemResolver } from './resolve';
import { parseCanonicalUrl } from './url';

export interface EgressDecision {
  allowed: boolean;
  endpoint: string | null;
  rule: RuleId;
  reason: string;
  /** The checked addresses with the CIDR that admitted each (allowed decisions only). */
  addresses?: { address: string; cidr: string }[];
}

export const ALLOW_RULE = 'egress.allowlisted-endpoint';

/** Decides a URL against every endpoint of the policy; never throws for a refusal. */
export async function decideUrl(policy: EndpointPolicy, raw: string, opts: { resolver?: Resolver; dnsTimeoutMs?: number } = {}): Promise<EgressDecision> {
  const parsed = parseCanonicalUrl(raw);
  if ('problem' in parsed) return { allowed: false, endpoint: null, ...parsed.problem };
  // Prefer the endpoint whose origin and path hold the URL; else report the closest refusal
  // (same host and port, then same host) so the operator sees the rule that matters.
  let closest: { endpoint: string; rule: RuleId; reason: string; score: number } | undefined;
  for (const endpoint of policy.endpoints) {
    let mismatch: { rule: RuleId; reason: string } | undefined;
    try {
      mismatch = originMismatch(endpointOrigin(endpoint), parsed.canonical);
    } catch (err) {
      mismatch = err instanceof EgressDenied ? { rule: err.rule, reason: err.detail } : { rule: 'egress.internal', reason: 'the check failed' };
    }
    if (!mismatch) {
      try {
        const resolution = await resolveChecked(endpoint, opts.resolver ?? systemResolver, opts.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS);
        const via = resolution.source === 'dns' ? 'DNS' : resolution.source === 'addresses' ? 'the addresses pin' : 'the IP-literal host';
        return {
          allowed: true,
          endpoint: endpoint.id,
          rule: ALLOW_RULE,
          reason: `under ${endpoint.url}; ${resolution.addresses.map((a) => `${a.address} in ${a.cidr}`).join(', ')} (resolved by ${via})`,
          addresses: resolution.addresses,
        };
      } catch (err) {
        // Any exception in the allow path is a refusal.
        // The decision names the rule and the endpoint: the reason is said once, without them.
        if (err instanceof EgressDenied) return { allowed: false, endpoint: endpoint.id, rule: err.rule, reason: err.detail };
        return { allowed: false, endpoint: endpoint.id, rule: 'egress.internal', reason: 'the check failed; refused' };
      }
    }
    const score = mismatch.rule === 'egress.url.path' ? 2 : mismatch.rule === 'egress.url.port' ? 1 : 0;
    if (score > 0 && (!closest || score > closest.score)) closest = { endpoint: endpoint.id, ...mismatch, score };
  }
  if (closest) return { allowed: false, endpoint: closest.endpoint, rule: closest.rule, reason: closest.reason };
  if (parsed.canonical.hostKind !== 'name') {
    return { allowed: false, endpoint: null, rule: 'egress.url.ip-literal', reason: 'an IP-address host is refused unless an endpoint URL is itself written with that address' };
  }
  return { allowed: false, endpoint: null, rule: 'egress.url.not-allowlisted', reason: 'no allowlisted endpoint has this host' };
}
