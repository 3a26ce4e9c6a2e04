/** Metric registry: a benchmark names its metrics; the run engine scores each instance with them. */
import { exactMatch, prefixExactMatch, quasiExactMatch, quasiPrefixExactMatch } from './exact-match';
import { medcalcAccuracy } from './medcalc';
import { medecErrorFlagAccuracy, medecErrorSentenceAccuracy } from './medec';
import type { Metric } from './types';

export type { Metric, ScoreContext, ScoringMode } from './types';
export { mapChoice } from './exact-match';

const METRICS = new Map<string, Metric>(
  [exactMatch, quasiExactMatch, prefixExactMatch, quasiPrefixExactMatch, medcalcAccuracy, medecErrorFlagAccuracy, medecErrorSentenceAccuracy].map(
    (m) => [m.name, m],
  ),
);

export function getMetric(name: string): Metric | undefined {
  return METRICS.get(name);
}

export function metricNames(): string[] {
  return [...METRICS.keys()];
}
