/**
 * The exact-match family as HELM computes it. For multiple choice the stripped completion must be
 * exactly one option letter; the letter maps back to the option text, which is compared with the
 * references. "A." or "A)" maps to nothing and scores 0, as in HELM.
 */
import { CHOICE_LETTERS } from '../catalog';
import type { Instance } from '../catalog';
import { normalizeAnswer } from './normalize';
import type { Metric } from './types';

/** The option text a multiple-choice answer stands for, or undefined when it is not one letter. */
export function mapChoice(prediction: string, instance: Instance): string | undefined {
  const choices = instance.choices;
  if (!choices?.length) return prediction.trim();
  const letter = prediction.trim();
  if (letter.length !== 1) return undefined;
  const index = CHOICE_LETTERS.indexOf(letter);
  return index >= 0 ? choices[index] : undefined;
}

function best(prediction: string, instance: Instance, match: (pred: string, ref: string) => boolean): number {
  const mapped = mapChoice(prediction, instance);
  if (mapped === undefined) return 0;
  return instance.references.some((ref) => match(mapped, ref.trim())) ? 1 : 0;
}

export const exactMatch: Metric = {
  name: 'exact_match',
  lowerIsBetter: false,
  score: (prediction, instance) => best(prediction, instance, (p, r) => p.trim() === r),
};

export const quasiExactMatch: Metric = {
  name: 'quasi_exact_match',
  lowerIsBetter: false,
  score: (prediction, instance) => best(prediction, instance, (p, r) => normalizeAnswer(p) === normalizeAnswer(r)),
};

export const prefixExactMatch: Metric = {
  name: 'prefix_exact_match',
  lowerIsBetter: false,
  score: (prediction, instance) => best(prediction, instance, (p, r) => p.trim().startsWith(r)),
};

export const quasiPrefixExactMatch: Metric = {
  name: 'quasi_prefix_exact_match',
  lowerIsBetter: false,
  score: (prediction, instance) => best(prediction, instance, (p, r) => normalizeAnswer(p).startsWith(normalizeAnswer(r))),
};
