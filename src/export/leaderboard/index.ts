/**
 * The MedHELM leaderboard: HELM's mean win rate, the paper's win SD, range-normalised macro average
 * and per-category aggregates, and a heat map of scores per benchmark. Pure functions over
 * `{benchmarks, models, scores}`; the CLI reads that from a file, the run store can build it too.
 * See README.md in this folder for the maths and every choice made where the paper is silent.
 */
export { buildLeaderboard, compareRows, leaderboardOf, unrankedModels } from './build';
export { heatmapSvg } from './heatmap';
export { SCORES_SCHEMA, toScoreTable } from './input';
export { normalizedScore } from './normalize';
export type { BenchmarkSummary, CategoryRow, Leaderboard, LeaderboardBenchmark, LeaderboardInput, LeaderboardRow, ScoreTable } from './types';

export const OUTPUT_SCHEMA = 'leaderboard-output.schema.json';
