import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import lockfile from 'proper-lockfile';
import { UserError } from '../errors';
import type { Database, Queryable } from './index';

const INT8_OID = 20;

/**
 * The store's folder, created or made private to its owner (0700). PGlite writes its files 0666 (its
 * file system ignores the umask), and they hold run items, patient text: the folder is what keeps
 * other accounts of the host out. A folder that cannot be made private is refused, not used.
 */
function privateFolder(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    if ((statSync(dataDir).mode & 0o077) !== 0) chmodSync(dataDir, 0o700);
  } catch (err) {
    throw new UserError(
      'db.embedded-permissions',
      `embedded store at ${dataDir} cannot be made private to its owner (${(err as NodeJS.ErrnoException).code ?? 'error'}); give it to the account ehrbench runs as, mode 0700`,
    );
  }
}

/**
 * Opens the embedded store. PGlite is one process's database: a lock file keeps a second ehrbench
 * process (a CLI next to a running daemon) from opening the same folder and corrupting it.
 */
export async function openPglite(dataDir: string): Promise<Database> {
  privateFolder(dataDir);
  let unlock: () => Promise<void>;
  try {
    unlock = await lockfile.lock(dataDir, { stale: 15_000, update: 5_000, realpath: false, lockfilePath: `${dataDir}.lock` });
  } catch {
    throw new UserError('db.embedded-in-use', `embedded store at ${dataDir} is in use by another ehrbench process; stop it, or talk to it through the daemon`);
  }
  const db = new PGlite(dataDir, { parsers: { [INT8_OID]: (v: string) => Number(v) } });
  try {
    await db.waitReady;
  } catch (err) {
    await unlock().catch(() => undefined);
    throw new UserError('db.embedded-unavailable', `embedded store at ${dataDir} cannot be opened (${(err as Error).name})`);
  }
  const queryable = (target: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    query: async <R>(sql: string, params?: readonly unknown[]): Promise<R[]> => (await target.query<R>(sql, params as unknown[])).rows,
    exec: async (sql: string) => {
      await target.exec(sql);
    },
  });
  return {
    backend: 'pglite',
    ...queryable(db),
    transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return db.transaction((tx) => fn(queryable(tx)));
    },
    close: async () => {
      await db.close();
      await unlock().catch(() => undefined);
    },
  };
}
