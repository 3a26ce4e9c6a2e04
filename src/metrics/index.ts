/** Metrics: pure functions of (instance, prediction, annotations, mode). A benchmark names its metrics. */
export { annotatorsFor, getMetric, inProcessMetric, metricNames, metricsToStore, providerOf, scoreInstance, scorerPin, type Provider } from './registry';
export type { Annotations, AnnotatorName, Metric, MetricInfo, ScoreContext, ScoringMode } from './types';
export { DEFERRED_ANNOTATORS, EHRSQL_METRICS, JURY_METRICS, MAX_JUDGES, RUBRIC_AXES, RUBRIC_METRICS, RUBRIC_THEMES } from './annotated';
export { BOOTSTRAP_SAMPLES, bootstrapStd, bootstrapStdName, clippedMean, withClippedStats } from './clipped';
export { mapChoice } from './exact-match';
export { helmCodes, normalizedCodes, setScores } from './icd10';
export { rougeTokens } from './rouge';
export { SCT_PANEL_FIELDS } from './sct';
export { criteriaMet } from './grade-parse';
