import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = join(__dirname, '..', '..');

/** The variable naming this test run's temporary folder (global-setup makes it, global-teardown removes it). */
export const TEST_RUN_TMP = 'EHRBENCH_TEST_RUN_TMP';

export function pgliteTemplateDir(): string {
  const version = (JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;
  return join(tmpdir(), `ehrbench-pglite-template-${version}`);
}
