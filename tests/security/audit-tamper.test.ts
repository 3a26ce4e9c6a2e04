/**
 * Tampering with the audit trail directly in the database, as a superuser with the append-only
 * triggers disabled: every case must make verification fail with a finding that names the problem.
 * Runs on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { openApp, type App } from '../../src/app';
import type { AuditEventInput } from '../../src/audit';
import { canonicalJson } from '../../src/canonical';
import { GENESIS_HASH, rowHash } from '../../src/audit/record';
import { sign } from 'node:crypto';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { problems, verifyApp } from '../helpers/audit';
import { writeFileSync, readFileSync } from 'node:fs';

const actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' } as const;

function event(i: number): AuditEventInput {
  return {
    type: 'endpoint.call',
    action: 'E',
    outcome: 'success',
    rule: 'egress.allowlisted-endpoint',
    actor,
    subject: { runId: 'run-1', benchmarkId: 'medec', tier: 'public', endpointId: 'demo-loopback' },
    detail: { ordinal: i, attempt: 1, requestBytes: 100 + i },
  };
}

/**
 * 40 events with a checkpoint every 10, sealed at the end: checkpoints at 10, 20, 30, 40. The first
 * start records its policy files (policy.change); endpoint calls fill the trail up to 40.
 */
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

/** Runs SQL as a superuser would to get past the append-only triggers. */
async function asSuperuser(app: App, sql: string, params: unknown[] = []): Promise<void> {
  await app.db.transaction(async (tx) => {
    await tx.query('ALTER TABLE audit_events DISABLE TRIGGER USER');
    await tx.query('ALTER TABLE audit_checkpoints DISABLE TRIGGER USER');
    await tx.query(sql, params);
    await tx.query('ALTER TABLE audit_events ENABLE TRIGGER USER');
    await tx.query('ALTER TABLE audit_checkpoints ENABLE TRIGGER USER');
  });
}

describe.each(backends())('audit trail tampering on %s', (backend) => {
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

  it('verifies an untouched trail', async () => {
    const report = await verifyApp(app);
    expect(problems(report)).toEqual([]);
    expect(report).toMatchObject({ ok: true, events: 40, headSeq: 40, checkpoints: 4, lastCheckpointSeq: 40, macChecked: true, witnesses: 1 });
  });

  it('refuses UPDATE, DELETE and TRUNCATE while the triggers are on', async () => {
    await expect(app.db.query("UPDATE audit_events SET outcome = 'denied' WHERE seq = 3")).rejects.toThrow(/append-only/);
    await expect(app.db.query('DELETE FROM audit_events WHERE seq = 3')).rejects.toThrow(/append-only/);
    await expect(app.db.query('TRUNCATE audit_events')).rejects.toThrow(/append-only/);
    await expect(app.db.query('DELETE FROM audit_checkpoints')).rejects.toThrow(/append-only/);
    expect((await verifyApp(app)).ok).toBe(true);
  });

  it('gives the app role INSERT and SELECT only', async () => {
    await app.db.transaction(async (tx) => {
      await tx.query('SET LOCAL ROLE ehrbench_app');
      const rows = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events');
      expect(rows[0]?.n).toBe(40);
    });
    for (const sql of ["UPDATE audit_events SET outcome = 'denied'", 'DELETE FROM audit_events', 'TRUNCATE audit_events', 'ALTER TABLE audit_events DISABLE TRIGGER USER']) {
      await expect(
        app.db.transaction(async (tx) => {
          await tx.query('SET LOCAL ROLE ehrbench_app');
          await tx.query(sql);
        }),
      ).rejects.toThrow(/permission denied|must be owner/);
    }
  });

  it('detects a modified field', async () => {
    await asSuperuser(app, "UPDATE audit_events SET endpoint_id = 'public-openai' WHERE seq = 5");
    const report = await verifyApp(app);
    expect(report.ok).toBe(false);
    expect(problems(report)).toContain('5: row_hash mismatch: a field of this row was changed');
  });

  it('detects a modified field whose row hash was recomputed (the chain and the MAC break)', async () => {
    const [row] = await app.db.query<Record<string, unknown>>('SELECT *, event_id::text AS event_id FROM audit_events WHERE seq = 5');
    const forged = { ...(row as object), detail: { ordinal: 5, attempt: 1, requestBytes: 999999 } } as unknown as Parameters<typeof rowHash>[0];
    await asSuperuser(app, 'UPDATE audit_events SET detail = $1::jsonb, row_hash = $2 WHERE seq = 5', [JSON.stringify(forged.detail), rowHash(forged)]);
    const found = problems(await verifyApp(app));
    expect(found).toContain('5: row MAC invalid: row forged or altered by someone without the MAC key');
    expect(found).toContain('6: prev_hash does not match the row before it (row deleted, inserted or moved)');
  });

  it('detects a deleted row', async () => {
    await asSuperuser(app, 'DELETE FROM audit_events WHERE seq = 7');
    const found = problems(await verifyApp(app));
    expect(found).toContain('8: seq 7..7 missing (rows deleted)');
    expect(found).toContain('8: prev_hash does not match the row before it (row deleted, inserted or moved)');
  });

  it('detects rows deleted from the tail, against the witness outside the database', async () => {
    await asSuperuser(app, 'DELETE FROM audit_events WHERE seq > 33');
    await asSuperuser(app, 'DELETE FROM audit_checkpoints WHERE seq > 33');
    const found = problems(await verifyApp(app));
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^40: checkpoint 4 covers seq 40 but the chain ends at seq 33: tail truncated$/),
        expect.stringMatching(/^40: witness .* holds checkpoint 4 \(seq 40\) but the database's newest is 3 \(seq 30\): checkpoints removed or an older one replayed$/),
      ]),
    );
  });

  it('detects two rows swapped', async () => {
    await asSuperuser(
      app,
      `UPDATE audit_events a SET detail = b.detail, recorded_at = b.recorded_at, prev_hash = b.prev_hash, row_hash = b.row_hash, row_mac = b.row_mac
         FROM audit_events b WHERE (a.seq, b.seq) IN ((12, 13), (13, 12))`,
    );
    const found = problems(await verifyApp(app));
    expect(found.some((f) => f.startsWith('12: ') && f.includes('mismatch'))).toBe(true);
    expect(found.some((f) => f.startsWith('13: ') && f.includes('mismatch'))).toBe(true);
    expect(found.some((f) => f.startsWith('12: prev_hash') || f.startsWith('14: prev_hash'))).toBe(true);
  });

  it('detects a forged row appended after the last one', async () => {
    const [head] = await app.db.query<{ seq: number; row_hash: string }>('SELECT seq, row_hash FROM audit_events ORDER BY seq DESC LIMIT 1');
    const [template] = await app.db.query<Record<string, unknown>>('SELECT *, event_id::text AS event_id FROM audit_events WHERE seq = 1');
    const forged = { ...(template as object), seq: (head?.seq ?? 0) + 1, event_id: randomUUID(), prev_hash: head?.row_hash, outcome: 'success' } as unknown as Parameters<typeof rowHash>[0] &
      Record<string, unknown>;
    const hash = rowHash(forged);
    await asSuperuser(app, `INSERT INTO audit_events SELECT * FROM jsonb_populate_record(NULL::audit_events, $1::jsonb)`, [JSON.stringify({ ...forged, row_hash: hash, row_mac: 'f'.repeat(64) })]);
    const report = await verifyApp(app);
    expect(problems(report)).toEqual(['41: row MAC invalid: row forged or altered by someone without the MAC key']);
    // Without the MAC key (an offline verifier with only the public key) the row is at least flagged as unsealed.
    const offline = await verifyApp(app, { mac: false });
    expect(offline.warnings.map((w) => w.problem)).toContain('seq 41..41 are not yet covered by a checkpoint and no MAC key is available here to check them');
  });

  it('detects an older checkpoint replayed as the newest', async () => {
    await asSuperuser(
      app,
      `INSERT INTO audit_checkpoints (checkpoint_id, seq, head_hash, signed_at, key_fingerprint, statement, signature)
       SELECT 5, seq, head_hash, signed_at, key_fingerprint, statement, signature FROM audit_checkpoints WHERE checkpoint_id = 1`,
    );
    const found = problems(await verifyApp(app));
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^10: checkpoint 1 \(seq 10, .*\) does not move forward from checkpoint 4 \(seq 40, .*\): replayed or reordered$/),
        '5: checkpoint row 5 differs from the statement it carries (signed checkpoint 1, seq 10): copied or edited'.replace(/^5/, '10'),
      ]),
    );
  });

  it('detects a checkpoint signed by an unknown key', async () => {
    const rogue = generateKeyPairSync('ed25519');
    const [head] = await app.db.query<{ seq: number; row_hash: string }>('SELECT seq, row_hash FROM audit_head');
    const statement = {
      type: 'ehrbench.audit.checkpoint',
      version: 1,
      siteId: 'test-site',
      checkpointId: 5,
      seq: head?.seq,
      headHash: head?.row_hash,
      signedAt: new Date().toISOString(),
      keyFingerprint: 'ab'.repeat(32),
    };
    const text = canonicalJson(statement);
    const signature = sign(null, Buffer.from(text), rogue.privateKey).toString('base64');
    await asSuperuser(app, 'INSERT INTO audit_checkpoints (checkpoint_id, seq, head_hash, signed_at, key_fingerprint, statement, signature) VALUES (5, $1, $2, $3, $4, $5, $6)', [
      head?.seq,
      head?.row_hash,
      statement.signedAt,
      statement.keyFingerprint,
      text,
      signature,
    ]);
    expect(problems(await verifyApp(app))).toContain(`40: checkpoint 5: signed by unknown key fingerprint ${'ab'.repeat(8)}`);
  });

  it('detects a trail emptied with TRUNCATE', async () => {
    await asSuperuser(app, 'TRUNCATE audit_events');
    const report = await verifyApp(app);
    expect(report.ok).toBe(false);
    expect(problems(report)).toEqual(expect.arrayContaining([expect.stringMatching(/^40: .*tail truncated$/)]));
  });

  it('starts the chain at the genesis hash', async () => {
    const [first] = await app.db.query<{ prev_hash: string }>('SELECT prev_hash FROM audit_events WHERE seq = 1');
    expect(first?.prev_hash).toBe(GENESIS_HASH);
  });
});
