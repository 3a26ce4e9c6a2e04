/**
 * The one data-access module. PostgreSQL through `pg` when a URL is given; otherwise an embedded PGlite
 * (real PostgreSQL compiled to WASM) in the data directory. Which of the two a site uses is pinned by
 * its configuration (database.backend): `pinnedDatabase` gives the options of that store or refuses.
 *
 * PGlite runs every connection in one database session, so callers keep transactions short, never hold
 * one across a model call, use no named prepared statements and no session-level SET.
 */
import type { DatabaseChoice } from '../config';
import { UserError } from '../errors';
import { assertMigrated, runMigrations } from './migrate';
import { openPglite } from './pglite';
import { openPostgres } from './postgres';

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly backend: 'postgres' | 'pglite';
  /**
   * Rows as arrays of their column values in the SELECT's order, without an object per row: for
   * bulk reads of whole rows (the audit chain, verified), where the driver building an object per row,
   * key by key, is a tenth of the cost.
   * Values are parsed as `query` parses them.
   */
  queryArrays<R extends unknown[] = unknown[]>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * PostgreSQL: the URL this store was opened with, for worker threads that open their own
   * connections (the parallel audit verification). Not enumerable; never logged or printed.
   */
  readonly connectionUrl?: string;
}

export interface DatabaseOptions {
  url?: string;
  /** Where the URL came from (a variable's name, "file PATH"), for messages; never the URL. */
  source?: string;
  embeddedDir: string;
  poolSize?: number;
  /**
   * Apply pending migrations (default true). `require`: apply none, and refuse a store that has any
   * (db.migrations-pending): commands that only read open the store as it is.
   */
  migrate?: boolean | 'require';
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const db = opts.url ? await openPostgres(opts.url, opts.poolSize ?? 10, opts.source) : await openPglite(opts.embeddedDir);
  if (opts.migrate !== false) {
    try {
      if (opts.migrate === 'require') await assertMigrated(db);
      else await runMigrations(db);
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  }
  return db;
}

/**
 * The store a configuration names, or its one-line refusal (config.database): never the other backend.
 * Every command that opens a store goes through here.
 */
export function pinnedDatabase(choice: DatabaseChoice): DatabaseOptions {
  if (choice.refusal) throw new UserError('config.database', choice.refusal);
  const { embeddedDir, poolSize } = choice;
  if (choice.backend === 'embedded') return { embeddedDir, poolSize };
  if (!choice.url) throw new UserError('config.database', 'database.backend is "postgres" but no URL was resolved');
  return { url: choice.url, ...(choice.urlSource ? { source: choice.urlSource } : {}), embeddedDir, poolSize };
}

/**
 * Where the store lives, for the "store: ..." line and logs: "postgres (SOURCE) at host:port/db" or
 * "embedded at DIR". Never the URL itself, which may carry a password.
 */
export function describeDatabase(opts: DatabaseOptions): string {
  if (!opts.url) return `embedded at ${opts.embeddedDir}`;
  const source = opts.source ?? 'EHRBENCH_DATABASE_URL';
  try {
    const u = new URL(opts.url);
    return `postgres (${source}) at ${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    throw new UserError('db.url-invalid', `${source} is not a valid postgres:// URL`);
  }
}

export { assertMigrated, listMigrations, pendingMigrations, runMigrations } from './migrate';
export { DatabaseUnavailable, isStoreUnavailable } from './errors';
export { GroupCommit } from './group-commit';
