/**
 * `ehrbench db status` lists what an upgrade of the site still needs (issue 29): pending migrations,
 * a configuration without database.backend, a witness folder without its history, revocations an
 * older release made that are not in the ledger outside the store; and "nothing left to do" once done.
 * Each step is undone the way deploy/README.md says, and disappears from the list. On both stores.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { LEGACY_WITNESS_FILE, WITNESS_FILE } from '../../src/audit';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { REVOCATION_LEDGER_FILE } from '../../src/identity';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

async function upgradeLines(home: TestHome): Promise<string[]> {
  let out = '';
  const io: Io = { stdout: (t) => void (out += t), stderr: () => undefined, env: home.env };
  process.exitCode = undefined;
  expect(await main(['db', 'status'], io)).toBe(0);
  process.exitCode = undefined;
  return out.split('\n').filter((l) => l.startsWith('upgrade: '));
}

describe.each(backends())('what an upgrade still needs (%s)', (backend) => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome(backend);
  });
  afterAll(() => home.cleanup());

  it('names each step left with what does it, and nothing once all are done', async () => {
    // A site as an older release left it: seals made, the store migrated by the older daemon.
    const app = await openApp({ file: home.configFile, env: home.env });
    await app.audit.seal();
    // A revocation the older release made: in the store only.
    await app.db.query("INSERT INTO revoked_certificates (revocation_id, issuer_fingerprint, serial, principal, reason, revoked_by) VALUES ($1, $2, '*', 'bob', 'left', 'carol')", [
      randomUUID(),
      'cd'.repeat(32),
    ]);
    await app.close();
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    const pinned = config.database;
    config.database = { embeddedDir: pinned.embeddedDir };
    writeFileSync(home.configFile, JSON.stringify(config, null, 2));
    const audit = join(home.home, 'audit');
    renameSync(join(audit, WITNESS_FILE), join(audit, 'history.away'));

    const before = await upgradeLines(home);
    expect(before).toEqual([
      expect.stringMatching(/^upgrade: .*config\.json has no database\.backend; add "backend": "postgres" \(with urlEnv or urlFile\) or "embedded"/),
      expect.stringMatching(new RegExp(`^upgrade: 1 witness folder\\(s\\) hold only ${LEGACY_WITNESS_FILE.replace('.', '\\.')}, no ${WITNESS_FILE.replace('.', '\\.')}: .*; start the daemon`)),
      expect.stringMatching(/^upgrade: 1 revocation\(s\) in the store are not in the ledger outside it .*; start the daemon \(or run any command that writes\)/),
    ]);

    // The steps: pin the store; start a process that writes (it seals and fills the ledger).
    config.database = pinned;
    writeFileSync(home.configFile, JSON.stringify(config, null, 2));
    const writer = await openApp({ file: home.configFile, env: home.env });
    await writer.audit.record({ type: 'run.request', action: 'C', outcome: 'success', rule: 'tier.public', actor: { principal: 'alice', role: 'researcher', authMethod: 'mtls' } });
    await writer.close();
    expect(readFileSync(join(audit, REVOCATION_LEDGER_FILE), 'utf8')).toContain('"principal":"bob"');
    expect(await upgradeLines(home)).toEqual(['upgrade: nothing left to do']);
  });
});
