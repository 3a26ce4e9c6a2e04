/** buildLeaderboard: validated scores in, one aggregate row per model out (pure, no I/O). */
import { toScoreTable } from './input';
import { normalizedScore } from './normalize';
import type { BenchmarkSummary, CategoryRow, Leaderboard, LeaderboardInput, LeaderboardRow, ScoreTable } from './types';
import { columnWinRates, mean, meanWinRate, standardDeviation, winSd, type WinRateMatrix } from './win-rate';

/** Categories in order of first appearance, with the indexes of their benchmarks. */
function categoryColumns(table: ScoreTable): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  table.benchmarks.forEach((b, i) => {
    if (b.category === null) return;
    const list = groups.get(b.category) ?? [];
    list.push(i);
    groups.set(b.category, list);
  });
  return groups;
}

function normalizedRow(table: ScoreTable, m: number, columns: number[]): number[] {
  const out: number[] = [];
  for (const b of columns) {
    const v = table.cells[m]![b];
    if (v === null || v === undefined) continue;
    const n = normalizedScore(v, table.benchmarks[b]!);
    if (n !== null) out.push(n);
  }
  return out;
}

function modelRow(table: ScoreTable, rates: WinRateMatrix, groups: Map<string, number[]>, m: number): Omit<LeaderboardRow, 'rank'> {
  const all = table.benchmarks.map((_, i) => i);
  const win = meanWinRate(rates[m]!);
  const sd = winSd(table, m);
  const normalized = normalizedRow(table, m, all);
  const categories: CategoryRow[] = [...groups].map(([category, columns]) => {
    const categoryWin = meanWinRate(rates[m]!, columns);
    const categoryScores = normalizedRow(table, m, columns);
    return {
      category,
      meanWinRate: categoryWin.value,
      winRateBenchmarks: categoryWin.count,
      macroAverage: mean(categoryScores),
      macroBenchmarks: categoryScores.length,
    };
  });
  return {
    model: table.models[m]!,
    meanWinRate: win.value,
    winRateBenchmarks: win.count,
    winSd: sd.value,
    winSdOpponents: sd.opponents,
    macroAverage: mean(normalized),
    macroSd: standardDeviation(normalized, 1),
    macroBenchmarks: normalized.length,
    categories,
  };
}

/**
 * Orders by a value rounded to 12 decimals, so that two models whose rates are equal on paper but
 * summed in a different order (last-bit noise) count as tied and fall through to the next key.
 */
function byValueDesc(a: number | null, b: number | null): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  return Math.round(b * 1e12) - Math.round(a * 1e12);
}

/** Mean win rate, then macro average (both descending, missing last), then model name by code units. */
export function compareRows(a: Omit<LeaderboardRow, 'rank'>, b: Omit<LeaderboardRow, 'rank'>): number {
  return byValueDesc(a.meanWinRate, b.meanWinRate) || byValueDesc(a.macroAverage, b.macroAverage) || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0);
}

function benchmarkSummaries(table: ScoreTable, inWinRate: boolean[]): BenchmarkSummary[] {
  return table.benchmarks.map((b, i) => ({
    id: b.id,
    displayName: b.displayName,
    category: b.category,
    lowerIsBetter: b.lowerIsBetter,
    range: [b.range[0], b.range[1]],
    values: table.cells.filter((row) => row[i] !== null).length,
    inWinRate: inWinRate[i]!,
  }));
}

/**
 * The models a ranking cannot place: with two models or more, those that have no scored benchmark in
 * common with any other model. Their rank would come from a macro average over other benchmarks than
 * their neighbours', not from a comparison.
 */
export function unrankedModels(table: ScoreTable): string[] {
  if (table.models.length < 2) return [];
  const scored = (m: number, b: number) => table.cells[m]![b] !== null && table.cells[m]![b] !== undefined;
  return table.models.filter((_, m) => !table.benchmarks.some((_, b) => scored(m, b) && table.models.some((_, o) => o !== m && scored(o, b))));
}

/** The leaderboard of an already validated table (see toScoreTable). */
export function leaderboardOf(table: ScoreTable): Leaderboard {
  const { rates, inWinRate } = columnWinRates(table);
  const groups = categoryColumns(table);
  const rows = table.models.map((_, m) => modelRow(table, rates, groups, m)).sort(compareRows);
  return {
    models: rows.map((row, i) => ({ rank: i + 1, ...row })),
    benchmarks: benchmarkSummaries(table, inWinRate),
  };
}

/**
 * Builds the leaderboard from `{benchmarks, models, scores}` (the --scores file format). Validates
 * first and throws a one-line UserError naming `label`, so callers feeding it from the run store
 * get the same checks as a file.
 */
export function buildLeaderboard(input: LeaderboardInput | unknown, label = 'leaderboard input'): Leaderboard {
  return leaderboardOf(toScoreTable(input, label));
}
