/**
 * ICD-10 code-set precision, recall and F1 (MIMIC-IV billing codes), per instance over the sets of
 * codes in the reference and the prediction, with sklearn's zero_division=0; the run value is the
 * mean over instances, as HELM computes it.
 *
 * `helm` mode extracts codes with HELM's pattern, which reads `S72.001A` and `T81.4XXA` as their
 * categories `S72` and `T81` and does not see undotted codes longer than four characters (`E1165`).
 * `corrected` mode reads whole ICD-10-CM codes, dotted or not, with their suffix letters, and compares
 * them without the dot: `E11.65` = `E1165`, `S72.001A` = `S72001A`, `S72.001A` != `S72.001D`.
 */
import type { Metric, ScoreContext } from './types';

/** HELM's pattern (MIMICIVBillingCodeMetric.extract_icd_codes), after removing `**`. */
const HELM_CODE = /\b[A-Z]\d{1,3}(?:\.\d{1,4})?\.?\b/g;

/**
 * A full ICD-10-CM code: a letter, a digit, a digit (or the letter of the few categories that have
 * one: C4A, C7A, C7B, D3A, M1A, O9A, Z3A), then up to four characters after an optional dot.
 */
const CODE = /\b([A-Z]\d(?:\d|(?<=C[47])A|(?<=C7)B|(?<=D3)A|(?<=M1)A|(?<=O9)A|(?<=Z3)A))(?:\.?([0-9A-Z]{1,4}))?\.?(?![0-9A-Za-z])/g;

export function helmCodes(text: string): Set<string> {
  const cleaned = text.replace(/\*\*/g, '');
  return new Set([...cleaned.matchAll(HELM_CODE)].map((m) => m[0].replace(/\.+$/, '').trim()));
}

export function normalizedCodes(text: string): Set<string> {
  const cleaned = text.replace(/\*\*/g, '');
  return new Set([...cleaned.matchAll(CODE)].map((m) => `${m[1]}${m[2] ?? ''}`));
}

export interface SetScores {
  precision: number;
  recall: number;
  f1: number;
}

/** Micro precision/recall/F1 of one predicted set against one reference set, zero_division=0. */
export function setScores(reference: Set<string>, predicted: Set<string>): SetScores {
  let tp = 0;
  for (const c of predicted) if (reference.has(c)) tp += 1;
  const precision = predicted.size ? tp / predicted.size : 0;
  const recall = reference.size ? tp / reference.size : 0;
  const f1 = precision + recall > 0 ? (2 * precision * recall) / (precision + recall) : 0;
  return { precision, recall, f1 };
}

function scores(prediction: string, references: readonly string[], ctx: ScoreContext): SetScores {
  const extract = ctx.mode === 'helm' ? helmCodes : normalizedCodes;
  const reference = new Set<string>();
  for (const r of references) for (const c of extract(r)) reference.add(c);
  return setScores(reference, extract(prediction.trim()));
}

export const icd10Precision: Metric = {
  name: 'mimiciv_billing_code_precision',
  lowerIsBetter: false,
  score: (prediction, instance, ctx) => scores(prediction, instance.references, ctx).precision,
};

export const icd10Recall: Metric = {
  name: 'mimiciv_billing_code_recall',
  lowerIsBetter: false,
  score: (prediction, instance, ctx) => scores(prediction, instance.references, ctx).recall,
};

export const icd10F1: Metric = {
  name: 'mimiciv_billing_code_f1',
  lowerIsBetter: false,
  score: (prediction, instance, ctx) => scores(prediction, instance.references, ctx).f1,
};
