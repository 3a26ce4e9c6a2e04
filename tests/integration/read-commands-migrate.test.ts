/**
 * Read commands never migrate a database (issue 28): `runs list` on an empty store migrated it and
 * sealed a checkpoint into the site's witness file (a superuser URL), or printed `unexpected error
 * 42501` (the app's role). A command that only reads now refuses a store with pending migrations in
 * one line, leaves the store as it found it and writes nothing to the witnesses; the owner's
 * `db migrate` brings it up to date, and then the same command works. Through the real binary.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { WITNESS_FILE } from '../../src/audit/witness';
import { listMigrations } from '../../src/db';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The read commands a newcomer tries first, each in local mode (no --server). */
const READS = [
  ['runs', 'list'],
  ['runs', 'show', '00000000-0000-4000-8000-000000000000'],
  ['audit', 'verify'],
  ['approvals', 'list'],
  ['export', 'list'],
];

describe.each(backends())('a read command on an unmigrated %s store', (backend) => {
  let home: TestHome;
  beforeEach(async () => {
    home = await makeHome(backend);
  });
  afterEach(() => home.cleanup());

  const witness = () => join(home.home, 'audit', WITNESS_FILE);
  const migrated = async () => {
    const db = await home.store.open(false);
    try {
      const rows = await db.query<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
      return rows[0]?.t !== null && rows[0]?.t !== undefined;
    } finally {
      await db.close();
    }
  };

  it('refuses in one line naming the pending migrations, and migrates nothing nor writes a witness', async () => {
    const pending = listMigrations().length;
    for (const args of READS) {
      const r = await cli([...args, '--config', home.configFile], home.env);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 1]);
      expect(r.stderr).toContain(`the store has ${pending} pending migrations; run "`);
      expect(r.stderr).toContain(' db migrate" as the owner');
      // One line (audit verify says which store first), no stack trace.
      expect(r.stderr.split('\n').filter((l) => l && !l.startsWith('store: ') && !l.startsWith('warning: '))).toHaveLength(1);
      expect(r.stderr).not.toMatch(/\bat .+\.js:\d+/);
    }
    const json = await cli(['runs', 'list', '--json', '--config', home.configFile], home.env);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: 'db.migrations-pending' });
    expect(await migrated()).toBe(false);
    expect(existsSync(witness())).toBe(false);

    // The owner migrates; the same read then works.
    const migrate = await cli(['db', 'migrate', '--config', home.configFile], home.env);
    expect(migrate.code).toBe(0);
    const list = await cli(['runs', 'list', '--config', home.configFile], home.env);
    expect([list.code, list.stderr]).toEqual([0, '']);
  });
});
