/**
 * Certificate problems say what they are (issue 17, item 6), through the real binary: an expired
 * client certificate, one of another CA and a missing --ca each get one line naming the file and what
 * to do, not "cannot reach the daemon". The daemon refuses at the handshake what its client CAs do not
 * verify, before any HTTP byte is read, and logs (CN, issuer fingerprint, reason code; no request
 * data) and counts each refusal. `pki issue --days` is a whole number of at least 1.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import { Agent, fetch } from 'undici';
import { createCa, issueCertificate } from '../../src/identity/pki';
import { certificateFingerprint } from '../../src/identity/site-pki';
import { tempDir } from '../helpers/db';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The binary, asynchronously: the daemon lives in this process and must keep answering. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'ehrbench.js'), ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A call that never becomes an HTTP exchange: the error undici reports, or the status if it did. */
async function attempt(t: TestDaemon, id: Partial<Identity>): Promise<string> {
  const agent = new Agent({ connect: { ca: t.ca, ...(id.cert ? { cert: id.cert, key: id.key } : {}), servername: 'localhost' } });
  try {
    const res = await fetch(`https://localhost:${t.daemon.port}/v1/whoami`, { dispatcher: agent });
    return `HTTP ${res.status}`;
  } catch (err) {
    return String((err as { cause?: { code?: string } }).cause?.code ?? 'error');
  } finally {
    await agent.close();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The daemon's log entries of handshake refusals (winston writes the file asynchronously). */
async function refusalLog(t: TestDaemon, count: number): Promise<Record<string, unknown>[]> {
  const file = t.app.config.logging.file;
  for (let i = 0; i < 50; i++) {
    let lines: Record<string, unknown>[] = [];
    try {
      lines = readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.message === 'server.tls-refused');
    } catch {
      // not written yet
    }
    if (lines.length >= count) return lines;
    await sleep(100);
  }
  return [];
}

async function refusals(t: TestDaemon, reason: string): Promise<number> {
  const text = (await t.call('ivan', 'GET', '/metrics')).json as string;
  const line = text.split('\n').find((l) => l.startsWith(`ehrbench_tls_handshake_refusals_total{reason="${reason}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('certificate problems through the binary', () => {
  let t: TestDaemon;
  let server: string;
  let expired: Identity;
  let foreign: { certFile: string; keyFile: string };
  const dir = tempDir('cli-certs');
  const otherCa = createCa('Another hospital CA');

  beforeAll(async () => {
    t = await startTestDaemon({ workers: 0 });
    server = `https://localhost:${t.daemon.port}`;
    expired = await t.issue('alice', { notBefore: new Date(Date.now() - 3 * 86_400_000), days: 1 });
    const cert = issueCertificate(otherCa, { commonName: 'alice', usage: 'client', days: 30 });
    foreign = { certFile: join(dir, 'alice-other.pem'), keyFile: join(dir, 'alice-other.key.pem') };
    writeFileSync(foreign.certFile, cert.certPem);
    writeFileSync(foreign.keyFile, cert.keyPem, { mode: 0o600 });
  });
  afterAll(() => t.close());

  const whoami = (id: { certFile: string; keyFile: string }, ca?: string) => cli(['whoami', '--server', server, '--cert', id.certFile, '--key', id.keyFile, ...(ca ? ['--ca', ca] : [])]);

  it('still works with a valid certificate', async () => {
    const r = await whoami(t.ids.alice as Identity, t.caFile);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('alice');
  });

  it('says that the certificate expired, when, and what to do', async () => {
    const r = await whoami(expired, t.caFile);
    expect(r.code).toBe(1);
    const day = /^\d{4}-\d{2}-\d{2}/.exec(new Date(Date.now() - 2 * 86_400_000).toISOString())?.[0];
    expect(r.stderr).toMatch(new RegExp(`^ehrbench: ${expired.certFile}: your certificate expired on ${day} \\d{2}:\\d{2} UTC; ask the site's IT for a new one\\n$`));
    expect(r.stderr).not.toMatch(/cannot reach|UND_ERR/);
  });

  it("says that the certificate is not issued by this site's CA, naming its issuer", async () => {
    const r = await whoami(foreign, t.caFile);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `ehrbench: ${foreign.certFile}: your certificate is not issued by this site's CA (Another hospital CA); use the certificate the site issued you, or ask the site's IT for one\n`,
    );
  });

  it("says that the key is not the certificate's, before any connection (not 'cannot reach the daemon')", async () => {
    const alice = t.ids.alice as Identity;
    const r = await whoami({ certFile: alice.certFile, keyFile: foreign.keyFile }, t.caFile);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: ${foreign.keyFile} is not the key of ${alice.certFile}; give the .key.pem made with that certificate (or the certificate issued for this key)\n`);
  });

  it('says to pass --ca when the daemon is not trusted', async () => {
    const r = await whoami(t.ids.alice as Identity);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: the daemon's certificate at ${server} is not trusted: pass --ca <site CA file> (pki/ca.pem of the daemon's data directory, or EHRBENCH_CA)\n`);
    // A CA file that did not issue the daemon's certificate is named.
    const wrong = join(dir, 'other-ca.pem');
    writeFileSync(wrong, otherCa.certPem);
    const w = await whoami(t.ids.alice as Identity, wrong);
    expect(w.code).toBe(1);
    expect(w.stderr).toBe(`ehrbench: ${wrong}: the daemon's certificate at ${server} is not issued by this CA: pass --ca <site CA file> (pki/ca.pem of the daemon's data directory, or EHRBENCH_CA)\n`);
  });

  it('refuses unverified certificates at the handshake, and logs and counts each with its reason', async () => {
    const before = { expired: await refusals(t, 'expired'), unknown: await refusals(t, 'unknown-ca'), none: await refusals(t, 'no-certificate') };
    const denialsBefore = await t.app.db.query("SELECT 1 FROM audit_events WHERE event_type = 'access.denied'");
    // No HTTP answer at all (not a 403): nothing of the request was read.
    expect(await attempt(t, expired)).toBe('UND_ERR_SOCKET');
    expect(await attempt(t, { cert: readFileSync(foreign.certFile, 'utf8'), key: readFileSync(foreign.keyFile, 'utf8') })).toBe('UND_ERR_SOCKET');
    expect(await attempt(t, {})).toBe('UND_ERR_SOCKET');
    expect(await attempt(t, t.ids.alice as Identity)).toBe('HTTP 200');
    expect(await refusals(t, 'expired')).toBe(before.expired + 1);
    expect(await refusals(t, 'unknown-ca')).toBe(before.unknown + 1);
    expect(await refusals(t, 'no-certificate')).toBe(before.none + 1);
    expect(await t.app.db.query("SELECT 1 FROM audit_events WHERE event_type = 'access.denied'")).toHaveLength(denialsBefore.length);

    const logged = await refusalLog(t, 3);
    const site = certificateFingerprint(t.ca);
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 'warn', reasonCode: 'expired', errorCode: 'CERT_HAS_EXPIRED', commonName: 'alice', issuerFingerprint: site, address: '127.0.0.1' }),
        expect.objectContaining({ reasonCode: 'unknown-ca', errorCode: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', commonName: 'alice', issuerName: 'Another hospital CA' }),
        expect.objectContaining({ reasonCode: 'no-certificate' }),
      ]),
    );
    // Only the allowlisted fields: no subject, no certificate, no request data.
    for (const l of logged)
      for (const k of Object.keys(l)) expect(['level', 'message', 'timestamp', 'reasonCode', 'errorCode', 'commonName', 'issuerFingerprint', 'issuerName', 'address']).toContain(k);
  });

  it('refuses a renegotiation on an accepted connection (a second certificate cannot replace the first)', async () => {
    const alice = t.ids.alice as Identity;
    const socket = tls.connect({ host: '127.0.0.1', port: t.daemon.port, servername: 'localhost', ca: t.ca, cert: alice.cert, key: alice.key, maxVersion: 'TLSv1.2' });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', () => resolve());
      socket.once('error', reject);
    });
    const outcome = await new Promise<string>((resolve) => {
      socket.once('close', () => resolve('closed'));
      socket.once('error', () => resolve('closed'));
      socket.renegotiate({ rejectUnauthorized: true }, (err) => resolve(err ? 'refused' : 'renegotiated'));
      // The daemon reads the renegotiation's hello when the client sends on.
      socket.write('GET /v1/whoami HTTP/1.1\r\nHost: localhost\r\n\r\n');
    });
    socket.destroy();
    expect(outcome).not.toBe('renegotiated');
  });
});

describe('pki issue --days', () => {
  const home = tempDir('cli-days');
  it.each([['0'], ['-3'], ['1.5'], ['many']])('refuses --days %s in one line', async (days) => {
    const r = await cli(['pki', 'issue', '--principal', 'zoe', '--role', 'researcher', '--days', days], { EHRBENCH_HOME: home });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ehrbench: --days must be a whole number of days, at least 1 \(got [^\n]*\)\n$/);
  });
});
