/**
 * Paired tests of a canary against its baseline on the same instances (src/runs/canary.ts):
 *  - 0/1 scores (exact match, accuracy): the exact McNemar test, i.e. a two-sided binomial test of
 *    the discordant pairs at p = 1/2. Exact, because canary samples are small and discordant pairs
 *    fewer still, where the chi-square form of McNemar is known to be off;
 *  - any other scores: the Wilcoxon signed-rank test (zero differences dropped, as scipy's
 *    zero_method="wilcox"), with the exact null distribution when at most 50 pairs remain and no
 *    |difference| is tied, else the normal approximation with the tie correction and no continuity
 *    correction (scipy.stats.wilcoxon's defaults). Not a paired t test: scores in [0, 1] over a few
 *    dozen instances are bounded and skewed (many at 0 or 1), which the t test's normal differences
 *    assume away; the signed-rank test assumes only symmetry of the differences.
 * tests/fixtures/paired/make_fixtures.py computes the same with scipy; tests/unit/paired.test.ts compares.
 */
import { logGamma, normalCdf } from './distributions';
import { averageRanks } from './statistics';

export type PairedTestName = 'mcnemar-exact' | 'wilcoxon-signed-rank';

export interface PairedResult {
  test: PairedTestName;
  /** Pairs compared (every pair; the tests themselves use only the discordant or non-zero ones). */
  pairs: number;
  baselineMean: number;
  canaryMean: number;
  /** canary mean minus baseline mean. */
  meanDifference: number;
  pValue: number;
}

/** Whether every score of both sides is 0 or 1. */
export function binaryScores(baseline: readonly number[], canary: readonly number[]): boolean {
  return [...baseline, ...canary].every((v) => v === 0 || v === 1);
}

/** Exact McNemar: two-sided binomial test of b (1 -> 0) against c (0 -> 1) at p = 1/2. */
export function mcnemarExact(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  let tail = 0;
  if (n <= 1000) {
    // C(n, i) / 2^n term by term from 2^-n (a double down to 2^-1074): exact to the last bits, so a
    // p-value at a threshold (1/16 for 5 discordant pairs) compares as it should.
    let term = 2 ** -n;
    for (let i = 0; i <= k; i++) {
      tail += term;
      term = (term * (n - i)) / (i + 1);
    }
  } else {
    for (let i = 0; i <= k; i++) tail += Math.exp(logGamma(n + 1) - logGamma(i + 1) - logGamma(n - i + 1) - n * Math.LN2);
  }
  return Math.min(1, 2 * tail);
}

/** Wilcoxon signed-rank test of the differences canary - baseline, two-sided. */
export function wilcoxonSignedRank(differences: readonly number[]): { statistic: number; pValue: number; method: 'exact' | 'approx'; n: number } {
  const d = differences.filter((x) => x !== 0);
  const n = d.length;
  if (n === 0) return { statistic: 0, pValue: 1, method: 'exact', n };
  const ranks = averageRanks(d.map(Math.abs));
  const rPlus = d.reduce((sum, x, i) => (x > 0 ? sum + (ranks[i] as number) : sum), 0);
  const total = (n * (n + 1)) / 2;
  const statistic = Math.min(rPlus, total - rPlus);
  const tied = new Set(d.map(Math.abs)).size < n;
  if (n <= 50 && !tied) return { statistic, pValue: Math.min(1, 2 * exactLowerTail(n, statistic)), method: 'exact', n };
  // Normal approximation; each group of t tied |differences| lowers the variance by (t^3 - t) / 48.
  const counts = new Map<number, number>();
  for (const x of d) counts.set(Math.abs(x), (counts.get(Math.abs(x)) ?? 0) + 1);
  let correction = 0;
  for (const t of counts.values()) correction += (t * t * t - t) / 48;
  const sd = Math.sqrt((n * (n + 1) * (2 * n + 1)) / 24 - correction);
  const z = (rPlus - total / 2) / sd;
  return { statistic, pValue: Math.min(1, 2 * normalCdf(-Math.abs(z))), method: 'approx', n };
}

/** P(T+ <= t) under the null for n untied ranks: subsets of {1..n} by their sum, counted. */
function exactLowerTail(n: number, t: number): number {
  const max = (n * (n + 1)) / 2;
  let ways = new Array<number>(max + 1).fill(0);
  ways[0] = 1;
  for (let r = 1; r <= n; r++) {
    const next = ways.slice();
    for (let s = r; s <= max; s++) next[s] = (next[s] as number) + (ways[s - r] as number);
    ways = next;
  }
  let below = 0;
  for (let s = 0; s <= Math.floor(t); s++) below += ways[s] as number;
  return below / 2 ** n;
}

/** The paired test that fits the scores: McNemar for 0/1, Wilcoxon otherwise; undefined without pairs. */
export function pairedComparison(baseline: readonly number[], canary: readonly number[]): PairedResult | undefined {
  if (baseline.length !== canary.length) throw new Error('paired scores of different lengths');
  const n = baseline.length;
  if (n === 0) return undefined;
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const baselineMean = mean(baseline);
  const canaryMean = mean(canary);
  const base = { pairs: n, baselineMean, canaryMean, meanDifference: canaryMean - baselineMean };
  if (binaryScores(baseline, canary)) {
    let b = 0;
    let c = 0;
    baseline.forEach((x, i) => {
      if (x === 1 && canary[i] === 0) b++;
      if (x === 0 && canary[i] === 1) c++;
    });
    return { ...base, test: 'mcnemar-exact', pValue: mcnemarExact(b, c) };
  }
  return { ...base, test: 'wilcoxon-signed-rank', pValue: wilcoxonSignedRank(canary.map((x, i) => x - (baseline[i] as number))).pValue };
}
