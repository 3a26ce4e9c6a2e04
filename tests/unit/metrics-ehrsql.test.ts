/**
 * EHRSQL execution accuracy against a real SQLite file (better-sqlite3) in the executor's child
 * process: set comparison, abstention, EHRSQL's fixed current time, HELM's behaviour, read-only and the
 * time limit. The database is a tiny eICU-shaped `lab` table built here; expected values are by hand.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Instance } from '../../src/catalog';
import { annotateWithSql, postProcessSql, SqlExecutor } from '../../src/annotate';
import type { ScoringMode } from '../../src/metrics';
import { tempDir } from '../helpers/db';
import { findInstances } from '../helpers/instances';

jest.setTimeout(30_000);

let dir: string;
let db: string;
let executor: SqlExecutor;

beforeAll(() => {
  dir = tempDir('ehrsql');
  db = join(dir, 'eicu.sqlite');
  const w = new Database(db);
  w.exec(`CREATE TABLE lab (labid INT PRIMARY KEY, patientunitstayid INT, labname TEXT, labresult REAL, labresulttime TEXT);
          INSERT INTO lab VALUES (1, 10, 'glucose', 100, '2105-06-01 08:00:00'), (2, 10, 'glucose', 140, '2103-01-01 08:00:00'),
                                 (3, 11, 'sodium', 139, '2105-07-01 08:00:00'), (4, 12, 'glucose', 90, '2105-08-01 08:00:00'),
                                 (5, 13, 'sodium', 141, '2100-01-01 08:00:00');`);
  w.close();
  executor = new SqlExecutor({ timeoutMs: 1500 });
});

afterAll(async () => {
  await executor.close();
});

function item(query: string, opts: { impossible?: boolean; value?: Record<string, unknown> } = {}): Instance {
  return { key: 'q', vars: { question: 'q' }, references: [query], extra: { isImpossible: opts.impossible ?? false, value: JSON.stringify(opts.value ?? {}) } };
}

function score(prediction: string, instance: Instance, mode: ScoringMode = 'corrected') {
  return annotateWithSql(prediction, instance, { mode, database: db, benchmarkId: 'ehr_sql', executor });
}

const GOLD = "select distinct lab.patientunitstayid from lab where lab.labname = 'glucose'";

describe('EHRSQL execution accuracy, corrected mode (EHRSQL evaluate.py rules)', () => {
  it('credits a different query with the same set of rows (order and duplicates do not matter)', async () => {
    // Stay 10 has two glucose rows: duplicates and order do not count.
    const s = await score("SELECT patientunitstayid FROM lab WHERE labname = 'glucose' ORDER BY 1 DESC", item(GOLD));
    expect(s.ehr_sql_execution_accuracy).toBe(1);
    expect(s.ehr_sql_query_validity).toBe(1);
  });

  it('gives 0 for other rows, for SQL that fails, and for abstaining on an answerable question', async () => {
    expect((await score("select patientunitstayid from lab where labname = 'sodium'", item(GOLD))).ehr_sql_execution_accuracy).toBe(0);
    const bad = await score('select nope from lab', item(GOLD));
    expect([bad.ehr_sql_execution_accuracy, bad.ehr_sql_query_validity]).toEqual([0, 0]);
    const abstain = await score('', item(GOLD));
    expect([abstain.ehr_sql_execution_accuracy, abstain.ehr_sql_recall_answerable, abstain.ehr_sql_precision_answerable]).toEqual([0, 0, null]);
  });

  it('credits abstaining on an unanswerable question (empty answer or "null"), not answering it', async () => {
    const impossible = item('null', { impossible: true });
    expect((await score('', impossible)).ehr_sql_execution_accuracy).toBe(1);
    expect((await score('null', impossible)).ehr_sql_execution_accuracy).toBe(1);
    const answered = await score('select 1', impossible);
    expect([answered.ehr_sql_execution_accuracy, answered.ehr_sql_precision_answerable, answered.ehr_sql_total_ground_truth_answerable]).toEqual([0, 0, 0]);
  });

  it("substitutes EHRSQL's fixed current time 2105-12-31 23:59:00 (and for 'now')", async () => {
    expect(postProcessSql("SELECT x FROM t WHERE d > datetime(current_time,'-1 year')")).toBe("select x from t where d > datetime('2105-12-31 23:59:00','-1 year')");
    // Glucose tests in the last year before 2105-12-31: stays 10 and 12.
    const gold = "select distinct lab.patientunitstayid from lab where lab.labname = 'glucose' and datetime(lab.labresulttime) >= datetime(current_time,'-1 year')";
    const s = await score("select patientunitstayid from lab where labname = 'glucose' and labresulttime >= datetime('now','-1 year')", item(gold));
    expect(s.ehr_sql_execution_accuracy).toBe(1);
  });

  it('takes the SQL out of <sql> tags and code fences', async () => {
    expect((await score("<sql>SELECT patientunitstayid FROM lab WHERE labname = 'glucose'</sql>", item(GOLD))).ehr_sql_execution_accuracy).toBe(1);
    expect((await score("```sql\nSELECT patientunitstayid FROM lab WHERE labname = 'glucose';\n```", item(GOLD))).ehr_sql_execution_accuracy).toBe(1);
  });
});

describe("EHRSQL, HELM mode (reproduces HELM's annotator and metric)", () => {
  it('needs both results non-empty: an empty gold result is replaced by the sampled values and never matches', async () => {
    const empty = "select lab.labresult from lab where lab.labname = 'potassium'";
    expect((await score("select labresult from lab where labname = 'potassium'", item(empty, { value: { lab_name: 'potassium' } }), 'helm')).ehr_sql_execution_accuracy).toBe(0);
    // The corrected mode compares the two (empty) result sets.
    expect((await score("select labresult from lab where labname = 'potassium'", item(empty, { value: { lab_name: 'potassium' } }))).ehr_sql_execution_accuracy).toBe(1);
  });

  it('credits abstaining on unanswerable questions', async () => {
    const s = await score('', item('null', { impossible: true }), 'helm');
    expect(s).toEqual({
      ehr_sql_execution_accuracy: 1,
      ehr_sql_query_validity: 0,
      ehr_sql_precision_answerable: 0,
      ehr_sql_recall_answerable: 0,
      ehr_sql_total_predicted_answerable: 0,
      ehr_sql_total_ground_truth_answerable: 0,
    });
  });

  it("reads is_impossible from the instance's extra data, as HELM's metric does (the scenario sets it there)", async () => {
    // HELM's EhrSqlMetric: is_answerable = not extra_data["is_impossible"] and bool(gold query);
    // correct_answerable = is_answerable and bool(prediction); precision adds correct_answerable when
    // something was predicted, recall when the question is answerable.
    const answered = await score('select 1', item('null', { impossible: true }), 'helm');
    expect(answered).toEqual({
      ehr_sql_execution_accuracy: 0,
      ehr_sql_query_validity: 1,
      ehr_sql_precision_answerable: 0,
      ehr_sql_recall_answerable: 0,
      ehr_sql_total_predicted_answerable: 1,
      ehr_sql_total_ground_truth_answerable: 0,
    });
    const answerable = await score("select patientunitstayid from lab where labname = 'glucose'", item(GOLD), 'helm');
    expect([answerable.ehr_sql_precision_answerable, answerable.ehr_sql_recall_answerable, answerable.ehr_sql_total_ground_truth_answerable]).toEqual([1, 1, 1]);
    const abstained = await score('', item(GOLD), 'helm');
    expect([abstained.ehr_sql_precision_answerable, abstained.ehr_sql_recall_answerable, abstained.ehr_sql_total_ground_truth_answerable]).toEqual([0, 0, 1]);
  });

  it('differs from the old reading on every unanswerable question of the shipped data', async () => {
    // Shipped EHRSQL (valid + test): every is_impossible item carries isImpossible in its extra data,
    // so HELM counts none of them as ground-truth answerable.
    const impossible = await findInstances('ehr_sql', (i) => i.extra?.isImpossible === true, 5);
    expect(impossible).toHaveLength(5);
    for (const i of impossible) {
      const s = await score('select 1', i, 'helm');
      expect([s.ehr_sql_total_ground_truth_answerable, s.ehr_sql_recall_answerable, s.ehr_sql_precision_answerable]).toEqual([0, 0, 0]);
    }
  });

  it("does not substitute current_time: SQLite reads it as the wall clock's time of day", async () => {
    const gold = "select distinct lab.patientunitstayid from lab where datetime(lab.labresulttime) >= datetime(current_time,'-1 year')";
    // datetime('HH:MM:SS','-1 year') is in 1999, so HELM's gold returns every stay (10-13) where the
    // fixed time excludes stay 13 (its only test is from 2100).
    const fixed = "select distinct patientunitstayid from lab where labresulttime >= '2104-12-31 23:59:00'";
    expect((await score(fixed, item(gold), 'helm')).ehr_sql_execution_accuracy).toBe(0);
    expect((await score(fixed, item(gold))).ehr_sql_execution_accuracy).toBe(1);
  });
});

describe('EHRSQL accepts double-quoted string literals, as SQLite with DQS on (HELM, evaluate.py) does', () => {
  it.each(['corrected', 'helm'] as const)('%s mode credits labname = "glucose"', async (mode) => {
    const s = await score('select distinct lab.patientunitstayid from lab where lab.labname = "glucose"', item(GOLD), mode);
    expect([s.ehr_sql_execution_accuracy, s.ehr_sql_query_validity]).toEqual([1, 1]);
  });

  it('keeps a double-quoted column as a column, and still refuses a write hidden behind a rewrite', async () => {
    const s = await score('select "patientunitstayid" from lab where "labname" = "glucose"', item(GOLD));
    expect(s.ehr_sql_execution_accuracy).toBe(1);
    const write = await score('delete from lab where labname = "glucose"', item(GOLD));
    expect([write.ehr_sql_query_validity, write.ehr_sql_execution_accuracy]).toEqual([0, 0]);
  });
});

describe('EHRSQL runs the site database read-only and time-limited', () => {
  it('refuses statements that write or attach, and leaves the database as it was', async () => {
    const before = statSync(db).mtimeMs;
    for (const sql of ['delete from lab', "insert into lab values (9, 1, 'x', 1, 'y')", 'drop table lab', `ATTACH DATABASE '${join(dir, 'other.db')}' AS o`, 'select 1; delete from lab']) {
      const s = await score(sql, item(GOLD));
      expect([sql, s.ehr_sql_query_validity, s.ehr_sql_execution_accuracy]).toEqual([sql, 0, 0]);
    }
    expect(existsSync(join(dir, 'other.db'))).toBe(false);
    const r = new Database(db, { readonly: true });
    expect(r.prepare('select count(*) as n from lab').get()).toEqual({ n: 5 });
    r.close();
    expect(statSync(db).mtimeMs).toBe(before);
  });

  it('stops a query that overruns the time limit and serves the next one', async () => {
    const endless = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c';
    const started = Date.now();
    const s = await score(endless, item(GOLD));
    expect([s.ehr_sql_execution_accuracy, s.ehr_sql_query_validity]).toEqual([0, 0]);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect((await score("select patientunitstayid from lab where labname = 'glucose'", item(GOLD))).ehr_sql_execution_accuracy).toBe(1);
  });

  it('asks for the database when the site has not configured one', async () => {
    await expect(annotateWithSql('select 1', item(GOLD), { mode: 'corrected', database: undefined, benchmarkId: 'ehr_sql', executor })).rejects.toThrow(
      /set benchmarks\.ehr_sql\.database in the site data file/,
    );
  });
});
