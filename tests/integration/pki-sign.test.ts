/**
 * `ehrbench pki sign` (issue 17, item 7), through the real binary: the holder makes the key and the
 * certification request on their own machine (here: node-forge in the test), the site signs only the
 * request's public key under the principal's id, audits it like `pki issue` (the pki.issue event and
 * the issuance record before the file), maps it in principals.json, and the daemon accepts it for that
 * principal. A request whose signature does not verify is refused in one line.
 */
import { execFile } from 'node:child_process';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';
import { openApp } from '../../src/app';
import { startDaemon } from '../../src/server';
import { initSitePki } from '../../src/identity/site-pki';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const REFUSE_INSERTS = 'CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()';

/** What the holder does on their own machine: an RSA key and a request for it, with a subject of their choosing. */
function holderRequest(commonName: string): { keyPem: string; csrPem: string } {
  const keys = forge.pki.rsa.generateKeyPair({ bits: 2048 });
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = keys.publicKey;
  csr.setSubject([{ name: 'commonName', value: commonName }]);
  // Asks to be a CA: ehrbench takes the key and nothing else.
  csr.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'basicConstraints', cA: true, critical: true }] }]);
  csr.sign(keys.privateKey, forge.md.sha256.create());
  return { keyPem: forge.pki.privateKeyToPem(keys.privateKey), csrPem: forge.pki.certificationRequestToPem(csr) };
}

/** The same request with one bit of its signature flipped (still well-formed DER). */
function withBadSignature(csrPem: string): string {
  const der = Buffer.from(csrPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  der[der.length - 1] = (der[der.length - 1] ?? 0) ^ 0x01;
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64.trim()}\n-----END CERTIFICATE REQUEST-----\n`;
}

const spki = (pem: string) => createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('hex');

describe.each(backends())('ehrbench pki sign (%s)', (backend) => {
  let home: TestHome;
  let pkiDir: string;
  let principalsFile: string;
  const holder = holderRequest('mallory-admin');

  beforeAll(async () => {
    home = await makeHome(backend);
    pkiDir = join(home.home, 'pki');
    principalsFile = join(home.home, 'access-policies', 'principals.json');
    initSitePki(pkiDir);
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    config.server = { port: 8443, workers: 0 };
    writeFileSync(home.configFile, JSON.stringify(config, null, 2));
    writeFileSync(join(home.home, 'zoe.csr'), holder.csrPem);
  });
  afterAll(() => home.cleanup());

  const events = async () => {
    const app = await openApp({ file: home.configFile, env: home.env });
    try {
      return await app.db.query<{ rule: string; outcome: string; detail: Record<string, unknown> }>(
        "SELECT rule, outcome, detail FROM audit_events WHERE event_type = 'pki.issue' AND detail->>'principal' = 'zoe' ORDER BY seq",
      );
    } finally {
      await app.close();
    }
  };

  it('writes nothing and maps no one when the audit trail cannot record the pki.issue event', async () => {
    const before = readFileSync(principalsFile, 'utf8');
    const app = await openApp({ file: home.configFile, env: home.env });
    await app.db.query(REFUSE_INSERTS);
    await app.close();
    const out = join(home.home, 'refused.pem');
    try {
      const r = await cli(['pki', 'sign', '--csr', join(home.home, 'zoe.csr'), '--principal', 'zoe', '--role', 'researcher', '--out', out], home.env);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/the audit trail cannot record events/);
    } finally {
      const again = await openApp({ file: home.configFile, env: home.env });
      await again.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events');
      await again.close();
    }
    expect(existsSync(out)).toBe(false);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
    expect(await events()).toEqual([]);
  });

  it("certifies the request's key under the principal's id, signed by the site CA, audited and mapped", async () => {
    const r = await cli(['pki', 'sign', '--csr', join(home.home, 'zoe.csr'), '--principal', 'zoe', '--role', 'researcher', '--days', '30', '--json'], home.env);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { certFile: string; serial: string; issuerFingerprint: string; publicKeySha256: string };
    const cert = new X509Certificate(readFileSync(out.certFile));
    const ca = new X509Certificate(readFileSync(join(pkiDir, 'ca.pem')));
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subject).toMatch(/^CN=zoe$/m);
    expect(cert.subject).not.toMatch(/mallory/);
    expect(cert.ca).toBe(false);
    expect(spki(cert.toString())).toBe(spki(holder.keyPem));
    expect(cert.checkPrivateKey(createPrivateKey(holder.keyPem))).toBe(true);
    expect((new Date(cert.validTo).getTime() - Date.now()) / 86_400_000).toBeCloseTo(30, 0);
    // No key was made or written on this host.
    expect(existsSync(out.certFile.replace(/\.pem$/, '.key.pem'))).toBe(false);

    expect(await events()).toEqual([{ rule: 'pki.sign.host-operator', outcome: 'success', detail: { principal: 'zoe', serial: out.serial, days: 30, publicKeySha256: out.publicKeySha256 } }]);
    const principals = JSON.parse(readFileSync(principalsFile, 'utf8')) as { principals: { id: string; roles: string[]; certificates?: { commonName: string; issuerFingerprint: string }[] }[] };
    const zoe = principals.principals.find((p) => p.id === 'zoe');
    expect(zoe?.roles).toEqual(['researcher']);
    expect(zoe?.certificates).toEqual([{ commonName: 'zoe', issuerFingerprint: out.issuerFingerprint }]);

    // The daemon accepts it for zoe, with the key that never left the holder.
    const keyFile = join(home.home, 'zoe.key.pem');
    writeFileSync(keyFile, holder.keyPem, { mode: 0o600 });
    const app = await openApp({ file: home.configFile, env: home.env });
    const daemon = await startDaemon(app, { port: 0 });
    try {
      const w = await cli(['whoami', '--json', '--server', `https://localhost:${daemon.port}`, '--cert', out.certFile, '--key', keyFile, '--ca', join(pkiDir, 'ca.pem')], {
        HOME: process.env.HOME,
      });
      expect(w.stderr).toBe('');
      expect(w.code).toBe(0);
      expect(JSON.parse(w.stdout)).toMatchObject({ principal: 'zoe', roles: ['researcher'], authMethod: 'mtls' });
    } finally {
      await daemon.close();
      await app.close();
    }
  });

  // The daemon and the host command share the store: PostgreSQL only (an embedded store has one user).
  (backend === 'postgres' ? it : it.skip)('a running daemon accepts a certificate signed on the host from the next request', async () => {
    const app = await openApp({ file: home.configFile, env: home.env });
    const daemon = await startDaemon(app, { port: 0 });
    try {
      const yuri = holderRequest('yuri');
      writeFileSync(join(home.home, 'yuri.csr'), yuri.csrPem);
      writeFileSync(join(home.home, 'yuri.key.pem'), yuri.keyPem, { mode: 0o600 });
      const r = await cli(['pki', 'sign', '--csr', join(home.home, 'yuri.csr'), '--principal', 'yuri', '--role', 'researcher', '--days', '30', '--json'], home.env);
      expect(r.code).toBe(0);
      const { certFile } = JSON.parse(r.stdout) as { certFile: string };
      // At once: no wait for the daemon to notice principals.json changed.
      const w = await cli(['whoami', '--json', '--server', `https://localhost:${daemon.port}`, '--cert', certFile, '--key', join(home.home, 'yuri.key.pem'), '--ca', join(pkiDir, 'ca.pem')], {
        HOME: process.env.HOME,
      });
      expect(w.stderr).toBe('');
      expect(JSON.parse(w.stdout)).toMatchObject({ principal: 'yuri', roles: ['researcher'] });
    } finally {
      await daemon.close();
      await app.close();
    }
  });

  it('refuses a request whose signature does not verify, in one line, and records nothing', async () => {
    const file = join(home.home, 'altered.csr');
    writeFileSync(file, withBadSignature(holderRequest('yves').csrPem));
    const r = await cli(['pki', 'sign', '--csr', file, '--principal', 'yves', '--role', 'researcher'], home.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: ${file}: the request's signature does not verify with its own key (altered, or not made with that key); make a new request\n`);
    const principals = JSON.parse(readFileSync(principalsFile, 'utf8')) as { principals: { id: string }[] };
    expect(principals.principals.some((p) => p.id === 'yves')).toBe(false);
  });

  it('refuses what is not a request, in one line', async () => {
    const file = join(home.home, 'not-a.csr');
    writeFileSync(file, holder.keyPem);
    const r = await cli(['pki', 'sign', '--csr', file, '--principal', 'yves', '--role', 'researcher'], home.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^ehrbench: ${file}: not a PEM certificate signing request \\(BEGIN CERTIFICATE REQUEST\\); make one with: openssl req [^\\n]*\\n$`));
  });

  it('documents pki sign as the recommended way and pki issue as the convenience', async () => {
    const sign = await cli(['pki', 'sign', '--help'], { HOME: process.env.HOME });
    expect(sign.code).toBe(0);
    expect(sign.stdout).toMatch(/recommended: the key never leaves that machine/);
    const issue = await cli(['pki', 'issue', '--help'], { HOME: process.env.HOME });
    expect(issue.stdout).toMatch(/convenience: the key is made on this host/);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toMatch(/ehrbench pki sign --csr/);
  });
});
