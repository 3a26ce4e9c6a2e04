import type { Instance } from '../catalog/types';

/**
 * Scoring mode. `corrected` (default) fixes HELM's known scoring bugs; `helm` reproduces HELM's published
 * behaviour for comparison with the public leaderboard. A run records which one it used.
 */
export type ScoringMode = 'corrected' | 'helm';

export interface ScoreContext {
  mode: ScoringMode;
}

/** What a leaderboard needs to know of a metric. */
export interface MetricInfo {
  name: string;
  /** Direction for leaderboards; null for counts that have no better or worse. */
  lowerIsBetter: boolean | null;
}

/** A metric computed from the prediction and the instance alone, in process. */
export interface Metric extends MetricInfo {
  /** The score of one prediction, or null when the metric does not apply to this instance. */
  score(prediction: string, instance: Instance, ctx: ScoreContext): number | null;
}

/**
 * Several metrics computed together by one piece of work that may leave the process or take time:
 * EHRSQL runs two queries for five numbers, the jury calls three judges for two. Each is scored once
 * per instance whichever of its metrics a benchmark names.
 */
export interface Scorer<Ctx> {
  name: string;
  metrics: MetricInfo[];
  score(prediction: string, instance: Instance, ctx: Ctx): Promise<Record<string, number | null>>;
}
