/**
 * Scores mapped to 0-1 for the macro average, as the MedHELM paper does for its Table 1 and its
 * category figures: jury scores on 1-5 become (x - 1) / 4, 0-1 metrics stay as they are. Here the
 * mapping comes from each benchmark's declared range, (x - min) / (max - min), instead of the
 * authors' guess from the values (their script treats a column as 1-5 when all values lie in
 * [1, 5] but not all in [0, 1]); on MedHELM's leaderboard both give the same numbers.
 *
 * A lowerIsBetter column is flipped, 1 - (x - min) / (max - min), so that 1 is always the best end
 * of the range and an average never rewards a high error rate. A column without a direction is left
 * out: it has no "better", so it cannot count towards an accuracy average.
 */
import type { TableBenchmark } from './types';

export function normalizedScore(value: number, benchmark: TableBenchmark): number | null {
  if (benchmark.lowerIsBetter === null) return null;
  const [min, max] = benchmark.range;
  const scaled = (value - min) / (max - min);
  return benchmark.lowerIsBetter ? 1 - scaled : scaled;
}
