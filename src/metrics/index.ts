/** Metrics: pure functions of (instance, prediction, annotations, mode). A benchmark names its metrics. */
export { annotatorsFor, getMetric, inProcessMetric, metricNames, metricsToStore, providerOf, scoreInstance, type Provider } from './registry';
export type { Annotations, AnnotatorName, Metric, MetricInfo, ScoreContext, ScoringMode } from './types';
export { DEFERRED_ANNOTATORS, EHRSQL_METRICS, JURY_METRICS, MAX_JUDGES } from './annotated';
export { mapChoice } from './exact-match';
export { helmCodes, normalizedCodes, setScores } from './icd10';
export { rougeTokens } from './rouge';
export { SCT_PANEL_FIELDS } from './sct';
