/**
 * ROUGE-1, ROUGE-2 and ROUGE-L F-measures as HELM computes them with Google's `rouge_score`
 * (RougeScorer with use_stemmer=True), against the best-matching reference. The n-gram counting and
 * LCS are js-rouge's; the tokenisation is rouge_score's: lower-case, every run of characters other
 * than a-z and 0-9 is a separator, tokens longer than three characters are stemmed with NLTK's Porter
 * stemmer in its NLTK_EXTENSIONS mode, as rouge_score's are (porter.ts; the 1980 algorithm of the
 * `stemmer` package gave other stems for 85 of the 6,058 ACI-Bench words: days -> dai, eyes -> ey,
 * ages -> ag). ROUGE-L is sentence-level (the whole text is one sequence), as rouge_score's `rougeL`
 * (not `rougeLsum`).
 */
import { l as rougeL, n as rougeN } from 'js-rouge';
import { porterStem } from './porter';
import type { Instance } from '../catalog';
import type { Metric } from './types';

/** rouge_score.tokenize.tokenize(text, PorterStemmer()). */
export function rougeTokens(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .split(/\s+/)
    .map((t) => (t.length > 3 ? porterStem(t) : t))
    .filter((t) => /^[a-z0-9]+$/.test(t));
}

const whole = (text: string) => [text];

function f(kind: 1 | 2 | 'l', prediction: string, reference: string): number {
  // js-rouge refuses blank text; rouge_score scores it 0.
  if (rougeTokens(prediction).length === 0 || rougeTokens(reference).length === 0) return 0;
  const opts = { tokenizer: rougeTokens, caseSensitive: true };
  return kind === 'l' ? rougeL(prediction, reference, { ...opts, segmenter: whole }) : rougeN(prediction, reference, { ...opts, n: kind });
}

/** The best score over the references (HELM's max over references); null when there are none. */
function best(kind: 1 | 2 | 'l', prediction: string, instance: Instance): number | null {
  if (instance.references.length === 0) return null;
  return Math.max(...instance.references.map((r) => f(kind, prediction, r)));
}

export const rouge1: Metric = { name: 'rouge_1', lowerIsBetter: false, score: (p, i) => best(1, p, i) };
export const rouge2: Metric = { name: 'rouge_2', lowerIsBetter: false, score: (p, i) => best(2, p, i) };
export const rougeLMetric: Metric = { name: 'rouge_l', lowerIsBetter: false, score: (p, i) => best('l', p, i) };
