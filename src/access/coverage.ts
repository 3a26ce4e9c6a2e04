/**
 * What an IRB approval covers, in words: the benchmarks it names, and every benchmark of each tier it
 * names. Said as such wherever an approval is shown (CLI, console, the run approval queue): a tier
 * covers benchmarks added later too. A leaf with no imports: the console's pages bundle it as well.
 */
export function coverageText(a: { benchmarks: readonly string[]; tiers: readonly string[] }): string {
  const parts: string[] = [];
  if (a.benchmarks.length) parts.push(`benchmarks ${a.benchmarks.join(', ')}`);
  for (const t of a.tiers) parts.push(`every ${t} benchmark (tier)`);
  return parts.length ? parts.join('; ') : 'nothing';
}

/**
 * Why an approval covers a run: it names the run's benchmark, or only the run's whole tier (every
 * benchmark of it, those added later too), or neither (it was narrowed since). An officer approving
 * a run, and anyone reading it, must see which.
 */
export function coverageOf(a: { benchmarks: readonly string[]; tiers: readonly string[] }, benchmarkId: string, tier: string): 'benchmark' | 'tier' | 'none' {
  if (a.benchmarks.includes(benchmarkId)) return 'benchmark';
  if (a.tiers.includes(tier)) return 'tier';
  return 'none';
}

/**
 * An approval's status as a person should read it, the same word in the CLI, the API's views and the
 * console: the stored status, or, for an active one, whether the clock has passed its expiry or not
 * reached its start (what the access rules decide by). The store keeps `active` after the expiry:
 * nothing changes the row when the date passes.
 */
export function approvalStatusAt(a: { status: string; startsAt: string; expiresAt: string | null | undefined }, now: Date): string {
  if (a.status !== 'active') return a.status;
  if (a.expiresAt && Date.parse(a.expiresAt) <= now.getTime()) return 'expired';
  if (Date.parse(a.startsAt) > now.getTime()) return 'not started';
  return 'active';
}
