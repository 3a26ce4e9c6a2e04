/**
 * Audit review over the daemon (issue 17, item 8), through the real binary: `audit tail | search |
 * verify | export` take --server like `runs` and `export`, so an auditor needs no shell on the host,
 * no database URL and no keys. Every read is audited by the daemon (audit.read / audit.verify, rule
 * *.api, actor = the certificate's principal); a researcher is refused by role.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { backends, tempDir } from '../helpers/db';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The binary, asynchronously (the daemon lives in this process), with no data directory of its own. */
function cli(args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'ehrbench.js'), ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: tempDir('no-home') }, timeout: 90_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe.each(backends())('audit review over --server (%s)', (backend) => {
  let t: TestDaemon;
  let as: (who: string) => string[];

  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 0 });
    const actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' } as const;
    for (let i = 0; i < 6; i++) {
      await t.app.audit.record({ type: 'run.request', action: 'C', outcome: 'success', rule: 'tier.public', actor, subject: { runId: `run-${i}`, benchmarkId: 'medec', tier: 'public' } });
    }
    await t.app.audit.record({ type: 'run.cancel', action: 'U', outcome: 'success', rule: 'rbac.cancel-not-allowed', actor, subject: { runId: 'run-1' } });
    as = (who) => {
      const id = t.ids[who] as Identity;
      return ['--server', `https://localhost:${t.daemon.port}`, '--cert', id.certFile, '--key', id.keyFile, '--ca', t.caFile];
    };
  });
  afterAll(() => t.close());

  const reads = (rule: string) => t.app.db.query<{ actor_principal: string; detail: Record<string, unknown> }>('SELECT actor_principal, detail FROM audit_events WHERE rule = $1 ORDER BY seq', [rule]);

  it('tail prints the newest events', async () => {
    const r = await cli(['audit', 'tail', '--n', '3', ...as('erin')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = r.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^seq\s+recorded \(UTC\)\s+event/);
    expect(rows).toHaveLength(1 + 1 + 3); // header, rule, three events
    expect(r.stdout).toContain('run.cancel');
    const json = await cli(['audit', 'tail', '--n', '2', '--json', ...as('erin')]);
    const events = JSON.parse(json.stdout) as { seq: number; event_type: string }[];
    expect(events).toHaveLength(2);
    expect(events[1]!.seq).toBeGreaterThan(events[0]!.seq);
    expect((await reads('audit.read.api')).filter((e) => e.actor_principal === 'erin').length).toBeGreaterThanOrEqual(2);
  });

  it('search --type run.request filters, and the read is audited with its filter', async () => {
    const r = await cli(['audit', 'search', '--type', 'run.request', '--json', ...as('erin')]);
    expect(r.code).toBe(0);
    const events = JSON.parse(r.stdout) as { event_type: string; run_id: string }[];
    expect(events).toHaveLength(6);
    expect(new Set(events.map((e) => e.event_type))).toEqual(new Set(['run.request']));
    const run = await cli(['audit', 'search', '--run', 'run-1', '--limit', '5', '--json', ...as('carol')]);
    expect((JSON.parse(run.stdout) as { event_type: string }[]).map((e) => e.event_type)).toEqual(['run.request', 'run.cancel']);
    expect((await reads('audit.read.api')).some((e) => e.actor_principal === 'erin' && e.detail.eventType === 'run.request')).toBe(true);
  });

  it('export writes the file, verifiable offline with the public key alone', async () => {
    const out = join(tempDir('audit-remote'), 'trail.jsonl');
    const r = await cli(['audit', 'export', '--out', out, ...as('erin')]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^exported \d+ audit events to /m);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; event_type?: string });
    expect(lines.filter((l) => l.kind === 'event' && l.event_type === 'run.request')).toHaveLength(6);
    expect(lines.some((l) => l.kind === 'checkpoint')).toBe(true);
    const offline = await cli(['audit', 'verify', '--export', out, '--key', join(t.home.home, 'keys', 'audit-signing.pub.pem'), '--no-mac']);
    expect(offline.stdout).toMatch(/^audit trail intact: /);
    expect(offline.code).toBe(0);
    const csv = join(tempDir('audit-remote'), 'trail.csv');
    const c = await cli(['audit', 'export', '--format', 'csv', '--type', 'run.request', '--out', csv, ...as('erin')]);
    expect(c.code).toBe(0);
    expect(readFileSync(csv, 'utf8').trim().split('\n')).toHaveLength(1 + 6);
    expect((await reads('audit.read.api')).some((e) => e.detail.format === 'csv' && e.detail.eventType === 'run.request')).toBe(true);
  });

  it('verify reports the chain status as the daemon verifies it', async () => {
    const r = await cli(['audit', 'verify', '--json', ...as('erin')]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { ok: boolean; events: number; macChecked: boolean; findings: unknown[] };
    expect(report).toMatchObject({ ok: true, macChecked: true, findings: [] });
    // The daemon keeps what it found as the trail's next event (audit.verify.outcome): the report counts
    // every event before that one, and the kept outcome names the same count.
    const [outcome] = await t.app.db.query<{ seq: string; events: number }>(
      "SELECT seq::text AS seq, (detail->>'events')::int AS events FROM audit_events WHERE rule = 'audit.verify.outcome' AND actor_principal = 'erin' ORDER BY seq DESC LIMIT 1",
    );
    expect(outcome?.events).toBe(report.events);
    const [before] = await t.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE seq < $1', [outcome?.seq]);
    expect(report.events).toBe(before?.n);
    expect((await t.app.db.query("SELECT 1 FROM audit_events WHERE rule = 'audit.verify.api' AND actor_principal = 'erin'")).length).toBeGreaterThan(0);
    const text = await cli(['audit', 'verify', ...as('erin')]);
    expect(text.stdout).toMatch(/^audit trail intact: \d+ events/);
  });

  it('refuses options that only a verification on this machine can use', async () => {
    const r = await cli(['audit', 'verify', '--witness', 'w.jsonl', ...as('erin')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ehrbench: --witness is for a verification on this machine; over --server the daemon verifies with its own keys and witnesses\n$/);
  });

  it('refuses a researcher by role', async () => {
    for (const cmd of [['tail'], ['search', '--type', 'run.request'], ['verify'], ['export', '--out', join(tempDir('audit-remote'), 'x.jsonl')]]) {
      const r = await cli(['audit', ...cmd, ...as('alice')]);
      expect(r.code).toBe(3);
      expect(r.stderr).toMatch(/^ehrbench: denied by rule rbac\.[a-z-]+-required: [^\n]*\n$/);
      expect(r.stdout).toBe('');
    }
  });

  it('reports a tampered trail as the daemon finds it, with exit 1', async () => {
    await t.app.audit.seal();
    await t.app.db.transaction(async (tx) => {
      await tx.query('ALTER TABLE audit_events DISABLE TRIGGER USER');
      await tx.query("UPDATE audit_events SET outcome = 'denied' WHERE seq = 3");
      await tx.query('ALTER TABLE audit_events ENABLE TRIGGER USER');
    });
    const r = await cli(['audit', 'verify', ...as('erin')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^seq 3: /m);
    expect(existsSync(join(t.home.home, 'keys'))).toBe(true);
  });
});
