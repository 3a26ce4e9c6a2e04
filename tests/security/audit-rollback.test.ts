/**
 * Rolling the audit trail back behind its witnesses, as a database superuser would: cut the tail (or
 * restore an older backup) and let ordinary work go on. The witness outside the database keeps every
 * checkpoint it saw, so the rollback stays visible to `audit verify` however many seals follow, and
 * the trail refuses to seal or record on a chain that lost a witnessed head (fail closed). A missing
 * witness is a failure of `audit verify` unless it is explicitly allowed.
 * Runs on PGlite and, with TEST_DATABASE_URL, on PostgreSQL.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { openApp, type App } from '../../src/app';
import { AuditLog, type AuditEventInput, LEGACY_WITNESS_FILE, loadCheckpoints, loadMacKeys, loadSigningKey, WITNESS_FILE } from '../../src/audit';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { createLogger } from '../../src/log';
import { startDaemon } from '../../src/server';
import { problems, verifyApp } from '../helpers/audit';
import { startTestDaemon } from '../helpers/daemon';
import { backends, tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

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

function useCheckpointEvery(home: TestHome, n: number): void {
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  config.audit = { checkpointEvery: n };
  writeFileSync(home.configFile, JSON.stringify(config));
}

/** 40 events with a checkpoint every 10, sealed at the end (the seqs depend on what opening the app records). */
async function populatedApp(home: TestHome): Promise<App> {
  useCheckpointEvery(home, 10);
  const app = await openApp({ file: home.configFile, env: home.env });
  for (let i = 1; i <= 40; i++) await app.audit.record(event(i));
  await app.audit.seal();
  return app;
}

/**
 * What a superuser does to cut the tail cleanly: the refuse triggers off, every event and checkpoint
 * after `seq` deleted, the head moved back to `seq`, so that new events chain on without a gap
 * (restoring an older backup leaves the database in the same state).
 */
async function cutTail(app: App, seq: number): Promise<void> {
  await app.db.transaction(async (tx) => {
    await tx.query('ALTER TABLE audit_events DISABLE TRIGGER USER');
    await tx.query('ALTER TABLE audit_checkpoints DISABLE TRIGGER USER');
    await tx.query('DELETE FROM audit_events WHERE seq > $1', [seq]);
    await tx.query('DELETE FROM audit_checkpoints WHERE seq > $1', [seq]);
    await tx.query('UPDATE audit_head SET seq = $1, row_hash = (SELECT row_hash FROM audit_events WHERE seq = $1) WHERE singleton', [seq]);
    await tx.query('ALTER TABLE audit_events ENABLE TRIGGER USER');
    await tx.query('ALTER TABLE audit_checkpoints ENABLE TRIGGER USER');
  });
}

/**
 * The checkpoints a witness file holds, oldest first: one signed statement per line (a file of one
 * pretty-printed statement, as earlier versions wrote it, reads as one).
 */
function witnessed(dir: string): { checkpointId: number; seq: number; headHash: string }[] {
  const text = readFileSync(join(dir, WITNESS_FILE), 'utf8');
  const single = /^\{\n/.test(text);
  return (single ? [text] : text.split('\n').filter((l) => l.trim()))
    .map((l) => JSON.parse((JSON.parse(l) as { statement: string }).statement) as { checkpointId: number; seq: number; headHash: string })
    .map(({ checkpointId, seq, headHash }) => ({ checkpointId, seq, headHash }));
}

function newestIn(app: App): { checkpointId: number; seq: number; headHash: string } {
  const newest = witnessed(app.config.audit.witnessDirs[0] as string).at(-1);
  if (!newest) throw new Error('no witnessed checkpoint');
  return newest;
}

async function headSeq(app: App): Promise<number> {
  const [head] = await app.db.query<{ seq: number }>('SELECT seq FROM audit_head');
  return Number(head?.seq);
}

/** Ordinary work after the rollback: ten events and a seal, twice; each may be refused. */
async function workAndSealTwice(app: App, from: number): Promise<unknown[]> {
  const refusals: unknown[] = [];
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 10; i++) await app.audit.record(event(from + round * 10 + i)).catch((err: unknown) => refusals.push(err));
    await app.audit.seal().catch((err: unknown) => refusals.push(err));
  }
  return refusals;
}

const rollbackRefusal = { code: 'audit.unavailable', rule: 'audit.rollback-detected' };

function capture(env: NodeJS.ProcessEnv): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (t) => void (out += t), stderr: (t) => void (err += t), env, out: () => out, err: () => err };
}

async function cli(home: TestHome, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = capture(home.env);
  process.exitCode = undefined;
  const returned = await main(args, io);
  const code = Number(process.exitCode ?? returned ?? 0);
  process.exitCode = undefined;
  return { code, stdout: io.out(), stderr: io.err() };
}

describe.each(backends())('audit trail rollback on %s', (backend) => {
  let home: TestHome;
  let app: App | undefined;
  beforeEach(async () => {
    home = await makeHome(backend);
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await home.cleanup();
  });

  it('keeps every checkpoint in the witness history', async () => {
    app = await populatedApp(home);
    const history = witnessed(app.config.audit.witnessDirs[0] as string);
    const sealed = (await loadCheckpoints(app.db)).map((c) => ({ checkpointId: c.statement.checkpointId, seq: c.statement.seq, headHash: c.statement.headHash }));
    expect(sealed.length).toBeGreaterThanOrEqual(4);
    expect(history).toEqual(sealed);
  });

  it('still reports a cut tail after two ordinary seals, and refuses to seal or record over it', async () => {
    app = await populatedApp(home);
    const newest = newestIn(app);
    const cut = newest.seq - 7;
    await cutTail(app, cut);
    await app.close();
    // Restarted on the rolled-back store: the daemon, a worker or any command.
    app = await openApp({ file: home.configFile, env: home.env });
    const refusals = await workAndSealTwice(app, 41);

    const report = await verifyApp(app);
    expect(report.ok).toBe(false);
    expect(problems(report)).toContain(`${newest.seq}: checkpoint ${newest.checkpointId} covers seq ${newest.seq} but the chain ends at seq ${cut}: tail truncated`);

    expect(refusals.length).toBeGreaterThan(0);
    for (const r of refusals) expect(r).toMatchObject(rollbackRefusal);
    await expect(app.audit.seal()).rejects.toMatchObject(rollbackRefusal);
    await expect(app.audit.record(event(99))).rejects.toMatchObject(rollbackRefusal);
    expect(await headSeq(app)).toBe(cut);
    expect(newestIn(app)).toEqual(newest);
  });

  it('stops a running trail whose head is moved back under it', async () => {
    app = await populatedApp(home);
    const cut = (await headSeq(app)) - 3;
    await cutTail(app, cut);
    await expect(app.audit.record(event(41))).rejects.toMatchObject(rollbackRefusal);
    expect(await headSeq(app)).toBe(cut);
    expect(app.audit.unavailable?.()).toMatchObject(rollbackRefusal);
  });

  it('reports a chain re-grown past the witnessed head by a writer that could not see the witness', async () => {
    app = await populatedApp(home);
    const newest = newestIn(app);
    await cutTail(app, newest.seq - 7);
    await app.close();
    app = undefined;
    // A worker on another host, whose own witness folder never saw the newest checkpoint, grows the
    // chain back past its seq and seals it: every seq is there again, with other rows.
    const db = await home.store.open();
    const keys = join(home.home, 'keys');
    const other = new AuditLog(db, {
      provenance: { siteId: 'test-site', host: 'other', daemonVersion: 't' },
      keys: { signingKey: loadSigningKey(keys), macKey: loadMacKeys(keys).current },
      checkpointEvery: 10,
      witnessDirs: [tempDir('witness-other')],
      logger: createLogger({}),
    });
    for (let i = 0; i < 20; i++) await other.record(event(100 + i));
    await other.seal();
    await db.close();

    app = await openApp({ file: home.configFile, env: home.env });
    const refusals = await workAndSealTwice(app, 200);
    const found = problems(await verifyApp(app));
    const { checkpointId: id, seq } = newest;
    expect(found).toContain(`${seq}: checkpoint ${id} signed head hash differs from the chain at seq ${seq}`);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(
            `^${seq}: witness .* holds checkpoint ${id} \\(seq ${seq}\\), but the database's checkpoint ${id} is another statement \\(seq \\d+\\): the chain was rolled back and sealed again$`,
          ),
        ),
      ]),
    );
    expect(refusals.length).toBeGreaterThan(0);
    for (const r of refusals) expect(r).toMatchObject(rollbackRefusal);
    expect(newestIn(app)).toEqual(newest);
  });

  it('still holds the chain to a witness written by an earlier version (one pretty-printed checkpoint)', async () => {
    app = await populatedApp(home);
    const dir = app.config.audit.witnessDirs[0] as string;
    const last = readFileSync(join(dir, WITNESS_FILE), 'utf8').trim().split('\n').at(-1) as string;
    rmSync(join(dir, WITNESS_FILE));
    writeFileSync(join(dir, LEGACY_WITNESS_FILE), JSON.stringify(JSON.parse(last), null, 2) + '\n');
    const newest = JSON.parse((JSON.parse(last) as { statement: string }).statement) as { checkpointId: number; seq: number };
    await cutTail(app, newest.seq - 5);
    await app.close();
    app = await openApp({ file: home.configFile, env: home.env });
    await expect(app.audit.record(event(41))).rejects.toMatchObject(rollbackRefusal);
    expect(problems(await verifyApp(app))).toContain(`${newest.seq}: checkpoint ${newest.checkpointId} covers seq ${newest.seq} but the chain ends at seq ${newest.seq - 5}: tail truncated`);
  });

  it('keeps a witness line cut short by a crash apart from the next one, and reports it', async () => {
    app = await populatedApp(home);
    const file = join(app.config.audit.witnessDirs[0] as string, WITNESS_FILE);
    writeFileSync(file, readFileSync(file, 'utf8') + '{"statement":"{\\"type', { flag: 'w' });
    await app.close();
    app = await openApp({ file: home.configFile, env: home.env });
    // The daemon reads past an unfinished last line (another process may be writing it) and seals on.
    await app.audit.record(event(41));
    await app.audit.seal();
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    expect(lines.at(-2)).toBe('{"statement":"{\\"type');
    expect(() => JSON.parse(lines.at(-1) as string)).not.toThrow();
    // The verifier reports it: a witness must hold only whole, signed checkpoints.
    const found = problems(await verifyApp(app));
    expect(found).toEqual([`-: ${file}:${lines.length - 1}: witness entry is not valid JSON; restore the witness from a copy (a line cut short by a crash may be removed)`]);
  });

  it('fails `audit verify` when a configured witness is missing, unless --allow-missing-witness is given', async () => {
    app = await populatedApp(home);
    await app.close();
    app = undefined;
    const file = join(home.home, 'audit', WITNESS_FILE);
    expect(existsSync(file)).toBe(true);
    expect((await cli(home, ['audit', 'verify'])).code).toBe(0);
    // The whole witness: its history and the single checkpoint older releases read.
    rmSync(file);
    rmSync(join(home.home, 'audit', LEGACY_WITNESS_FILE));

    const strict = await cli(home, ['audit', 'verify']);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain(`trail: witness ${file} (audit.witnessDirs) cannot be read (ENOENT)`);

    rmSync(file, { force: true });
    rmSync(join(home.home, 'audit', LEGACY_WITNESS_FILE), { force: true });
    const allowed = await cli(home, ['audit', 'verify', '--allow-missing-witness']);
    expect(allowed).toMatchObject({ code: 0 });
    expect(allowed.stdout).toMatch(/^audit trail intact: /);
    expect(allowed.stderr).toContain(`warning: witness ${file} (audit.witnessDirs) cannot be read (ENOENT)`);
  });

  it('fails `audit verify` naming a witness given with --witness that cannot be read', async () => {
    app = await populatedApp(home);
    await app.close();
    app = undefined;
    const missing = join(tempDir('no-witness'), WITNESS_FILE);
    const r = await cli(home, ['audit', 'verify', '--witness', missing]);
    expect(r.code).toBe(1);
    expect(`${r.stdout}${r.stderr}`).toContain(missing);
  });
});

describe.each(backends())('the daemon on a rolled-back trail (%s)', (backend) => {
  async function loopback(port: number, path: string): Promise<{ status: number; json: any }> {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, json: await res.json() };
  }

  it('refuses to seal and act, and says so on /ready, /health and in the log, at once and after a restart', async () => {
    const t = await startTestDaemon({ backend });
    let agent: Agent | undefined;
    try {
      for (let i = 0; i < 3; i++) expect((await t.call('erin', 'GET', '/v1/audit/verify')).status).toBe(200);
      await t.app.audit.seal();
      const head = await headSeq(t.app);
      await cutTail(t.app, head - 2);

      // The running daemon: its next seal finds the witnessed head gone and stops the trail.
      await expect(t.app.audit.seal()).rejects.toMatchObject(rollbackRefusal);
      expect(await t.call('carol', 'GET', '/ready')).toMatchObject({ status: 503, json: { error: 'audit.unavailable', rule: 'audit.rollback-detected' } });
      expect(await t.call('carol', 'GET', '/health')).toMatchObject({ status: 200, json: { rule: 'audit.rollback-detected' } });
      const refused = await t.call('erin', 'GET', '/v1/audit/verify');
      expect(refused).toMatchObject({ status: 503, json: { error: 'audit.unavailable' } });
      await t.stop();
      const logged = readFileSync(t.app.config.logging.file as string, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(logged).toContainEqual(expect.objectContaining({ level: 'error', message: 'audit.rollback-detected', rule: 'audit.rollback-detected' }));

      // A restart on the same store: the check at start-up stops it before anything is recorded.
      const app = await openApp({ file: t.home.configFile, env: t.home.env });
      const daemon = await startDaemon(app, { port: 0, healthPort: 0 });
      try {
        expect(await loopback(daemon.healthPort as number, '/ready')).toMatchObject({ status: 503, json: { rule: 'audit.rollback-detected' } });
        expect(await loopback(daemon.healthPort as number, '/health')).toMatchObject({ status: 200, json: { rule: 'audit.rollback-detected' } });
        agent = new Agent({ connect: { ca: t.ca, cert: t.ids.alice?.cert, key: t.ids.alice?.key, servername: 'localhost' } });
        const res = await fetch(`https://localhost:${daemon.port}/v1/runs`, {
          method: 'POST',
          dispatcher: agent,
          body: JSON.stringify({ benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 1 }),
          headers: { 'content-type': 'application/json' },
        });
        expect({ status: res.status, json: await res.json() }).toMatchObject({ status: 503, json: { error: 'audit.unavailable' } });
      } finally {
        await daemon.close();
        await app.close();
      }
      // Nothing was recorded after the cut, by either daemon.
      const after = await openApp({ file: t.home.configFile, env: t.home.env });
      try {
        expect(await headSeq(after)).toBe(head - 2);
      } finally {
        await after.close();
      }
    } finally {
      await agent?.close();
      await t.close();
    }
  });
});

/**
 * Step 5 of the rollback alarm procedure, as a command: the loss is accepted only when there is one,
 * the witness histories are archived whole (evidence, never deleted), the acceptance is in the trail,
 * and the trail records again and verifies intact afterwards. A failure to record (here: the MAC key is
 * missing, so no writer opens) puts everything back.
 */
describe.each(backends())('accepting a rollback whose rows are lost (%s)', (backend) => {
  let home: TestHome;
  let app: App | undefined;
  const accept = ['audit', 'accept-loss', '--reason', 'rows lost with the failed disk; decided by the compliance office', '--incident', 'INC-2041'];
  beforeEach(async () => {
    home = await makeHome(backend);
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await home.cleanup();
  });

  async function rolledBack(): Promise<{ dir: string; newest: { checkpointId: number; seq: number }; before: string }> {
    app = await populatedApp(home);
    const dir = app.config.audit.witnessDirs[0] as string;
    const newest = newestIn(app);
    await cutTail(app, newest.seq - 7);
    await app.close();
    app = undefined;
    return { dir, newest, before: readFileSync(join(dir, WITNESS_FILE), 'utf8') };
  }

  it('refuses when the chain holds every witnessed checkpoint, and moves nothing', async () => {
    app = await populatedApp(home);
    const dir = app.config.audit.witnessDirs[0] as string;
    await app.close();
    app = undefined;
    const r = await cli(home, accept);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no loss to accept');
    expect(existsSync(join(dir, WITNESS_FILE))).toBe(true);
    expect(existsSync(join(dir, 'witness-archive'))).toBe(false);
  });

  it('archives the witness histories, records the loss, and lets the trail record and verify again', async () => {
    const { dir, newest, before } = await rolledBack();
    const r = await cli(home, accept);
    expect(r.stderr).not.toMatch(/error/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`witnessed checkpoint ${newest.checkpointId} at seq ${newest.seq}, which the chain no longer holds`);
    // The old histories are kept byte for byte in the archive.
    const archives = readdirSync(join(dir, 'witness-archive'));
    expect(archives).toHaveLength(1);
    expect(readFileSync(join(dir, 'witness-archive', archives[0] as string, WITNESS_FILE), 'utf8')).toBe(before);
    expect(existsSync(join(dir, 'witness-archive', archives[0] as string, LEGACY_WITNESS_FILE))).toBe(true);

    app = await openApp({ file: home.configFile, env: home.env });
    const [accepted] = await app.db.query<{ detail: Record<string, number | string>; rule: string; actor: string }>(
      "SELECT detail, rule, actor_principal AS actor FROM audit_events WHERE event_type = 'audit.loss-accepted'",
    );
    expect(accepted).toMatchObject({
      rule: 'audit.loss-accepted',
      detail: { newestLostCheckpoint: newest.checkpointId, witnessedUpToSeq: newest.seq, witnessArchive: archives[0], witnessFolders: 1 },
    });
    expect(accepted?.detail.chainHeadSeq).toBeGreaterThanOrEqual(newest.seq - 7);
    expect(accepted?.detail.chainHeadSeq).toBeLessThan(newest.seq);
    expect(accepted?.actor).toMatch(/^local:/);
    // A new history starts at the acceptance's checkpoint; the trail records and verifies intact.
    expect(witnessed(dir)).toHaveLength(1);
    await app.audit.record(event(100));
    await app.audit.seal();
    expect((await verifyApp(app)).ok).toBe(true);
    // Nothing left to accept.
    await app.close();
    app = undefined;
    expect((await cli(home, accept)).code).toBe(1);
  });

  it('puts the histories back when the acceptance cannot be recorded', async () => {
    const { dir, before } = await rolledBack();
    rmSync(join(home.home, 'keys', 'audit-mac.key'), { force: true });
    const r = await cli(home, accept);
    expect(r.stderr).toContain('audit-mac.key');
    expect(r.code).toBe(1);
    expect(readFileSync(join(dir, WITNESS_FILE), 'utf8')).toBe(before);
    expect(readdirSync(join(dir, 'witness-archive'))).toEqual([]);
  });
});

/**
 * Step 4 of the rollback alarm procedure, as a command: the rows a restore lost come back from an
 * export taken before, only as the site's keys vouch for them, and the trail then records and verifies
 * intact. An export that does not verify changes nothing.
 */
describe.each(backends())('putting lost rows back from an audit export (%s)', (backend) => {
  let home: TestHome;
  let app: App | undefined;
  beforeEach(async () => {
    home = await makeHome(backend);
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await home.cleanup();
  });

  /** A trail of 40 events, exported (the export seals), then cut 7 rows behind the newest checkpoint. */
  async function exportedThenCut(): Promise<{ file: string; newest: { checkpointId: number; seq: number }; cut: number }> {
    app = await populatedApp(home);
    await app.close();
    app = undefined;
    const file = join(tempDir('audit-export'), 'audit.jsonl');
    expect((await cli(home, ['audit', 'export', '--format', 'jsonl', '--out', file])).code).toBe(0);
    app = await openApp({ file: home.configFile, env: home.env });
    const newest = newestIn(app);
    const cut = newest.seq - 7;
    await cutTail(app, cut);
    await app.close();
    app = undefined;
    return { file, newest, cut };
  }

  it('puts the rows and checkpoints back, and the trail records and verifies intact again', async () => {
    const { file, newest, cut } = await exportedThenCut();
    const r = await cli(home, ['audit', 'import', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`imported seq ${cut + 1}..${newest.seq}: 7 rows`);
    expect(r.stdout).toContain('holds every witnessed checkpoint again');
    app = await openApp({ file: home.configFile, env: home.env });
    expect(newestIn(app).seq).toBeGreaterThanOrEqual(newest.seq);
    const [imported] = await app.db.query<{ detail: Record<string, number> }>("SELECT detail FROM audit_events WHERE event_type = 'audit.import'");
    expect(imported?.detail).toMatchObject({ fromSeq: cut + 1, toSeq: newest.seq, rows: 7 });
    await app.audit.record(event(100));
    await app.audit.seal();
    expect((await verifyApp(app)).ok).toBe(true);
  });

  it('refuses an export whose rows were edited, and changes nothing', async () => {
    const { file, cut } = await exportedThenCut();
    const lines = readFileSync(file, 'utf8').split('\n');
    const i = lines.findIndex((l) => l.includes(`"seq":${cut + 2},`));
    lines[i] = (lines[i] as string).replace('"outcome":"success"', '"outcome":"denied"');
    writeFileSync(file, lines.join('\n'));
    const r = await cli(home, ['audit', 'import', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('does not verify');
    expect(r.stderr).toContain('nothing was imported');
    app = await openApp({ file: home.configFile, env: home.env, migrate: false });
    expect(await headSeq(app)).toBe(cut);
  });

  it('says there is nothing to import when the chain already holds the export', async () => {
    app = await populatedApp(home);
    await app.close();
    app = undefined;
    const file = join(tempDir('audit-export'), 'audit.jsonl');
    await cli(home, ['audit', 'export', '--format', 'jsonl', '--out', file]);
    const r = await cli(home, ['audit', 'import', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('nothing to import');
  });
});
