/**
 * A site PKI for hospitals without one (`ehrbench pki init|issue`): a CA, the daemon's server
 * certificate, and a client certificate per principal with its key and a PKCS#12 bundle. Files live
 * in the data directory's pki/ folder; private keys and bundle passwords with mode 0600.
 */
import { commandPrefix } from '../command-prefix';
import { X509Certificate, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import forge from 'node-forge';
import { UserError } from '../errors';
import { createCa, issueCertificate, type KeyAndCert } from './pki';

export interface SitePki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
}

export function sitePkiPaths(dir: string): SitePki {
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    caKey: join(dir, 'ca.key.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key.pem'),
  };
}

/** sha256 of a certificate's DER, lower-case hex: how principals name the CA that issued them. */
export function certificateFingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();
}

export interface InitPkiResult {
  created: string[];
  kept: string[];
  caFingerprint: string;
}

/** Creates the CA and the daemon's server certificate if missing (never replaces a CA). */
export function initSitePki(dir: string, names: { dnsNames?: string[]; ipAddresses?: string[] } = {}): InitPkiResult {
  const p = sitePkiPaths(dir);
  const created: string[] = [];
  const kept: string[] = [];
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (existsSync(p.caCert) && existsSync(p.caKey)) kept.push(p.caCert, p.caKey);
  else {
    const ca = createCa('ehrbench site CA');
    writeFileSync(p.caKey, ca.keyPem, { mode: 0o600 });
    writeFileSync(p.caCert, ca.certPem, { mode: 0o644 });
    created.push(p.caCert, p.caKey);
  }
  if (existsSync(p.serverCert) && existsSync(p.serverKey)) kept.push(p.serverCert, p.serverKey);
  else {
    const server = issueCertificate(loadCa(dir), {
      commonName: names.dnsNames?.[0] ?? 'localhost',
      dnsNames: names.dnsNames ?? ['localhost', hostname()],
      ipAddresses: names.ipAddresses ?? ['127.0.0.1'],
      usage: 'server',
      days: 397,
    });
    writeFileSync(p.serverKey, server.keyPem, { mode: 0o600 });
    writeFileSync(p.serverCert, server.certPem, { mode: 0o644 });
    created.push(p.serverCert, p.serverKey);
  }
  return { created, kept, caFingerprint: certificateFingerprint(readFileSync(p.caCert, 'utf8')) };
}

export function loadCa(dir: string): KeyAndCert {
  const p = sitePkiPaths(dir);
  if (!existsSync(p.caCert) || !existsSync(p.caKey)) throw new UserError('pki.no-ca', `${dir}: no site CA; run "${commandPrefix()} pki init" first`);
  return { certPem: readFileSync(p.caCert, 'utf8'), keyPem: readFileSync(p.caKey, 'utf8') };
}

export interface IssuedClient {
  certFile: string;
  keyFile: string;
  p12File: string;
  p12PasswordFile: string;
  serial: string;
  issuerFingerprint: string;
}

/** A client certificate made in memory, not yet on disk: its issuance is audited before it is written. */
export interface PreparedClient extends IssuedClient {
  certPem: string;
  keyPem: string;
  p12: Buffer;
  p12Password: string;
}

/** How one file's bytes reach the disk; tests substitute one that fails like a full disk. */
export type WriteClientFile = (path: string, data: string | Buffer, mode: number) => void;

/** `wx`: a temporary file of another issuance is never overwritten. */
const writeExclusive: WriteClientFile = (path, data, mode) => writeFileSync(path, data, { mode, flag: 'wx' });

/** Issues a client certificate (CN = principal id, OU = role) with its key and a PKCS#12 bundle, in memory. */
export function prepareClientCertificate(dir: string, principal: string, role: string, days = 365, notBefore?: Date): PreparedClient {
  const ca = loadCa(dir);
  const issued = issueCertificate(ca, { commonName: principal, organizationalUnit: role, usage: 'client', days, ...(notBefore ? { notBefore } : {}) });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = join(dir, 'clients', `${principal}-${stamp}`);
  const password = randomBytes(18).toString('base64url');
  const p12 = forge.pkcs12.toPkcs12Asn1(forge.pki.privateKeyFromPem(issued.keyPem), [forge.pki.certificateFromPem(issued.certPem), forge.pki.certificateFromPem(ca.certPem)], password, {
    algorithm: 'aes256',
    friendlyName: principal,
  });
  return {
    certFile: `${base}.pem`,
    keyFile: `${base}.key.pem`,
    p12File: `${base}.p12`,
    p12PasswordFile: `${base}.p12.password`,
    serial: new X509Certificate(issued.certPem).serialNumber.toLowerCase(),
    issuerFingerprint: certificateFingerprint(ca.certPem),
    certPem: issued.certPem,
    keyPem: issued.keyPem,
    p12: Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'),
    p12Password: password,
  };
}

/**
 * Writes a prepared certificate's four files, all or none: each goes to a hidden temporary file first,
 * and only when all are written are they renamed into place. On any failure every temporary and
 * already renamed file of this issuance is removed, so no half of an issuance is left behind.
 */
export function writeClientCertificate(prepared: PreparedClient, writeFile: WriteClientFile = writeExclusive): IssuedClient {
  const { certPem, keyPem, p12, p12Password, ...issued } = prepared;
  const files: [string, string | Buffer, number][] = [
    [issued.certFile, certPem, 0o644],
    [issued.keyFile, keyPem, 0o600],
    [issued.p12File, p12, 0o600],
    [issued.p12PasswordFile, p12Password + '\n', 0o600],
  ];
  const suffix = randomBytes(6).toString('hex');
  const temp = (file: string) => join(dirname(file), `.${basename(file)}.${suffix}.partial`);
  const placed: string[] = [];
  try {
    mkdirSync(dirname(issued.certFile), { recursive: true, mode: 0o700 });
    const taken = files.find(([file]) => existsSync(file));
    if (taken) throw new UserError('pki.already-written', `${taken[0]} already exists; an issued certificate is never overwritten`);
    for (const [file, data, mode] of files) writeFile(temp(file), data, mode);
    for (const [file] of files) {
      renameSync(temp(file), file);
      placed.push(file);
    }
  } catch (err) {
    for (const [file] of files) rmSync(temp(file), { force: true });
    for (const file of placed) rmSync(file, { force: true });
    throw err;
  }
  return issued;
}

/** A client certificate found in the site PKI's clients folder, signed by the site CA. */
export interface ClientCertificateOnDisk {
  file: string;
  certPem: string;
  commonName: string;
  serial: string;
}

/**
 * The client certificates in the clients folder that the site CA signed (checked, not assumed from
 * the folder): what `ehrbench pki record-existing` may record. Keys, bundles and anything else are skipped.
 */
export function siteClientCertificates(dir: string): ClientCertificateOnDisk[] {
  const ca = new X509Certificate(loadCa(dir).certPem);
  const clients = join(dir, 'clients');
  if (!existsSync(clients)) return [];
  const found: ClientCertificateOnDisk[] = [];
  for (const name of readdirSync(clients).sort()) {
    if (!name.endsWith('.pem') || name.endsWith('.key.pem') || name.startsWith('.')) continue;
    const file = join(clients, name);
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(readFileSync(file));
    } catch {
      continue;
    }
    const commonName = /^CN=(.+)$/m.exec(cert.subject)?.[1];
    if (!commonName || !cert.checkIssued(ca) || !cert.verify(ca.publicKey)) continue;
    found.push({ file, certPem: cert.toString(), commonName, serial: cert.serialNumber.toLowerCase() });
  }
  return found;
}

/** Removes an issuance's files, e.g. when mapping it to its principal failed afterwards. */
export function removeClientCertificate(issued: IssuedClient): void {
  for (const file of [issued.certFile, issued.keyFile, issued.p12File, issued.p12PasswordFile]) rmSync(file, { force: true });
}

/**
 * Issues and writes a client certificate at once (tests and fixtures): no audit event and no issuance
 * record, so the daemon refuses it (identity.unknown-certificate) until it is recorded.
 */
export function issueClientCertificate(dir: string, principal: string, role: string, days = 365, notBefore?: Date): IssuedClient {
  return writeClientCertificate(prepareClientCertificate(dir, principal, role, days, notBefore));
}
