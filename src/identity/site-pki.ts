/**
 * A site PKI for hospitals without one (`ehrbench pki init|issue`): a CA, the daemon's server
 * certificate, and a client certificate per principal with its key and a PKCS#12 bundle. Files live
 * in the data directory's pki/ folder; private keys and bundle passwords with mode 0600.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
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
  if (!existsSync(p.caCert) || !existsSync(p.caKey)) throw new UserError('pki.no-ca', `${dir}: no site CA; run "ehrbench pki init" first`);
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

/** Issues a client certificate (CN = principal id, OU = role) with its key and a PKCS#12 bundle. */
export function issueClientCertificate(dir: string, principal: string, role: string, days = 365, notBefore?: Date): IssuedClient {
  const ca = loadCa(dir);
  const issued = issueCertificate(ca, { commonName: principal, organizationalUnit: role, usage: 'client', days, ...(notBefore ? { notBefore } : {}) });
  const clients = join(dir, 'clients');
  mkdirSync(clients, { recursive: true, mode: 0o700 });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = join(clients, `${principal}-${stamp}`);
  const password = randomBytes(18).toString('base64url');
  const p12 = forge.pkcs12.toPkcs12Asn1(forge.pki.privateKeyFromPem(issued.keyPem), [forge.pki.certificateFromPem(issued.certPem), forge.pki.certificateFromPem(ca.certPem)], password, {
    algorithm: 'aes256',
    friendlyName: principal,
  });
  const files = { certFile: `${base}.pem`, keyFile: `${base}.key.pem`, p12File: `${base}.p12`, p12PasswordFile: `${base}.p12.password` };
  writeFileSync(files.certFile, issued.certPem, { mode: 0o644 });
  writeFileSync(files.keyFile, issued.keyPem, { mode: 0o600 });
  writeFileSync(files.p12File, Buffer.from(forge.asn1.toDer(p12).getBytes(), 'binary'), { mode: 0o600 });
  writeFileSync(files.p12PasswordFile, password + '\n', { mode: 0o600 });
  return { ...files, serial: new X509Certificate(issued.certPem).serialNumber.toLowerCase(), issuerFingerprint: certificateFingerprint(ca.certPem) };
}
