/**
 * Leaderboard input from stored runs (`ehrbench leaderboard --runs ID...`): one column per benchmark,
 * one row per endpoint, the run's main-metric aggregate in each cell. Directions come from the metric
 * registry, categories and jury scales from the built-in catalog where the benchmark is one of
 * MedHELM's (site benchmarks stay uncategorised). Only completed runs count. Runs of one benchmark
 * that read different data (their recorded data revisions differ) are not compared unless the caller
 * says so (allowMixedData), and then the output says it; a run from before revisions were recorded is
 * "unknown", which alone refuses nothing. Runs of different versions of one benchmark (a release that
 * changed its prompts or scoring) are held to the same rule.
 */
import { Catalog } from '../catalog';
import { PolicyDenied, UserError } from '../errors';
import { getMetric } from '../metrics';
import { type PinDifference, pinDifferenceLine, pinDifferences, type RunPins } from '../contracts';
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
  /** The data revision the run read (operations' RunView); null or absent: unknown (a run from before it was recorded). */
  data?: { sha256: string } | null;
  /** The benchmark's version the run ran (its prompts and scoring); absent: not given. */
  benchmarkVersion?: string;
  /** The run's pins (operations' RunView); absent: not given. */
  pins?: RunPins;
}

/** Benchmarks whose runs differ in a pin (the runs without pins left out). */
export function pinReport(runs: readonly Pick<RunScore, 'runId' | 'benchmarkId' | 'pins'>[]): PinDifference[] {
  return pinDifferences(runs.flatMap((r) => (r.pins ? [{ runId: r.runId, benchmarkId: r.benchmarkId, pins: r.pins }] : [])));
}

/** Benchmarks whose runs ran different versions of it (other prompts or scoring under one name). */
export function versionReport(runs: readonly Pick<RunScore, 'runId' | 'benchmarkId' | 'benchmarkVersion'>[]): { benchmarkId: string; runs: { runId: string; version: string }[] }[] {
  const byBenchmark = new Map<string, { runId: string; version: string }[]>();
  for (const run of runs) {
    if (!run.benchmarkVersion) continue;
    byBenchmark.set(run.benchmarkId, [...(byBenchmark.get(run.benchmarkId) ?? []), { runId: run.runId, version: run.benchmarkVersion }]);
  }
  return [...byBenchmark].filter(([, list]) => new Set(list.map((r) => r.version)).size > 1).map(([benchmarkId, list]) => ({ benchmarkId, runs: list }));
}

/** One benchmark's runs and their versions, as a refusal or a note names them. */
export function versionsLine(b: { benchmarkId: string; runs: { runId: string; version: string }[] }): string {
  return `${b.benchmarkId}: ${b.runs.map((r) => `run ${r.runId} version ${r.version}`).join(', ')}`;
}

/** The runs of one benchmark, each with the data revision it read ("unknown" when not recorded). */
export interface BenchmarkRevisions {
  benchmarkId: string;
  runs: { runId: string; revision: string }[];
}

/** What the runs say about their data: benchmarks whose runs read different revisions, and runs whose revision is unknown. */
export interface DataRevisionReport {
  mixed: BenchmarkRevisions[];
  unknown: { runId: string; benchmarkId: string }[];
}

export function dataRevisionReport(runs: readonly Pick<RunScore, 'runId' | 'benchmarkId' | 'data'>[]): DataRevisionReport {
  const byBenchmark = new Map<string, { runId: string; revision: string }[]>();
  for (const run of runs) {
    const list = byBenchmark.get(run.benchmarkId) ?? [];
    list.push({ runId: run.runId, revision: run.data?.sha256 ?? 'unknown' });
    byBenchmark.set(run.benchmarkId, list);
  }
  const mixed = [...byBenchmark].filter(([, list]) => new Set(list.map((r) => r.revision).filter((r) => r !== 'unknown')).size > 1).map(([benchmarkId, list]) => ({ benchmarkId, runs: list }));
  const unknown = runs.filter((r) => !r.data).map((r) => ({ runId: r.runId, benchmarkId: r.benchmarkId }));
  return { mixed, unknown };
}

/** One benchmark's runs and their revisions, as a refusal or a note names them (hashes shortened to 12). */
export function revisionsLine(b: BenchmarkRevisions): string {
  return `${b.benchmarkId}: ${b.runs.map((r) => `run ${r.runId} data ${r.revision === 'unknown' ? 'unknown' : r.revision.slice(0, 12)}`).join(', ')}`;
}

/**
 * Refuses (leaderboard.data-revisions-differ) runs of one benchmark that read different data, unless
 * the caller allowed it: their scores are of different instances or references under one name.
 */
function refuseMixedRevisions(runs: readonly RunScore[], allowMixedData: boolean): void {
  if (allowMixedData) return;
  const [older] = versionReport(runs);
  if (older) {
    throw new UserError(
      'leaderboard.benchmark-versions-differ',
      `runs of ${older.benchmarkId} ran different versions of it (${versionsLine(older)}): other prompts or scoring, so their scores are not comparable; compare runs of one version, or say --allow-mixed-data (API: allowMixedData) to compare them anyway, and the output says so`,
    );
  }
  const [first] = dataRevisionReport(runs).mixed;
  if (!first) {
    const [pinned] = pinReport(runs);
    if (!pinned) return;
    throw new UserError(
      'leaderboard.pins-differ',
      `${pinDifferenceLine(pinned)}: their scores are not comparable; compare runs with the same pins, or say --allow-mixed-data (API: allowMixedData) to compare them anyway, and the output says so`,
    );
  }
  throw new UserError(
    'leaderboard.data-revisions-differ',
    `runs of ${first.benchmarkId} read different data (${revisionsLine(first)}), so their scores are not comparable; compare runs of one data revision, or say --allow-mixed-data (API: allowMixedData) to compare them anyway, and the output says so`,
  );
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

export function scoresFromRuns(runs: RunScore[], opts: { allowMixedData?: boolean } = {}): LeaderboardInput {
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
  refuseMixedRevisions(runs, opts.allowMixedData === true);
  return { benchmarks, models, scores };
}
