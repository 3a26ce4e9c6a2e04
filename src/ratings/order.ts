/**
 * Seeds of a study: its sample of each run's answered instances (HELM's seeded sample, the one a
 * capped run uses), and each rater's order of the study's items, seeded by the study's seed and the
 * rater's id so it is the same every time the rater comes back, and differs between raters (so no
 * item is always rated last, tired).
 */
import { createHash } from 'node:crypto';
import { helmSample, numpyPermutation } from '../catalog';

/** Which of `population` answered instances (positions in ordinal order) a run contributes. */
export function sampleRun(population: number, perRun: number, studySeed: number, runIndex: number): number[] {
  // Each run gets its own seed: two runs of the same dataset should not be sampled at the same positions.
  return helmSample(population, perRun, derivedSeed(`${studySeed}\u0000run\u0000${runIndex}`)).sort((a, b) => a - b);
}

/** The positions 0..n-1 of a study's items in the order this rater meets them. */
export function raterOrder(n: number, studySeed: number, rater: string): number[] {
  return Array.from(numpyPermutation(n, derivedSeed(`${studySeed}\u0000rater\u0000${rater}`)));
}

/** A 32-bit seed from a string: the first four bytes of its sha256. */
function derivedSeed(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}
