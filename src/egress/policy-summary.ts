/**
 * What a policy.change event says about the endpoint allowlist (src/audit/policy-change.ts): per
 * endpoint a fingerprint of each field, so a repointed URL, a new address or a widened classification
 * is named, and the facts an auditor needs to see where prompts may now go: host, pinned addresses,
 * classification. No key, secret or file content.
 */
import { canonicalHash } from '../canonical';
import type { Endpoint } from '../contracts';
import type { EndpointPolicy } from './endpoints';

type Entry = { fields: Record<string, string>; facts: Record<string, string> };

/** Short and stable (canonical JSON): tells that a field changed, says nothing of its value. */
const fingerprint = (value: unknown) => canonicalHash(value ?? null).slice(0, 16);

function classification(c: Endpoint['classification']): string {
  return [c.maxTier, ...(c.inVpc ? ['vpc'] : []), ...(c.baa ? ['baa'] : []), ...(c.development ? ['development'] : [])].join('/');
}

export function summarizeEndpoints(policy: EndpointPolicy): Map<string, Entry> {
  return new Map(
    policy.endpoints.map((e) => {
      const { policyFile: _file, ...definition } = e;
      const fields = Object.fromEntries(Object.entries(definition).map(([k, v]) => [k, fingerprint(v)]));
      const facts = { urls: new URL(e.url).host, addresses: e.addresses?.length ? e.addresses.join('/') : 'dns', classification: classification(e.classification) + (e.test ? '/test' : '') };
      return [e.id, { fields, facts }];
    }),
  );
}
