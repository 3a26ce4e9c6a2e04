/**
 * Double-quoted string literals (`drugname = "aspirin"`), which the SQLite of HELM and EHRSQL's
 * evaluate.py (Python's sqlite3, SQLITE_DQS on) reads as strings and better-sqlite3's build (DQS off)
 * refuses. The tokenizer is checked on its own, then on every answerable gold query of the shipped
 * EHRSQL data with its literals double-quoted (as a model may write them), against the eICU schema
 * (datasets/ehr_sql/eicu_eicu.sql), and through the executor's child process.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqlExecutor } from '../../src/annotate';
import { rewriteDoubleQuotedLiterals, type Schema } from '../../src/annotate/ehrsql/dqs';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(60_000);

const DATA = join(ROOT, 'datasets', 'ehr_sql');

function schemaOf(db: Database.Database): Schema {
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").pluck().all() as string[];
  return new Map(tables.map((t) => [t.toLowerCase(), (db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(t) as string[]).map((c) => c.toLowerCase())]));
}

/** Every single-quoted literal of a gold query written double-quoted instead. */
function doubleQuoted(sql: string): string {
  return sql.replace(/'((?:[^']|'')*)'/g, (_, inner: string) => `"${inner.split("''").join("'").split('"').join('""')}"`);
}

const gold = [...JSON.parse(readFileSync(join(DATA, 'eicu_valid.json'), 'utf8')), ...JSON.parse(readFileSync(join(DATA, 'eicu_test.json'), 'utf8'))] as { query: string; is_impossible: boolean }[];
const answerable = gold.filter((g) => !g.is_impossible).map((g) => g.query);
const withLiterals = answerable.filter((q) => q.includes("'"));

let dir: string;
let dbPath: string;
let schema: Schema;

beforeAll(() => {
  dir = tempDir('ehrsql-dqs');
  dbPath = join(dir, 'eicu-schema.sqlite');
  const db = new Database(dbPath);
  db.exec(readFileSync(join(DATA, 'eicu_eicu.sql'), 'utf8'));
  schema = schemaOf(db);
  db.close();
});

describe('rewriteDoubleQuotedLiterals', () => {
  const lab: Schema = new Map([
    ['lab', ['labid', 'patientunitstayid', 'labname', 'labresult']],
    ['cost', ['costid', 'eventtype', 'eventid', 'cost']],
  ]);

  it('single-quotes a double-quoted token that names no column in scope', () => {
    expect(rewriteDoubleQuotedLiterals('select labresult from lab where labname = "glucose"', lab)).toBe("select labresult from lab where labname = 'glucose'");
  });

  it('keeps columns of the tables the query names, qualified names, aliases and CTE names as identifiers', () => {
    expect(rewriteDoubleQuotedLiterals('select "labresult" from lab where "lab"."labname" = "glucose"', lab)).toBe(`select "labresult" from lab where "lab"."labname" = 'glucose'`);
    expect(rewriteDoubleQuotedLiterals('select count(*) as "n" from lab group by labname order by "n"', lab)).toBe('select count(*) as "n" from lab group by labname order by "n"');
    expect(rewriteDoubleQuotedLiterals('with "t" as (select labname from lab) select * from "t" where labname = "x"', lab)).toBe(
      `with "t" as (select labname from lab) select * from "t" where labname = 'x'`,
    );
  });

  it('reads a table name outside a qualifier as a string, as SQLite does (cost.eventtype = "lab")', () => {
    expect(rewriteDoubleQuotedLiterals('select cost from cost where eventtype = "lab"', lab)).toBe("select cost from cost where eventtype = 'lab'");
    // A column of a table the query does not name is no column in scope: a string (SQLite agrees).
    expect(rewriteDoubleQuotedLiterals('select cost from cost where eventtype = "labname"', lab)).toBe("select cost from cost where eventtype = 'labname'");
  });

  it('escapes quotes inside, and leaves strings, comments and other identifier quotes alone', () => {
    expect(rewriteDoubleQuotedLiterals(`select 1 from lab where labname = "it's ""x"""`, lab)).toBe(`select 1 from lab where labname = 'it''s "x"'`);
    const untouched = `select 'a "b" c', [x "y"], \`z "w"\` from lab -- "note"\n/* "c" */`;
    expect(rewriteDoubleQuotedLiterals(untouched, lab)).toBe(untouched);
  });

  it('returns SQL it cannot read to its end unchanged (SQLite reports the error)', () => {
    for (const sql of ['select "open from lab', 'select \'open from lab where x = "y"', 'select 1 /* open "x"']) expect(rewriteDoubleQuotedLiterals(sql, lab)).toBe(sql);
  });
});

describe('the shipped EHRSQL gold queries with double-quoted literals', () => {
  it('are 1,926 of the 1,959 answerable ones, and the embedded SQLite refuses every one of them as written', () => {
    expect([answerable.length, withLiterals.length]).toEqual([1959, 1926]);
    const db = new Database(dbPath, { readonly: true });
    const refused = withLiterals.filter((q) => {
      try {
        db.prepare(doubleQuoted(q));
        return false;
      } catch {
        return true;
      }
    });
    db.close();
    expect(refused.length).toBe(1926);
  });

  it('are rewritten back to exactly the gold query, every one, against the eICU schema', () => {
    const differ = withLiterals.filter((q) => rewriteDoubleQuotedLiterals(doubleQuoted(q), schema) !== q);
    expect(differ).toEqual([]);
  });

  it('run in the executor wherever the gold query itself runs (1,918 of 1,926; Python sqlite3 3.40 agrees)', async () => {
    const executor = new SqlExecutor({ timeoutMs: 10_000 });
    try {
      let asWritten = 0;
      let doubled = 0;
      for (const q of withLiterals) {
        if ((await executor.run(dbPath, q)).ok) asWritten += 1;
        if ((await executor.run(dbPath, doubleQuoted(q))).ok) doubled += 1;
      }
      expect([asWritten, doubled]).toEqual([1918, 1918]);
    } finally {
      await executor.close();
    }
  });
});
