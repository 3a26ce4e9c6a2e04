/**
 * A run's jury policy in words, for `runs show` and the run report: whom the jury asked, whom it left
 * out and why, and what scored the floor without a judge (src/annotate/jury: juryPolicy).
 */
import type { RunSpec } from './store';

type Policy = NonNullable<RunSpec['jury']>;

const SAME_FAMILY: Record<Policy['sameFamily'], string> = {
  exclude: "judges of the model's own family left out",
  allow: "judges of the model's own family asked (site setting)",
  'helm-asks-all': 'every judge asked, as HELM does (helm mode)',
};

const FLOOR: Record<Policy['floor'], string> = {
  'empty-answer': 'only an empty answer scores the floor without a judge (as HELM)',
  'empty-answer-or-refusal': 'an empty answer or a refusal and nothing else scores the floor without a judge',
};

export function juryPolicyText(j: { judgesAsked: string[]; judgesLeftOut: string[]; sameFamily: string; floor: string }): string {
  const leftOut = j.judgesLeftOut.length ? ` (left out: ${j.judgesLeftOut.join(', ')})` : '';
  const family = SAME_FAMILY[j.sameFamily as Policy['sameFamily']] ?? j.sameFamily;
  const floor = FLOOR[j.floor as Policy['floor']] ?? j.floor;
  return `asked ${j.judgesAsked.join(', ') || 'no judge'}${leftOut}; ${family}; ${floor}`;
}
