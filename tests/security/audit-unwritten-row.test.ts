/**
 * A row nobody wrote gets no signature (issue 27, class 4). A host holding only the database URL
 * appended a correctly hash-chained row (a fake IRB approval by a real compliance officer) with the
 * application role's own grants; the daemon chained onto it, `audit export` sealed a checkpoint over
 * it and the witness recorded it. Now every row since the last checkpoint is checked (link, hash,
 * MAC) before a checkpoint is signed, and so are the rows that appeared whenever the head moved
 * under a process: on a mismatch the trail stops, as it does on a rollback.
 */
import { execFile } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { AuditLog, type AuditEventInput, loadMacKeys, loadSigningKey, loadWitnesses } from '../../src/audit';
import { recordBody, rowHash } from '../../src/audit/record';
import { createLogger } from '../../src/log';
import { problems, verifyApp } from '../helpers/audit';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

const carol = { principal: 'carol', role: 'compliance', authMethod: 'mtls' } as const;

function call(i: number): AuditEventInput {
  return {
    type: 'endpoint.call',
    action: 'E',
    outcome: 'success',
    rule: 'egress.allowlisted-endpoint',
    actor: { principal: 'alice', role: 'researcher', authMethod: 'mtls' },
    subject: { runId: 'run-1', benchmarkId: 'medec', tier: 'public', endpointId: 'demo-loopback' },
    detail: { ordinal: i, attempt: 1 },
  };
}

/**
 * What the insider appends with INSERT on audit_events and UPDATE on audit_head (the app role's
 * grants): an IRB approval granted by a real compliance officer, chained onto the head exactly as
 * ehrbench chains, with the site's MAC key id and a MAC made without the key.
 */
async function appendForgedApproval(app: App): Promise<number> {
  const [head] = await app.db.query<{ seq: string | number; row_hash: string }>('SELECT seq, row_hash FROM audit_head');
  const [last] = await app.db.query<{ mac_key_id: string; site_id: string; host: string; daemon_version: string }>(
    'SELECT mac_key_id, site_id, host, daemon_version FROM audit_events ORDER BY seq DESC LIMIT 1',
  );
  const seq = Number(head?.seq) + 1;
  const body = recordBody(
    { type: 'approval.grant', action: 'C', outcome: 'success', rule: 'approval.changed', actor: carol, subject: { approvalId: randomUUID() }, detail: { protocolNumber: 'IRB-FAKE-1' } },
    randomUUID(),
    new Date().toISOString(),
    { siteId: last?.site_id as string, host: last?.host as string, daemonVersion: last?.daemon_version as string },
  );
  const unsigned = { ...body, seq, prev_hash: head?.row_hash as string };
  const hash = rowHash(unsigned);
  const row = { ...unsigned, row_hash: hash, mac_key_id: last?.mac_key_id, row_mac: createHmac('sha256', randomBytes(32)).update(hash).digest('hex') };
  await app.db.transaction(async (tx) => {
    await tx.query('INSERT INTO audit_events SELECT * FROM jsonb_populate_record(NULL::audit_events, $1::jsonb)', [JSON.stringify(row)]);
    await tx.query('UPDATE audit_head SET seq = $1, row_hash = $2 WHERE singleton', [seq, hash]);
  });
  return seq;
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), ...args], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const newestWitnessed = (app: App) => Math.max(0, ...loadWitnesses(app.config.audit.witnessDirs).witnesses.flatMap((w) => [w.checkpoint.statement.seq]));
const newestCheckpoint = async (app: App) => Number((await app.db.query<{ seq: string | null }>('SELECT max(seq) AS seq FROM audit_checkpoints'))[0]?.seq ?? 0);

describe.each(backends())('a row nobody wrote, on %s', (backend) => {
  let home: TestHome;
  let app: App;
  beforeEach(async () => {
    home = await makeHome(backend);
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    config.audit = { checkpointEvery: 10 };
    writeFileSync(home.configFile, JSON.stringify(config));
    app = await openApp({ file: home.configFile, env: home.env });
    for (let i = 1; i <= 3; i++) await app.audit.record(call(i));
    await app.audit.seal();
  });
  afterEach(async () => {
    await app?.close().catch(() => undefined);
    await home.cleanup();
  });

  it('the daemon chains nothing onto it: the head moved, the rows since are checked, the trail stops', async () => {
    const forged = await appendForgedApproval(app);
    const refused = await app.audit.record(call(4)).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'audit.unavailable', rule: 'audit.unverified-row' });
    expect((refused as Error).message).toContain(`row at seq ${forged} was not written by ehrbench (its MAC is invalid)`);
    // Stopped for good in this process: no event, no seal.
    await expect(app.audit.record(call(5))).rejects.toMatchObject({ rule: 'audit.unverified-row' });
    await expect(app.audit.seal()).rejects.toMatchObject({ rule: 'audit.unverified-row' });
    expect(await newestCheckpoint(app)).toBeLessThan(forged);
    expect(newestWitnessed(app)).toBeLessThan(forged);
    const [{ n } = { n: 0 }] = await app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE seq > $1', [forged]);
    expect(n).toBe(0);
  });

  it('a process that starts after it seals nothing over it: audit export refuses, naming the row and the rule', async () => {
    const forged = await appendForgedApproval(app);
    await app.close();
    const r = await cli(['audit', 'export'], home.env);
    expect(r.code).not.toBe(0);
    // The refusal is the last line (log lines before it name the rule and the seq too).
    expect(r.stderr.trim().split('\n').at(-1)).toContain(`row at seq ${forged} was not written by ehrbench (its MAC is invalid)`);
    expect(r.stderr).toContain(`[error] audit.unverified-row rule=audit.unverified-row seq=${forged}`);
    app = await openApp({ file: home.configFile, env: home.env });
    await expect(app.audit.sealCovering()).rejects.toMatchObject({ rule: 'audit.unverified-row' });
    expect(await newestCheckpoint(app)).toBeLessThan(forged);
    expect(newestWitnessed(app)).toBeLessThan(forged);
    // The check with the MAC key names the row; the offline check (no MAC key) proves only what checkpoints cover.
    expect(problems(await verifyApp(app))).toContain(`${forged}: row MAC invalid: row forged or altered by someone without the MAC key`);
    expect((await verifyApp(app, { mac: false })).lastCheckpointSeq).toBeLessThan(forged);
  });

  it('another ehrbench writer on the same store (a worker) is not taken for an insider', async () => {
    const worker = new AuditLog(app.db, {
      provenance: { siteId: app.config.site.id, host: 'worker-2', daemonVersion: 'test' },
      keys: { signingKey: loadSigningKey(app.config.keysDir), macKey: loadMacKeys(app.config.keysDir).current },
      checkpointEvery: 10,
      witnessDirs: app.config.audit.witnessDirs,
      logger: createLogger({ level: 'error', console: false }),
    });
    for (let i = 10; i < 25; i++) await (i % 2 ? worker : app.audit).record(call(i));
    await app.audit.seal();
    await worker.seal();
    expect(problems(await verifyApp(app))).toEqual([]);
    expect(await newestCheckpoint(app)).toBe(Number((await app.db.query<{ seq: string }>('SELECT seq FROM audit_head'))[0]?.seq));
  });
});
