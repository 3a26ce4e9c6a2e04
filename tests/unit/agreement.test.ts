/**
 * src/agreement against an independent computation (tests/fixtures/agreement/make_fixtures.py: numpy,
 * scipy, pingouin's ICC and sklearn's weighted kappa written from their definitions) and against cases
 * small enough to check by hand or in the literature.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  agreement,
  type AgreementInput,
  fQuantile,
  icc3k,
  kendallTau,
  type JudgeScore,
  type ModelScore,
  normalQuantile,
  planInstances,
  quadraticKappa,
  rankStability,
  readMedhelmRatings,
  roundHalfEven,
  type RougeScore,
  type SelectionAgreement,
  spearman,
  zScore,
} from '../../src/agreement';
import { ROOT } from '../helpers/paths';

const FIXTURES = join(ROOT, 'tests', 'fixtures', 'agreement');

/* eslint-disable @typescript-eslint/no-explicit-any */
type Expected = any;
const expected: Expected = JSON.parse(readFileSync(join(FIXTURES, 'expected.json'), 'utf8'));
const extras = JSON.parse(readFileSync(join(FIXTURES, 'extras.json'), 'utf8')) as { judges: JudgeScore[]; rouge: RougeScore[]; modelScores: ModelScore[] };

/** Every number in a value, however deep (JSON.stringify would hide a NaN as null). */
function numbersIn(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(numbersIn);
  return [];
}

function close(actual: number | null | undefined, want: number, rel = 1e-9): void {
  expect(actual).not.toBeNull();
  const a = actual as number;
  const ok = Math.abs(a - want) <= rel * Math.max(1, Math.abs(want));
  if (!ok) throw new Error(`expected ${want}, got ${a} (relative tolerance ${rel})`);
}

function sameIcc(actual: { value: any }, want: any, rel = 1e-9): void {
  const v = actual.value;
  expect(v).not.toBeNull();
  for (const f of ['icc', 'single', 'f', 'p']) close(v[f], want[f], rel);
  // The interval goes through F quantiles: scipy's and ours agree to far better than 1e-6.
  for (const f of ['ci', 'singleCi']) for (const i of [0, 1]) close(v[f][i], want[f][i], 1e-6);
  expect([v.df1, v.df2, v.n, v.k]).toEqual([want.df1, want.df2, want.n, want.k]);
}

function sameComparison(actual: { items: number; icc: { value: any }; spearman: { value: any } }, want: any): void {
  expect(actual.items).toBe(want.items);
  sameIcc(actual.icc, want.icc);
  close(actual.spearman.value?.rho, want.spearman.rho);
  close(actual.spearman.value?.p, want.spearman.p, 1e-6);
}

function sameSelection(actual: SelectionAgreement, want: any): void {
  expect([actual.datasets, actual.items, actual.raters, actual.ratings]).toEqual([want.datasets, want.items, want.raters, want.ratings]);
  sameComparison(actual.jury, want.jury);
  close(actual.jury.kappa.value, want.jury.kappa);
  expect([actual.clinicians.pair, actual.clinicians.items]).toEqual([want.clinicians.pair, want.clinicians.items]);
  sameIcc(actual.clinicians.icc, want.clinicians.icc);
  for (const judge of Object.keys(want.judges)) sameComparison(actual.judges[judge] as any, want.judges[judge]);
  sameComparison(actual.rouge as any, want.rouge);
}

describe('agreement on the synthetic MedHELM file, against numpy and scipy', () => {
  const input: AgreementInput = { ...readMedhelmRatings(join(FIXTURES, 'ratings.csv')), judges: extras.judges, rouge: extras.rouge };
  const report = agreement(input);

  it('gives every figure of each dataset as the Python computation does', () => {
    expect(Object.keys(report.byDataset)).toEqual(['aci_bench', 'mediqa']);
    for (const d of ['aci_bench', 'mediqa']) sameSelection(report.byDataset[d] as SelectionAgreement, expected.byDataset[d]);
  });

  it('gives every pooled (ALL) figure as the Python computation does', () => {
    sameSelection(report.ALL, expected.ALL);
  });

  it('z-scores within the selection: --datasets d gives the figures of dataset d, not a slice of the pooled z-scores', () => {
    const only = agreement(input, { datasets: ['mediqa'] });
    sameSelection(only.ALL, expected.byDataset.mediqa);
    expect(only.ALL.jury.icc.value?.icc).not.toBeCloseTo(report.ALL.jury.icc.value?.icc as number, 6);
  });

  it('refuses a dataset that has no rating, naming the ones there are', () => {
    expect(() => agreement(input, { datasets: ['medalign'] })).toThrow(/no rating of dataset medalign; the ratings cover aci_bench, mediqa/);
  });

  it('ranks models with each judge left out as scipy.stats.kendalltau compares them', () => {
    const r = rankStability(extras.modelScores);
    expect(r.full.models.map((m) => m.model)).toEqual(expected.rankStability.full.map((m: any) => m.model));
    r.full.models.forEach((m, i) => close(m.score, expected.rankStability.full[i].score));
    r.leaveOneOut.forEach((l, i) => {
      const want = expected.rankStability.leaveOneOut[i];
      expect([l.judge, l.ranking.models.map((m) => m.model)]).toEqual([want.judge, want.models]);
      close(l.tau.value, want.tau);
    });
  });
});

describe('the distributions, against scipy', () => {
  it('F and normal quantiles', () => {
    for (const q of expected.quantiles.f) close(fQuantile(q.p, q.d1, q.d2), q.f, 1e-9);
    for (const q of expected.quantiles.normal) close(normalQuantile(q.p), q.z, 1e-9);
  });
});

describe('ICC(3,k) on Shrout and Fleiss (1979), table 2: 6 targets, 4 judges', () => {
  const table = [
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
  ];
  it('is 0.91 for the mean of the judges and 0.71 for one judge, as published', () => {
    const r = icc3k(table).value;
    expect(r?.icc).toBeCloseTo(0.91, 2);
    expect(r?.single).toBeCloseTo(0.71, 2);
    expect([r?.df1, r?.df2]).toEqual([5, 15]);
    expect(r?.ci[0]).toBeLessThan(r?.icc as number);
    expect(r?.ci[1]).toBeGreaterThan(r?.icc as number);
  });
  it('is null with a reason, never NaN, for too few items or items that all look alike', () => {
    expect(icc3k(table.slice(0, 2))).toEqual({ value: null, reason: expect.stringMatching(/2 items.*at least 3/) });
    expect(
      icc3k([
        [3, 3],
        [3, 3],
        [3, 3],
      ]).reason,
    ).toMatch(/same mean rating/);
  });
});

describe('the small statistics, by hand', () => {
  it('rounds halves to even, as numpy and MedHELM do', () => {
    expect([0.5, 1.5, 2.5, 3.5, 4.5, 2.4999, 2.5001].map(roundHalfEven)).toEqual([0, 2, 2, 4, 4, 2, 3]);
  });
  it("z-scores with the sample sd (pandas' default), or the population sd when asked", () => {
    expect(zScore([1, 2, 3]).value).toEqual([-1, 0, 1]);
    const pop = zScore([1, 2, 3], 0).value as number[];
    close(pop[0], -Math.sqrt(1.5));
    expect(zScore([4, 4, 4]).reason).toMatch(/same/);
    expect(zScore([4]).reason).toMatch(/at least 2/);
  });
  it('Spearman with ties uses average ranks; a perfect order has rho 1 and p 0', () => {
    // ranks of x: 1, 2.5, 2.5, 4; of y: 1, 2, 3, 4 -> r = 4.5 / sqrt(4.5 * 5)
    close(spearman([1, 2, 2, 3], [1, 2, 3, 4]).value?.rho, 4.5 / Math.sqrt(4.5 * 5));
    expect(spearman([1, 2, 3], [2, 4, 9]).value).toEqual({ rho: 1, p: 0, n: 3 });
    expect(spearman([1, 1, 1], [1, 2, 3]).reason).toMatch(/same score/);
  });
  it('Kendall tau-b counts a tie on one side out of its denominator', () => {
    close(kendallTau([1, 2, 2, 3], [1, 2, 3, 4]).value, 5 / Math.sqrt(5 * 6));
    expect(kendallTau([1, 2, 3], [3, 2, 1]).value).toBe(-1);
  });
  it('quadratic kappa: 1 on agreement, -1 when 1 and 5 are swapped, null when nothing varies', () => {
    expect(quadraticKappa([1, 2, 3], [1, 2, 3]).value).toBe(1);
    expect(quadraticKappa([1, 5], [5, 1]).value).toBe(-1);
    expect(quadraticKappa([3, 3], [3, 3]).reason).toMatch(/one category/);
  });
});

describe('agreement when the data cannot give a figure', () => {
  const criteria = ['accuracy'];
  const item = (i: number) => `i${i}`;
  it('leaves out a clinician who gives every item the same score and says so; a constant jury gives null figures', () => {
    const ratings = [0, 1, 2, 3].flatMap((i) => [
      { rater: 'a', dataset: 'd', item: item(i), scores: { accuracy: i + 1 } },
      { rater: 'b', dataset: 'd', item: item(i), scores: { accuracy: 3 } },
    ]);
    const jury = [0, 1, 2, 3].map((i) => ({ dataset: 'd', item: item(i), scores: { accuracy: 4 } }));
    const r = agreement({ ratings, jury, criteria }).ALL;
    expect(r.excludedRaters).toEqual([{ rater: 'b', reason: expect.stringMatching(/same/) }]);
    expect(r.raters).toBe(1);
    expect(r.jury.icc).toEqual({ value: null, reason: expect.stringMatching(/same/) });
    expect(r.clinicians).toEqual({ pair: null, items: 0, icc: { value: null, reason: 'fewer than 2 clinicians' } });
    expect(numbersIn(r).filter((n) => !Number.isFinite(n))).toEqual([]);
  });
  it('keeps a dataset or judge named __proto__ as an entry of its own', () => {
    const ratings = [0, 1, 2, 3].flatMap((i) => ['a', 'b'].map((rater, r) => ({ rater, dataset: '__proto__', item: item(i), scores: { accuracy: ((i + r) % 4) + 1 } })));
    const jury = [0, 1, 2, 3].map((i) => ({ dataset: '__proto__', item: item(i), scores: { accuracy: i + 1 } }));
    const judges = jury.map((j) => ({ ...j, judge: '__proto__' }));
    const r = agreement({ ratings, jury, judges, criteria });
    expect(Object.keys(r.byDataset)).toEqual(['__proto__']);
    expect(Object.keys(r.ALL.judges)).toEqual(['__proto__']);
    expect(r.byDataset['__proto__']?.items).toBe(4);
  });
  it('refuses one rater rating one item twice', () => {
    const ratings = [1, 2].map((s) => ({ rater: 'a', dataset: 'd', item: 'x', scores: { accuracy: s } }));
    expect(() => agreement({ ratings, jury: [{ dataset: 'd', item: 'x', scores: { accuracy: 3 } }], criteria })).toThrow(/rater a rates item x of dataset d twice/);
  });
});

describe("Zou's sample size", () => {
  it("reproduces MedHELM's plan: ICC 0.75, width 0.3, 2 raters, assurance 0.8 -> 47; 36 of MEDIQA's 150, 34 of ACI-Bench's 120", () => {
    const base = { expectedIcc: 0.75, width: 0.3, raters: 2, assurance: 0.8 };
    expect(planInstances(base).instances).toBe(47);
    expect(planInstances({ ...base, population: 150 }).corrected).toBe(36);
    expect(planInstances({ ...base, population: 120 }).corrected).toBe(34);
  });
  it('without assurance (0.5) is the precision formula n = 1 + 8 z² (1-ρ)² (1+(k-1)ρ)² / (k(k-1) w²)', () => {
    const z = normalQuantile(0.975);
    close(planInstances({ expectedIcc: 0.6, width: 0.2, raters: 3, assurance: 0.5 }).exact, 1 + (8 * z * z * (0.4 * 2.2) ** 2) / (6 * 0.04));
  });
  it('matches the Python computation on every planned case', () => {
    for (const p of expected.plans) {
      const plan = planInstances({ expectedIcc: p.expectedIcc, width: p.width, raters: p.raters, assurance: p.assurance, ...(p.population === null ? {} : { population: p.population }) });
      close(plan.exact, p.exact, 1e-9);
      expect([plan.instances, plan.corrected]).toEqual([p.instances, p.corrected]);
    }
  });
  it('refuses an ICC outside (0, 1) with a line that says what to give', () => {
    expect(() => planInstances({ expectedIcc: 1.2, width: 0.3, raters: 2, assurance: 0.8 })).toThrow(/--icc must be between 0 and 1/);
  });
});
