/**
 * HELM's instance sampling against numpy itself: MT19937 seeded as RandomState(seed), RandomState's
 * permutation, and HELM's `np.random.seed(0); np.random.choice(eval_instances, N, replace=False)` over
 * the shipped EHRSQL and MedCalc-Bench data in dataset order. The expected values were written by
 * tests/fixtures/helm-sampling/generate.py (numpy) and are committed; no Python runs here.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { helmSample, Mt19937, numpyPermutation } from '../../src/catalog';
import { catalog } from '../helpers/instances';
import { instancesOf } from '../../src/catalog';
import { ROOT } from '../helpers/paths';

interface Expected {
  permutations: { n: number; seed: number; permutation: number[] }[];
  large: { n: number; seed: number; head: number[]; sha256: string }[];
  choices: { benchmark: string; population: number; k: number; ids: string[] }[];
}

const expected = JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', 'helm-sampling', 'expected.json'), 'utf8')) as Expected;

async function keysOf(benchmarkId: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const i of instancesOf(catalog.get(benchmarkId))) keys.push(i.key);
  return keys;
}

describe("numpy's legacy generator, as HELM seeds it", () => {
  it('gives the reference MT19937 output for seed 0 (init_genrand)', () => {
    const rng = new Mt19937(0);
    // numpy: RandomState(0).randint(0, 2**32, size=3, dtype=np.uint64)
    expect([rng.nextUint32(), rng.nextUint32(), rng.nextUint32()]).toEqual([2357136044, 2546248239, 3071714933]);
  });

  it.each(expected.permutations.map((p) => [p.n, p.seed, p.permutation] as const))('permutation(%i) with seed %i equals numpy', (n, seed, permutation) => {
    expect(Array.from(numpyPermutation(n, seed))).toEqual(permutation);
  });

  it.each(expected.large.map((p) => [p.n, p.seed, p] as const))('permutation(%i) with seed %i equals numpy in full (sha256)', (n, seed, p) => {
    const perm = Array.from(numpyPermutation(n, seed));
    expect(perm.slice(0, 100)).toEqual(p.head);
    expect(createHash('sha256').update(perm.join(',')).digest('hex')).toBe(p.sha256);
  });
});

describe("HELM's capped selection over the shipped data", () => {
  it.each(expected.choices.map((c) => [c.benchmark, c.k, c] as const))('%s, %i instances: the ids HELM evaluates, in its order', async (benchmark, k, c) => {
    const keys = await keysOf(benchmark);
    expect(keys.length).toBe(c.population);
    expect(helmSample(keys.length, k).map((i) => keys[i])).toEqual(c.ids);
  });

  it('takes every instance, in order, when the population fits the cap (HELM samples only above it)', () => {
    expect(helmSample(5, 5)).toEqual([0, 1, 2, 3, 4]);
    expect(helmSample(3, 1000)).toEqual([0, 1, 2]);
  });

  it('is monotone: a smaller cap takes a prefix of a larger one', () => {
    expect(helmSample(2909, 10)).toEqual(helmSample(2909, 1000).slice(0, 10));
  });
});
