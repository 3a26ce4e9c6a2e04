/**
 * Client certificates are known by their issuance record (issue 15, item 8): `ehrbench pki issue`
 * records each certificate it issues (serial, fingerprint, principal, issue time), a blanket
 * revocation stops every certificate of the principal issued before it, whatever its validity start,
 * and a certificate of the site CA that ehrbench has no record of is refused. CAs the site declares
 * external (its own PKI) issue outside ehrbench: accepted without a record, revoked by validity start.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { createCa, issueCertificate, type KeyAndCert } from '../../src/identity/pki';
import { hostOperator } from '../../src/identity/actor';
import { certificateFingerprint, initSitePki, issueClientCertificate, loadCa } from '../../src/identity/site-pki';
import { backends } from '../helpers/db';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const identity = (k: KeyAndCert): Identity => ({ cert: k.certPem, key: k.keyPem, certFile: '', keyFile: '' });

describe.each(backends())('certificates and their issuance record (%s)', (backend) => {
  let t: TestDaemon;
  /** A CA the site declares external (its own PKI), and one that is trusted at TLS but not declared. */
  const external = createCa('hospital PKI');
  const undeclared = createCa('another CA');

  beforeAll(async () => {
    t = await startTestDaemon({
      backend,
      workers: 0,
      prepare: (home, config) => {
        const externalFile = join(home.home, 'hospital-ca.pem');
        const undeclaredFile = join(home.home, 'other-ca.pem');
        writeFileSync(externalFile, external.certPem);
        writeFileSync(undeclaredFile, undeclared.certPem);
        config.server.clientCaFiles = ['pki/ca.pem', undeclaredFile];
        config.server.externalClientCaFiles = [externalFile];
        // Two principals mapped to certificates of those CAs (the helper maps only its own).
        const file = join(home.home, 'access-policies', 'principals.json');
        const principals = JSON.parse(readFileSync(file, 'utf8'));
        principals.principals.push(
          { id: 'xena', roles: ['researcher'], status: 'active', certificates: [{ commonName: 'xena', issuerFingerprint: certificateFingerprint(external.certPem) }] },
          { id: 'yann', roles: ['researcher'], status: 'active', certificates: [{ commonName: 'yann', issuerFingerprint: certificateFingerprint(undeclared.certPem) }] },
        );
        writeFileSync(file, JSON.stringify(principals, null, 2));
      },
    });
  });
  afterAll(() => t.close());

  it('refuses after a blanket revocation a certificate issued before it but valid only from a later date', async () => {
    // Whole seconds: X.509 validity has no finer resolution.
    const notBefore = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3000);
    const early = await t.issue('bob', { notBefore });
    expect((await t.call('ivan', 'POST', '/v1/principals/bob/revoke', { reason: 'left the hospital' })).json).toEqual({ principal: 'bob', revoked: 1, stoppedRuns: [] });
    await sleep(notBefore.getTime() + 1000 - Date.now());
    const r = await t.call(early, 'GET', '/v1/whoami');
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('pki.certificate-revoked');
  });

  it('accepts a certificate issued after the revocation, at once', async () => {
    // Issued right after the revocation: its validity starts a minute earlier (clock skew), its issue time does not.
    const fresh = await t.issue('bob');
    const r = await t.call(fresh, 'GET', '/v1/whoami');
    expect(r.status).toBe(200);
    expect(r.json.principal).toBe('bob');
    expect((await t.call('bob', 'GET', '/v1/whoami')).json.rule).toBe('pki.certificate-revoked');
  });

  it('refuses a certificate of the site CA that ehrbench has no record of', async () => {
    // Minted with the CA key outside `ehrbench pki issue`: a valid chain, the right name, no record.
    const minted = issueCertificate(loadCa(join(t.home.home, 'pki')), { commonName: 'alice', organizationalUnit: 'researcher', usage: 'client', days: 30 });
    const r = await t.call(identity(minted), 'GET', '/v1/whoami');
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('identity.unknown-certificate');
    // The way out after an upgrade is record-existing, never declaring the site CA external.
    expect(r.json.message).toMatch(
      /run "(npx )?ehrbench pki record-existing" on the host; otherwise issue it with "(npx )?ehrbench pki issue" \(server\.externalClientCaFiles is for CAs outside the site, never the site CA\)/,
    );
    expect((await t.call('alice', 'GET', '/v1/whoami')).status).toBe(200);
  });

  it('refuses a certificate of a trusted CA that is not declared external and issued nothing ehrbench recorded', async () => {
    const cert = issueCertificate(undeclared, { commonName: 'yann', usage: 'client', days: 30 });
    const r = await t.call(identity(cert), 'GET', '/v1/whoami');
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('identity.unknown-certificate');
  });

  it('accepts a certificate of an external CA without a record, and revokes it by its validity start', async () => {
    const cert = identity(issueCertificate(external, { commonName: 'xena', usage: 'client', days: 30 }));
    expect((await t.call(cert, 'GET', '/v1/whoami')).json.principal).toBe('xena');
    expect((await t.call('carol', 'POST', '/v1/principals/xena/revoke', { reason: 'lost laptop' })).json).toEqual({ principal: 'xena', revoked: 1, stoppedRuns: [] });
    const r = await t.call(cert, 'GET', '/v1/whoami');
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('pki.certificate-revoked');
  });
});

function capture(env: NodeJS.ProcessEnv): Io & { out: () => string } {
  let out = '';
  return { stdout: (s) => void (out += s), stderr: () => undefined, env, out: () => out };
}

describe.each(backends())('ehrbench pki issue records the certificate (%s)', (backend) => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome(backend);
    initSitePki(join(home.home, 'pki'));
  });
  afterAll(() => home.cleanup());

  const cli = async (args: string[]) => {
    const io = capture(home.env);
    const code = await main(args, io);
    process.exitCode = undefined;
    return { code, stdout: io.out() };
  };
  const records = async (principal: string) => {
    const app = await openApp({ file: home.configFile, env: home.env });
    try {
      return await app.db.query<{ serial: string; issuer_fingerprint: string; fingerprint: string; issued_by: string; issued_at: Date }>(
        'SELECT serial, issuer_fingerprint, fingerprint, issued_by, issued_at FROM issued_certificates WHERE principal = $1',
        [principal],
      );
    } finally {
      await app.close();
    }
  };

  it('records serial, issuer, certificate fingerprint, issuer and issue time', async () => {
    const before = Date.now();
    const r = await cli(['pki', 'issue', '--principal', 'zoe', '--role', 'researcher', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { serial: string; issuerFingerprint: string; certFile: string };
    const rows = await records('zoe');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ serial: out.serial, issuer_fingerprint: out.issuerFingerprint, fingerprint: certificateFingerprint(readFileSync(out.certFile, 'utf8')) });
    expect(rows[0]?.issued_by).toMatch(/^local:/);
    expect(rows[0]?.issued_at.getTime()).toBeGreaterThanOrEqual(before - 5000);
  });

  it('records nothing when the pki.issue event cannot be recorded', async () => {
    const app = await openApp({ file: home.configFile, env: home.env });
    await app.db.query('CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()');
    await app.close();
    try {
      expect((await cli(['pki', 'issue', '--principal', 'zack', '--role', 'researcher'])).code).not.toBe(0);
    } finally {
      const again = await openApp({ file: home.configFile, env: home.env });
      await again.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events');
      await again.close();
    }
    expect(await records('zack')).toEqual([]);
  });

  it('records a certificate issued before records were kept, with the time of its own pki.issue event', async () => {
    const pkiDir = join(home.home, 'pki');
    const earlier = issueClientCertificate(pkiDir, 'olga', 'researcher');
    const minted = issueClientCertificate(pkiDir, 'sam', 'researcher'); // in the folder, but never announced
    const app = await openApp({ file: home.configFile, env: home.env });
    // The event `ehrbench pki issue` wrote for it back then.
    await app.audit.record({
      type: 'pki.issue',
      action: 'C',
      outcome: 'success',
      rule: 'pki.issue.host-operator',
      actor: hostOperator(),
      detail: { principal: 'olga', serial: earlier.serial, days: 365 },
    });
    const [event] = await app.db.query<{ recorded_at: string }>("SELECT recorded_at FROM audit_events WHERE event_type = 'pki.issue' AND detail->>'serial' = $1", [earlier.serial]);
    await app.close();
    const r = await cli(['pki', 'record-existing', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { recorded: unknown[]; withoutEvent: string[]; alreadyRecorded: number };
    expect(out.recorded).toEqual([{ principal: 'olga', serial: earlier.serial, issuedAt: event?.recorded_at }]);
    expect(out.withoutEvent).toEqual([minted.certFile]);
    expect(out.alreadyRecorded).toBe(1); // zoe's, recorded when `pki issue` issued it
    expect((await records('olga'))[0]?.issued_at.toISOString()).toBe(event?.recorded_at);
    expect(await records('sam')).toEqual([]);
  });
});
