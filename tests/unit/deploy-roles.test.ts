/**
 * deploy/sql/roles.sql on a real PostgreSQL (TEST_DATABASE_URL): the roles it creates, the owner
 * migrating the store, the daemon running a benchmark as the least-privileged ehrbench_app login role,
 * and what each role is refused. The default roles are cluster-wide and shared with other tests on the
 * server, so they are created idempotently and never dropped; everything else lives in a fresh
 * database. A second database gets roles of its own names (psql variables), dropped after.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openApp } from '../../src/app';
import { openDatabase, runMigrations } from '../../src/db';
import { startModelServer } from '../../src/demo/model-server';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher } from '../helpers/app';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

const ROLES_SQL = join(ROOT, 'deploy', 'sql', 'roles.sql');
const MIGRATIONS = join(ROOT, 'src', 'db', 'migrations');
const migrationsText = () =>
  readdirSync(MIGRATIONS)
    .filter((f) => f.endsWith('.sql'))
    .sort()
    .map((f) => readFileSync(join(MIGRATIONS, f), 'utf8'))
    .join('\n');

/** roles.sql is a psql script (variables, \gset): run as the documentation says, with -v NAME=VALUE. */
function psqlRoles(url: string, vars: Record<string, string> = {}): void {
  const args = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', ...Object.entries(vars).flatMap(([k, v]) => ['-v', `${k}=${v}`]), '-f', ROLES_SQL, url];
  const r = spawnSync('psql', args, { encoding: 'utf8' });
  if (r.error) throw new Error(`psql is needed to run deploy/sql/roles.sql (${r.error.message})`);
  if (r.status !== 0) throw new Error(`psql -f roles.sql failed (${r.status}): ${r.stderr}`);
}

/** What the migrations grant ehrbench_app, table -> privileges (sorted): roles.sql must grant the same to any app role. */
function migrationAppGrants(): Record<string, string[]> {
  const grants: Record<string, Set<string>> = {};
  for (const m of migrationsText().matchAll(/GRANT ([A-Z, ]+) ON ([a-z_, ]+) TO ehrbench_app;/g)) {
    for (const table of (m[2] as string).split(',').map((t) => t.trim())) {
      for (const p of (m[1] as string).split(',').map((x) => x.trim())) (grants[table] ??= new Set()).add(p);
    }
  }
  return Object.fromEntries(Object.entries(grants).map(([t, ps]) => [t, [...ps].sort()]));
}

/** The app grants roles.sql writes: its ARRAY[['table', 'PRIV, PRIV'], ...] list. */
function rolesAppGrants(sql: string): Record<string, string[]> {
  const list = /FOREACH g SLICE 1 IN ARRAY ARRAY\[([\s\S]+?)\]\s+LOOP/.exec(sql)?.[1] ?? '';
  return Object.fromEntries(
    [...list.matchAll(/\['([a-z_]+)', '([A-Z, ]+)'\]/g)].map((m) => [
      m[1] as string,
      (m[2] as string)
        .split(',')
        .map((x) => x.trim())
        .sort(),
    ]),
  );
}

function as(url: string, user: string): string {
  const u = new URL(url);
  u.username = user;
  u.password = '';
  return u.toString();
}

async function sqlAs(url: string, user: string, sql: string, params: unknown[] = []): Promise<{ ok: true; rows: Record<string, unknown>[] } | { ok: false; code: string }> {
  const client = new pg.Client({ connectionString: as(url, user) });
  await client.connect();
  try {
    return { ok: true, rows: (await client.query(sql, params)).rows };
  } catch (err) {
    return { ok: false, code: (err as { code?: string }).code ?? 'error' };
  } finally {
    await client.end();
  }
}

/** The table names of a `... ARRAY[...]` list, or of every `ON a, b, c TO ehrbench_auditor` grant, in a SQL text. */
function auditorTables(sql: string, form: 'array' | 'grant'): string[] {
  const lists = form === 'array' ? [/FOREACH t IN ARRAY ARRAY\[([^\]]+)\]/.exec(sql)?.[1] ?? ''] : [...sql.matchAll(/GRANT SELECT ON ([^;]+?) TO ehrbench_auditor/g)].map((m) => m[1] as string);
  return lists
    .join(',')
    .split(',')
    .map((s) => s.replace(/['\s]/g, ''))
    .filter(Boolean)
    .sort();
}

describe('deploy/sql/roles.sql', () => {
  it('grants the auditor the same tables as the migrations, and never run_items', () => {
    const roles = auditorTables(readFileSync(ROLES_SQL, 'utf8'), 'array');
    const migration = auditorTables(migrationsText(), 'grant');
    expect(roles.length).toBeGreaterThan(5);
    expect(roles).toEqual(migration);
    expect(roles).not.toContain('run_items');
  });

  it('grants the app role exactly what the migrations grant ehrbench_app, table by table', () => {
    const roles = rolesAppGrants(readFileSync(ROLES_SQL, 'utf8'));
    expect(Object.keys(roles).length).toBeGreaterThan(10);
    expect(roles).toEqual(migrationAppGrants());
    expect(roles.audit_events).toEqual(['INSERT', 'SELECT']);
  });

  it('takes its role names from psql variables, with the documented defaults', () => {
    const sql = readFileSync(ROLES_SQL, 'utf8');
    for (const [name, value] of [
      ['owner_role', 'ehrbench_owner'],
      ['app_role', 'ehrbench_app'],
      ['auditor_role', 'ehrbench_auditor'],
    ]) {
      expect(sql).toContain(`\\if :{?${name}} \\else \\set ${name} ${value} \\endif`);
      expect(readFileSync(join(ROOT, 'deploy', 'README.md'), 'utf8')).toContain(`-v ${name}=`);
    }
    // No statement names a default role itself: every one goes through the variables.
    const statements = sql.replace(/--.*$/gm, '').replace(/^\\.*$/gm, '');
    expect(statements).not.toMatch(/ehrbench_(owner|app|auditor)/);
  });

  it('sets no password and makes no role a superuser', () => {
    const sql = readFileSync(ROLES_SQL, 'utf8').replace(/--.*$/gm, '');
    expect(sql).not.toMatch(/PASSWORD/i);
    expect(sql).not.toMatch(/\bSUPERUSER\b(?<!NOSUPERUSER)/);
    expect(sql).not.toMatch(/\b(?<!NO)(CREATEROLE|CREATEDB|BYPASSRLS|REPLICATION)\b/);
  });
});

const pgOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;

pgOnly('the app as ehrbench_app on PostgreSQL', () => {
  let home: TestHome;
  let url: string;

  beforeAll(async () => {
    home = await makeHome('postgres');
    url = home.store.url as string;
    // Twice: the script is meant to be re-run after upgrades.
    psqlRoles(url);
    psqlRoles(url);
    // The owner migrates, as deploy/README.md says.
    const owner = await openDatabase({ url: as(url, 'ehrbench_owner'), embeddedDir: home.store.embeddedDir, migrate: false, poolSize: 2 });
    try {
      await runMigrations(owner);
    } finally {
      await owner.close();
    }
  });

  afterAll(async () => {
    await home?.cleanup();
  });

  it('creates three login roles without superpowers', async () => {
    const r = await sqlAs(
      url,
      new URL(url).username || 'postgres',
      `SELECT rolname, rolcanlogin, rolsuper, rolcreaterole, rolcreatedb, rolbypassrls, rolreplication
         FROM pg_roles WHERE rolname IN ('ehrbench_owner', 'ehrbench_app', 'ehrbench_auditor') ORDER BY rolname`,
    );
    expect(r.ok && r.rows).toEqual(
      ['ehrbench_app', 'ehrbench_auditor', 'ehrbench_owner'].map((rolname) => ({
        rolname,
        rolcanlogin: true,
        rolsuper: false,
        rolcreaterole: false,
        rolcreatedb: false,
        rolbypassrls: false,
        rolreplication: false,
      })),
    );
  });

  it('runs a benchmark as ehrbench_app, and ehrbench_app cannot change audit history', async () => {
    const server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
    });
    const app = await openApp({ file: home.configFile, env: { ...home.env, EHRBENCH_DATABASE_URL: as(url, 'ehrbench_app') } });
    try {
      const who = await app.db.query<{ u: string }>('SELECT current_user AS u');
      expect(who[0]?.u).toBe('ehrbench_app');
      const run = await requestRun(app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 3 });
      const summary = await executeRun(app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts.done).toBe(3);
      expect(summary.aggregates.length).toBeGreaterThan(0);
    } finally {
      await app.close();
      await server.close();
    }

    const events = await sqlAs(url, 'ehrbench_app', 'SELECT count(*)::int AS n FROM audit_events');
    expect(events.ok && (events.rows[0]?.n as number)).toBeGreaterThan(3);
    // Refused by privileges (42501), before any trigger is reached.
    for (const statement of [
      "UPDATE audit_events SET reason = 'edited' WHERE seq = 1",
      'DELETE FROM audit_events WHERE seq = 1',
      'TRUNCATE audit_events',
      "UPDATE audit_checkpoints SET signature = 'x'",
      'DELETE FROM audit_checkpoints',
      'DELETE FROM audit_head',
      'DELETE FROM approval_history',
      'DELETE FROM runs',
      'DELETE FROM run_items',
      'CREATE TABLE scratch (a int)',
      'ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update',
      'DROP TABLE audit_events',
    ]) {
      expect([statement, await sqlAs(url, 'ehrbench_app', statement)]).toEqual([statement, { ok: false, code: '42501' }]);
    }
    const head = await sqlAs(url, 'ehrbench_app', 'SELECT count(*)::int AS n FROM audit_events');
    expect(head).toEqual(events);
  });

  it('lets the auditor read the trail but not instance data, and write nothing', async () => {
    const read = await sqlAs(url, 'ehrbench_auditor', 'SELECT count(*)::int AS n FROM audit_events');
    expect(read.ok).toBe(true);
    expect((await sqlAs(url, 'ehrbench_auditor', 'SELECT seq, signature FROM audit_checkpoints LIMIT 1')).ok).toBe(true);
    expect((await sqlAs(url, 'ehrbench_auditor', 'SELECT run_id, status FROM runs LIMIT 1')).ok).toBe(true);
    for (const statement of [
      'SELECT payload FROM run_items LIMIT 1',
      'SELECT prediction FROM run_items LIMIT 1',
      'INSERT INTO audit_events (seq) VALUES (999999)',
      "UPDATE runs SET status = 'cancelled'",
      'DELETE FROM run_results',
    ]) {
      expect([statement, await sqlAs(url, 'ehrbench_auditor', statement)]).toEqual([statement, { ok: false, code: '42501' }]);
    }
  });

  it('leaves the owner unable to edit or delete audit rows without first disabling its own controls', async () => {
    const before = await sqlAs(url, 'ehrbench_owner', 'SELECT seq, reason, row_hash FROM audit_events ORDER BY seq LIMIT 3');
    expect(before.ok && before.rows.length).toBe(3);
    // Forced row-level security has no UPDATE or DELETE policy: the owner's statements match no row.
    expect(await sqlAs(url, 'ehrbench_owner', "UPDATE audit_events SET reason = 'edited' RETURNING seq")).toEqual({ ok: true, rows: [] });
    expect(await sqlAs(url, 'ehrbench_owner', 'DELETE FROM audit_events RETURNING seq')).toEqual({ ok: true, rows: [] });
    // TRUNCATE bypasses row-level security; the statement trigger refuses it.
    expect(await sqlAs(url, 'ehrbench_owner', 'TRUNCATE audit_events')).toEqual({ ok: false, code: '42501' });
    expect(await sqlAs(url, 'ehrbench_owner', 'SELECT seq, reason, row_hash FROM audit_events ORDER BY seq LIMIT 3')).toEqual(before);
  });

  it('refuses to start as ehrbench_app while a migration is pending, naming what to do', async () => {
    const app = await openDatabase({ url: as(url, 'ehrbench_app'), embeddedDir: home.store.embeddedDir, migrate: false, poolSize: 1 });
    try {
      const pending = { version: '9999', name: 'pending_probe', sql: 'CREATE TABLE pending_probe (a int);', checksum: 'x' };
      await expect(runMigrations(app, [pending])).rejects.toMatchObject({ code: 'db.migration-not-permitted' });
    } finally {
      await app.close();
    }
  });
});

pgOnly('two databases on one cluster, each with roles of its own names', () => {
  let home: TestHome;
  let url: string;
  const tag = `ehrbench_t${randomBytes(4).toString('hex')}`;
  const names = { owner_role: `${tag}_owner`, app_role: `${tag}_app`, auditor_role: `${tag}_auditor` };

  beforeAll(async () => {
    home = await makeHome('postgres');
    url = home.store.url as string;
    psqlRoles(url, names);
    const owner = await openDatabase({ url: as(url, names.owner_role), embeddedDir: home.store.embeddedDir, migrate: false, poolSize: 2 });
    try {
      await runMigrations(owner);
    } finally {
      await owner.close();
    }
    // After the migration: the migrations grant the default names, roles.sql grants these.
    psqlRoles(url, names);
  });

  afterAll(async () => {
    await home?.cleanup();
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    try {
      for (const role of Object.values(names)) await admin.query(`DROP ROLE IF EXISTS ${role}`);
    } finally {
      await admin.end();
    }
  });

  it('creates the named login roles without superpowers', async () => {
    const r = await sqlAs(url, new URL(url).username || 'postgres', 'SELECT rolname, rolcanlogin, rolsuper, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname LIKE $1 ORDER BY rolname', [
      `${tag}_%`,
    ]);
    expect(r.ok && r.rows).toEqual(
      [names.app_role, names.auditor_role, names.owner_role].map((rolname) => ({ rolname, rolcanlogin: true, rolsuper: false, rolcreaterole: false, rolbypassrls: false })),
    );
  });

  it("runs a benchmark as its own app role, which is as restricted as ehrbench_app; the other database's roles cannot connect", async () => {
    const server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
    });
    const app = await openApp({ file: home.configFile, env: { ...home.env, EHRBENCH_DATABASE_URL: as(url, names.app_role) } });
    try {
      const run = await requestRun(app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 2 });
      expect((await executeRun(app.engine, run.run_id)).status).toBe('completed');
    } finally {
      await app.close();
      await server.close();
    }
    for (const statement of ["UPDATE audit_events SET reason = 'edited' WHERE seq = 1", 'DELETE FROM audit_events WHERE seq = 1', 'TRUNCATE audit_events', 'DELETE FROM runs']) {
      expect([statement, await sqlAs(url, names.app_role, statement)]).toEqual([statement, { ok: false, code: '42501' }]);
    }
    expect((await sqlAs(url, names.auditor_role, 'SELECT count(*)::int AS n FROM audit_events')).ok).toBe(true);
    expect(await sqlAs(url, names.auditor_role, 'SELECT payload FROM run_items LIMIT 1')).toEqual({ ok: false, code: '42501' });
    // The default roles (another database's) may not even connect to this one.
    for (const role of ['ehrbench_app', 'ehrbench_auditor']) {
      const other = await sqlAs(url, role, 'SELECT 1').catch((err: { code?: string }) => ({ ok: false as const, code: err.code ?? 'error' }));
      expect(other).toEqual({ ok: false, code: '42501' });
    }
  });
});
