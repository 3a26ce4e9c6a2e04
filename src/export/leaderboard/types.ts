/** Shapes of the leaderboard input and output (schemas/leaderboard-scores.schema.json, leaderboard-output.schema.json). */

export interface LeaderboardBenchmark {
  id: string;
  displayName?: string;
  /** HELM's lower_is_better; null: the metric has no ordering and is left out of every aggregate. */
  lowerIsBetter: boolean | null;
  /** [min, max] of the metric; [0, 1] when absent. */
  range?: [number, number];
  category?: string;
}

export interface LeaderboardInput {
  benchmarks: LeaderboardBenchmark[];
  models: string[];
  /** model -> benchmark -> main-metric value; a missing entry or null is a missing value. */
  scores: Record<string, Record<string, number | null>>;
}

export interface CategoryRow {
  category: string;
  meanWinRate: number | null;
  winRateBenchmarks: number;
  macroAverage: number | null;
  macroBenchmarks: number;
}

export interface LeaderboardRow {
  rank: number;
  model: string;
  meanWinRate: number | null;
  winRateBenchmarks: number;
  winSd: number | null;
  winSdOpponents: number;
  macroAverage: number | null;
  macroSd: number | null;
  macroBenchmarks: number;
  categories: CategoryRow[];
}

export interface BenchmarkSummary {
  id: string;
  displayName: string;
  category: string | null;
  lowerIsBetter: boolean | null;
  range: [number, number];
  values: number;
  inWinRate: boolean;
}

export interface Leaderboard {
  models: LeaderboardRow[];
  benchmarks: BenchmarkSummary[];
}

/**
 * The input after validation, as dense arrays: `cells[m][b]` is model m's value on benchmark b.
 * Every computation works on this, never on the caller's objects (whose keys could shadow
 * Object.prototype members such as `constructor`).
 */
export interface TableBenchmark {
  id: string;
  displayName: string;
  lowerIsBetter: boolean | null;
  range: [number, number];
  category: string | null;
}

export interface ScoreTable {
  benchmarks: TableBenchmark[];
  models: string[];
  cells: (number | null)[][];
}
