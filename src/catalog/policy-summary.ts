/**
 * What a policy.change event says about the site data file (src/audit/policy-change.ts): one entry per
 * benchmark binding (`benchmarks.<id>`) and the default jury, a fingerprint of each field, and the
 * facts an auditor needs to see what a binding makes of a benchmark: the kind of source it reads and
 * the tier the site declares for it. Paths, column names and connection references stay out.
 */
import { canonicalHash } from '../canonical';
import type { SiteData } from './site-data';

type Entry = { fields: Record<string, string>; facts: Record<string, string> };

/** Short and stable (canonical JSON): tells that a field changed, says nothing of its value. */
const fingerprint = (value: unknown) => canonicalHash(value ?? null).slice(0, 16);

export function summarizeSiteData(site: SiteData): Map<string, Entry> {
  const entries: [string, Entry][] = Object.entries(site.benchmarks).map(([id, binding]) => {
    const fields = Object.fromEntries(Object.entries(binding).map(([k, v]) => [k, fingerprint(v)]));
    const data = binding.source ? binding.source.type : binding.database ? 'database' : undefined;
    // A binding of data holds the benchmark to at least approval-required (catalog tiersOf), or to the tier it declares.
    const facts: Record<string, string> = data ? { data, tierAtLeast: binding.tier ?? 'approval-required' } : {};
    return [`benchmarks.${id}`, { fields, facts }];
  });
  if (site.jury) entries.push(['jury', { fields: { judges: fingerprint(site.jury.judges), sameFamily: fingerprint(site.jury.sameFamily) }, facts: {} }]);
  return new Map(entries);
}
