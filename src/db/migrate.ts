/**
 * Versioned SQL migrations from src/db/migrations (NNNN_name.sql), applied in order, each in its own
 * transaction under an advisory lock so concurrent workers starting together apply each exactly once.
 * An applied migration whose file later changed is an error: history is not rewritten.
 * The SQL must run on PostgreSQL 15 (production) and PGlite (PostgreSQL 18).
 */
import { commandPrefix } from '../command-prefix';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors';
import { MIGRATION_DIR } from '../paths';
import type { Database } from './index';

/** Arbitrary constant naming "ehrbench migrations" for pg_advisory_xact_lock. */
const MIGRATION_LOCK_KEY = 7_215_003_001;

export interface Migration {
  version: string;
  name: string;
  sql: string;
  checksum: string;
}

export function listMigrations(dir = MIGRATION_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => {
      const sql = readFileSync(join(dir, f), 'utf8');
      return {
        version: f.slice(0, 4),
        name: f.slice(5, -4),
        sql,
        checksum: createHash('sha256').update(sql).digest('hex'),
      };
    });
}

export async function runMigrations(db: Database, migrations = listMigrations()): Promise<string[]> {
  // Under the lock too: two processes running CREATE TABLE IF NOT EXISTS at once can still collide.
  // Only when the table is missing: the app's login role (deploy/sql/roles.sql) may not create tables,
  // and PostgreSQL checks that privilege even for CREATE TABLE IF NOT EXISTS on an existing table.
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const present = await tx.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
    if (present[0]?.t) return;
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version text PRIMARY KEY,
      name text NOT NULL,
      checksum text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
  });
  const applied: string[] = [];
  for (const m of migrations) {
    const didApply = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
      const rows = await tx.query<{ checksum: string }>('SELECT checksum FROM schema_migrations WHERE version = $1', [m.version]);
      const existing = rows[0];
      if (existing) {
        if (existing.checksum !== m.checksum) {
          throw new UserError('db.migration-changed', `migration ${m.version}_${m.name}.sql differs from the one applied to this database; restore it and add a new migration instead`);
        }
        return false;
      }
      await tx.exec(m.sql).catch((err: { code?: string }) => {
        // 42501 insufficient_privilege: the app's role starts on a store whose owner has not migrated it.
        if (err?.code !== '42501') throw err;
        throw new UserError(
          'db.migration-not-permitted',
          `migration ${m.version}_${m.name}.sql is pending and this database role may not apply it; run "${commandPrefix()} db migrate" as the owner role (deploy/README.md)`,
        );
      });
      await tx.query('INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [m.version, m.name, m.checksum]);
      return true;
    });
    if (didApply) applied.push(`${m.version}_${m.name}`);
  }
  return applied;
}

/**
 * The migrations this store has not applied yet, read without creating or locking anything: a
 * command that only looks at the store opens it as it is (a read is no reason to change a schema,
 * and the app's role may not). A store without schema_migrations has every migration pending.
 */
export async function pendingMigrations(db: Database, migrations = listMigrations()): Promise<Migration[]> {
  const present = await db.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (!present[0]?.t) return migrations;
  const applied = new Set((await db.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version));
  return migrations.filter((m) => !applied.has(m.version));
}

/** Refuses (db.migrations-pending) a store with pending migrations: the owner migrates, not a read. */
export async function assertMigrated(db: Database): Promise<void> {
  const pending = await pendingMigrations(db);
  if (pending.length === 0) return;
  const n = pending.length;
  throw new UserError('db.migrations-pending', `the store has ${n} pending migration${n === 1 ? '' : 's'}; run "${commandPrefix()} db migrate" as the owner`);
}
