import { getMetric } from '../metrics';
import type { ScoringStage } from './stages';

/** Scoring: every metric the benchmark names, on the raw completion text. */
export const benchmarkScoring: ScoringStage = {
  async score(ctx, instance, prediction) {
    const d = ctx.benchmark.definition;
    const scores: Record<string, number | null> = {};
    for (const name of [d.metrics.main, ...(d.metrics.secondary ?? [])]) {
      const metric = getMetric(name);
      if (!metric) throw new Error(`metric ${name} vanished from the registry`);
      scores[name] = metric.score(prediction, instance, { mode: ctx.scoring });
    }
    return scores;
  },
};
