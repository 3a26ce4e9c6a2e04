/**
 * The child process that runs EHRSQL queries (see executor.ts). better-sqlite3 is synchronous and has
 * no way to interrupt a statement from JavaScript, so queries run here and the parent kills this
 * process when one overruns its time limit. Databases are opened read-only (and query_only), only
 * statements that return rows are run, and a result larger than the row cap is refused. A statement
 * SQLite refuses is tried once more with its double-quoted strings single-quoted (dqs.ts). Replies carry
 * rows or an error class, never an error message (SQLite's may quote the query).
 */
import Database from 'better-sqlite3';
import { rewriteDoubleQuotedLiterals, type Schema } from './dqs';
import type { ExecRequest, ExecReply } from './executor';

const open = new Map<string, Database.Database>();
const schemas = new Map<string, Schema>();

function database(path: string): Database.Database {
  let db = open.get(path);
  if (!db) {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma('query_only = ON');
    open.set(path, db);
  }
  return db;
}

/** One row as a canonical string: equal rows (1 and 1.0 alike, as in Python) give equal strings. */
function encodeRow(row: unknown[]): string {
  return JSON.stringify(row.map((v) => (Buffer.isBuffer(v) ? { blob: v.toString('hex') } : typeof v === 'number' && Object.is(v, -0) ? 0 : v)));
}

/** The database's tables and views with their columns, lower-case (SQLite compares names case-insensitively). */
function schemaOf(path: string, db: Database.Database): Schema {
  let schema = schemas.get(path);
  if (schema) return schema;
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").pluck().all() as string[];
  schema = new Map(tables.map((t) => [t.toLowerCase(), (db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(t) as string[]).map((c) => c.toLowerCase())]));
  schemas.set(path, schema);
  return schema;
}

/**
 * The statement as written, or, when SQLite refuses it, with its double-quoted strings single-quoted
 * (dqs.ts: what SQLite with DQS on, as in Python's sqlite3, would have run).
 */
function prepare(req: ExecRequest, db: Database.Database): Database.Statement {
  try {
    return db.prepare(req.sql);
  } catch (err) {
    const rewritten = rewriteDoubleQuotedLiterals(req.sql, schemaOf(req.db, db));
    if (rewritten === req.sql) throw err;
    return db.prepare(rewritten);
  }
}

function execute(req: ExecRequest): ExecReply {
  let db: Database.Database;
  try {
    db = database(req.db);
  } catch {
    return { id: req.id, ok: false, error: 'database' };
  }
  try {
    const stmt = prepare(req, db);
    if (!stmt.reader) return { id: req.id, ok: false, error: 'not-a-query' };
    const rows: string[] = [];
    for (const row of stmt.raw(true).iterate() as IterableIterator<unknown[]>) {
      if (rows.length >= req.maxRows) return { id: req.id, ok: false, error: 'too-many-rows' };
      rows.push(encodeRow(row));
    }
    return { id: req.id, ok: true, rows };
  } catch {
    return { id: req.id, ok: false, error: 'sql' };
  }
}

process.on('message', (msg: ExecRequest) => {
  process.send?.(execute(msg));
});
process.on('disconnect', () => process.exit(0));
