/**
 * Real databases for tests: a fresh embedded PGlite (copied from a template) and, when
 * TEST_DATABASE_URL is set, a fresh PostgreSQL database created on that server and dropped after.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Database, openDatabase } from '../../src/db';
import { pgliteTemplateDir, TEST_RUN_TMP } from './paths';

export type Backend = 'pglite' | 'postgres';

/** The backends storage tests run on: always PGlite, PostgreSQL too when TEST_DATABASE_URL is set. */
export function backends(): Backend[] {
  return process.env.TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite'];
}

export interface TestStore {
  backend: Backend;
  /** What to put in EHRBENCH_DATABASE_URL (postgres) or the embedded folder (pglite). */
  url?: string;
  embeddedDir: string;
  open(migrate?: boolean): Promise<Database>;
  drop(): Promise<void>;
}

/**
 * A new folder for one test, inside this test run's own temporary folder (made by global-setup, removed
 * by global-teardown), so that a run leaves nothing in the machine's /tmp; the machine's temporary folder
 * when jest runs without them (the reliability suite).
 */
export function tempDir(prefix: string): string {
  return mkdtempSync(join(process.env[TEST_RUN_TMP] ?? tmpdir(), `ehrbench-${prefix}-`));
}

/** A fresh, empty store on `backend` (no migrations applied yet). */
export async function freshStore(backend: Backend): Promise<TestStore> {
  const dir = tempDir('store');
  const embeddedDir = join(dir, 'db');
  if (backend === 'pglite') {
    cpSync(pgliteTemplateDir(), embeddedDir, { recursive: true });
    return {
      backend,
      embeddedDir,
      open: (migrate = true) => openDatabase({ embeddedDir, migrate }),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const admin = process.env.TEST_DATABASE_URL as string;
  const name = `ehrbench_t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  const url = u.toString();
  return {
    backend,
    url,
    embeddedDir,
    open: (migrate = true) => openDatabase({ url, embeddedDir, migrate, poolSize: 5 }),
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
