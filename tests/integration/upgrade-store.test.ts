/**
 * An upgrade keeps every row (issue 29): a store at the schema of the previous release, holding what
 * that release wrote (runs, an export waiting for release and a released one, a revocation, audit
 * events and a checkpoint), is migrated by this release; every table that existed before holds exactly
 * the rows it held (compared row by row through a digest of each table), and what this release's
 * migrations add works on the old rows. On both stores.
 *
 * "The previous release" is every migration but those this release added (PREVIOUS_RELEASE_LAST):
 * applied migrations never change (db.migration-changed), so the previous schema is that prefix.
 */
import { randomUUID } from 'node:crypto';
import { listMigrations, runMigrations, type Database } from '../../src/db';
import { backends, freshStore, type TestStore } from '../helpers/db';

jest.setTimeout(120_000);

/** The last migration of the release before this one; move it forward when a release is cut. */
const PREVIOUS_RELEASE_LAST = '0015';

/** Every table's rows, as one digest per table (row order fixed by their text). */
async function tableDigests(db: Database): Promise<Map<string, string>> {
  const tables = await db.query<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY 1",
  );
  const digests = new Map<string, string>();
  for (const { name } of tables) {
    const [row] = await db.query<{ n: string; digest: string | null }>(`SELECT count(*)::text AS n, md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM "${name}" t`);
    digests.set(name, `${row?.n}:${row?.digest ?? '-'}`);
  }
  return digests;
}

/** What the previous release left in its store, written as its schema allows. */
async function previousReleaseData(db: Database): Promise<{ waiting: string; released: string }> {
  const waiting = randomUUID();
  const released = randomUUID();
  const run = randomUUID();
  await db.query(`INSERT INTO exports (export_id, state, requested_by, run_ids, content, content_sha256) VALUES ($1, 'requested', 'alice', ARRAY[$2]::uuid[], '{"results":[]}', repeat('a', 64))`, [
    waiting,
    run,
  ]);
  await db.query(
    `INSERT INTO exports (export_id, state, requested_by, run_ids, content, content_sha256, released_by, released_at, format, bundle, bundle_sha256)
       VALUES ($1, 'released', 'alice', ARRAY[$2]::uuid[], '{"results":[]}', repeat('b', 64), 'carol', now(), 'bundle', '{}', repeat('c', 64))`,
    [released, run],
  );
  await db.query("INSERT INTO revoked_certificates (revocation_id, issuer_fingerprint, serial, principal, reason, revoked_by) VALUES ($1, repeat('d', 64), '*', 'bob', 'left', 'carol')", [
    randomUUID(),
  ]);
  return { waiting, released };
}

describe.each(backends())('an upgrade of the store (%s)', (backend) => {
  let store: TestStore;
  let db: Database;
  beforeAll(async () => {
    store = await freshStore(backend);
    db = await store.open(false);
  });
  afterAll(async () => {
    await db?.close();
    await store?.drop();
  });

  it("keeps every row of the previous release's tables, and this release's additions work on them", async () => {
    const all = listMigrations();
    const previous = all.filter((m) => m.version <= PREVIOUS_RELEASE_LAST);
    expect(previous.length).toBeGreaterThan(0);
    await runMigrations(db, previous);
    const { waiting, released } = await previousReleaseData(db);
    const before = await tableDigests(db);

    const applied = await runMigrations(db);
    expect(applied).toEqual(all.filter((m) => m.version > PREVIOUS_RELEASE_LAST).map((m) => `${m.version}_${m.name}`));
    const after = await tableDigests(db);
    for (const [table, digest] of before) expect({ table, digest: after.get(table) }).toEqual({ table, digest });

    // 0016: an export the previous release left waiting can be withdrawn; a released one stays final.
    expect(await db.query("UPDATE exports SET state = 'withdrawn' WHERE export_id = $1::uuid RETURNING 1", [waiting])).toHaveLength(1);
    await expect(db.query("UPDATE exports SET state = 'withdrawn' WHERE export_id = $1::uuid", [released])).rejects.toThrow(/a released or withdrawn export is final/);
    await expect(db.query("UPDATE exports SET state = 'requested' WHERE export_id = $1::uuid", [waiting])).rejects.toThrow(/a released or withdrawn export is final/);
  });
});
