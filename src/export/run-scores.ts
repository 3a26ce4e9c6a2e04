/**
 * Leaderboard input from stored runs (`ehrbench leaderboard --runs ID...`): one column per benchmark,
 * one row per endpoint, the run's main-metric aggregate in each cell. Directions come from the metric
 * registry, categories and jury scales from the built-in catalog where the benchmark is one of
 * MedHELM's (site benchmarks stay uncategorised). Only completed runs count.
 */
import { Catalog } from '../catalog';
import { PolicyDenied, UserError } from '../errors';
import { getMetric } from '../metrics';
import type { LeaderboardInput } from './leaderboard';

export interface RunScore {
  runId: string;
  benchmarkId: string;
  endpointId: string;
  status: string;
  mainMetric: string;
  mainScore: number | null;
  /** The rule that withheld the run's figures from the caller (operations' RunView), if one did. */
  withheld?: string | null;
}

let builtIn: Catalog | undefined;

function definitionOf(id: string) {
  builtIn ??= Catalog.load();
  try {
    return builtIn.get(id).definition;
  } catch {
    return undefined;
  }
}

export function scoresFromRuns(runs: RunScore[]): LeaderboardInput {
  const benchmarks: LeaderboardInput['benchmarks'] = [];
  const models: string[] = [];
  const scores: LeaderboardInput['scores'] = {};
  const seen = new Map<string, string>();
  for (const run of runs) {
    if (run.status !== 'completed') throw new UserError('leaderboard.run-not-completed', `run ${run.runId} is ${run.status}; only completed runs have scores`);
    if (run.withheld) {
      throw new PolicyDenied('visibility.run-figures.withheld', `run ${run.runId}: its scores are withheld from you; its requester or a compliance officer can build this leaderboard`);
    }
    const cell = `${run.endpointId}\u0000${run.benchmarkId}`;
    const earlier = seen.get(cell);
    if (earlier) throw new UserError('leaderboard.duplicate-run', `runs ${earlier} and ${run.runId} both score ${run.benchmarkId} on ${run.endpointId}; name one of them`);
    seen.set(cell, run.runId);
    if (!benchmarks.some((b) => b.id === run.benchmarkId)) {
      const d = definitionOf(run.benchmarkId);
      const jury = run.mainMetric.startsWith('jury_score') && run.mainMetric !== 'jury_score_normalized';
      const scale = d?.jury?.scale ?? { min: 1, max: 5 };
      benchmarks.push({
        id: run.benchmarkId,
        lowerIsBetter: getMetric(run.mainMetric)?.lowerIsBetter ?? null,
        ...(jury ? { range: [scale.min, scale.max] as [number, number] } : {}),
        ...(d ? { category: d.category } : {}),
      });
    }
    if (!models.includes(run.endpointId)) models.push(run.endpointId);
    (scores[run.endpointId] ??= {})[run.benchmarkId] = run.mainScore;
  }
  return { benchmarks, models, scores };
}
