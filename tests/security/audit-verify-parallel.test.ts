/**
 * Verification of a store's chain in parallel segments (worker threads, PostgreSQL) finds exactly
 * what the sequential walk finds, in the same order: a broken link between two segments, rows
 * reordered across a boundary, a row deleted at a boundary, a field changed inside a segment. On
 * PGlite (one process's database) the store's chain is streamed; the same cases are checked there.
 * Segments of 7 seqs over 40 events, so that every case sits on or next to a segment boundary.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { openApp, type App } from '../../src/app';
import { type AuditEventInput, chainOf, loadCheckpoints, loadMacKeysIfPresent, loadWitnesses, streamChain, streamRecordPages, trustedKeys, verifyAudit, type VerifyReport } from '../../src/audit';
import { type AuditRecord, rowHash } from '../../src/audit/record';
import { PARALLEL_MIN_CORES } from '../../src/audit/verify-parallel';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { problems } from '../helpers/audit';

jest.setTimeout(120_000);

const actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' } as const;
const event = (i: number): AuditEventInput => ({
  type: 'endpoint.call',
  action: 'E',
  outcome: 'success',
  rule: 'egress.allowlisted-endpoint',
  actor,
  subject: { runId: 'run-1', benchmarkId: 'medec', tier: 'public', endpointId: 'demo-loopback' },
  detail: { ordinal: i, attempt: 1 },
});

async function populatedApp(home: TestHome): Promise<App> {
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  config.audit = { checkpointEvery: 10 };
  writeFileSync(home.configFile, JSON.stringify(config));
  const app = await openApp({ file: home.configFile, env: home.env });
  const [head] = await app.db.query<{ seq: number }>('SELECT seq FROM audit_head');
  for (let i = (head?.seq ?? 0) + 1; i <= 40; i++) await app.audit.record(event(i));
  await app.audit.seal();
  return app;
}

async function asSuperuser(app: App, statements: [string, unknown[]][]): Promise<void> {
  await app.db.transaction(async (tx) => {
    await tx.query('ALTER TABLE audit_events DISABLE TRIGGER USER');
    for (const [sql, params] of statements) await tx.query(sql, params);
    await tx.query('ALTER TABLE audit_events ENABLE TRIGGER USER');
  });
}

/** The report over the store's chain: streamed (`sequential`), or as `chainOf` reads it, in segments of 7. */
async function verify(app: App, sequential: boolean): Promise<VerifyReport> {
  const { witnesses, problems: witnessProblems } = loadWitnesses(app.config.audit.witnessDirs);
  const macKeys = loadMacKeysIfPresent(app.config.keysDir);
  // PostgreSQL: segments whatever the host's cores; the embedded store: streamed (chainOf's choice).
  const chain = chainOf(app.db, PARALLEL_MIN_CORES);
  return verifyAudit({
    ...(sequential ? { records: streamChain(app.db) } : 'parallel' in chain ? { parallel: { ...chain.parallel, segmentSize: 7, workers: 3 } } : chain),
    checkpoints: await loadCheckpoints(app.db),
    witnesses,
    witnessProblems,
    trustedKeys: trustedKeys(app.config.keysDir),
    ...(macKeys ? { macKeys } : {}),
  });
}

async function row(app: App, seq: number): Promise<AuditRecord> {
  const [r] = await app.db.query<AuditRecord>('SELECT * FROM audit_events WHERE seq = $1', [seq]);
  return { ...(r as AuditRecord), seq: Number(r?.seq), event_id: String(r?.event_id) };
}

describe.each(backends())('audit verification of the store chain on %s', (backend) => {
  let home: TestHome;
  let app: App;
  beforeEach(async () => {
    home = await makeHome(backend);
    app = await populatedApp(home);
  });
  afterEach(async () => {
    await app.close();
    await home.cleanup();
  });

  /** Both ways give the same report; returns its problems. */
  async function both(): Promise<string[]> {
    const parallel = await verify(app, false);
    const sequential = await verify(app, true);
    expect(parallel).toEqual(sequential);
    return problems(parallel);
  }

  it('reads a PostgreSQL chain in parallel segments on a host with cores to spare, any other streamed', () => {
    expect('parallel' in chainOf(app.db, PARALLEL_MIN_CORES)).toBe(backend === 'postgres');
    expect('parallel' in chainOf(app.db, 1)).toBe(false);
    // audit verify --threads: 1 streams whatever the cores; more reads a PostgreSQL chain in that many threads.
    expect('parallel' in chainOf(app.db, 16, 1)).toBe(false);
    const chosen = chainOf(app.db, 1, 6);
    expect('parallel' in chosen ? chosen.parallel.workers : 'streamed').toBe(backend === 'postgres' ? 6 : 'streamed');
  });

  it('reads for verification exactly the records the trail shows its readers (rows as arrays, not objects)', async () => {
    // Values that decode differently if a column is taken for another: quotes, non-ASCII, a null, a
    // nested detail. Written over seq 40 directly (no event takes them): the read is the point here.
    const awkward = { reason: 'refus\u00e9 "sans" appel\\\u2028', detail: { note: 'caf\u00e9 \ud83d\ude00', n: 1.5, ok: true, list: [1, 'x'] } };
    await asSuperuser(app, [['UPDATE audit_events SET reason = $2, detail = $3, purpose = NULL WHERE seq = $1', [40, awkward.reason, JSON.stringify(awkward.detail)]]]);
    const flat = async (pages: AsyncIterable<AuditRecord[]>) => {
      const out: AuditRecord[] = [];
      for await (const page of pages) out.push(...page);
      return out;
    };
    const read = await flat(streamChain(app.db));
    expect(read).toEqual(await flat(streamRecordPages(app.db)));
    expect(read.map((r) => r.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(read.at(-1)).toMatchObject({ ...awkward, purpose: null });
    // Bounded reads are the segments: [lo, hi), a page at a time.
    expect((await flat(streamChain(app.db, 8, 15, 3))).map((r) => r.seq)).toEqual([8, 9, 10, 11, 12, 13, 14]);
    expect(await both()).toEqual(['40: row_hash mismatch: a field of this row was changed']);
  });

  it('verifies the untouched chain in segments', async () => {
    expect(await both()).toEqual([]);
    expect(await verify(app, false)).toMatchObject({ ok: true, events: 40, headSeq: 40, checkpoints: 4 });
  });

  it('finds a link broken between two segments (a row re-hashed by someone without the MAC key)', async () => {
    // seq 14 ends the segment [8, 15): changed and re-hashed, it is whole on its own; only the next
    // segment's first row (seq 15), whose prev_hash no longer matches, and the MAC give it away.
    const r = await row(app, 14);
    const changed = { ...r, outcome: 'denied' as const };
    await asSuperuser(app, [["UPDATE audit_events SET outcome = 'denied', row_hash = $2 WHERE seq = $1", [14, rowHash(changed)]]]);
    const found = await both();
    expect(found).toContain('15: prev_hash does not match the row before it (row deleted, inserted or moved)');
    expect(found).toContain('14: row MAC invalid: row forged or altered by someone without the MAC key');
  });

  it('finds rows reordered across a segment boundary', async () => {
    // seq 21 ends [15, 22), seq 22 starts [22, 29): their contents swapped.
    await asSuperuser(app, [
      ['UPDATE audit_events SET seq = 1000000 WHERE seq = 21', []],
      ['UPDATE audit_events SET seq = 21 WHERE seq = 22', []],
      ['UPDATE audit_events SET seq = 22 WHERE seq = 1000000', []],
    ]);
    const found = await both();
    expect(found).toEqual(expect.arrayContaining(['21: row_hash mismatch: a field of this row was changed', '22: prev_hash does not match the row before it (row deleted, inserted or moved)']));
  });

  it('finds a row deleted at a segment boundary', async () => {
    await asSuperuser(app, [['DELETE FROM audit_events WHERE seq = 8', []]]);
    const found = await both();
    expect(found).toEqual(expect.arrayContaining(['9: seq 8..8 missing (rows deleted)', '9: prev_hash does not match the row before it (row deleted, inserted or moved)']));
  });

  it("finds a row put before seq 1 by someone who dropped the table's check (the chain is read whole, both ways)", async () => {
    const constraint = await app.db.query<{ name: string }>(
      "SELECT conname AS name FROM pg_constraint WHERE conrelid = 'audit_events'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%seq > 0%'",
    );
    expect(constraint).toHaveLength(1);
    await asSuperuser(app, [
      [`ALTER TABLE audit_events DROP CONSTRAINT ${constraint[0]?.name}`, []],
      [
        'INSERT INTO audit_events SELECT 0, gen_random_uuid(), schema_version, recorded_at, event_type, action, outcome, rule, reason, actor_principal, actor_role, actor_auth, purpose, irb_protocol, run_id, benchmark_id, tier, endpoint_id, export_id, approval_id, address, detail, site_id, host, daemon_version, prev_hash, row_hash, mac_key_id, row_mac FROM audit_events WHERE seq = 1',
        [],
      ],
    ]);
    const found = await both();
    expect(found[0]).toBe('0: chain starts at seq 0, before seq 1: row inserted');
    expect(found).toContain('1: prev_hash does not match the row before it (row deleted, inserted or moved)');
  });

  it('finds a field changed inside a segment', async () => {
    await asSuperuser(app, [["UPDATE audit_events SET detail = jsonb_set(detail, '{attempt}', '2') WHERE seq = 30", []]]);
    const found = await both();
    expect(found).toContain('30: row_hash mismatch: a field of this row was changed');
  });
});
