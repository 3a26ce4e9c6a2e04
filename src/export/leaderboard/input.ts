/**
 * Validation of leaderboard input: the JSON Schema first (shape, closed objects), then the rules a
 * schema cannot state (every model and benchmark in `scores` is declared, values lie inside the
 * declared range). Errors are one line naming the label, the JSON path and the rule; they quote keys
 * (model and benchmark names written by an operator), never score values.
 */
import { UserError } from '../../errors';
import { formatSchemaErrors, validatorFor } from '../../schema';
import type { LeaderboardInput, ScoreTable, TableBenchmark } from './types';

export const SCORES_SCHEMA = 'leaderboard-scores.schema.json';
const DEFAULT_RANGE: [number, number] = [0, 1];
const MAX_LISTED_PROBLEMS = 3;

/** A JSON Pointer segment (RFC 6901), so a name holding "/" cannot forge a path. */
function segment(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function fail(label: string, problems: string[]): never {
  const more = problems.length > MAX_LISTED_PROBLEMS ? ` (and ${problems.length - MAX_LISTED_PROBLEMS} more)` : '';
  throw new UserError('leaderboard.invalid', `${label}: ${problems.slice(0, MAX_LISTED_PROBLEMS).join('; ')}${more}`);
}

function checkBenchmarks(input: LeaderboardInput): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  input.benchmarks.forEach((b, i) => {
    if (seen.has(b.id)) problems.push(`/benchmarks/${i}/id: duplicate benchmark id "${b.id}"`);
    seen.add(b.id);
    if (b.range) {
      const [min, max] = b.range;
      if (!Number.isFinite(min) || !Number.isFinite(max)) problems.push(`/benchmarks/${i}/range: must be two finite numbers`);
      else if (!(min < max)) problems.push(`/benchmarks/${i}/range: min must be below max`);
    }
  });
  return problems;
}

function checkScores(input: LeaderboardInput, benchmarks: Map<string, TableBenchmark>): string[] {
  const problems: string[] = [];
  const models = new Set(input.models);
  for (const [model, row] of Object.entries(input.scores)) {
    const at = `/scores/${segment(model)}`;
    if (!models.has(model)) {
      problems.push(`${at}: unknown model (not in /models); add it to models or remove its scores`);
      continue;
    }
    for (const [id, value] of Object.entries(row)) {
      const benchmark = benchmarks.get(id);
      if (!benchmark) {
        problems.push(`${at}/${segment(id)}: unknown benchmark (not in /benchmarks); declare it or remove the score`);
        continue;
      }
      if (value === null) continue;
      if (typeof value !== 'number' || !Number.isFinite(value)) {
        problems.push(`${at}/${segment(id)}: must be a finite number or null`);
        continue;
      }
      const [min, max] = benchmark.range;
      if (value < min || value > max) {
        problems.push(`${at}/${segment(id)}: value outside the benchmark's range [${min}, ${max}]; fix the score or declare the range`);
      }
    }
  }
  return problems;
}

function tableBenchmark(b: LeaderboardInput['benchmarks'][number]): TableBenchmark {
  return {
    id: b.id,
    displayName: b.displayName ?? b.id,
    lowerIsBetter: b.lowerIsBetter,
    range: b.range ? [b.range[0], b.range[1]] : DEFAULT_RANGE,
    category: b.category ?? null,
  };
}

/**
 * Checks `data` against the schema and the cross-field rules and returns it as a dense table.
 * `label` names the source in errors (a file path, or "leaderboard input").
 */
export function toScoreTable(data: unknown, label: string): ScoreTable {
  const validate = validatorFor(SCORES_SCHEMA);
  if (!validate(data)) fail(label, formatSchemaErrors(validate.errors));
  const input = data as LeaderboardInput;

  const structural = checkBenchmarks(input);
  if (structural.length) fail(label, structural);
  const benchmarks = input.benchmarks.map(tableBenchmark);
  const byId = new Map(benchmarks.map((b) => [b.id, b]));
  const scoreProblems = checkScores(input, byId);
  if (scoreProblems.length) fail(label, scoreProblems);

  // Own keys only: a model named "constructor" must not read Object.prototype.constructor.
  const cells = input.models.map((model) => {
    const row = Object.hasOwn(input.scores, model) ? input.scores[model] : undefined;
    return benchmarks.map((b) => {
      const value = row && Object.hasOwn(row, b.id) ? row[b.id] : null;
      return typeof value === 'number' ? value : null;
    });
  });
  return { benchmarks, models: [...input.models], cells };
}
