/**
 * Rank-based aggregates: HELM's mean win rate and the MedHELM paper's win SD.
 *
 * Mean win rate follows helm-summarize's compute_aggregate_row_win_rates: per column, a value's wins
 * are the number of strictly worse values plus (ties - 1) / 2, divided by n - 1, where n counts the
 * column's non-null values; a column without a direction or with fewer than two values is skipped;
 * a model's mean win rate is the mean over the columns where it has a value (null if none). Ties are
 * exact equality of the stored numbers, as in HELM.
 *
 * Win SD follows the authors' analysis code (som-shahlab/medhelm, src/medhelm/tables/
 * 1_win_rate_table.py): for each other model, the fraction of benchmarks on which this model is
 * strictly better (a tie is not a win), then the population standard deviation (ddof=0) of those
 * fractions. Two deliberate differences, both invisible on a complete table such as the paper's:
 * the fraction is over the benchmarks both models have (the authors' pandas code divides by every
 * column, counting a missing value as a loss), and "better" respects lowerIsBetter and skips
 * direction-less columns (the authors' code compares with ">" on all columns, which is the same for
 * MedHELM's higher-is-better main metrics).
 */
import type { ScoreTable } from './types';

/** Per-column win rates: `rates[m][b]`, null where the model has no value or the column is skipped. */
export type WinRateMatrix = (number | null)[][];

/** +1 if a is better than b under the column's direction, -1 if worse, 0 if tied. */
function compare(a: number, b: number, lowerIsBetter: boolean): number {
  if (a === b) return 0;
  return a > b !== lowerIsBetter ? 1 : -1;
}

export function columnWinRates(table: ScoreTable): { rates: WinRateMatrix; inWinRate: boolean[] } {
  const rates: WinRateMatrix = table.models.map(() => table.benchmarks.map(() => null));
  const inWinRate = table.benchmarks.map((benchmark, b) => {
    const lowerIsBetter = benchmark.lowerIsBetter;
    if (lowerIsBetter === null) return false;
    const counts = new Map<number, number>();
    for (const row of table.cells) {
      const v = row[b];
      if (v !== null && v !== undefined) counts.set(v, (counts.get(v) ?? 0) + 1);
    }
    // Worst first, as HELM's sorted(..., reverse=lower_is_better).
    const ordered = [...counts.entries()].sort(([x], [y]) => compare(x, y, lowerIsBetter));
    const winsOf = new Map<number, number>();
    let below = 0;
    for (const [value, count] of ordered) {
      winsOf.set(value, below + (count - 1) / 2);
      below += count;
    }
    const n = below;
    if (n < 2) return false;
    table.cells.forEach((row, m) => {
      const v = row[b];
      if (v !== null && v !== undefined) rates[m]![b] = winsOf.get(v)! / (n - 1);
    });
    return true;
  });
  return { rates, inWinRate };
}

export function mean(values: number[]): number | null {
  if (values.length === 0) return null;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Mean of a model's column win rates over the given columns (all when omitted), and how many. */
export function meanWinRate(rates: (number | null)[], columns?: number[]): { value: number | null; count: number } {
  const picked = (columns ?? rates.map((_, i) => i)).map((i) => rates[i]).filter((r): r is number => r !== null && r !== undefined);
  return { value: mean(picked), count: picked.length };
}

/** Population (ddof 0) or sample (ddof 1) standard deviation; null when there are too few values. */
export function standardDeviation(values: number[], ddof: 0 | 1): number | null {
  if (values.length - ddof < 1) return null;
  const m = mean(values)!;
  let squares = 0;
  for (const v of values) squares += (v - m) * (v - m);
  return Math.sqrt(squares / (values.length - ddof));
}

/** The MedHELM win SD of model `m`; opponents are the other models sharing at least one directed benchmark. */
export function winSd(table: ScoreTable, m: number): { value: number | null; opponents: number } {
  const fractions: number[] = [];
  const mine = table.cells[m]!;
  table.cells.forEach((theirs, other) => {
    if (other === m) return;
    let shared = 0;
    let better = 0;
    table.benchmarks.forEach((benchmark, b) => {
      const a = mine[b];
      const c = theirs[b];
      if (benchmark.lowerIsBetter === null || a === null || a === undefined || c === null || c === undefined) return;
      shared += 1;
      if (compare(a, c, benchmark.lowerIsBetter) > 0) better += 1;
    });
    if (shared > 0) fractions.push(better / shared);
  });
  return { value: standardDeviation(fractions, 0), opponents: fractions.length };
}
