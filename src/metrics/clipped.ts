/**
 * HealthBench's run-level statistics (simple-evals `_compute_clipped_stats`): the mean of the instance
 * scores clipped to [0, 1] (an instance may score below 0 when it meets negative criteria; the mean is
 * clipped, not each score), and the standard deviation of that clipped mean over 1,000 bootstrap
 * resamples. The reference draws its resamples unseeded; here they are drawn from MT19937 seeded 0, so
 * a run's figure can be recomputed from its stored scores.
 */
import { Mt19937 } from '../catalog';

export const BOOTSTRAP_SAMPLES = 1000;
export const BOOTSTRAP_SEED = 0;

export function clippedMean(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const mean = values.reduce((a, x) => a + x, 0) / values.length;
  return Math.min(1, Math.max(0, mean));
}

/** A uniform index in [0, n): numpy's masked rejection over 32-bit draws. */
function index(rng: Mt19937, n: number): number {
  const max = n - 1;
  let mask = max;
  for (const shift of [1, 2, 4, 8, 16]) mask |= mask >>> shift;
  for (;;) {
    const v = (rng.nextUint32() & mask) >>> 0;
    if (v <= max) return v;
  }
}

/** Population standard deviation (numpy's np.std) of the clipped means of resamples with replacement. */
export function bootstrapStd(values: readonly number[], samples = BOOTSTRAP_SAMPLES, seed = BOOTSTRAP_SEED): number | null {
  if (values.length === 0) return null;
  const rng = new Mt19937(seed);
  const means: number[] = [];
  for (let s = 0; s < samples; s++) {
    let sum = 0;
    for (let i = 0; i < values.length; i++) sum += values[index(rng, values.length)] as number;
    means.push(Math.min(1, Math.max(0, sum / values.length)));
  }
  const m = means.reduce((a, x) => a + x, 0) / means.length;
  return Math.sqrt(means.reduce((a, x) => a + (x - m) ** 2, 0) / means.length);
}

/** The name of a clipped metric's bootstrap standard deviation among a run's aggregates. */
export function bootstrapStdName(metric: string): string {
  return `${metric}_bootstrap_std`;
}

interface Aggregate {
  metric: string;
  value: number | null;
  n: number;
}

/**
 * A run's aggregates with every clipped metric's mean clipped and its bootstrap std added right after it.
 * `values` holds each clipped metric's instance scores in instance order (the bootstrap's input).
 */
export function withClippedStats<A extends Aggregate>(aggregates: readonly A[], values: ReadonlyMap<string, readonly number[]>, isClipped: (metric: string) => boolean): Aggregate[] {
  const out: Aggregate[] = [];
  for (const a of aggregates) {
    if (!isClipped(a.metric)) {
      out.push(a);
      continue;
    }
    const v = values.get(a.metric) ?? [];
    out.push({ metric: a.metric, value: clippedMean(v), n: v.length });
    out.push({ metric: bootstrapStdName(a.metric), value: bootstrapStd(v), n: v.length });
  }
  return out;
}
