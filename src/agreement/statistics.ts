/**
 * The agreement statistics, each as the Python library MedHELM's analysis would have called computes it,
 * so that a figure here and one from a notebook on the same ratings are the same number:
 *
 *   icc3k(matrix)            pingouin.intraclass_corr's ICC3k (and ICC3), with its F interval and p-value
 *   spearman(x, y)           scipy.stats.spearmanr: Pearson on average ranks, t-test p-value
 *   kendallTau(x, y)         scipy.stats.kendalltau: tau-b
 *   quadraticKappa(a, b)     sklearn.metrics.cohen_kappa_score(weights='quadratic', labels=[1..5])
 *   zScore(values, ddof)     (x - mean) / sd, sd with ddof 1 by default (pandas' Series.std)
 *   roundHalfEven(x)         numpy.round / Python's round: halves go to the even neighbour
 *
 * A statistic that the data cannot give (too few items, a constant rater) is null with its reason:
 * never NaN, never an exception, so one bad dataset does not hide the figures of the others.
 */
import { fQuantile, fSurvival, tTwoSided } from './distributions';

/** A figure, or why there is none. */
export type Maybe<T> = { value: T; reason?: undefined } | { value: null; reason: string };

export interface Icc {
  /** ICC(3,k): two-way mixed, consistency, mean of the k raters ((MSR - MSE) / MSR). */
  icc: number;
  /** The 95% (1 - alpha) interval of ICC(3,k) from the F distribution, as pingouin reports it (unrounded). */
  ci: [number, number];
  /** ICC(3,1): the same model, one rater ((MSR - MSE) / (MSR + (k - 1) MSE)), and its interval. */
  single: number;
  singleCi: [number, number];
  /** F = MSR / MSE with (df1, df2) = (n - 1, (n - 1)(k - 1)), and P(F' > F). */
  f: number;
  df1: number;
  df2: number;
  p: number;
  /** Targets (rows) and raters (columns). */
  n: number;
  k: number;
}

function mean(values: readonly number[]): number {
  let s = 0;
  for (const v of values) s += v;
  return s / values.length;
}

function isConstant(values: readonly number[]): boolean {
  return values.every((v) => v === values[0]);
}

/** The two mean squares of a complete n x k table: rows (targets) and residual (two-way, no interaction). */
function meanSquares(matrix: readonly (readonly number[])[], k: number): { msr: number; mse: number } {
  const n = matrix.length;
  const grand = mean(matrix.flat());
  const rowMeans = matrix.map((r) => mean(r));
  const colMeans = Array.from({ length: k }, (_, j) => mean(matrix.map((r) => r[j] as number)));
  let ssr = 0;
  let sse = 0;
  for (let i = 0; i < n; i++) {
    const row = matrix[i] as readonly number[];
    const rowMean = rowMeans[i] as number;
    ssr += k * (rowMean - grand) ** 2;
    for (let j = 0; j < k; j++) sse += ((row[j] as number) - rowMean - (colMeans[j] as number) + grand) ** 2;
  }
  return { msr: ssr / (n - 1), mse: sse / ((n - 1) * (k - 1)) };
}

/**
 * ICC(3,k) of n targets rated by the same k raters (rows complete), with pingouin's interval:
 * F = MSR/MSE, lower = 1 - 1/(F / F⁻¹(1 - α/2; df1, df2)), upper = 1 - 1/(F · F⁻¹(1 - α/2; df2, df1)).
 */
export function icc3k(matrix: readonly (readonly number[])[], alpha = 0.05): Maybe<Icc> {
  const n = matrix.length;
  const k = matrix[0]?.length ?? 0;
  if (n < 3) return { value: null, reason: `${n} items rated by all raters; ICC needs at least 3` };
  if (k < 2) return { value: null, reason: 'fewer than 2 raters' };
  if (matrix.some((r) => r.length !== k || r.some((v) => !Number.isFinite(v)))) return { value: null, reason: 'an item lacks a rating (rows must be complete)' };
  const { msr, mse } = meanSquares(matrix, k);
  if (!(msr > 0)) return { value: null, reason: 'every item has the same mean rating (no variance between items)' };
  if (!(mse > 0)) return { value: null, reason: 'the raters agree perfectly up to a shift (no residual variance): ICC is 1 with no interval' };
  const f = msr / mse;
  const df1 = n - 1;
  const df2 = (n - 1) * (k - 1);
  const fl = f / fQuantile(1 - alpha / 2, df1, df2);
  const fu = f * fQuantile(1 - alpha / 2, df2, df1);
  return {
    value: {
      icc: (msr - mse) / msr,
      ci: [1 - 1 / fl, 1 - 1 / fu],
      single: (msr - mse) / (msr + (k - 1) * mse),
      singleCi: [(fl - 1) / (fl + (k - 1)), (fu - 1) / (fu + (k - 1))],
      f,
      df1,
      df2,
      p: fSurvival(f, df1, df2),
      n,
      k,
    },
  };
}

/** Ranks 1..n, ties given the mean of the ranks they span (scipy.stats.rankdata's 'average'). */
export function averageRanks(values: readonly number[]): number[] {
  const order = values.map((v, i) => [v, i] as const).sort((a, b) => a[0] - b[0]);
  const ranks = new Array<number>(values.length);
  for (let start = 0; start < order.length;) {
    let end = start;
    while (end + 1 < order.length && (order[end + 1] as readonly [number, number])[0] === (order[start] as readonly [number, number])[0]) end++;
    const rank = (start + end) / 2 + 1;
    for (let i = start; i <= end; i++) ranks[(order[i] as readonly [number, number])[1]] = rank;
    start = end + 1;
  }
  return ranks;
}

function pearson(x: readonly number[], y: readonly number[]): number {
  const mx = mean(x);
  const my = mean(y);
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < x.length; i++) {
    const dx = (x[i] as number) - mx;
    const dy = (y[i] as number) - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  // Clipped as scipy clips: rounding can carry |r| a hair past 1.
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

export interface Correlation {
  rho: number;
  /** Two-sided p-value: Student's t with n - 2 degrees of freedom (scipy's default). */
  p: number;
  n: number;
}

function pairCheck(x: readonly number[], y: readonly number[], least: number): string | undefined {
  if (x.length !== y.length) return 'the two series differ in length';
  if (x.length < least) return `${x.length} paired items; at least ${least} are needed`;
  if (isConstant(x) || isConstant(y)) return 'one side gives every item the same score';
  return undefined;
}

/** Spearman's rho as scipy.stats.spearmanr: Pearson's r on average ranks. */
export function spearman(x: readonly number[], y: readonly number[]): Maybe<Correlation> {
  const bad = pairCheck(x, y, 3);
  if (bad) return { value: null, reason: bad };
  const rho = pearson(averageRanks(x), averageRanks(y));
  const df = x.length - 2;
  const p = Math.abs(rho) === 1 ? 0 : tTwoSided(rho * Math.sqrt(df / ((1 + rho) * (1 - rho))), df);
  return { value: { rho, p, n: x.length } };
}

/**
 * Kendall's tau-b as scipy.stats.kendalltau: (concordant - discordant) / sqrt((pairs - x ties)(pairs -
 * y ties)), a pair tied on both sides counted in both tie counts. O(n²): rankings and studies are small.
 */
export function kendallTau(x: readonly number[], y: readonly number[]): Maybe<number> {
  const bad = pairCheck(x, y, 2);
  if (bad) return { value: null, reason: bad };
  let s = 0;
  let xTies = 0;
  let yTies = 0;
  let pairs = 0;
  for (let i = 0; i < x.length; i++)
    for (let j = i + 1; j < x.length; j++) {
      const dx = Math.sign((x[i] as number) - (x[j] as number));
      const dy = Math.sign((y[i] as number) - (y[j] as number));
      pairs++;
      if (dx === 0) xTies++;
      if (dy === 0) yTies++;
      s += dx * dy;
    }
  return { value: s / Math.sqrt((pairs - xTies) * (pairs - yTies)) };
}

export const LIKERT_LABELS: readonly number[] = [1, 2, 3, 4, 5];

/**
 * Cohen's kappa with quadratic weights as sklearn's cohen_kappa_score(a, b, weights='quadratic', labels):
 * the weight of cell (i, j) is (i - j)² over the labels' positions, the expected table the outer product
 * of the margins over the total; pairs with a value outside `labels` are left out (sklearn's
 * confusion_matrix ignores them).
 */
export function quadraticKappa(a: readonly number[], b: readonly number[], labels: readonly number[] = LIKERT_LABELS): Maybe<number> {
  if (a.length !== b.length) return { value: null, reason: 'the two series differ in length' };
  const q = labels.length;
  const index = new Map(labels.map((l, i) => [l, i]));
  const table = Array.from({ length: q }, () => new Array<number>(q).fill(0));
  let total = 0;
  for (let t = 0; t < a.length; t++) {
    const i = index.get(a[t] as number);
    const j = index.get(b[t] as number);
    if (i === undefined || j === undefined) continue;
    (table[i] as number[])[j] = ((table[i] as number[])[j] as number) + 1;
    total++;
  }
  if (total < 2) return { value: null, reason: `${total} paired items within the labels; at least 2 are needed` };
  const rows = table.map((r) => r.reduce((s, v) => s + v, 0));
  const cols = labels.map((_, j) => table.reduce((s, r) => s + (r[j] as number), 0));
  let observed = 0;
  let expected = 0;
  for (let i = 0; i < q; i++)
    for (let j = 0; j < q; j++) {
      const w = (i - j) ** 2;
      observed += w * ((table[i] as number[])[j] as number);
      expected += (w * (rows[i] as number) * (cols[j] as number)) / total;
    }
  if (expected === 0) return { value: null, reason: 'both sides put every item in one category (kappa undefined)' };
  return { value: 1 - observed / expected };
}

/**
 * Standard scores (x - mean) / sd. ddof 1 (the sample sd, n - 1 in the denominator) by default: it is
 * pandas' Series.std default, what `(s - s.mean()) / s.std()` in MedHELM's Python analysis computes;
 * scipy.stats.zscore's default is ddof 0. Null for fewer than 2 values or a constant series.
 */
export function zScore(values: readonly number[], ddof: 0 | 1 = 1): Maybe<number[]> {
  if (values.length < 2) return { value: null, reason: `only ${values.length} score${values.length === 1 ? '' : 's'}; a z-score needs at least 2` };
  const m = mean(values);
  const ss = values.reduce((s, v) => s + (v - m) ** 2, 0);
  const sd = Math.sqrt(ss / (values.length - ddof));
  if (!(sd > 0)) return { value: null, reason: 'every rating is the same (sd 0)' };
  return { value: values.map((v) => (v - m) / sd) };
}

/**
 * Rounds to the nearest integer, an exact half to the even one (2.5 -> 2, 3.5 -> 4), as numpy.round and
 * Python's round do, so a composite of 2.5 lands in the same Likert category as in MedHELM's analysis
 * (Math.round would give 3). Composites such as 3.5 (two criteria) or 4.5 are common, so it matters.
 */
export function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}
