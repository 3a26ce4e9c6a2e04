/**
 * Reading a grade as simple-evals' HealthBench does (parse_json_to_dict): the answer stripped, a
 * leading "```json" and a trailing "```" removed, the rest parsed as JSON; the grade is its
 * `criteria_met` when that is true or false. Anything else is malformed (the reference asks again).
 * Only the boolean leaves this function: the grader's explanation is never kept.
 */

import type { Metric } from './types';

/** Python's re.sub(r"^```json\s*|\s*```$", "", text.strip()): the markers at the very start and end only. */
function withoutFence(answer: string): string {
  return answer.trim().replace(/^```json\s*|\s*```$/g, '');
}

/** true or false when the grader said whether the criterion is met; undefined when the grade is malformed. */
export function criteriaMet(answer: string): boolean | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(withoutFence(answer));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const label = (parsed as Record<string, unknown>).criteria_met;
  return label === true || label === false ? label : undefined;
}

/**
 * HealthBench's meta-evaluation, where the model under evaluation is the grader: 1 when it said the
 * criterion is met, 0 when not, null when its grade is malformed (left out of the agreement figures and
 * counted, never read as a label). Its mean is the share of criteria the grader found met.
 */
export const metaGraderCriteriaMet: Metric = {
  name: 'meta_grader_criteria_met',
  lowerIsBetter: null,
  score(prediction) {
    const label = criteriaMet(prediction);
    return label === undefined ? null : label ? 1 : 0;
  },
};
