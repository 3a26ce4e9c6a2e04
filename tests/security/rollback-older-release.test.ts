/**
 * Rolling an upgrade back must not hide lost work (issue 29). Releases before the witness history
 * read only `audit-witness.json`, one checkpoint; this release kept appending to `audit-witness.jsonl`
 * alone, so a site that restored its pre-upgrade dump and ran the older release passed that release's
 * check with ~200 events gone. Every seal now also writes the older file, in the older release's format
 * (what its readWitness parses: pretty JSON of statement and signature), until the site sets
 * audit.legacyWitness to false.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { LEGACY_WITNESS_FILE, readWitnessHistory, WITNESS_FILE } from '../../src/audit';
import { main } from '../../src/cli/main';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

let home: TestHome;
beforeAll(async () => {
  home = await makeHome();
});
afterAll(() => home.cleanup());

async function sealSomeEvents(n: number): Promise<void> {
  const app = await openApp({ file: home.configFile, env: home.env });
  for (let i = 0; i < n; i++) {
    await app.audit.record({ type: 'run.request', action: 'C', outcome: 'success', rule: 'tier.public', actor: { principal: 'alice', role: 'researcher', authMethod: 'mtls' } });
  }
  await app.close(); // seals
}

/** The witness as the release before the history format read it (src/audit/checkpoint.ts of a6a78d7). */
function olderReleaseReads(file: string): { checkpointId: number; seq: number; headHash: string } {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as { statement: string; signature: string };
  expect(typeof raw.signature).toBe('string');
  return JSON.parse(raw.statement);
}

it('every seal also writes the older release witness with the newest checkpoint, and verify counts one witness per folder', async () => {
  await sealSomeEvents(3);
  await sealSomeEvents(2);
  const dir = join(home.home, 'audit');
  const history = readWitnessHistory(join(dir, WITNESS_FILE));
  const newest = history.at(-1)!.checkpoint.statement;
  expect(olderReleaseReads(join(dir, LEGACY_WITNESS_FILE))).toMatchObject({ checkpointId: newest.checkpointId, seq: newest.seq, headHash: newest.headHash });

  let out = '';
  process.exitCode = undefined;
  const code = await main(['audit', 'verify'], { stdout: (t) => void (out += t), stderr: () => undefined, env: home.env });
  process.exitCode = undefined;
  expect(code).toBe(0);
  expect(out).toMatch(/ 1 witness file\(s\), row MACs checked\n$/);
});

it('stops writing it once the site says it will not roll back (audit.legacyWitness false)', async () => {
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  config.audit = { ...config.audit, legacyWitness: false };
  writeFileSync(home.configFile, JSON.stringify(config, null, 2));
  const legacy = join(home.home, 'audit', LEGACY_WITNESS_FILE);
  const before = readFileSync(legacy, 'utf8');
  await sealSomeEvents(2);
  expect(readFileSync(legacy, 'utf8')).toBe(before);
  const history = readWitnessHistory(join(home.home, 'audit', WITNESS_FILE));
  expect(history.at(-1)!.checkpoint.statement.checkpointId).toBeGreaterThan(olderReleaseReads(legacy).checkpointId);
});

it('a folder left with only the older file is checked against it, and verify says the history is missing', async () => {
  rmSync(join(home.home, 'audit', WITNESS_FILE));
  let out = '';
  let err = '';
  process.exitCode = undefined;
  const code = await main(['audit', 'verify'], { stdout: (t) => void (out += t), stderr: (t) => void (err += t), env: home.env });
  process.exitCode = undefined;
  expect(out).toMatch(/^audit trail intact: /);
  expect(code).toBe(0);
  expect(err).toContain(`holds only ${LEGACY_WITNESS_FILE} (one checkpoint), no ${WITNESS_FILE} (the history): checked against that checkpoint`);
});
