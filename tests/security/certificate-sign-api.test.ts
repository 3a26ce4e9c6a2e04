/**
 * POST /v1/certificates: an admin signs, through the API (the console's "Sign a certificate request"),
 * a certification request whose key was made on its holder's machine (here: in the test), with the
 * guarantees of `ehrbench pki sign`: only the request's public key is certified, under the principal's
 * id; the pki.issue event and the issuance record commit together before the answer; the principal is
 * mapped in principals.json with its policy.change event; no file of the certificate is written; and
 * the daemon accepts the returned certificate from the very next request. Anyone but an admin is
 * refused and nothing is recorded; a request that is not a validly signed CSR is a 400 naming the field.
 */
import { createPublicKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';
import { backends } from '../helpers/db';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

/** What the holder does on their own machine: an RSA key (node:crypto) and a request for it (node-forge), subject of their choosing. */
function holderRequest(commonName: string): { keyPem: string; csrPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  csr.setSubject([{ name: 'commonName', value: commonName }]);
  // Asks to be a CA: only the key is taken.
  csr.setAttributes([{ name: 'extensionRequest', extensions: [{ name: 'basicConstraints', cA: true, critical: true }] }]);
  csr.sign(key, forge.md.sha256.create());
  return { keyPem, csrPem: forge.pki.certificationRequestToPem(csr) };
}

/** The same request with one bit of its signature flipped (still well-formed DER). */
function withBadSignature(csrPem: string): string {
  const der = Buffer.from(csrPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  der[der.length - 1] = (der[der.length - 1] ?? 0) ^ 0x01;
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64.trim()}\n-----END CERTIFICATE REQUEST-----\n`;
}

const spki = (pem: string) => createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('hex');
const asIdentity = (keyPem: string, certPem: string): Identity => ({ cert: certPem, key: keyPem, certFile: '', keyFile: '' });

interface Signed {
  principal: string;
  certificatePem: string;
  serial: string;
  issuerFingerprint: string;
  publicKeySha256: string;
}

describe.each(backends())('signing a certification request through the API (%s)', (backend) => {
  let t: TestDaemon;
  let principalsFile: string;
  let clientsDir: string;

  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 0 });
    principalsFile = join(t.home.home, 'access-policies', 'principals.json');
    clientsDir = join(t.home.home, 'pki', 'clients');
  });
  afterAll(() => t.close());

  const issuedFor = (principal: string) =>
    t.app.db.query<{ serial: string; issued_by: string; fingerprint: string }>('SELECT serial, issued_by, fingerprint FROM issued_certificates WHERE principal = $1 ORDER BY issued_at', [principal]);
  const eventsFor = (principal: string) =>
    t.app.db.query<{ seq: string; event_type: string; rule: string; outcome: string; actor: string; detail: Record<string, unknown> }>(
      "SELECT seq, event_type, rule, outcome, actor_principal AS actor, detail FROM audit_events WHERE detail->>'principal' = $1 AND event_type IN ('pki.issue', 'policy.change') ORDER BY seq",
      [principal],
    );
  const mapped = (principal: string) => (JSON.parse(readFileSync(principalsFile, 'utf8')).principals as { id: string; roles: string[] }[]).find((p) => p.id === principal);

  it("certifies the request's key under the principal's id, records and maps it, writes no file, and the daemon accepts it at once", async () => {
    const holder = holderRequest('mallory-admin');
    const filesBefore = readdirSync(clientsDir).sort();
    const r = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'zoe', role: 'researcher', days: 30, csr: holder.csrPem });
    expect(r.status).toBe(200);
    const out = r.json as Signed;
    expect(Object.keys(out).sort()).toEqual(['certificatePem', 'issuerFingerprint', 'principal', 'publicKeySha256', 'serial']);
    expect(out.principal).toBe('zoe');

    const cert = new X509Certificate(out.certificatePem);
    const ca = new X509Certificate(t.ca);
    expect(cert.checkIssued(ca)).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.subject).toMatch(/^CN=zoe$/m);
    expect(cert.subject).not.toMatch(/mallory/);
    expect(cert.ca).toBe(false);
    expect(spki(cert.toString())).toBe(spki(holder.keyPem));
    expect(cert.serialNumber.toLowerCase()).toBe(out.serial);
    expect(Math.round((Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / 86_400_000)).toBe(30);

    // Recorded before the answer: the issuance record by the admin, its pki.issue event, the mapping's event.
    const issued = await issuedFor('zoe');
    expect(issued).toEqual([{ serial: out.serial, issued_by: 'ivan', fingerprint: expect.any(String) }]);
    const events = await eventsFor('zoe');
    expect(events.map((e) => [e.event_type, e.rule, e.outcome, e.actor])).toEqual([
      ['pki.issue', 'pki.sign.api', 'success', 'ivan'],
      ['policy.change', 'policy.principals.api', 'success', 'ivan'],
    ]);
    expect(events[0]?.detail).toMatchObject({ principal: 'zoe', serial: out.serial, days: 30, publicKeySha256: out.publicKeySha256 });
    // The daemon took the new principals file only once it was recorded (its own policy.change of the reload).
    const reload = await t.app.db.query<{ seq: string; detail: Record<string, unknown> }>(
      "SELECT seq, detail FROM audit_events WHERE event_type = 'policy.change' AND rule = 'policy.file.loaded' AND detail->>'trigger' = 'reload' ORDER BY seq DESC LIMIT 1",
    );
    expect(reload[0]?.detail).toMatchObject({ policy: 'principals', added: 'zoe' });
    expect(Number(reload[0]?.seq)).toBeGreaterThan(Number(events[1]?.seq));

    expect(mapped('zoe')).toMatchObject({ roles: ['researcher'], status: 'active', certificates: [{ commonName: 'zoe', issuerFingerprint: out.issuerFingerprint }] });
    // The daemon wrote no file of the certificate (the holder gets it from the answer).
    expect(readdirSync(clientsDir).sort()).toEqual(filesBefore);

    // The very next request with the holder's key and the returned certificate is zoe's.
    const who = await t.call(asIdentity(holder.keyPem, out.certificatePem), 'GET', '/v1/whoami');
    expect(who.status).toBe(200);
    expect(who.json).toMatchObject({ principal: 'zoe', roles: ['researcher'], authMethod: 'mtls' });
  });

  it('signs for an existing principal without a role (roles unchanged) and refuses a new principal without one, naming the field', async () => {
    const holder = holderRequest('bob');
    const r = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'bob', days: 10, csr: holder.csrPem });
    expect(r.status).toBe(200);
    expect(mapped('bob')?.roles).toEqual(['researcher']);
    const who = await t.call(asIdentity(holder.keyPem, (r.json as Signed).certificatePem), 'GET', '/v1/whoami');
    expect(who.json).toMatchObject({ principal: 'bob', roles: ['researcher'] });

    const before = readFileSync(principalsFile, 'utf8');
    const refused = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'quinn', days: 10, csr: holderRequest('quinn').csrPem });
    expect(refused.status).toBe(400);
    expect(refused.json).toEqual({ error: 'request.invalid', message: 'role: principal quinn is new; give its role' });
    expect(await issuedFor('quinn')).toEqual([]);
    expect(await eventsFor('quinn')).toEqual([]);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
  });

  it('will not give an admin a compliance officer or an admin to act as: those are signed on the host, audited, nothing made', async () => {
    const before = readFileSync(principalsFile, 'utf8');
    const carolBefore = await issuedFor('carol');
    const ivanBefore = await issuedFor('ivan');
    const bobBefore = await issuedFor('bob');
    const cases: [string, Record<string, unknown>, string][] = [
      ['a new compliance officer', { principal: 'cora', role: 'compliance' }, 'compliance'],
      ['a new admin', { principal: 'adam', role: 'admin' }, 'admin'],
      // An existing officer's name with the admin's own key: the admin could approve and release as carol.
      ['an existing compliance officer', { principal: 'carol' }, 'compliance'],
      ['the compliance role added to a researcher', { principal: 'bob', role: 'compliance' }, 'compliance'],
      ['the compliance role added to the admin', { principal: 'ivan', role: 'compliance' }, 'admin and compliance'],
    ];
    for (const [what, fields, roles] of cases) {
      const principal = fields.principal as string;
      const r = await t.call('ivan', 'POST', '/v1/certificates', { ...fields, days: 30, csr: holderRequest(principal).csrPem });
      expect({ what, status: r.status }).toEqual({ what, status: 403 });
      expect(r.json).toMatchObject({ error: 'policy.denied', rule: 'pki.sign.api.role-on-host' });
      expect((r.json as { message: string }).message).toContain(`carry the ${roles} role`);
      expect((r.json as { message: string }).message).toContain(`ehrbench pki sign --csr FILE --principal ${principal}`);
    }
    const denied = await t.app.db.query<{ actor: string; principal: string }>(
      "SELECT actor_principal AS actor, detail->>'principal' AS principal FROM audit_events WHERE event_type = 'access.denied' AND rule = 'pki.sign.api.role-on-host' ORDER BY seq",
    );
    expect(denied).toEqual(cases.map(([, f]) => ({ actor: 'ivan', principal: f.principal })));
    expect(await issuedFor('cora')).toEqual([]);
    expect(await issuedFor('adam')).toEqual([]);
    expect(await issuedFor('carol')).toEqual(carolBefore);
    expect(await issuedFor('ivan')).toEqual(ivanBefore);
    expect(await issuedFor('bob')).toEqual(bobBefore);
    expect(await eventsFor('cora')).toEqual([]);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
  });

  it('refuses anyone but an admin with rbac.admin-required, audited, and records or maps nothing', async () => {
    const before = readFileSync(principalsFile, 'utf8');
    for (const who of ['alice', 'carol', 'erin', 'rita']) {
      const r = await t.call(who, 'POST', '/v1/certificates', { principal: 'yves', role: 'admin', days: 30, csr: holderRequest('yves').csrPem });
      expect(r.status).toBe(403);
      expect(r.json).toMatchObject({ error: 'policy.denied', rule: 'rbac.admin-required' });
    }
    const denied = await t.app.db.query<{ actor: string }>(
      "SELECT actor_principal AS actor FROM audit_events WHERE event_type = 'access.denied' AND rule = 'rbac.admin-required' AND reason LIKE 'signing a certificate request%' ORDER BY seq",
    );
    expect(denied.map((d) => d.actor)).toEqual(['alice', 'carol', 'erin', 'rita']);
    expect(await issuedFor('yves')).toEqual([]);
    expect(await eventsFor('yves')).toEqual([]);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
  });

  it('answers 400 naming the field for a request that is not a validly signed CSR, or a body off its schema, and records nothing', async () => {
    const before = readFileSync(principalsFile, 'utf8');
    const good = holderRequest('uma').csrPem;
    const csrInvalid = 'pki.csr-invalid';
    const schema = 'request.invalid';
    const refusals: [unknown, string, RegExp][] = [
      [{ principal: 'uma', role: 'researcher', days: 30, csr: withBadSignature(good) }, csrInvalid, /^csr: the request's signature does not verify with its own key/],
      [{ principal: 'uma', role: 'researcher', days: 30, csr: 'hello, not a request' }, csrInvalid, /^csr: not a PEM certificate signing request/],
      [
        { principal: 'uma', role: 'researcher', days: 30, csr: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n' },
        csrInvalid,
        /^csr: the certificate signing request cannot be parsed/,
      ],
      [{ principal: 'uma', role: 'researcher', days: 30, csr: 'x'.repeat(16385) }, schema, /csr/],
      [{ principal: 'uma', role: 'researcher', days: 30 }, schema, /csr/],
      [{ principal: 'uma', role: 'researcher', days: 0, csr: good }, schema, /days/],
      [{ principal: 'uma', role: 'researcher', days: 826, csr: good }, schema, /days/],
      [{ principal: 'uma', role: 'researcher', days: 1.5, csr: good }, schema, /days/],
      [{ principal: 'Uma Smith', role: 'researcher', days: 30, csr: good }, schema, /principal/],
      [{ principal: 'uma', role: 'superuser', days: 30, csr: good }, schema, /role/],
      [{ principal: 'uma', role: 'researcher', days: 30, csr: good, commonName: 'uma' }, schema, /unknown field "commonName"/],
    ];
    for (const [body, code, message] of refusals) {
      const r = await t.call('ivan', 'POST', '/v1/certificates', body);
      expect([r.status, r.json?.error]).toEqual([400, code]);
      expect(r.json.message).toMatch(message);
      expect(r.json.message).not.toMatch(/\n|    at /);
    }
    expect(await issuedFor('uma')).toEqual([]);
    expect(await eventsFor('uma')).toEqual([]);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
  });

  it('maps every principal when admins sign at the same time', async () => {
    const holders = ['vera', 'walt', 'xia'].map((id) => ({ id, ...holderRequest(id) }));
    const answers = await Promise.all(holders.map((h) => t.call('ivan', 'POST', '/v1/certificates', { principal: h.id, role: 'auditor', days: 5, csr: h.csrPem })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const [i, h] of holders.entries()) {
      expect(mapped(h.id)?.roles).toEqual(['auditor']);
      const who = await t.call(asIdentity(h.keyPem, (answers[i]?.json as Signed).certificatePem), 'GET', '/v1/whoami');
      expect(who.json).toMatchObject({ principal: h.id, roles: ['auditor'] });
    }
  });

  it("answers 503 pki.signing-unavailable, in one line naming no server path, when the daemon cannot read the site CA's key", async () => {
    const keyFile = join(t.home.home, 'pki', 'ca.key.pem');
    const before = readFileSync(principalsFile, 'utf8');
    renameSync(keyFile, `${keyFile}.away`);
    try {
      const r = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'yara', role: 'researcher', days: 30, csr: holderRequest('yara').csrPem });
      expect(r.status).toBe(503);
      expect(r.json.error).toBe('pki.signing-unavailable');
      expect(r.json.message).toMatch(
        /^the daemon cannot read the site CA or its key, or sign with it \(pki\.no-ca\); sign the request on the host instead: ehrbench pki sign --csr FILE --principal yara$/,
      );
      expect(r.json.message).not.toContain(t.home.home);
    } finally {
      renameSync(`${keyFile}.away`, keyFile);
    }
    expect(await issuedFor('yara')).toEqual([]);
    expect(await eventsFor('yara')).toEqual([]);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
  });

  it('keeps the pki.issue event and the issuance record together: either store refusing leaves neither, and no mapping', async () => {
    const before = readFileSync(principalsFile, 'utf8');
    // The issuance record refused: the event of the same transaction is not kept either.
    await t.app.db.query("CREATE FUNCTION refuse_issued() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'issued store down'; END $$");
    await t.app.db.query('CREATE TRIGGER issued_store_down BEFORE INSERT ON issued_certificates FOR EACH ROW EXECUTE FUNCTION refuse_issued()');
    try {
      const r = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'zack', role: 'researcher', days: 30, csr: holderRequest('zack').csrPem });
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(JSON.stringify(r.json)).not.toMatch(/BEGIN CERTIFICATE|    at /);
    } finally {
      await t.app.db.query('DROP TRIGGER IF EXISTS issued_store_down ON issued_certificates');
    }
    expect(await issuedFor('zack')).toEqual([]);
    expect(await eventsFor('zack')).toEqual([]);
    // The audit trail refused: no issuance record either.
    await t.app.db.query('CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()');
    try {
      const r = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'zack', role: 'researcher', days: 30, csr: holderRequest('zack').csrPem });
      expect(r.status).toBe(503);
      expect(r.json.error).toBe('audit.unavailable');
      expect(JSON.stringify(r.json)).not.toMatch(/BEGIN CERTIFICATE/);
    } finally {
      await t.app.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events');
    }
    expect(await issuedFor('zack')).toEqual([]);
    expect(await eventsFor('zack')).toEqual([]);
    expect(readFileSync(principalsFile, 'utf8')).toBe(before);
  });
});
