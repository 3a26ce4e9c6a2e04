/**
 * The annotation stage, between the model call and scoring (HELM's annotators): work on a prediction
 * that leaves the process or takes time, once per instance whichever of its metrics a benchmark names.
 *   ehr_sql  runs the predicted and the gold SQL against the site's SQLite database (child process)
 *   jury     asks each judge endpoint, only through the run's outbound gateway (JudgePort)
 *   rubric   asks the grader endpoint once per rubric criterion (HealthBench), through the same port
 * Metrics then read the numbers (src/metrics); they never call out.
 */
import type { Instance } from '../catalog';
import { annotatorsFor, type Annotations, type AnnotatorName, DEFERRED_ANNOTATORS } from '../metrics';
import type { RunContext } from '../contracts';
import { annotateWithSql, type SqlExecutor } from './ehrsql';
import { annotateWithJury, type JudgePort } from './jury';
import { annotateWithRubric } from './rubric';

export { annotateWithSql, extractSql, postProcessSql, SqlExecutor, EHRSQL_CURRENT_TIME, DEFAULT_TIMEOUT_MS, type EhrSqlContext, type ExecResult } from './ehrsql';
export { annotateWithRubric, conversationText, criteriaMet, graderPrompt, GRADER_TEMPLATE, instanceScores, rubricItemText, rubricScore, type RubricAnnotation } from './rubric';
export { metaEvalGraderPrompt, metaEvalRow, metaEvaluation, raterAgreement, type Agreement, type GradedRow, type MetaEvalRow, type MetaEvaluation, type RaterFigures } from './rubric';
export { annotateWithJury, declineOf, isRefusal, judgePrompt, juryPolicy, judgeScores, JUDGE_MAX_TOKENS, modelFamily, sameFamily, type JudgePort, type JuryContext } from './jury';

/** `inline`: the annotators that run right after the model call; `deferred`: those run after all of the run's calls. */
export type AnnotationPhase = 'inline' | 'deferred';

export interface AnnotationStage {
  /** The annotators of the benchmark's metrics that run in `phase`. */
  needed(ctx: RunContext, phase: AnnotationPhase): AnnotatorName[];
  annotate(ctx: RunContext, instance: Instance, prediction: string, judges: JudgePort, phase: AnnotationPhase): Promise<Annotations>;
}

function neededIn(ctx: RunContext, phase: AnnotationPhase): AnnotatorName[] {
  const d = ctx.benchmark.definition;
  return annotatorsFor([d.metrics.main, ...(d.metrics.secondary ?? [])]).filter((a) => DEFERRED_ANNOTATORS.includes(a) === (phase === 'deferred'));
}

export function createAnnotators(sql: SqlExecutor): AnnotationStage {
  return {
    needed: neededIn,
    async annotate(ctx, instance, prediction, judges, phase) {
      const d = ctx.benchmark.definition;
      const out: Annotations = {};
      for (const annotator of neededIn(ctx, phase)) {
        out[annotator] =
          annotator === 'ehr_sql'
            ? await annotateWithSql(prediction, instance, { mode: ctx.scoring, database: ctx.benchmark.site?.database, benchmarkId: d.id, executor: sql })
            : annotator === 'rubric'
              ? await annotateWithRubric(prediction, instance, { benchmark: ctx.benchmark, judges })
              : await annotateWithJury(prediction, instance, { mode: ctx.scoring, benchmark: ctx.benchmark, judges, ...(ctx.jury ? { policy: ctx.jury } : {}) });
      }
      return out;
    },
  };
}
