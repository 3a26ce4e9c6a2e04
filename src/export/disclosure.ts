/**
 * Disclosure control, as pure functions over aggregate statistics (never instance rows):
 *  - minimum cell size k: a count is released only as 0 or as a range whose low end is at least k;
 *    a metric is released only when at least k instances stand behind it;
 *  - complementary suppression within a partition (the cells of one subgroup field add up to the
 *    run's total, which is released): if exactly one cell is hidden, the next smallest is hidden too,
 *    so no hidden cell can be recovered as total minus the others. The same holds per metric;
 *  - values rounded to a fixed number of decimals; confidence intervals only for released cells.
 */
import type { Count, CountRange, MetricCell, SubgroupCell, SuppressionMarker } from './types';

export interface DisclosureSettings {
  /** Minimum cell size. */
  k: number;
  /** Width of released count ranges. */
  width: number;
  /** Decimals of released metric values and intervals. */
  decimals: number;
}

/** What SQL computes for one metric over one cell: counts and sums, never an instance's value. */
export interface MetricStats {
  name: string;
  n: number;
  sum: number;
  sumSquares: number;
  /** Every value is 0 or 1 (accuracy-like): the interval is Wilson's. */
  binary: boolean;
  /** Every value lies in [0, 1]: a normal interval is clipped to it. */
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

export function roundTo(value: number, decimals: number): number {
  const f = 10 ** decimals;
  const r = Math.round(value * f) / f;
  return Object.is(r, -0) ? 0 : r;
}

const Z95 = 1.959963984540054;

/** Wilson score interval for a proportion (0/1 values): well behaved near 0 and 1 and for small n. */
export function wilson(successes: number, n: number): { low: number; high: number } {
  const p = successes / n;
  const z2 = Z95 * Z95;
  const denom = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denom;
  const half = (Z95 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** Normal-approximation interval of a mean from n, sum and sum of squares (sample SD). */
export function normalInterval(m: MetricStats): { low: number; high: number } {
  const mean = m.sum / m.n;
  const variance = m.n > 1 ? Math.max(0, (m.sumSquares - m.n * mean * mean) / (m.n - 1)) : 0;
  const half = (Z95 * Math.sqrt(variance)) / Math.sqrt(m.n);
  const low = mean - half;
  const high = mean + half;
  return m.unit ? { low: Math.max(0, low), high: Math.min(1, high) } : { low, high };
}

export function metricCell(m: MetricStats | undefined, name: string, s: DisclosureSettings): MetricCell {
  if (!m || m.n < s.k) return { name, suppressed: '<k' };
  const ci = m.binary ? wilson(m.sum, m.n) : normalInterval(m);
  return {
    name,
    value: roundTo(m.sum / m.n, s.decimals),
    n: rangeOf(m.n, s),
    ci95: { low: roundTo(ci.low, s.decimals), high: roundTo(ci.high, s.decimals) },
  };
}

export type CellStatus = 'released' | SuppressionMarker;

/**
 * Which cells of one partition may be released, given each cell's count. Cells of 0 are released
 * (as 0); cells of 1..k-1 are hidden ('<k'); if exactly one non-empty cell is hidden, the smallest
 * released non-empty cell is hidden too ('complementary'), so the hidden one cannot be computed as
 * the total minus the rest. Two or more hidden cells only reveal their sum, which is at least k
 * whenever the total is released.
 */
export function suppressPartition(counts: readonly number[], k: number): CellStatus[] {
  const status: CellStatus[] = counts.map((n) => (n > 0 && n < k ? '<k' : 'released'));
  return complement(counts, status);
}

/**
 * Adds complementary suppression to a partition where some cells are already hidden (for any reason):
 * while exactly one non-empty cell is hidden, hide the smallest released non-empty one.
 */
export function complement(counts: readonly number[], status: CellStatus[]): CellStatus[] {
  const hidden = () => counts.filter((n, i) => n > 0 && status[i] !== 'released').length;
  if (hidden() === 1) {
    let smallest = -1;
    counts.forEach((n, i) => {
      if (n > 0 && status[i] === 'released' && (smallest < 0 || n < (counts[smallest] as number))) smallest = i;
    });
    if (smallest >= 0) status[smallest] = 'complementary';
  }
  return status;
}

/**
 * The cells of one subgroup field: counts suppressed by k with complementary suppression, then per
 * metric the same again over the cells whose count is released (a metric can have fewer values than
 * its cell has instances; a cell hidden by its count counts as hidden for every metric).
 * `stats[i]` holds cell i's metric statistics, read only for cells whose count is released.
 */
export function subgroupCells(
  labels: readonly string[],
  counts: readonly number[],
  stats: readonly (ReadonlyMap<string, MetricStats> | undefined)[],
  metrics: readonly string[],
  s: DisclosureSettings,
): SubgroupCell[] {
  const cellStatus = suppressPartition(counts, s.k);
  const metricStatus = new Map<string, CellStatus[]>();
  for (const m of metrics) {
    const sizes = labels.map((_, i) => (cellStatus[i] === 'released' ? (stats[i]?.get(m)?.n ?? 0) : (counts[i] ?? 0)));
    const status = labels.map((_, i): CellStatus => {
      if (cellStatus[i] !== 'released') return cellStatus[i] as CellStatus;
      const size = sizes[i] ?? 0;
      return size > 0 && size < s.k ? '<k' : 'released';
    });
    metricStatus.set(m, complement(sizes, status));
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
