/**
 * Leaderboard maths on small hand-built tables. Every expectation below is worked out by hand in the
 * comment beside it, from HELM's rule (wins = strictly worse + (ties - 1) / 2, over n - 1) and the
 * MedHELM paper's win SD and macro average.
 */
import { buildLeaderboard, type Leaderboard, type LeaderboardInput, type LeaderboardRow } from '../../src/export/leaderboard';
import { UserError } from '../../src/errors';

function row(board: Leaderboard, model: string): LeaderboardRow {
  const r = board.models.find((m) => m.model === model);
  if (!r) throw new Error(`no row for ${model}`);
  return r;
}

function errorOf(fn: () => unknown): UserError {
  try {
    fn();
  } catch (err) {
    if (err instanceof UserError) return err;
    throw err;
  }
  throw new Error('expected a UserError');
}

/**
 * x: A 0.9, B 0.5, C 0.5, D 0.1 -> n 4; D 0/3, B and C (1 + 1/2)/3 = 0.5, A 3/3 = 1.
 * y: A -,   B 0.2, C 0.8, D 0.8 -> n 3; B 0/2, C and D (1 + 1/2)/2 = 0.75.
 * z: A 0.3 only                  -> fewer than two values: skipped.
 * w: no direction                -> skipped, whatever its values.
 * E has no scores at all.
 */
const TIES_AND_GAPS: LeaderboardInput = {
  benchmarks: [
    { id: 'x', lowerIsBetter: false, category: 'Cat 1' },
    { id: 'y', lowerIsBetter: false, category: 'Cat 2' },
    { id: 'z', lowerIsBetter: false, category: 'Cat 1' },
    { id: 'w', lowerIsBetter: null, range: [0, 10], category: 'Cat 2' },
  ],
  models: ['A', 'B', 'C', 'D', 'E'],
  scores: {
    A: { x: 0.9, y: null, z: 0.3, w: 5 },
    B: { x: 0.5, y: 0.2, w: 1 },
    C: { x: 0.5, y: 0.8, w: 3 },
    D: { x: 0.1, y: 0.8, w: 2 },
  },
};

describe('mean win rate (HELM summarize)', () => {
  const board = buildLeaderboard(TIES_AND_GAPS);

  it('counts ties as half a win and ignores missing cells instead of penalising them', () => {
    expect(row(board, 'A').meanWinRate).toBeCloseTo(1, 12); // x only
    expect(row(board, 'B').meanWinRate).toBeCloseTo((0.5 + 0) / 2, 12);
    expect(row(board, 'C').meanWinRate).toBeCloseTo((0.5 + 0.75) / 2, 12);
    expect(row(board, 'D').meanWinRate).toBeCloseTo((0 + 0.75) / 2, 12);
  });

  it('reports how many columns each win rate rests on', () => {
    expect(board.models.map((r) => [r.model, r.winRateBenchmarks])).toEqual([
      ['A', 1],
      ['C', 2],
      ['D', 2],
      ['B', 2],
      ['E', 0],
    ]);
  });

  it('skips a column with one value and a column without a direction', () => {
    expect(board.benchmarks.map((b) => [b.id, b.values, b.inWinRate])).toEqual([
      ['x', 4, true],
      ['y', 3, true],
      ['z', 1, false],
      ['w', 4, false],
    ]);
    // Reversing the direction-less column changes nothing.
    const flipped = structuredClone(TIES_AND_GAPS);
    for (const m of ['A', 'B', 'C', 'D'] as const) flipped.scores[m]!.w = 10 - flipped.scores[m]!.w!;
    expect(buildLeaderboard(flipped).models.map((r) => r.meanWinRate)).toEqual(board.models.map((r) => r.meanWinRate));
  });

  it('gives null to a model with no comparable column and ranks it last', () => {
    const e = row(board, 'E');
    expect(e).toMatchObject({ rank: 5, meanWinRate: null, winSd: null, winSdOpponents: 0, macroAverage: null, macroSd: null, macroBenchmarks: 0 });
    const withoutE = buildLeaderboard({ ...TIES_AND_GAPS, models: ['A', 'B', 'C', 'D'] });
    expect(withoutE.models.map((r) => r.meanWinRate)).toEqual(board.models.slice(0, 4).map((r) => r.meanWinRate));
  });

  it('shrinks a column denominator to the models that have a value', () => {
    // y has 3 values, so its denominator is 2, not 4: C's 0.75 there proves it.
    const onlyY = buildLeaderboard({
      benchmarks: [{ id: 'y', lowerIsBetter: false }],
      models: TIES_AND_GAPS.models,
      scores: Object.fromEntries(Object.entries(TIES_AND_GAPS.scores).map(([m, s]) => [m, { y: s.y ?? null }])),
    });
    expect(row(onlyY, 'C').meanWinRate).toBeCloseTo(0.75, 12);
    expect(row(onlyY, 'A')).toMatchObject({ meanWinRate: null, winRateBenchmarks: 0 });
  });

  it('per category: the mean of the column win rates inside the category', () => {
    const c = row(board, 'C');
    expect(c.categories.map((k) => [k.category, k.meanWinRate, k.winRateBenchmarks])).toEqual([
      ['Cat 1', 0.5, 1],
      ['Cat 2', 0.75, 1],
    ]);
  });
});

/**
 * err: lower is better, range [0, 2]: P 0.5, Q 1.5, R 0.5 -> worst first Q (0/2), then P and R tied
 *      (1 + 1/2)/2 = 0.75.
 * acc: jury 1-5: P 2, Q 5, R 4 -> P 0, R 1/2, Q 1.
 * Mean win rate: P 0.375, Q 0.5, R 0.625.
 * 0-1 scores: err P 1 - 0.5/2 = 0.75, Q 0.25, R 0.75; acc P (2-1)/4 = 0.25, Q 1, R 0.75.
 * Macro average: P 0.5, Q 0.625, R 0.75. Sample SD: P |0.75-0.25|/sqrt 2, Q |0.25-1|/sqrt 2, R 0.
 * Win SD: P beats Q on err only (1/2), beats R nowhere (tie on err is not a win: 0) -> SD of
 *   [0.5, 0] = 0.25. Q: [1/2 vs P, 1/2 vs R] -> 0. R: [1/2 vs P (acc), 1/2 vs Q (err)] -> 0.
 */
const DIRECTIONS: LeaderboardInput = {
  benchmarks: [
    { id: 'err', lowerIsBetter: true, range: [0, 2] },
    { id: 'acc', lowerIsBetter: false, range: [1, 5] },
  ],
  models: ['P', 'Q', 'R'],
  scores: { P: { err: 0.5, acc: 2 }, Q: { err: 1.5, acc: 5 }, R: { err: 0.5, acc: 4 } },
};

describe('lowerIsBetter, win SD and macro average', () => {
  const board = buildLeaderboard(DIRECTIONS);

  it('ranks a lower-is-better column in reverse', () => {
    expect(board.models.map((r) => [r.model, r.meanWinRate])).toEqual([
      ['R', 0.625],
      ['Q', 0.5],
      ['P', 0.375],
    ]);
  });

  it('maps each score to 0-1 by its range and flips lower-is-better columns', () => {
    expect(row(board, 'P').macroAverage).toBeCloseTo(0.5, 12);
    expect(row(board, 'Q').macroAverage).toBeCloseTo(0.625, 12);
    expect(row(board, 'R').macroAverage).toBeCloseTo(0.75, 12);
    expect(row(board, 'P').macroSd).toBeCloseTo(0.5 / Math.SQRT2, 12);
    expect(row(board, 'Q').macroSd).toBeCloseTo(0.75 / Math.SQRT2, 12);
    expect(row(board, 'R').macroSd).toBeCloseTo(0, 12);
    expect(row(board, 'R').macroBenchmarks).toBe(2);
  });

  it('win SD: population SD over opponents of the fraction of benchmarks strictly won', () => {
    expect(row(board, 'P').winSd).toBeCloseTo(0.25, 12);
    expect(row(board, 'Q').winSd).toBeCloseTo(0, 12);
    expect(row(board, 'R').winSd).toBeCloseTo(0, 12);
    expect(row(board, 'P').winSdOpponents).toBe(2);
  });

  it('win SD only counts benchmarks both models have', () => {
    // From TIES_AND_GAPS: C vs A shares x (lost) -> 0; vs B shares x (tie), y (won) -> 1/2;
    // vs D shares x (won), y (tie) -> 1/2. Population SD of [0, 1/2, 1/2] = sqrt(1/18).
    const c = row(buildLeaderboard(TIES_AND_GAPS), 'C');
    expect(c.winSd).toBeCloseTo(Math.sqrt(1 / 18), 12);
    expect(c.winSdOpponents).toBe(3);
  });

  it('macro SD needs two scores; macro average leaves direction-less columns out', () => {
    const board2 = buildLeaderboard(TIES_AND_GAPS);
    // A: x 0.9 and z 0.3 count (w has no direction) -> mean 0.6, sample SD |0.9-0.3|/sqrt 2.
    expect(row(board2, 'A').macroAverage).toBeCloseTo(0.6, 12);
    expect(row(board2, 'A').macroSd).toBeCloseTo(0.6 / Math.SQRT2, 12);
    expect(row(board2, 'A').macroBenchmarks).toBe(2);
    const single = buildLeaderboard({ benchmarks: [{ id: 'x', lowerIsBetter: false }], models: ['a', 'b'], scores: { a: { x: 0.4 }, b: { x: 0.2 } } });
    expect(row(single, 'a')).toMatchObject({ macroAverage: 0.4, macroSd: null, winSd: 0 });
  });

  it('per-category macro average uses the same 0-1 scores', () => {
    const d = row(buildLeaderboard(TIES_AND_GAPS), 'D');
    expect(d.categories.map((c) => [c.category, c.macroAverage, c.macroBenchmarks])).toEqual([
      ['Cat 1', 0.1, 1],
      ['Cat 2', 0.8, 1],
    ]);
  });
});

describe('ordering', () => {
  it('breaks a win-rate tie by macro average, then by model name', () => {
    // m1 wins u, m2 wins v: both 0.5. Macro average m1 (0.9 + 0.1) / 2 = 0.5, m2 (0.2 + 0.95) / 2 = 0.575.
    const board = buildLeaderboard({
      benchmarks: [
        { id: 'u', lowerIsBetter: false },
        { id: 'v', lowerIsBetter: false },
      ],
      models: ['m1', 'm2'],
      scores: { m1: { u: 0.9, v: 0.1 }, m2: { u: 0.2, v: 0.95 } },
    });
    expect(board.models.map((r) => [r.model, r.meanWinRate])).toEqual([
      ['m2', 0.5],
      ['m1', 0.5],
    ]);
    const identical = buildLeaderboard({
      benchmarks: [{ id: 'u', lowerIsBetter: false }],
      models: ['zeta', 'Beta', 'alpha'],
      scores: { zeta: { u: 0.5 }, Beta: { u: 0.5 }, alpha: { u: 0.5 } },
    });
    // Code-unit order: upper case before lower case, independent of the machine's locale.
    expect(identical.models.map((r) => [r.rank, r.model])).toEqual([
      [1, 'Beta'],
      [2, 'alpha'],
      [3, 'zeta'],
    ]);
  });

  it('does not depend on the order models or benchmarks are listed in', () => {
    const board = buildLeaderboard(TIES_AND_GAPS);
    const shuffled = buildLeaderboard({ ...TIES_AND_GAPS, models: ['E', 'D', 'B', 'A', 'C'], benchmarks: [...TIES_AND_GAPS.benchmarks].reverse() });
    expect(shuffled.models.map((r) => [r.model, r.meanWinRate, r.winSd, r.macroAverage])).toEqual(board.models.map((r) => [r.model, r.meanWinRate, r.winSd, r.macroAverage]));
  });
});

describe('input validation', () => {
  const base = (): LeaderboardInput => structuredClone(DIRECTIONS);

  it('names an unknown model and an unknown benchmark in scores, in one line', () => {
    const input = base();
    input.scores['S'] = { err: 1 };
    input.scores['P']!['speed'] = 3;
    const err = errorOf(() => buildLeaderboard(input, 'scores.json'));
    expect(err.code).toBe('leaderboard.invalid');
    expect(err.message).toContain('scores.json: ');
    expect(err.message).toContain('/scores/P/speed: unknown benchmark (not in /benchmarks)');
    expect(err.message).toContain('/scores/S: unknown model (not in /models)');
    expect(err.message).not.toContain('\n');
  });

  it('rejects a value outside the declared (or default 0-1) range without quoting it', () => {
    const input = base();
    input.scores['Q']!.acc = 7.25;
    const err = errorOf(() => buildLeaderboard(input));
    expect(err.message).toContain("/scores/Q/acc: value outside the benchmark's range [1, 5]");
    expect(err.message).not.toContain('7.25');
    const noRange: LeaderboardInput = { benchmarks: [{ id: 'em', lowerIsBetter: false }], models: ['a'], scores: { a: { em: 1.5 } } };
    expect(errorOf(() => buildLeaderboard(noRange)).message).toContain("/scores/a/em: value outside the benchmark's range [0, 1]");
  });

  it('rejects unknown keys, a missing direction, bad ranges, duplicates and non-numbers', () => {
    const cases: [unknown, string][] = [
      [{ ...base(), extra: 1 }, '/: unknown key "extra"'],
      [{ ...base(), benchmarks: [{ id: 'err', lowerIsBetter: true, direction: 'down' }] }, '/benchmarks/0: unknown key "direction"'],
      [{ ...base(), benchmarks: [{ id: 'err' }] }, '/benchmarks/0: missing required key "lowerIsBetter"'],
      [{ ...base(), benchmarks: [{ id: 'err', lowerIsBetter: 'yes' }] }, '/benchmarks/0/lowerIsBetter: must be boolean,null'],
      [
        {
          ...base(),
          benchmarks: [
            { id: 'err', lowerIsBetter: true, range: [5, 1] },
            { id: 'acc', lowerIsBetter: false },
          ],
        },
        '/benchmarks/0/range: min must be below max',
      ],
      [
        {
          ...base(),
          benchmarks: [
            { id: 'acc', lowerIsBetter: true },
            { id: 'acc', lowerIsBetter: false },
          ],
        },
        '/benchmarks/1/id: duplicate benchmark id "acc"',
      ],
      [{ ...base(), models: ['P', 'P'] }, '/models: must NOT have duplicate items'],
      [{ ...base(), scores: { P: { err: '0.5' } } }, '/scores/P/err: must be number,null'],
      [{ ...base(), scores: { P: { err: Number.NaN } } }, '/scores/P/err: must be number,null'],
      [{ ...base(), models: [] }, '/models: must NOT have fewer than 1 items'],
      [{ ...base(), models: ['bad\u0007name'] }, '/models/0: must match pattern'],
    ];
    for (const [input, expected] of cases) {
      const err = errorOf(() => buildLeaderboard(input));
      expect(err.message).toContain(expected);
      expect(err.message).not.toContain('\n');
    }
  });

  it('escapes "/" and "~" in the JSON path of a model name', () => {
    const input = base();
    input.scores['a/b~c'] = {};
    expect(errorOf(() => buildLeaderboard(input)).message).toContain('/scores/a~1b~0c: unknown model');
  });

  it('treats a model named like an Object.prototype member as any other name', () => {
    const board = buildLeaderboard({ benchmarks: [{ id: 'x', lowerIsBetter: false }], models: ['constructor', 'toString', 'a'], scores: { a: { x: 0.5 }, toString: { x: 0.25 } } });
    expect(row(board, 'constructor')).toMatchObject({ meanWinRate: null, macroBenchmarks: 0 });
    expect(row(board, 'toString').meanWinRate).toBe(0);
    expect(row(board, 'a').meanWinRate).toBe(1);
  });
});
