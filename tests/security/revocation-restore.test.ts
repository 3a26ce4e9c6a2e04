/**
 * A restore must not bring a revoked certificate back (issue 29). Every revocation is written, before
 * the store holds it, to the ledger in the witness folders; a store that lost it (an older backup) gets
 * it back, with its own audit event, before a process that acts does anything; a revocation that
 * cannot reach the ledger is refused and the store holds nothing of it. On both stores.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { REVOCATION_LEDGER_FILE, Revocations } from '../../src/identity';
import { backends, tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

const ISSUER = 'ab'.repeat(32);
/** A certificate of alice's, issued before anything here was revoked. */
const laptop = { issuerFingerprint: ISSUER, serial: '4a01', issuedAt: new Date('2026-01-01T00:00:00Z') };

/** What an older backup looks like to this table: the row is gone (its no-delete trigger set aside, as a restore does not fire it). */
async function loseRevocations(app: App): Promise<void> {
  await app.db.query('ALTER TABLE revoked_certificates DISABLE TRIGGER revoked_certificates_no_delete');
  await app.db.query('DELETE FROM revoked_certificates');
  await app.db.query('ALTER TABLE revoked_certificates ENABLE TRIGGER revoked_certificates_no_delete');
}

describe.each(backends())('revocations outlive a restore (%s)', (backend) => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome(backend);
  });
  afterAll(() => home.cleanup());

  it('a revocation is in the ledger; a store that lost it gets it back, audited, before anything is done', async () => {
    let app = await openApp({ file: home.configFile, env: home.env });
    await new Revocations(app.db).revokeAll(ISSUER, 'alice', 'lost laptop', 'carol', app.config.audit.witnessDirs);
    const ledger = readFileSync(join(home.home, 'audit', REVOCATION_LEDGER_FILE), 'utf8')
      .trim()
      .split('\n');
    expect(ledger).toHaveLength(1);
    expect(JSON.parse(ledger[0] as string)).toMatchObject({ issuerFingerprint: ISSUER, serial: '*', principal: 'alice', revokedBy: 'carol' });
    expect(await new Revocations(app.db).isRevoked(laptop, 'alice')).toBe(true);

    await loseRevocations(app);
    expect(await new Revocations(app.db).isRevoked(laptop, 'alice')).toBe(false);
    await app.close();

    // A command that only reads changes nothing (it cannot record); the next process that acts puts it back.
    app = await openApp({ file: home.configFile, env: home.env, migrate: false });
    expect(await new Revocations(app.db).isRevoked(laptop, 'alice')).toBe(false);
    await app.close();
    app = await openApp({ file: home.configFile, env: home.env });
    try {
      expect(await new Revocations(app.db).isRevoked(laptop, 'alice')).toBe(true);
      const events = await app.db.query<{ rule: string; actor_principal: string; detail: { principal: string; revokedBy: string } }>(
        "SELECT rule, actor_principal, detail FROM audit_events WHERE event_type = 'pki.revoke' ORDER BY seq",
      );
      expect(events).toEqual([
        expect.objectContaining({ rule: 'pki.revoke.reinstated', actor_principal: 'service:ehrbench', detail: expect.objectContaining({ principal: 'alice', revokedBy: 'carol' }) }),
      ]);
    } finally {
      await app.close();
    }
    // Once back, it is not put back again.
    app = await openApp({ file: home.configFile, env: home.env });
    const again = await app.db.query("SELECT seq FROM audit_events WHERE event_type = 'pki.revoke'");
    await app.close();
    expect(again).toHaveLength(1);
  });

  it('a revocation that cannot be written outside the store is refused, naming the file, and the store holds nothing of it', async () => {
    const app = await openApp({ file: home.configFile, env: home.env });
    try {
      const notAFolder = join(tempDir('ledger'), 'witness');
      writeFileSync(notAFolder, 'a file where the witness folder should be');
      const before = await app.db.query('SELECT revocation_id FROM revoked_certificates');
      await expect(new Revocations(app.db).revokeAll(ISSUER, 'bob', 'left', 'carol', [notAFolder])).rejects.toThrow(
        `${join(notAFolder, REVOCATION_LEDGER_FILE)}: the revocation cannot be written outside the store`,
      );
      expect(await app.db.query('SELECT revocation_id FROM revoked_certificates')).toEqual(before);
    } finally {
      await app.close();
    }
  });
});
