/**
 * Metric registry: every metric a benchmark may name, with its direction. Most are computed in
 * process from the prediction alone; the EHRSQL and jury metrics are read from the annotations of
 * the instance (src/annotate ran the SQL or asked the judges). Every metric is a pure function.
 */
import { ANNOTATED_METRICS } from './annotated';
import { exactMatch, prefixExactMatch, quasiExactMatch, quasiPrefixExactMatch } from './exact-match';
import { icd10F1, icd10Precision, icd10Recall } from './icd10';
import { medcalcAccuracy } from './medcalc';
import { medecErrorFlagAccuracy, medecErrorSentenceAccuracy } from './medec';
import { rouge1, rouge2, rougeLMetric } from './rouge';
import { sctExpertSetMembership, sctScoreMetric } from './sct';
import { metaGraderCriteriaMet } from './grade-parse';
import type { Annotations, AnnotatorName, Metric, MetricInfo, ScoringMode } from './types';
import type { Instance } from '../catalog';
import { sha256Hex } from '../canonical';

export type Provider = { kind: 'metric'; metric: Metric } | { kind: 'annotation'; annotator: AnnotatorName };

const PROVIDERS = new Map<string, { info: MetricInfo; provider: Provider }>();

for (const m of [
  exactMatch,
  quasiExactMatch,
  prefixExactMatch,
  quasiPrefixExactMatch,
  medcalcAccuracy,
  medecErrorFlagAccuracy,
  medecErrorSentenceAccuracy,
  icd10Precision,
  icd10Recall,
  icd10F1,
  rouge1,
  rouge2,
  rougeLMetric,
  // SCT-Bench (the MedHELM package): the expert panel's weight of the model's rating.
  sctScoreMetric,
  sctExpertSetMembership,
  // HealthBench's meta-evaluation: the grader's label of one criterion (the agreement figures: runs meta-eval).
  metaGraderCriteriaMet,
]) {
  PROVIDERS.set(m.name, { info: { name: m.name, lowerIsBetter: m.lowerIsBetter, ...(m.scorerVersion ? { scorerVersion: m.scorerVersion } : {}) }, provider: { kind: 'metric', metric: m } });
}
for (const { annotator, metrics } of ANNOTATED_METRICS) {
  for (const info of metrics) PROVIDERS.set(info.name, { info, provider: { kind: 'annotation', annotator } });
}

export function getMetric(name: string): MetricInfo | undefined {
  return PROVIDERS.get(name)?.info;
}

/** An in-process metric by name (undefined for unknown names and for scorer-computed metrics). */
export function inProcessMetric(name: string): Metric | undefined {
  const p = PROVIDERS.get(name)?.provider;
  return p?.kind === 'metric' ? p.metric : undefined;
}

/**
 * The scorer pin of a run: sha256 over the scoring mode and each of its metrics with its scorer version
 * (an unknown metric counts as version 0, so it still pins its name).
 */
export function scorerPin(metrics: readonly string[], mode: ScoringMode): string {
  const versions = metrics.map((name) => `${name}@${PROVIDERS.has(name) ? (PROVIDERS.get(name)?.info.scorerVersion ?? 1) : 0}`);
  return sha256Hex(['ehrbench.scorer.v1', mode, ...versions].join('\n'));
}

export function providerOf(name: string): Provider | undefined {
  return PROVIDERS.get(name)?.provider;
}

export function metricNames(): string[] {
  return [...PROVIDERS.keys()];
}

/** The annotators whose numbers the metrics of a benchmark read (none for in-process metrics). */
export function annotatorsFor(metricNames: readonly string[]): AnnotatorName[] {
  const out = new Set<AnnotatorName>();
  for (const name of metricNames) {
    const p = PROVIDERS.get(name)?.provider;
    if (p?.kind === 'annotation') out.add(p.annotator);
  }
  return [...out];
}

/**
 * The metrics to store for an instance: those its benchmark names, and every metric of an annotator
 * that ran on it (the jury's per-judge scores, failures and agreement are kept for runs show and
 * exports even where the benchmark names only jury_score).
 */
export function metricsToStore(declared: readonly string[], annotations: Annotations): string[] {
  const out = new Set(declared);
  for (const { annotator, metrics } of ANNOTATED_METRICS) if (annotations[annotator]) for (const m of metrics) out.add(m.name);
  return [...out];
}

/**
 * The scores of one prediction by every metric named: a pure function of the instance, the
 * prediction, its annotations and the scoring mode. Null where a metric does not apply.
 */
export function scoreInstance(metricNames: readonly string[], instance: Instance, prediction: string, annotations: Annotations, mode: ScoringMode): Record<string, number | null> {
  const scores: Record<string, number | null> = {};
  for (const name of metricNames) {
    const p = PROVIDERS.get(name)?.provider;
    if (!p) throw new Error(`metric ${name} is not in the registry`);
    scores[name] = p.kind === 'metric' ? p.metric.score(prediction, instance, { mode }) : (annotations[p.annotator]?.[name] ?? null);
  }
  return scores;
}
