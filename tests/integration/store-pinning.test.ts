/**
 * The store a site uses is pinned by its configuration (issue 15, item 5): `database.backend` names
 * embedded or postgres, the URL comes by reference (an environment variable or a file), a command
 * never falls back to the other store, and `pki` and `audit` say which store they used.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { initHome } from '../../src/setup/init';
import { backends, tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

async function cli(env: NodeJS.ProcessEnv, args: string[]) {
  let stdout = '';
  let stderr = '';
  const io: Io = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), env };
  process.exitCode = undefined;
  const code = await main(args, io);
  process.exitCode = undefined;
  return { code, stdout, stderr };
}

function editConfig(home: TestHome, edit: (config: any) => void): void {
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  edit(config);
  writeFileSync(home.configFile, JSON.stringify(config, null, 2));
}

/** The environment of a shell that has not been given the site's database URL. */
function withoutUrl(home: TestHome): NodeJS.ProcessEnv {
  const env = { ...home.env };
  delete env.EHRBENCH_DATABASE_URL;
  return env;
}

/** How a command names a PostgreSQL store: the variable it came from, host:port/database, no password. */
function postgresLine(url: string, source = 'EHRBENCH_DATABASE_URL'): string {
  const u = new URL(url);
  return `store: postgres (${source}) at ${u.hostname}:${u.port || '5432'}${u.pathname}\n`;
}

describe('ehrbench init', () => {
  it('pins the embedded store in the configuration it writes', () => {
    const home = tempDir('init-store');
    initHome({ home });
    const config = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    expect(config.database).toEqual({ backend: 'embedded', embeddedDir: 'db' });
  });
});

describe.each(backends())('commands name their store on %s', (backend) => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome(backend);
  });
  afterAll(() => home.cleanup());

  const expected = () => (backend === 'postgres' ? postgresLine(home.store.url as string) : `store: embedded at ${home.store.embeddedDir}\n`);

  it('pki revoke says which store it wrote the revocation to', async () => {
    const r = await cli(home.env, ['pki', 'revoke', '--principal', 'bob', '--reason', 'left the hospital']);
    expect(r.code).toBe(0);
    expect(r.stderr.split('\n')).toContain(expected().trimEnd());
    expect(r.stdout).toMatch(/revoked the certificates of bob/);
  });

  it('audit verify says which store it verified', async () => {
    const r = await cli(home.env, ['audit', 'verify']);
    expect(r.stderr.split('\n')).toContain(expected().trimEnd());
    expect(r.stdout).toMatch(/audit trail intact/);
    // Where the store is, never the URL itself (it may carry a password).
    expect(r.stderr).not.toMatch(/postgres:\/\//);
  });
});

describe('a postgres site never falls back to an embedded store', () => {
  let home: TestHome;
  let embeddedDir: string;
  beforeEach(async () => {
    home = await makeHome('pglite');
    embeddedDir = join(tempDir('no-store'), 'db');
    editConfig(home, (c) => (c.database = { backend: 'postgres', embeddedDir }));
  });
  afterEach(() => home.cleanup());

  it.each([
    ['pki', 'revoke', '--principal', 'bob', '--reason', 'left'],
    ['audit', 'verify'],
    ['audit', 'tail'],
  ])('%s %s without the URL fails in one line naming the field and creates no embedded store', async (...args) => {
    const r = await cli(withoutUrl(home), args);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toBe(
      `ehrbench: ${home.configFile}: database.backend is "postgres" but database.urlEnv names EHRBENCH_DATABASE_URL, which is not set; export it (postgres://user@host:port/db) or name the URL's variable or file in database.urlEnv / database.urlFile\n`,
    );
    expect(r.stdout).toBe('');
    expect(existsSync(embeddedDir)).toBe(false);
  });

  it('names database.urlFile when the file it names cannot be read', async () => {
    editConfig(home, (c) => (c.database = { backend: 'postgres', urlFile: 'secrets/database-url', embeddedDir }));
    const r = await cli(withoutUrl(home), ['audit', 'verify']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ehrbench: [^\n]*config\.json: database\.urlFile [^\n]*secrets\/database-url[^\n]* cannot be read \(ENOENT\)[^\n]*\n$/);
    expect(existsSync(embeddedDir)).toBe(false);
  });

  it('refuses an embedded site started with EHRBENCH_DATABASE_URL set, naming both', async () => {
    editConfig(home, (c) => (c.database = { backend: 'embedded', embeddedDir }));
    const r = await cli({ ...withoutUrl(home), EHRBENCH_DATABASE_URL: 'postgres://app@db.example:5432/ehrbench' }, ['audit', 'verify']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ehrbench: [^\n]*database\.backend is "embedded" but EHRBENCH_DATABASE_URL is set[^\n]*\n$/);
    expect(existsSync(embeddedDir)).toBe(false);
  });

  it('refuses a configuration without database.backend that would create a new embedded store', async () => {
    editConfig(home, (c) => (c.database = { embeddedDir }));
    const r = await cli(withoutUrl(home), ['pki', 'revoke', '--principal', 'bob', '--reason', 'left']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ehrbench: [^\n]*database\.backend is not set[^\n]*no embedded store at [^\n]*\n$/);
    expect(existsSync(embeddedDir)).toBe(false);
  });

  it('keeps using the existing embedded store of a configuration without database.backend, with a warning', async () => {
    editConfig(home, (c) => (c.database = { embeddedDir: home.store.embeddedDir }));
    // A verification only reads: the store is migrated first, as its owner would.
    await (await home.store.open()).close();
    const r = await cli(withoutUrl(home), ['audit', 'verify']);
    expect(r.stdout).toMatch(/audit trail intact/);
    expect(r.stderr).toMatch(/warning: [^\n]*database\.backend is not set[^\n]*\n/);
    expect(r.stderr.split('\n')).toContain(`store: embedded at ${home.store.embeddedDir}`);
  });
});

const postgresOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;

postgresOnly('the URL by reference', () => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome('postgres');
  });
  afterAll(() => home.cleanup());

  it('reads the URL from the file database.urlFile names, and says so', async () => {
    mkdirSync(join(home.home, 'secrets'), { recursive: true });
    writeFileSync(join(home.home, 'secrets', 'database-url'), `${home.store.url}\n`, { mode: 0o600 });
    editConfig(home, (c) => (c.database = { backend: 'postgres', urlFile: 'secrets/database-url', embeddedDir: c.database.embeddedDir }));
    // A verification only reads: the store is migrated first, as its owner would.
    await (await home.store.open()).close();
    const r = await cli(withoutUrl(home), ['audit', 'verify']);
    expect(r.stdout).toMatch(/audit trail intact/);
    expect(r.stderr.split('\n')).toContain(postgresLine(home.store.url as string, `file ${join(home.home, 'secrets', 'database-url')}`).trimEnd());
  });
});
