/**
 * A site loses its keys folder (issue 29). What only reads still works (runs list, audit verify) and
 * says which files are lost and what can still be proved; every act is refused naming the files and
 * the escrow; init will not quietly make new keys over an existing trail; and once the keys are lost
 * for good, new keys with the old public key trusted verify the old trail (its rows' MACs said once
 * as not checkable, not as one finding per row). Through the CLI, on both stores.
 */
import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { backends, tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

async function cli(home: TestHome, args: string[]) {
  let stdout = '';
  let stderr = '';
  const io: Io = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), env: home.env };
  process.exitCode = undefined;
  const code = await main(args, io);
  process.exitCode = undefined;
  return { code, stdout, stderr };
}

describe.each(backends())('a lost keys folder (%s)', (backend) => {
  let home: TestHome;
  let keys: string;
  const escrow = tempDir('escrow');

  beforeAll(async () => {
    home = await makeHome(backend);
    keys = join(home.home, 'keys');
    const app = await openApp({ file: home.configFile, env: home.env });
    for (let i = 0; i < 5; i++) {
      await app.audit.record({ type: 'run.request', action: 'C', outcome: 'success', rule: 'tier.public', actor: { principal: 'alice', role: 'researcher', authMethod: 'mtls' } });
    }
    await app.close(); // seals: a checkpoint over every row, in the witness
    // The compliance office's escrow copy of the public key; then the folder is gone.
    cpSync(join(keys, 'audit-signing.pub.pem'), join(escrow, 'audit-signing.pub.pem'));
    rmSync(keys, { recursive: true, force: true });
  });
  afterAll(() => home.cleanup());

  it('read commands still work; verify names each lost file and what it still proves', async () => {
    const listed = await cli(home, ['runs', 'list']);
    expect(listed.stderr).not.toMatch(/ehrbench: /);
    expect(listed.code).toBe(0);

    // Without any public key, no checkpoint signature can be checked: a finding, and the way to the escrow.
    const blind = await cli(home, ['audit', 'verify']);
    expect(blind.code).toBe(1);
    expect(blind.stderr).toContain(
      `warning: ${keys} lacks audit-signing.pub.pem: checkpoint signatures can be checked only with a public key; give the one kept in the site's key escrow with --key FILE`,
    );

    // With the escrow's public key: intact; the lost MAC and signing keys said as what they cost.
    const proved = await cli(home, ['audit', 'verify', '--key', join(escrow, 'audit-signing.pub.pem')]);
    expect(proved.stdout).toMatch(/^audit trail intact: \d+ events \(seq 1\.\.\d+\), \d+ checkpoints \(newest at seq \d+\), 1 witness file\(s\), row MACs not checked/);
    expect(proved.code).toBe(0);
    expect(proved.stderr).toMatch(new RegExp(`warning: ${keys} lacks audit-mac.key: row MACs are not checked; rows up to the newest checkpoint \\(seq \\d+\\) are proven by its signature`));
    expect(proved.stderr).toContain(`warning: ${keys} lacks audit-signing.key.pem: nothing new can be recorded or sealed`);
    expect(proved.stderr).toMatch(/warning: this verification could not be recorded: .*lacks audit-signing\.key\.pem and audit-mac\.key/);
    expect(proved.stderr).not.toMatch(/^ehrbench: /m);
  });

  it('every act is refused, naming the lost file and the escrow; init will not make new keys over the trail', async () => {
    await expect(openApp({ file: home.configFile, env: home.env })).rejects.toThrow(/audit-mac\.key: audit MAC key cannot be read \(ENOENT\); restore the keys folder from the site's key escrow/);
    const init = await cli(home, ['init', '--home', home.home]);
    expect(init.code).not.toBe(0);
    expect(init.stderr).toMatch(
      /^ehrbench: .*audit-mac\.key and .*audit-signing\.key\.pem missing, and .*audit-witness\.jsonl shows this site has an audit trail: restore the keys folder from the site's key escrow .*init --new-audit-keys\n$/,
    );
    expect(existsSync(join(keys, 'audit-mac.key'))).toBe(false);
    expect(existsSync(join(keys, 'audit-signing.key.pem'))).toBe(false);
  });

  it('lost for good: new keys, the old public key trusted, the old rows proven by their checkpoints', async () => {
    expect((await cli(home, ['init', '--home', home.home, '--new-audit-keys'])).code).toBe(0);
    mkdirSync(join(keys, 'audit-trusted'), { recursive: true });
    cpSync(join(escrow, 'audit-signing.pub.pem'), join(keys, 'audit-trusted', 'before-the-loss.pem'));
    // The site records again, under the new keys.
    const app = await openApp({ file: home.configFile, env: home.env });
    await app.audit.record({ type: 'run.request', action: 'C', outcome: 'success', rule: 'tier.public', actor: { principal: 'alice', role: 'researcher', authMethod: 'mtls' } });
    await app.close();
    const verified = await cli(home, ['audit', 'verify']);
    expect(verified.stdout).toMatch(/^audit trail intact: .*row MACs checked\n$/);
    expect(verified.code).toBe(0);
    // Once, as a warning, not one "MAC key unknown" per row.
    expect(verified.stderr).toMatch(
      /^warning: \d+ rows \(seq 1\.\.\d+\) carry MAC key [0-9a-f]{16}, not held here \(lost, or kept on another host\): their MACs are not checked; signed checkpoints prove them through the hash chain\n$/m,
    );
    expect(verified.stdout + verified.stderr).not.toMatch(/MAC key [0-9a-f]+ unknown/);
  });
});
