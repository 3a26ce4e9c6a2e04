import type { Instance } from '../catalog';

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
  /**
   * How a run aggregates it over instances: the mean (default), or HealthBench's mean clipped to [0, 1]
   * with a bootstrap standard deviation beside it (`<name>_bootstrap_std`).
   */
  aggregate?: 'mean' | 'clipped-mean';
  /**
   * The scorer's version (default 1): raise it whenever a change makes the metric score any prediction
   * differently, so that runs scored before and after carry different scorer pins (scorerPin) and are
   * not compared without the caller saying so.
   */
  scorerVersion?: number;
}

/** A metric computed from the prediction and the instance alone, in process. */
export interface Metric extends MetricInfo {
  /** The score of one prediction, or null when the metric does not apply to this instance. */
  score(prediction: string, instance: Instance, ctx: ScoreContext): number | null;
}

/**
 * What the annotation stage (src/annotate) produced for one instance, by annotator: the numbers of
 * work that leaves the process or takes time (EHRSQL runs two queries for six numbers, the jury calls
 * three judges for three). Metrics read them; they never call out themselves.
 */
export type AnnotatorName = 'ehr_sql' | 'jury' | 'rubric';
export type Annotations = Partial<Record<AnnotatorName, Record<string, number | null>>>;
