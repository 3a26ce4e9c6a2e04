/**
 * What a policy.change event says about the configuration (src/audit/policy-change.ts): one entry per
 * section of config.json as written, a fingerprint of each of its settings, so that a change names
 * the settings it touched (`catalog[dataDirs]`, `audit[witnessDirs]`, `deid[mode]`) and never their
 * values; the database URL is never in the file (a reference), so nothing secret is near.
 */
import { canonicalHash } from '../canonical';
import type { ConfigFile } from './index';

type Entry = { fields: Record<string, string>; facts: Record<string, string> };

/** Short and stable (canonical JSON): tells that a setting changed, says nothing of its value. */
const fingerprint = (value: unknown) => canonicalHash(value ?? null).slice(0, 16);

export function summarizeConfig(file: ConfigFile): Map<string, Entry> {
  return new Map(
    Object.entries(file).map(([section, value]) => {
      const settings = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value as Record<string, unknown>) : [['value', value] as const];
      const facts: Record<string, string> = section === 'deid' && file.deid?.mode ? { deidMode: file.deid.mode } : {};
      return [section, { fields: Object.fromEntries(settings.map(([k, v]) => [k, fingerprint(v)])), facts }];
    }),
  );
}
