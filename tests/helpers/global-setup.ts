/**
 * Creating a PGlite data directory runs initdb (about 6 s). It is done once into a template folder
 * that tests copy, so each test still gets its own fresh, real embedded database.
 */
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pgliteTemplateDir, TEST_RUN_TMP } from './paths';

export default async function globalSetup(): Promise<void> {
  // Every test's temporary folders go in one folder of this run (jest's workers inherit the variable),
  // which global-teardown removes: runs used to leave hundreds of folders in /tmp.
  process.env[TEST_RUN_TMP] = mkdtempSync(join(tmpdir(), 'ehrbench-test-run-'));
  // Said once, so a skipped PostgreSQL half of the suite is never a surprise.
  if (!process.env.TEST_DATABASE_URL) {
    process.stdout.write(
      '\nTEST_DATABASE_URL is not set: storage tests run on PGlite only, and the PostgreSQL-only tests are skipped (set it to a PostgreSQL URL, e.g. postgres://postgres@127.0.0.1:5432/test, to run them)\n',
    );
  }
  const template = pgliteTemplateDir();
  if (existsSync(join(template, 'PG_VERSION'))) return;
  const building = join(tmpdir(), `ehrbench-template-build-${process.pid}`);
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const db = new PGlite(building);
  await db.query('SELECT 1');
  await db.close();
  rmSync(template, { recursive: true, force: true });
  renameSync(building, template);
}
