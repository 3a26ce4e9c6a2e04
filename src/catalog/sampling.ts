/**
 * Which instances a capped run takes. HELM caps a run's eval instances (`max_eval_instances`, 1,000 on
 * the MedHELM leaderboard) by sampling, not by taking the first N: its runner seeds numpy's legacy
 * global generator with 0 and calls `np.random.choice(eval_instances, N, replace=False)`, which is
 * `permutation(len(eval_instances))[:N]`. That is reproduced here exactly (MT19937 seeded as numpy's
 * RandomState seeds an integer, and RandomState.shuffle's Fisher-Yates with its masked rejection
 * sampling), so a capped run scores the same instances as HELM's. The expected values come from numpy
 * itself (tests/fixtures/helm-sampling).
 */

/** How a capped run picks its instances: HELM's seeded sample, or the first N in dataset order. */
export type SampleMethod = 'helm' | 'first';

/** HELM always seeds with 0 (runner.py); recorded with the run so the selection can be reproduced. */
export const HELM_SAMPLE_SEED = 0;

const N = 624;
const M = 397;

/** The Mersenne Twister MT19937, 32-bit output, seeded by init_genrand as numpy's RandomState(int) is. */
export class Mt19937 {
  private readonly mt = new Uint32Array(N);
  private index = N;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError('seed must be an integer in [0, 2^32)');
    this.mt[0] = seed >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = this.mt[i - 1] as number;
      // 1812433253 * (prev ^ (prev >>> 30)) + i, modulo 2^32 (Math.imul keeps the low 32 bits).
      this.mt[i] = (Math.imul(1812433253, (prev ^ (prev >>> 30)) >>> 0) + i) >>> 0;
    }
  }

  private twist(): void {
    const mt = this.mt;
    for (let i = 0; i < N; i++) {
      const y = ((mt[i] as number) & 0x80000000) | ((mt[(i + 1) % N] as number) & 0x7fffffff);
      mt[i] = ((mt[(i + M) % N] as number) ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0)) >>> 0;
    }
    this.index = 0;
  }

  nextUint32(): number {
    if (this.index >= N) this.twist();
    let y = this.mt[this.index++] as number;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }
}

/**
 * A uniform integer in [0, max] as numpy's legacy `random_interval`: draw 32 bits, mask them to the
 * smallest all-ones mask covering max, and draw again while the value exceeds max.
 */
function randomInterval(rng: Mt19937, max: number): number {
  if (max === 0) return 0;
  let mask = max;
  mask |= mask >>> 1;
  mask |= mask >>> 2;
  mask |= mask >>> 4;
  mask |= mask >>> 8;
  mask |= mask >>> 16;
  mask >>>= 0;
  for (;;) {
    const value = (rng.nextUint32() & mask) >>> 0;
    if (value <= max) return value;
  }
}

/** numpy's `RandomState(seed).permutation(n)`: 0..n-1 shuffled from the last position down. */
export function numpyPermutation(n: number, seed: number): Uint32Array {
  // Above 2^32 - 1 numpy draws 64-bit values; no dataset here comes near that.
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError('n must be an integer in [0, 2^32)');
  const rng = new Mt19937(seed);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  for (let i = n - 1; i >= 1; i--) {
    const j = randomInterval(rng, i);
    const t = out[i] as number;
    out[i] = out[j] as number;
    out[j] = t;
  }
  return out;
}

/**
 * The positions (in dataset order) of the instances HELM evaluates when `k` of `population` are
 * allowed, in HELM's order; every position when the population fits (HELM samples only above the cap).
 */
export function helmSample(population: number, k: number, seed = HELM_SAMPLE_SEED): number[] {
  if (!Number.isInteger(k) || k < 0) throw new RangeError('k must be a non-negative integer');
  if (population <= k) return Array.from({ length: population }, (_, i) => i);
  return Array.from(numpyPermutation(population, seed).subarray(0, k));
}
