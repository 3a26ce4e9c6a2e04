/**
 * Rubric grading, as OpenAI's HealthBench grades (simple-evals healthbench_eval.py): one grader call
 * per rubric criterion, each asking whether the model's last turn of the conversation meets it
 * (GRADER_TEMPLATE, verbatim); the instance scores the points met, negative criteria included, over
 * the positive points (score.ts). MedHELM's port differs (negative criteria earn points, several
 * judges' grades pile into one list); this follows the reference.
 *
 * The grader is the first judge endpoint of the benchmark (site-data `jury.judges`, per benchmark or
 * for all), reached only through the run's gateway (JudgePort: decision, budget, capacity, audit,
 * de-identification), at most `rubric.concurrency` calls at once per instance. A grade that is not
 * JSON with a boolean `criteria_met` is asked again up to `rubric.maxGradeAttempts` times in all (the
 * reference asks until it gets one); one still malformed then fails the grade: the instance is not
 * scored and the failure is counted, never taken for "not met". A grader call that fails (HTTP,
 * timeout) fails the instance, which the run retries. Explanations never leave parse.ts.
 */
import { commandPrefix } from '../../command-prefix';
import { type Benchmark, conversationText, graderPrompt, type Instance, type RubricCriterion, rubricOfInstance } from '../../catalog';
import { UserError } from '../../errors';
import type { JudgePort } from '../jury';
import { criteriaMet } from '../../metrics';
import { instanceScores, unscored } from './score';

export { conversationText, graderPrompt, GRADER_TEMPLATE } from '../../catalog';
export { criteriaMet } from '../../metrics';
export { instanceScores, rubricScore } from './score';
export { metaEvaluation, raterAgreement, type Agreement, type GradedRow, type MetaEvaluation, type RaterFigures } from './meta-eval';
export { metaEvalGraderPrompt, metaEvalRow, type MetaEvalRow } from '../../catalog';

/** Grader calls in flight per instance, and attempts per criterion, unless the definition says otherwise. */
export const DEFAULT_GRADER_CONCURRENCY = 4;
export const DEFAULT_GRADE_ATTEMPTS = 3;

export interface RubricContext {
  benchmark: Benchmark;
  judges: JudgePort;
}

export type RubricAnnotation = Record<string, number | null>;

/** str(RubricItem): "[points] criterion", points as Python prints them (the official points are whole numbers). */
export function rubricItemText(c: RubricCriterion): string {
  return `[${c.points}] ${c.criterion}`;
}

/** Runs `work` over `items` with at most `limit` in flight; results in item order. */
async function bounded<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return out;
}

/** The grader endpoint: the first judge in force for the benchmark. */
function graderOf(b: Benchmark): string {
  const grader = b.judges?.[0];
  if (!grader)
    throw new UserError('jury.no-judges', `benchmark ${b.definition.id}: no grader endpoint configured (jury.judges in the site data); see "${commandPrefix()} benchmarks show ${b.definition.id}"`);
  return grader;
}

export async function annotateWithRubric(prediction: string, instance: Instance, ctx: RubricContext): Promise<RubricAnnotation> {
  const b = ctx.benchmark;
  const grader = graderOf(b);
  await ctx.judges.check([grader]);
  const { rubric, exampleTags } = rubricOfInstance(instance);
  const settings = b.definition.rubric ?? {};
  const attempts = settings.maxGradeAttempts ?? DEFAULT_GRADE_ATTEMPTS;
  const conversation = conversationText(instance.messages ?? [], prediction);

  // A grade per criterion: true/false, or undefined when it stayed malformed or could not be sent.
  const grades = await bounded(rubric, settings.concurrency ?? DEFAULT_GRADER_CONCURRENCY, async (criterion, i): Promise<boolean | undefined> => {
    const prompt = await ctx.judges.sendable(graderPrompt(conversation, rubricItemText(criterion)));
    // Still carrying an identifier after de-identification: the grader never sees it.
    if (prompt === undefined) return undefined;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const answer = await ctx.judges.complete(grader, prompt, { metric: 'rubric', criterion: i + 1, gradeAttempt: attempt });
      const met = criteriaMet(answer.text);
      if (met !== undefined) return met;
    }
    return undefined;
  });
  const failed = grades.filter((g) => g === undefined).length;
  if (failed > 0) return unscored(rubric.length - failed, failed);
  return { ...instanceScores(rubric, exampleTags, grades as boolean[]), rubric_criteria_graded: rubric.length, rubric_grades_failed: 0 };
}
