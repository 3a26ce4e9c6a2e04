import type { Instance } from '../catalog/types';

/**
 * Scoring mode. `corrected` (default) fixes HELM's known scoring bugs; `helm` reproduces HELM's published
 * behaviour for comparison with the public leaderboard. A run records which one it used.
 */
export type ScoringMode = 'corrected' | 'helm';

export interface ScoreContext {
  mode: ScoringMode;
}

export interface Metric {
  name: string;
  /** Direction for leaderboards; null for counts that have no better or worse. */
  lowerIsBetter: boolean | null;
  /** The score of one prediction, or null when the metric does not apply to this instance. */
  score(prediction: string, instance: Instance, ctx: ScoreContext): number | null;
}
