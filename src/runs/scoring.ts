/**
 * Scoring: every metric the benchmark names, on the raw completion text. In-process metrics score
 * directly; the EHRSQL scorer (SQL against the site's database) and the LLM jury (judge endpoints) run
 * once per instance for all of their metrics. The jury's calls are audited through `hooks.beforeCall`
 * before each attempt, and the jury's prompt of an EHR-tier instance passes de-identification first.
 */
import { UserError } from '../errors';
import type { EndpointPolicy } from '../egress';
import { ehrSqlScorer, juryScorer, providerOf, type JudgeCaller, type SqlExecutor } from '../metrics';
import type { DeidStage, RunContext, ScoringHooks, ScoringStage, Scores } from './stages';
import type { Instance } from '../catalog';

export interface ScoringServices {
  endpoints: EndpointPolicy;
  judges: JudgeCaller;
  sql: SqlExecutor;
  /** The run's de-identification stage, read when used (the composition root may swap it). */
  deid: () => DeidStage;
}

async function runScorer(kind: 'ehr_sql' | 'jury', ctx: RunContext, instance: Instance, prediction: string, hooks: ScoringHooks, s: ScoringServices): Promise<Scores> {
  if (kind === 'ehr_sql') {
    return ehrSqlScorer.score(prediction, instance, { mode: ctx.scoring, database: ctx.benchmark.site?.database, benchmarkId: ctx.benchmark.definition.id, executor: s.sql });
  }
  return juryScorer.score(prediction, instance, {
    mode: ctx.scoring,
    benchmark: ctx.benchmark,
    tier: ctx.tier,
    endpoints: s.endpoints,
    judges: s.judges,
    beforeCall: hooks.beforeCall,
    ...(hooks.signal ? { signal: hooks.signal } : {}),
    ...(ctx.deidentify
      ? {
          deidentify: async (prompt: string) => {
            const outcome = await s.deid().apply(ctx, instance, prompt);
            return outcome.ok ? outcome.prompt : undefined;
          },
        }
      : {}),
  });
}

export function createScoring(services: ScoringServices): ScoringStage {
  return {
    async score(ctx, instance, prediction, hooks) {
      const d = ctx.benchmark.definition;
      const scores: Scores = {};
      const grouped = new Map<string, Scores>();
      for (const name of [d.metrics.main, ...(d.metrics.secondary ?? [])]) {
        const provider = providerOf(name);
        if (!provider) throw new UserError('metric.unknown', `metric ${name} vanished from the registry`);
        if (provider.kind === 'metric') {
          scores[name] = provider.metric.score(prediction, instance, { mode: ctx.scoring });
          continue;
        }
        let group = grouped.get(provider.scorer);
        if (!group) {
          group = await runScorer(provider.scorer, ctx, instance, prediction, hooks, services);
          grouped.set(provider.scorer, group);
        }
        scores[name] = group[name] ?? null;
      }
      return scores;
    },
  };
}
