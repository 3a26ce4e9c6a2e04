/**
 * What the built-in catalog holds, for tests that see it through a command: its size and categories
 * from the taxonomy (src/catalog/taxonomy.ts, the one place that says so), its tiers from the
 * definitions (tests/unit/catalog.test.ts checks those against HELM's). No test writes a count itself.
 */
import { CATEGORIES, Catalog, MEDHELM_BENCHMARK_COUNT, MEDHELM_BENCHMARKS } from '../../src/catalog';
import { TIERS } from '../../src/tiers';

export { MEDHELM_BENCHMARK_COUNT };

/** How many built-in benchmarks have this tier. */
export function builtInWithTier(tier: string): number {
  return Catalog.load()
    .list()
    .filter((b) => b.definition.tier === tier).length;
}

/** The line `ehrbench benchmarks list` ends with for the built-in catalog, e.g. "39 benchmarks: 18 public, 7 approval-required, 14 private". */
export function builtInSummaryLine(): string {
  return `${MEDHELM_BENCHMARK_COUNT} benchmarks: ${TIERS.map((t) => `${builtInWithTier(t)} ${t}`).join(', ')}`;
}

/** The category headings of `ehrbench benchmarks list`, e.g. "Clinical Note Generation (6)". */
export function builtInCategoryHeadings(): string[] {
  return CATEGORIES.map((c) => `${c} (${MEDHELM_BENCHMARKS[c].length})`);
}
