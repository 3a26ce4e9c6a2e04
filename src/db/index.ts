/**
 * The one data-access module. PostgreSQL through `pg` when a URL is given (EHRBENCH_DATABASE_URL);
 * otherwise an embedded PGlite (real PostgreSQL compiled to WASM) in the data directory.
 *
 * PGlite runs every connection in one database session, so callers keep transactions short, never hold
 * one across a model call, use no named prepared statements and no session-level SET.
 */
import { UserError } from '../errors';
import { runMigrations } from './migrate';
import { openPglite } from './pglite';
import { openPostgres } from './postgres';

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly backend: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  url?: string;
  embeddedDir: string;
  poolSize?: number;
  /** Apply pending migrations (default true). */
  migrate?: boolean;
}

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const db = opts.url ? await openPostgres(opts.url, opts.poolSize ?? 10) : await openPglite(opts.embeddedDir);
  if (opts.migrate !== false) {
    try {
      await runMigrations(db);
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  }
  return db;
}

/** Describes where the store lives without its password, for messages and logs. */
export function describeDatabase(opts: DatabaseOptions): string {
  if (!opts.url) return `embedded PGlite at ${opts.embeddedDir}`;
  try {
    const u = new URL(opts.url);
    return `PostgreSQL at ${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    throw new UserError('db.url-invalid', 'EHRBENCH_DATABASE_URL is not a valid postgres:// URL');
  }
}

export { runMigrations, listMigrations } from './migrate';
export { DatabaseUnavailable, isStoreUnavailable } from './errors';
export { GroupCommit } from './group-commit';
