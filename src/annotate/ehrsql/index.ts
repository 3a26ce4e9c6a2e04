/**
 * EHRSQL execution (an annotator, as HELM's EhrSqlAnnotator): the gold and the predicted SQL run against the site's SQLite database
 * (read-only, time-limited, in a child process: executor.ts) and their result sets are compared as
 * sets of rows. An empty answer (or "null", EHRSQL's token) is an abstention.
 *
 * `corrected` mode follows EHRSQL's official evaluate.py: both queries pass its post_process_sql
 * (lower-case; `current_time` becomes the fixed '2105-12-31 23:59:00', and so does 'now'; vital-sign
 * ranges; quoting fixes), unanswerable questions (is_impossible) are right only when abstained on,
 * answerable ones only when the prediction's rows equal the gold rows (both empty counts as equal).
 * Validity and the answerability ratios apply only where they are defined (null elsewhere), so their
 * run means are the true precision and recall of answerability.
 *
 * `helm` mode reproduces HELM's EhrSqlAnnotator + EhrSqlMetric: queries run verbatim (so SQLite's
 * CURRENT_TIME is the wall clock's time of day), a gold query returning nothing is replaced by the
 * item's sampled `value`s (which never equal a row, so those items score 0), an item is right when
 * both results are non-empty and equal as sets, or both empty with no prediction at all; an item is answerable when its is_impossible (the
 * instance's extra data, as HELM's metric reads it) is false and it has a gold query, and validity
 * and the answerability indicators are 0/1 on every item (averaged over all items, not ratios).
 */
import type { Instance } from '../../catalog';
import { UserError } from '../../errors';
import type { ScoringMode } from '../../metrics';
import type { ExecResult, SqlExecutor } from './executor';

export { SqlExecutor, DEFAULT_TIMEOUT_MS, type ExecResult } from './executor';

export const EHRSQL_CURRENT_TIME = '2105-12-31 23:59:00';

export interface EhrSqlContext {
  mode: ScoringMode;
  /** The site's SQLite database. */
  database: string | undefined;
  benchmarkId: string;
  executor: SqlExecutor;
}

/** HELM's clean-up of the completion: the inside of <sql> tags, no backticks, no leading `sql` line. */
export function extractSql(prediction: string): string {
  const text = prediction.trim();
  const tagged = /<\s*sql\s*>([\s\S]*?)<\/?\s*sql\s*>/i.exec(text);
  let sql = tagged ? (tagged[1] ?? '').trim() : text;
  sql = sql.replace(/`/g, '').trim();
  return sql.replace(/^sql\n/gm, '');
}

const VITAL_RANGES: Record<string, [string, string]> = {
  temperature: ['35.5', '38.1'],
  sao2: ['95.0', '100.0'],
  'heart rate': ['60.0', '100.0'],
  respiration: ['12.0', '18.0'],
  'systolic bp': ['90.0', '120.0'],
  'diastolic bp': ['60.0', '90.0'],
  'mean bp': ['60.0', '110.0'],
};

/** EHRSQL's post_process_sql (evaluate.py), plus the same fixed time for SQLite's 'now'. */
export function postProcessSql(query: string, currentTime = EHRSQL_CURRENT_TIME): string {
  let q = query.toLowerCase();
  q = q.split('current_time').join(`'${currentTime}'`);
  q = q.split("'now'").join(`'${currentTime}'`);
  const lower = /[ \n]+([a-zA-Z0-9_]+_lower)/.exec(q);
  const upper = /[ \n]+([a-zA-Z0-9_]+_upper)/.exec(q);
  if (lower && upper) {
    const lowerExpr = lower[1] as string;
    const upperExpr = upper[1] as string;
    const names = new Set([...[...lowerExpr.matchAll(/([a-zA-Z0-9_]+)_lower/g)].map((m) => m[1]), ...[...upperExpr.matchAll(/([a-zA-Z0-9_]+)_upper/g)].map((m) => m[1])]);
    if (names.size === 1) {
      const range = VITAL_RANGES[([...names][0] as string).replace(/_/g, ' ')];
      if (range) q = q.split(lowerExpr).join(range[0]).split(upperExpr).join(range[1]);
    }
  }
  q = q.split("''").join("'").split('< =').join('<=');
  return q.split('%y').join('%Y').split('%j').join('%J');
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  const x = new Set(a);
  const y = new Set(b);
  if (x.size !== y.size) return false;
  for (const v of x) if (!y.has(v)) return false;
  return true;
}

function rowsOf(r: ExecResult): string[] {
  return r.ok ? r.rows : [];
}

async function scoreHelm(prediction: string, instance: Instance, ctx: EhrSqlContext, db: string): Promise<Record<string, number>> {
  const goldSql = (instance.references[0] ?? '').trim();
  let gold = goldSql ? rowsOf(await ctx.executor.run(db, goldSql)) : [];
  if (gold.length === 0) {
    // HELM's fallback: the sampled slot values, as bare values (a row is a tuple, so never equal).
    const value = JSON.parse(String(instance.extra?.value ?? '{}')) as Record<string, unknown>;
    gold = Object.values(value).map((v) => `value:${JSON.stringify(v)}`);
  }
  const predicted = prediction.trim() !== '';
  const sql = extractSql(prediction);
  const result: ExecResult = sql ? await ctx.executor.run(db, sql) : { ok: false, error: 'sql' };
  const rows = rowsOf(result);
  let accuracy = 0;
  if (goldSql) {
    if (gold.length && rows.length) accuracy = sameSet(rows, gold) ? 1 : 0;
    else if (!gold.length && !rows.length && !predicted) accuracy = 1;
  }
  // HELM's metric reads is_impossible from the instance's extra data (its scenario puts it there).
  const answerable = instance.extra?.isImpossible !== true && goldSql !== '';
  const correctAnswerable = answerable && predicted ? 1 : 0;
  return {
    ehr_sql_execution_accuracy: accuracy,
    ehr_sql_query_validity: predicted && result.ok ? 1 : 0,
    ehr_sql_precision_answerable: predicted ? correctAnswerable : 0,
    ehr_sql_recall_answerable: answerable ? correctAnswerable : 0,
    ehr_sql_total_predicted_answerable: predicted ? 1 : 0,
    ehr_sql_total_ground_truth_answerable: answerable ? 1 : 0,
  };
}

async function scoreCorrected(prediction: string, instance: Instance, ctx: EhrSqlContext, db: string): Promise<Record<string, number | null>> {
  const goldSql = (instance.references[0] ?? '').trim();
  const answerable = instance.extra?.isImpossible !== true && goldSql !== '' && goldSql.toLowerCase() !== 'null';
  const sql = extractSql(prediction).trim();
  const predicted = sql !== '' && sql.toLowerCase() !== 'null';
  let accuracy: number;
  let valid: number | null = null;
  const pred = predicted ? await ctx.executor.run(db, postProcessSql(sql)) : undefined;
  if (pred) valid = pred.ok ? 1 : 0;
  if (!answerable) accuracy = predicted ? 0 : 1;
  else if (!pred) accuracy = 0;
  else {
    const gold = await ctx.executor.run(db, postProcessSql(goldSql));
    // A gold query that fails counts against the item, as in evaluate.py ("error_real" never matches).
    accuracy = gold.ok && pred.ok && sameSet(gold.rows, pred.rows) ? 1 : 0;
  }
  return {
    ehr_sql_execution_accuracy: accuracy,
    ehr_sql_query_validity: valid,
    ehr_sql_precision_answerable: predicted ? (answerable ? 1 : 0) : null,
    ehr_sql_recall_answerable: answerable ? (predicted ? 1 : 0) : null,
    ehr_sql_total_predicted_answerable: predicted ? 1 : 0,
    ehr_sql_total_ground_truth_answerable: answerable ? 1 : 0,
  };
}

/** Runs the predicted and the gold SQL and returns the EHRSQL numbers (src/metrics reads them). */
export async function annotateWithSql(prediction: string, instance: Instance, ctx: EhrSqlContext): Promise<Record<string, number | null>> {
  const db = ctx.database;
  if (!db) {
    throw new UserError('ehrsql.no-database', `benchmark ${ctx.benchmarkId}: no SQLite database configured; set benchmarks.${ctx.benchmarkId}.database in the site data file`);
  }
  return ctx.mode === 'helm' ? scoreHelm(prediction, instance, ctx, db) : scoreCorrected(prediction, instance, ctx, db);
}
