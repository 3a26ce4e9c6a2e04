/**
 * Disparity between the groups of one subgroup field, per metric, as seismometer reports it for its
 * fairness audit: the worst group, and each group's value as a ratio to the best group's, flagged
 * outside 0.8-1.25. A pure function of the released cells: a hidden cell (or a hidden metric) takes no
 * part, so it adds nothing to what the cells already release (each value is at a resolution that does
 * not pin its count; the ratio of two released values, to two decimals, says no more than they do).
 */
import { getMetric } from '../metrics';
import type { MetricDisparity, SubgroupCell } from './types';

/** seismometer's default fairness bounds (its `FairnessOptions`): a ratio outside them is flagged. */
export const DISPARITY_BOUNDS = { low: 0.8, high: 1.25 } as const;

/** Which way a metric is better: its own direction, else (the main metric) the benchmark's; null: none known. */
export function directionOf(metric: string, mainMetric: string, benchmarkLowerIsBetter: boolean | null): boolean | null {
  const own = getMetric(metric)?.lowerIsBetter;
  if (own === true || own === false) return own;
  return metric === mainMetric ? benchmarkLowerIsBetter : null;
}

const EPSILON = 1e-9;

const round2 = (x: number) => Math.round(x * 100) / 100;

/** The released value of a metric in a cell, or undefined when the cell or the metric is hidden. */
function releasedValue(cell: SubgroupCell, metric: string): number | undefined {
  if ('suppressed' in cell) return undefined;
  const m = cell.metrics.find((x) => x.name === metric);
  return m && 'value' in m ? m.value : undefined;
}

/**
 * One metric's disparity over the cells of a field, or undefined when no cell releases the metric.
 * Best and worst by the direction (ties: the first cell in the field's order); a ratio is the cell's
 * value over the best's, null for a hidden value, a best of 0 or below, or a negative value.
 */
export function metricDisparity(cells: readonly SubgroupCell[], metric: string, lowerIsBetter: boolean): MetricDisparity | undefined {
  const values = cells.map((c) => releasedValue(c, metric));
  let best = -1;
  let worst = -1;
  values.forEach((v, i) => {
    if (v === undefined) return;
    const better = (a: number, b: number) => (lowerIsBetter ? a < b : a > b);
    if (best < 0 || better(v, values[best] as number)) best = i;
    if (worst < 0 || better(values[worst] as number, v)) worst = i;
  });
  if (best < 0) return undefined;
  const reference = values[best] as number;
  return {
    metric,
    lowerIsBetter,
    best: cells[best]?.label as string,
    worst: cells[worst]?.label as string,
    ratios: cells.map((c, i) => {
      const v = values[i];
      if (v === undefined || reference <= 0 || v < 0) return { label: c.label, ratio: null, flagged: false };
      const ratio = v / reference;
      // On the exact ratio, not its rounding (0.795 is under 0.8); the tolerance only absorbs binary
      // floating point, so that 0.72 / 0.9 counts as the 0.8 it is.
      return { label: c.label, ratio: round2(ratio), flagged: ratio < DISPARITY_BOUNDS.low - EPSILON || ratio > DISPARITY_BOUNDS.high + EPSILON };
    }),
  };
}

/** Every metric with a known direction that some cell of the field releases. */
export function disparityOf(cells: readonly SubgroupCell[], metrics: readonly string[], direction: (metric: string) => boolean | null): MetricDisparity[] {
  const out: MetricDisparity[] = [];
  for (const m of metrics) {
    const lower = direction(m);
    if (lower === null) continue;
    const d = metricDisparity(cells, m, lower);
    if (d) out.push(d);
  }
  return out;
}
