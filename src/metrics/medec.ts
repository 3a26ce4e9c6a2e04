/**
 * MEDEC error detection. Flag accuracy: the answer "CORRECT" means "no error"; anything else flags
 * one (so "CORRECT." flags an error, as in HELM). Sentence accuracy: a correct note needs "CORRECT";
 * an erroneous one needs the answer to start with the gold sentence id. HELM parses that id out of
 * the reference and always fails, so in `helm` mode erroneous notes never score, as published.
 */
import type { Instance } from '../catalog';
import type { Metric } from './types';

function predictsNoError(prediction: string): boolean {
  return prediction.trim() === 'CORRECT';
}

function goldHasError(instance: Instance): boolean | undefined {
  const flag = instance.extra?.errorFlag;
  return typeof flag === 'boolean' ? flag : undefined;
}

export const medecErrorFlagAccuracy: Metric = {
  name: 'medec_error_flag_accuracy',
  lowerIsBetter: false,
  score(prediction, instance) {
    const gold = goldHasError(instance);
    if (gold === undefined) return null;
    return predictsNoError(prediction) === !gold ? 1 : 0;
  },
};

export const medecErrorSentenceAccuracy: Metric = {
  name: 'medec_error_sentence_accuracy',
  lowerIsBetter: false,
  score(prediction, instance, ctx) {
    const gold = goldHasError(instance);
    if (gold === undefined) return null;
    if (!gold) return predictsNoError(prediction) ? 1 : 0;
    if (ctx.mode === 'helm') return 0;
    const leading = /^\s*(\d+)\b/.exec(prediction);
    return leading && Number(leading[1]) === instance.extra?.errorSentenceId ? 1 : 0;
  },
};
