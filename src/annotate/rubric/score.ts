/**
 * HealthBench's scoring (simple-evals calculate_score and grade_sample): an instance scores the points
 * of the criteria met, negative ones included, over the sum of the positive points, unclipped (it may
 * fall below 0); each of its `theme:*` example tags scores the same; each `axis:*` criterion tag scores
 * its own criteria the same way, where they hold positive points. The run's figures (clipped mean,
 * bootstrap std) are taken over these (src/metrics/clipped.ts).
 */
import type { RubricCriterion } from '../../catalog';
import { RUBRIC_AXES, RUBRIC_THEMES } from '../../metrics';

/** Points met over positive points; null when the criteria hold no positive points. */
export function rubricScore(criteria: readonly RubricCriterion[], met: readonly boolean[]): number | null {
  const possible = criteria.reduce((a, c) => a + (c.points > 0 ? c.points : 0), 0);
  if (possible === 0) return null;
  const achieved = criteria.reduce((a, c, i) => a + (met[i] ? c.points : 0), 0);
  return achieved / possible;
}

/** The scores of one graded instance by metric name (themes and axes it has no score for are null). */
export function instanceScores(criteria: readonly RubricCriterion[], exampleTags: readonly string[], met: readonly boolean[]): Record<string, number | null> {
  const overall = rubricScore(criteria, met);
  const out: Record<string, number | null> = { rubric_score: overall };
  for (const theme of RUBRIC_THEMES) out[`rubric_theme_${theme}`] = exampleTags.includes(`theme:${theme}`) ? overall : null;
  for (const axis of RUBRIC_AXES) {
    const tagged = criteria.map((c, i) => ({ c, met: met[i] as boolean })).filter(({ c }) => c.tags.includes(`axis:${axis}`));
    out[`rubric_axis_${axis}`] = tagged.length
      ? rubricScore(
          tagged.map((t) => t.c),
          tagged.map((t) => t.met),
        )
      : null;
  }
  return out;
}

/** An instance that could not be scored: every score null, its failed grades counted. */
export function unscored(graded: number, failed: number): Record<string, number | null> {
  const out: Record<string, number | null> = { rubric_score: null };
  for (const theme of RUBRIC_THEMES) out[`rubric_theme_${theme}`] = null;
  for (const axis of RUBRIC_AXES) out[`rubric_axis_${axis}`] = null;
  return { ...out, rubric_criteria_graded: graded, rubric_grades_failed: failed };
}
