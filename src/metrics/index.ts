/** Metrics: a benchmark names its metrics; the scoring stage scores each instance with them. */
export { getMetric, inProcessMetric, metricNames, providerOf, type Provider } from './registry';
export type { Metric, MetricInfo, ScoreContext, Scorer, ScoringMode } from './types';
export { mapChoice } from './exact-match';
export { ehrSqlScorer, SqlExecutor, postProcessSql, extractSql, EHRSQL_CURRENT_TIME, type EhrSqlContext } from './ehrsql';
export { juryScorer, JudgeClients, judgeScores, judgePrompt, checkJudge, JUDGE_MAX_TOKENS, type JudgeCaller, type JuryContext } from './jury';
export { helmCodes, normalizedCodes, setScores } from './icd10';
export { rougeTokens } from './rouge';
