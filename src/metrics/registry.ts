/**
 * Metric registry: every metric a benchmark may name, with its direction. Most are computed in
 * process from the prediction alone; the EHRSQL and jury metrics come from scorers that run SQL or
 * call judges, each computing several metrics in one go.
 */
import { ehrSqlScorer } from './ehrsql';
import { exactMatch, prefixExactMatch, quasiExactMatch, quasiPrefixExactMatch } from './exact-match';
import { icd10F1, icd10Precision, icd10Recall } from './icd10';
import { juryScorer } from './jury';
import { medcalcAccuracy } from './medcalc';
import { medecErrorFlagAccuracy, medecErrorSentenceAccuracy } from './medec';
import { rouge1, rouge2, rougeLMetric } from './rouge';
import type { Metric, MetricInfo } from './types';

export type Provider = { kind: 'metric'; metric: Metric } | { kind: 'scorer'; scorer: 'ehr_sql' | 'jury' };

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
]) {
  PROVIDERS.set(m.name, { info: { name: m.name, lowerIsBetter: m.lowerIsBetter }, provider: { kind: 'metric', metric: m } });
}
for (const info of ehrSqlScorer.metrics) PROVIDERS.set(info.name, { info, provider: { kind: 'scorer', scorer: 'ehr_sql' } });
for (const info of juryScorer.metrics) PROVIDERS.set(info.name, { info, provider: { kind: 'scorer', scorer: 'jury' } });

export function getMetric(name: string): MetricInfo | undefined {
  return PROVIDERS.get(name)?.info;
}

/** An in-process metric by name (undefined for unknown names and for scorer-computed metrics). */
export function inProcessMetric(name: string): Metric | undefined {
  const p = PROVIDERS.get(name)?.provider;
  return p?.kind === 'metric' ? p.metric : undefined;
}

export function providerOf(name: string): Provider | undefined {
  return PROVIDERS.get(name)?.provider;
}

export function metricNames(): string[] {
  return [...PROVIDERS.keys()];
}
