/**
 * The metrics read from annotations (src/annotate): their names and directions live here, so the
 * catalog can check a benchmark's metric names without loading any annotator or client code.
 */
import type { AnnotatorName, MetricInfo } from './types';

export const EHRSQL_METRICS: MetricInfo[] = [
  { name: 'ehr_sql_execution_accuracy', lowerIsBetter: false },
  { name: 'ehr_sql_query_validity', lowerIsBetter: false },
  { name: 'ehr_sql_precision_answerable', lowerIsBetter: false },
  { name: 'ehr_sql_recall_answerable', lowerIsBetter: false },
  { name: 'ehr_sql_total_predicted_answerable', lowerIsBetter: false },
  { name: 'ehr_sql_total_ground_truth_answerable', lowerIsBetter: false },
];

/** The most judges a jury may have (site-data.schema.json), so per-judge metrics have fixed names. */
export const MAX_JUDGES = 5;

export const JURY_METRICS: MetricInfo[] = [
  { name: 'jury_score', lowerIsBetter: false },
  { name: 'jury_score_normalized', lowerIsBetter: false },
  { name: 'jury_judges_used', lowerIsBetter: null },
  /** Judges asked whose call failed or whose answer could not be read: counted, never scored 0. */
  { name: 'jury_judges_failed', lowerIsBetter: null },
  /** Judges left out because they are of the evaluated model's own family. */
  { name: 'jury_judges_excluded', lowerIsBetter: null },
  /** 1 when the answer is a refusal and nothing else: corrected mode scores it at the floor without a judge; helm mode asks the judges, as HELM. */
  { name: 'jury_refusal', lowerIsBetter: true },
  /** 1 when the answer opens with a decline or disclaimer and then answers: the judges are asked in both modes. */
  { name: 'jury_hedged', lowerIsBetter: null },
  /** Highest minus lowest judge mean of the instance: the judges' disagreement (0 = agreement). */
  { name: 'jury_judge_spread', lowerIsBetter: null },
  ...Array.from({ length: MAX_JUDGES }, (_, i): MetricInfo => ({ name: `jury_judge_${i + 1}`, lowerIsBetter: false })),
];

// --- Rubric grading (HealthBench; src/annotate/rubric) ---------------------------------------------

/** HealthBench's example themes (`theme:*` example tags) and rubric axes (`axis:*` criterion tags). */
export const RUBRIC_THEMES = ['emergency_referrals', 'context_seeking', 'global_health', 'health_data_tasks', 'communication', 'hedging', 'complex_responses'] as const;
export const RUBRIC_AXES = ['accuracy', 'completeness', 'communication_quality', 'context_awareness', 'instruction_following'] as const;

export const RUBRIC_METRICS: MetricInfo[] = [
  /** Points of the criteria met (negative ones included) over the positive points; the run's is the clipped mean. */
  { name: 'rubric_score', lowerIsBetter: false, aggregate: 'clipped-mean' },
  /** Criteria graded for the instance. */
  { name: 'rubric_criteria_graded', lowerIsBetter: null },
  /** Criteria whose grade stayed malformed after the retries: the instance is then not scored, never scored "not met". */
  { name: 'rubric_grades_failed', lowerIsBetter: null },
  ...RUBRIC_THEMES.map((t): MetricInfo => ({ name: `rubric_theme_${t}`, lowerIsBetter: false, aggregate: 'clipped-mean' })),
  ...RUBRIC_AXES.map((a): MetricInfo => ({ name: `rubric_axis_${a}`, lowerIsBetter: false, aggregate: 'clipped-mean' })),
];

/**
 * Annotators that run only after the run's model calls are all made: EHRSQL executes the model's SQL
 * on the site's database, and a hostile endpoint would otherwise read that data from how long the
 * daemon takes before its next request.
 */
export const DEFERRED_ANNOTATORS: readonly AnnotatorName[] = ['ehr_sql'];

export const ANNOTATED_METRICS: { annotator: AnnotatorName; metrics: MetricInfo[] }[] = [
  { annotator: 'ehr_sql', metrics: EHRSQL_METRICS },
  { annotator: 'jury', metrics: JURY_METRICS },
  { annotator: 'rubric', metrics: RUBRIC_METRICS },
];
