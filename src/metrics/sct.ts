/**
 * SCT-Bench (Script Concordance Tests): the model rates how a new finding changes a hypothesis on
 * -2..+2, and is scored against the distribution of an expert panel's ratings. Both metrics are the
 * MedHELM package's (sct_bench_metrics.py, itself SCT-Bench's modeling.py): the same parse of
 * "Rating: X", the same scores, and 0 on both for an answer that does not parse. The quirks of that
 * parse are kept on purpose (the published numbers depend on them): only the five characters after the
 * first "Rating: " are read; "1" or "2" without a sign reads as nothing, "10" reads as 0; two ratings
 * close together ("-1/0", "0,+1") read as nothing. The same in both scoring modes: there is no HELM
 * bug to correct here.
 */
import type { Instance } from '../catalog';
import type { Metric } from './types';

/** The extra fields of an SCT-Bench instance holding the panel's weight of -2, -1, 0, +1 and +2, in that order. */
export const SCT_PANEL_FIELDS = ['expertMinus2', 'expertMinus1', 'expertZero', 'expertPlus1', 'expertPlus2'] as const;

/** The rating tokens the package's RATING_PATTERN finds, leftmost first, in its order of alternatives. */
const RATING_TOKEN = /\+2|\+1|0|-1|-2/g;

/**
 * The rating in a response, or undefined where the package's parse_sct_rating returns None. Python
 * joins the tokens found and calls int() on them: that succeeds only when no token after the first
 * carries a sign ("00" is 0, "+10" is 10 and then out of range), which the digits-only test mirrors.
 * The window is five code points, as Python slices a str.
 */
export function parseSctRating(response: string): number | undefined {
  const parts = response.split('Rating: ');
  if (parts.length < 2) return undefined;
  const window = Array.from(parts[1] as string)
    .slice(0, 5)
    .join('');
  const joined = (window.match(RATING_TOKEN) ?? []).join('');
  if (!/^[+-]?\d+$/.test(joined)) return undefined;
  const rating = Number.parseInt(joined, 10);
  return rating >= -2 && rating <= 2 ? rating : undefined;
}

/** The panel's weight of the rating over the weight of its most chosen rating (0 for a panel without weight). */
export function sctScore(panel: readonly number[], rating: number): number {
  const top = Math.max(...panel);
  if (top === 0) return 0;
  return (panel[rating + 2] as number) / top;
}

/** 1 when at least one expert chose the rating, else 0. */
export function expertSetMembership(panel: readonly number[], rating: number): number {
  return (panel[rating + 2] as number) > 0 ? 1 : 0;
}

/**
 * The panel of an instance, as the sct_bench adapter stored it. An instance without one cannot be
 * scored: that is a definition error (a benchmark naming these metrics with another adapter), and it
 * fails the instance rather than scoring it 0.
 */
function panelOf(instance: Instance): number[] {
  return SCT_PANEL_FIELDS.map((field) => {
    const weight = instance.extra?.[field];
    if (typeof weight !== 'number') throw new Error(`SCT-Bench metrics need the expert panel in the instance (extra.${field}); use the sct_bench adapter`);
    return weight;
  });
}

/** A metric of the rating the response gives; 0 when it gives none that parses. */
function byRating(name: string, score: (panel: readonly number[], rating: number) => number): Metric {
  return {
    name,
    lowerIsBetter: false,
    score: (prediction, instance) => {
      const panel = panelOf(instance);
      const rating = parseSctRating(prediction);
      return rating === undefined ? 0 : score(panel, rating);
    },
  };
}

export const sctScoreMetric = byRating('sct_score', sctScore);
export const sctExpertSetMembership = byRating('sct_expert_set_membership', expertSetMembership);
