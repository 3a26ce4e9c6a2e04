/**
 * Output stability (`--repeat K`, CHAI's "output stability across repeated runs"): K runs of one sample
 * on one endpoint, requested together; per group, how often the K answers to an instance were the same
 * byte for byte, how often its main score was, and the spread of the K runs' main-metric means over the
 * instances all of them finished. At temperature 0 it is also a check of the endpoint's determinism.
 * The figures are the runs' figures: whoever may not see one run's figures sees none of the group's.
 */
import { UserError } from '../errors';
import { wilson } from '../export';
import { meanSpread, type RunRow } from '../runs';

/** At most this many repeats in one request: enough for a spread, few enough not to burn a budget by a typo. */
export const MAX_REPEATS = 10;

export interface StabilityView {
  groupId: string;
  benchmarkId: string;
  endpointId: string;
  mainMetric: string;
  temperature: number;
  /** K, as requested. */
  repeats: number;
  runs: { runId: string; status: string; commonMean: number | null }[];
  /** Every run of the group completed (else the figures are over what is finished so far). */
  complete: boolean;
  /** Instances finished in every run of the group: what the figures below are over. */
  instances: number;
  exactAgreement: Agreement | null;
  scoreAgreement: Agreement | null;
  /** Of the K runs' main-metric means over the common instances: sample SD (n - 1), min and max; null below 2 means. */
  spread: { sd: number; min: number; max: number } | null;
}

export interface Agreement {
  count: number;
  rate: number;
  ci95: { low: number; high: number };
}

/** The number of repeats asked for, checked: a whole number from 2 to MAX_REPEATS. */
export function repeatCount(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 2 || value > MAX_REPEATS) {
    throw new UserError('run.invalid', `repeat must be a whole number from 2 to ${MAX_REPEATS} (runs of the same sample on the same endpoint), not ${String(value).slice(0, 20)}`);
  }
  return value;
}

function agreement(count: number, n: number): Agreement | null {
  if (n === 0) return null;
  const ci = wilson(count, n);
  return { count, rate: count / n, ci95: { low: ci.low, high: ci.high } };
}

/** The stability view of a group whose runs the caller may see the figures of (checked by the caller of this). */
export function stabilityView(runs: readonly RunRow[], figures: { common: number; sameAnswer: number; sameScore: number; runMeans: (number | null)[] }): StabilityView {
  const first = runs[0];
  const repeat = first?.spec.repeat;
  if (!first || !repeat) throw new UserError('run.not-repeated', 'the run was not requested with --repeat: it has no repeat group; request one with --repeat K');
  return {
    groupId: repeat.groupId,
    benchmarkId: first.benchmark_id,
    endpointId: first.endpoint_id,
    mainMetric: first.spec.benchmark.mainMetric,
    temperature: first.spec.temperature,
    repeats: repeat.of,
    runs: runs.map((r, i) => ({ runId: r.run_id, status: r.status, commonMean: figures.runMeans[i] ?? null })),
    complete: runs.length === repeat.of && runs.every((r) => r.status === 'completed'),
    instances: figures.common,
    exactAgreement: agreement(figures.sameAnswer, figures.common),
    scoreAgreement: agreement(figures.sameScore, figures.common),
    spread: meanSpread(figures.runMeans),
  };
}
