/**
 * `ehrbench init --site-id X` on a data directory that already has a config.json. init keeps what
 * exists, so a different id would be dropped without a word. The site id is written into every audit
 * event and export, so changing it is a decision: refused in one line naming the file, or, with
 * --force, written into site.id alone (nothing else in the file, no key, is touched).
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { readJsonFile } from '../schema';
import { UserError } from '../errors';

/** Returns whether config.json was rewritten. */
export function reconcileSiteId(file: string, siteId: string | undefined, force: boolean): boolean {
  if (siteId === undefined || !existsSync(file)) return false;
  const config = readJsonFile(file, 'config.invalid') as { site?: { id?: unknown } };
  const current = config.site?.id;
  if (current === siteId) return false;
  if (!force) {
    throw new UserError(
      'init.site-id-differs',
      `${file}: site.id is ${JSON.stringify(current ?? null)}, and init keeps an existing configuration; edit site.id there, or run init again with --force to write "${siteId}" into it`,
    );
  }
  const next = `${file}.${process.pid}.tmp`;
  writeFileSync(next, JSON.stringify({ ...config, site: { ...config.site, id: siteId } }, null, 2) + '\n', { mode: 0o600 });
  renameSync(next, file);
  return true;
}
