/** `ehrbench audit ...` for a compliance officer: verify (online and offline), export, tail, search. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { WITNESS_FILE } from '../../src/audit';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

function capture(env: NodeJS.ProcessEnv): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (t) => void (out += t), stderr: (t) => void (err += t), env, out: () => out, err: () => err };
}

async function cli(home: TestHome, args: string[]) {
  const io = capture(home.env);
  process.exitCode = undefined;
  const code = await main(args, io);
  process.exitCode = undefined;
  return { code, stdout: io.out(), stderr: io.err() };
}

let home: TestHome;

beforeAll(async () => {
  home = await makeHome();
  const app = await openApp({ file: home.configFile, env: home.env });
  const actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' } as const;
  for (let i = 0; i < 12; i++) {
    await app.audit.record({
      type: 'run.request',
      action: 'C',
      outcome: i % 4 === 0 ? 'denied' : 'success',
      rule: 'tier.public',
      actor,
      subject: { runId: `run-${i % 3}`, benchmarkId: 'medec', tier: 'public' },
    });
  }
  await app.close();
});
afterAll(() => home.cleanup());

describe('ehrbench audit', () => {
  it('verify exits 0 on an intact trail and says what it checked', async () => {
    const r = await cli(home, ['audit', 'verify']);
    expect(r.code).toBe(0);
    // The first start's four policy.change events (config, site data, endpoints, principals), the 12 above, this verify.
    expect(r.stdout).toMatch(/^audit trail intact: 17 events \(seq 1\.\.17\), \d+ checkpoints \(newest at seq 16\), 1 witness file\(s\), row MACs checked\n$/);
  });

  it('verify --threads: a whole number from 1 to 32, for the store on this host; anything else is refused in one line, exit 2', async () => {
    expect((await cli(home, ['audit', 'verify', '--threads', '1'])).stdout).toMatch(/^audit trail intact: /);
    for (const bad of ['0', '2.5', '33', 'many']) {
      const r = await cli(home, ['audit', 'verify', '--threads', bad]);
      expect({ bad, code: r.code, stdout: r.stdout }).toEqual({ bad, code: 2, stdout: '' });
      expect(r.stderr).toMatch(/^[^\n]*--threads must be a whole number from 1 to 32[^\n]*\n$/);
    }
    const offline = await cli(home, ['audit', 'verify', '--threads', '2', '--export', join(tempDir('threads'), 'none.jsonl')]);
    expect(offline.code).toBe(2);
    expect(offline.stderr).toMatch(/--threads is for verifying the store on this host; not with --export or --server/);
  });

  it('records every read of the trail, and verify records itself', async () => {
    await cli(home, ['audit', 'search', '--run', 'run-1']);
    const r = await cli(home, ['audit', 'search', '--type', 'audit.read', '--json']);
    const reads = JSON.parse(r.stdout) as { event_type: string; actor_role: string; detail: Record<string, unknown> }[];
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(reads.every((e) => e.event_type === 'audit.read' && e.actor_role === 'auditor')).toBe(true);
    expect(reads[0]?.detail).toEqual({ runId: 'run-1' });
    const verifies = JSON.parse((await cli(home, ['audit', 'search', '--type', 'audit.verify', '--json'])).stdout) as unknown[];
    expect(verifies.length).toBeGreaterThanOrEqual(1);
  });

  it('search filters by actor, type and run', async () => {
    const r = await cli(home, ['audit', 'search', '--actor', 'alice', '--run', 'run-2', '--json']);
    const found = JSON.parse(r.stdout) as { run_id: string; actor_principal: string }[];
    expect(found).toHaveLength(4);
    expect(found.every((e) => e.run_id === 'run-2' && e.actor_principal === 'alice')).toBe(true);
  });

  it('exports JSON lines that verify offline with only the public key, and detects an edited export', async () => {
    const dir = tempDir('audit-export');
    const file = join(dir, 'audit.jsonl');
    expect((await cli(home, ['audit', 'export', '--format', 'jsonl', '--out', file])).code).toBe(0);
    const pub = join(home.home, 'keys', 'audit-signing.pub.pem');
    // A verifier elsewhere: no database, no MAC key, no config; only the export and the public key.
    const offline = capture({ PATH: process.env.PATH });
    expect(await main(['audit', 'verify', '--export', file, '--key', pub, '--witness', join(home.home, 'audit', WITNESS_FILE)], offline)).toBe(0);
    expect(offline.out()).toMatch(/^audit trail intact: \d+ events/);

    const lines = readFileSync(file, 'utf8').split('\n');
    const edited = lines.map((l) => (l.includes('"seq":4,') ? l.replace('"outcome":"success"', '"outcome":"denied"') : l)).join('\n');
    const editedFile = join(dir, 'edited.jsonl');
    require('node:fs').writeFileSync(editedFile, edited);
    const bad = capture({ PATH: process.env.PATH });
    process.exitCode = undefined;
    await main(['audit', 'verify', '--export', editedFile, '--key', pub], bad);
    expect(process.exitCode).toBe(1);
    process.exitCode = undefined;
    expect(bad.out()).toBe('seq 4: row_hash mismatch: a field of this row was changed\n');
  });

  it('verifies an export offline with a witness copied after it: the witness is said to be newer than the export, not a truncated tail', async () => {
    const file = join(tempDir('audit-export-later'), 'audit.jsonl');
    expect((await cli(home, ['audit', 'export', '--format', 'jsonl', '--out', file])).code).toBe(0);
    // The site goes on after the export: more events, a new checkpoint in the witness.
    const app = await openApp({ file: home.configFile, env: home.env });
    await app.audit.record({ type: 'run.request', action: 'C', outcome: 'success', rule: 'tier.public', actor: { principal: 'alice', role: 'researcher', authMethod: 'mtls' } });
    await app.audit.seal();
    await app.close();
    const pub = join(home.home, 'keys', 'audit-signing.pub.pem');
    const offline = capture({ PATH: process.env.PATH });
    process.exitCode = undefined;
    const code = await main(['audit', 'verify', '--export', file, '--key', pub, '--witness', join(home.home, 'audit', WITNESS_FILE)], offline);
    process.exitCode = undefined;
    expect(code).toBe(0);
    expect(offline.out()).toMatch(/^audit trail intact: \d+ events/);
    expect(offline.err()).toMatch(
      /^warning: seq \d+: witness .* holds checkpoint \d+ \(seq \d+\), newer than this export \(its newest is checkpoint \d+ \(seq \d+\), its chain ends at seq \d+\): the witness was copied after the export was taken/m,
    );
    expect(offline.err()).not.toMatch(/tail truncated|checkpoints removed/);
  });

  it('exports CSV and FHIR AuditEvent', async () => {
    const csv = await cli(home, ['audit', 'export', '--format', 'csv', '--until', '2999-01-01']);
    const rows = csv.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^seq,recorded_at,event_type,action,outcome,rule,reason,actor_principal/);
    expect(rows.length).toBeGreaterThan(12);
    const fhir = JSON.parse((await cli(home, ['audit', 'export', '--format', 'fhir'])).stdout) as {
      resourceType: string;
      entry: { resource: { resourceType: string; action: string; outcome: string; subtype: { code: string }[]; agent: { requestor: boolean }[] } }[];
    };
    expect(fhir.resourceType).toBe('Bundle');
    const first = fhir.entry.find((e) => e.resource.subtype[0]?.code === 'run.request')?.resource;
    expect(first).toMatchObject({ resourceType: 'AuditEvent', action: 'C', outcome: '4', subtype: [{ code: 'run.request' }], agent: [{ requestor: true }] });
  });

  it('rejects a bad time filter in one line', async () => {
    const r = await cli(home, ['audit', 'export', '--since', 'yesterday-ish']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('ehrbench: --since must be a date or ISO-8601 time, e.g. 2026-11-01 or 2026-11-01T08:00:00Z\n');
  });
});
