/**
 * Disclosure control, as pure functions over aggregate statistics (never instance rows):
 *  - minimum cell size k: a count is released only as 0 or as a range whose low end is at least k;
 *    a metric is released only when at least k instances stand behind it;
 *  - complementary suppression within a partition (the cells of one subgroup field add up to the
 *    run's total, which is released): the hidden cells are never exactly one and never fewer than k
 *    instances together, so no hidden cell (nor a group of fewer than k) is the total minus the others.
 *    The same holds per metric;
 *  - values at a resolution no finer than 1 / the low end of their count range, and intervals computed
 *    from the range and the value alone, so that value and interval do not pin the exact count.
 */
import { getMetric } from '../metrics';
import type { Count, CountRange, MetricCell, SubgroupCell, SuppressionMarker } from './types';

export interface DisclosureSettings {
  /** Minimum cell size. */
  k: number;
  /** Width of released count ranges. */
  width: number;
  /** Most decimals a released value or interval has. */
  decimals: number;
}

/** What SQL computes for one metric over one cell: a count and a sum, never an instance's value. */
export interface MetricStats {
  name: string;
  n: number;
  sum: number;
  /** Every value lies in [0, 1]: an interval can be given for it (see rangeInterval). */
  unit: boolean;
}

/**
 * A count as released: exactly 0, or a range of `width` with its low end raised to k, e.g. 11-19,
 * 20-29, 30-39 for k = 11 and width 10. The range always contains n and never shows a value below k.
 */
export function rangeOf(n: number, s: DisclosureSettings): CountRange {
  const base = Math.floor(n / s.width) * s.width;
  return { low: Math.max(s.k, base), high: base + s.width - 1 };
}

export function releasedCount(n: number, s: DisclosureSettings): Count {
  if (n === 0) return { low: 0, high: 0 };
  if (n < s.k) return { suppressed: '<k' };
  return rangeOf(n, s);
}

/** Rounded down (low ends of intervals: rounding never narrows a released interval). */
function floorTo(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.floor(value * f) / f;
}

/** Rounded up (high ends of intervals). */
function ceilTo(value: number, decimals: number): number {
  const f = 10 ** decimals;
  return Math.ceil(value * f) / f;
}

const Z95 = 1.959963984540054;

/** Wilson score interval at proportion p of n: well behaved near 0 and 1 and for small n. */
function wilsonAt(p: number, n: number): { low: number; high: number } {
  const z2 = Z95 * Z95;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** Wilson score interval for a proportion (0/1 values). */
export function wilson(successes: number, n: number): { low: number; high: number } {
  return wilsonAt(successes / n, n);
}

/**
 * Released values are multiples of 1/D, D the largest of these that is at most the low end of the
 * count range (and at most 10^decimals). Why: for every n of the range the fractions j/n are at most
 * 1/n <= 1/D apart, so every multiple of 1/D is what some success count out of every n rounds to;
 * the value alone rules out no n of the range (tests/unit/export-precision.test.ts tries them all).
 */
const VALUE_DENOMINATORS = [1000, 500, 200, 100, 50, 20, 10, 5, 2, 1] as const;

export function valueDenominator(low: number, decimals: number): number {
  return VALUE_DENOMINATORS.find((d) => d <= low && d <= 10 ** decimals) ?? 1;
}

/**
 * The 95% interval released with a [0, 1] metric whose value is index/d: the widest Wilson interval
 * over every n of the released range and every proportion that rounds to that value. It is a function
 * of what is released anyway (range and value), so it says nothing more about the exact count. For a
 * metric that is not 0/1 it is conservative: no [0, 1] variable of a given mean varies more than a
 * 0/1 one. Wilson's endpoints grow with the proportion, so the extremes lie at the rounding step's ends.
 */
export function rangeInterval(range: CountRange, index: number, d: number): { low: number; high: number } {
  const pLow = Math.max(0, (index - 0.5) / d);
  const pHigh = Math.min(1, (index + 0.5) / d);
  let low = 1;
  let high = 0;
  for (let n = range.low; n <= range.high; n++) {
    low = Math.min(low, wilsonAt(pLow, n).low);
    high = Math.max(high, wilsonAt(pHigh, n).high);
  }
  return { low, high };
}

/**
 * A metric as released: hidden below k values; otherwise its count range, its value at the range's
 * resolution and, for a [0, 1] metric, the interval of the range and value. A metric outside [0, 1]
 * gets no interval: without a bound on its variance, any interval would show the sample SD.
 */
export function metricCell(m: MetricStats | undefined, name: string, s: DisclosureSettings): MetricCell {
  if (!m || m.n < s.k) return { name, suppressed: '<k' };
  const n = rangeOf(m.n, s);
  const d = valueDenominator(n.low, s.decimals);
  const mean = Math.round((m.sum * d) / m.n);
  // HealthBench's metrics are released as the run shows them: the mean clipped to [0, 1], without
  // a proportion's interval (their scores are not 0/1 outcomes; the run reports a bootstrap std).
  const clipped = getMetric(name)?.aggregate === 'clipped-mean';
  const index = clipped ? Math.min(d, Math.max(0, mean)) : mean;
  const value = index / d === 0 ? 0 : index / d;
  if (!m.unit || clipped) return { name, value, n };
  const ci = rangeInterval(n, index, d);
  return { name, value, n, ci95: { low: floorTo(ci.low, s.decimals), high: ceilTo(ci.high, s.decimals) } };
}

export type CellStatus = 'released' | SuppressionMarker;

/**
 * Which cells of one partition may be released, given each cell's count. Cells of 0 are released
 * (as 0); cells of 1..k-1 are hidden ('<k'); then complementary suppression (see complement).
 */
export function suppressPartition(counts: readonly number[], k: number): CellStatus[] {
  const status: CellStatus[] = counts.map((n) => (n > 0 && n < k ? '<k' : 'released'));
  return complement(counts, status, k);
}

/**
 * Adds complementary suppression to a partition where some cells are already hidden (for any reason):
 * while exactly one non-empty cell is hidden, or the hidden cells hold 1..k-1 instances together, hide
 * the smallest released non-empty cell. The total is released, so the hidden cells together are the
 * total minus the released ones: one hidden cell would be recovered, and two of 5 would be a group of 10.
 */
export function complement(counts: readonly number[], status: CellStatus[], k: number): CellStatus[] {
  const hiddenCells = () => counts.filter((n, i) => n > 0 && status[i] !== 'released');
  for (;;) {
    const hidden = hiddenCells();
    const sum = hidden.reduce((a, n) => a + n, 0);
    if (hidden.length !== 1 && (sum === 0 || sum >= k)) return status;
    let smallest = -1;
    counts.forEach((n, i) => {
      if (n > 0 && status[i] === 'released' && (smallest < 0 || n < (counts[smallest] as number))) smallest = i;
    });
    if (smallest < 0) return status;
    status[smallest] = 'complementary';
  }
}

/**
 * The cells of one subgroup field: counts suppressed by k with complementary suppression, then per
 * metric the same again over the cells whose count is released (a metric can have fewer values than
 * its cell has instances; a cell hidden by its count counts as hidden for every metric).
 * `stats[i]` holds cell i's metric statistics, read only for cells whose count is released.
 * `cellStatus` is given when cells were hidden for another reason too (differencing, in content.ts).
 */
export function subgroupCells(
  labels: readonly string[],
  counts: readonly number[],
  stats: readonly (ReadonlyMap<string, MetricStats> | undefined)[],
  metrics: readonly string[],
  s: DisclosureSettings,
  cellStatus: readonly CellStatus[] = suppressPartition(counts, s.k),
): SubgroupCell[] {
  const metricStatus = new Map<string, CellStatus[]>();
  for (const m of metrics) {
    const sizes = labels.map((_, i) => (cellStatus[i] === 'released' ? (stats[i]?.get(m)?.n ?? 0) : (counts[i] ?? 0)));
    const status = labels.map((_, i): CellStatus => {
      if (cellStatus[i] !== 'released') return cellStatus[i] as CellStatus;
      const size = sizes[i] ?? 0;
      return size > 0 && size < s.k ? '<k' : 'released';
    });
    metricStatus.set(m, complement(sizes, status, s.k));
  }
  return labels.map((label, i): SubgroupCell => {
    const status = cellStatus[i] as CellStatus;
    if (status !== 'released') return { label, suppressed: status };
    const count = counts[i] ?? 0;
    return {
      label,
      n: count === 0 ? { low: 0, high: 0 } : rangeOf(count, s),
      metrics: metrics.map((m): MetricCell => {
        const ms = metricStatus.get(m)?.[i] ?? '<k';
        return ms === 'released' ? metricCell(stats[i]?.get(m), m, s) : { name: m, suppressed: ms };
      }),
    };
  });
}
