/**
 * The paired tests of the drift canary against scipy (tests/fixtures/paired/make_fixtures.py): the
 * exact McNemar test for 0/1 scores, the Wilcoxon signed-rank test (exact or normal) otherwise.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mcnemarExact, pairedComparison, wilcoxonSignedRank } from '../../src/agreement';
import { ROOT } from '../helpers/paths';

interface Case {
  name: string;
  kind: 'binary' | 'continuous';
  baseline: number[];
  canary: number[];
  expected: { p: number; b?: number; c?: number; method?: 'exact' | 'approx'; n?: number };
}

const fixture = JSON.parse(readFileSync(join(ROOT, 'tests/fixtures/paired/expected.json'), 'utf8')) as { cases: Case[] };

describe('paired tests of a canary against its baseline, as scipy computes them', () => {
  it.each(fixture.cases.filter((c) => c.kind === 'binary').map((c) => [c.name, c] as const))('%s: exact McNemar', (_name, c) => {
    const result = pairedComparison(c.baseline, c.canary);
    expect(result?.test).toBe('mcnemar-exact');
    expect(result?.pValue).toBeCloseTo(c.expected.p, 10);
    expect(mcnemarExact(c.expected.b as number, c.expected.c as number)).toBeCloseTo(c.expected.p, 10);
  });

  it.each(fixture.cases.filter((c) => c.kind === 'continuous').map((c) => [c.name, c] as const))('%s: Wilcoxon signed-rank', (_name, c) => {
    const w = wilcoxonSignedRank(c.canary.map((x, i) => x - (c.baseline[i] as number)));
    expect([w.method, w.n]).toEqual([c.expected.method, c.expected.n]);
    expect(w.pValue).toBeCloseTo(c.expected.p, 8);
    const result = pairedComparison(c.baseline, c.canary);
    expect(result?.test).toBe('wilcoxon-signed-rank');
    expect(result?.pValue).toBeCloseTo(c.expected.p, 8);
  });

  it('gives small cases computed by hand', () => {
    // 5 discordant pairs all one way: 2 * (1/2)^5 = 1/16.
    expect(mcnemarExact(5, 0)).toBeCloseTo(1 / 16, 12);
    // 3 positive differences, ranks 1..3: T- = 0, P(T <= 0) = 1/8, two-sided 1/4.
    expect(wilcoxonSignedRank([0.1, 0.2, 0.3]).pValue).toBeCloseTo(1 / 4, 12);
  });

  it('reports the means and their difference, canary minus baseline', () => {
    const r = pairedComparison([1, 1, 1, 0], [0, 1, 0, 0]);
    expect(r).toMatchObject({ pairs: 4, baselineMean: 0.75, canaryMean: 0.25, meanDifference: -0.5 });
    expect(pairedComparison([], [])).toBeUndefined();
  });
});
