/**
 * Certificates with node-forge: a site CA, server certificates for the daemon and the loopback demo
 * model server, client certificates for principals. Keys are RSA-2048 (forge does not do EC certificates);
 * serials are random; every certificate states its key usages so TLS stacks check them.
 */
import { randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface KeyAndCert {
  certPem: string;
  keyPem: string;
}

export interface IssueOptions {
  commonName: string;
  /** Organisation and unit end up in the subject, e.g. the principal's role. */
  organizationalUnit?: string;
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client';
  days: number;
  /** Override the validity window start (tests make expired certificates with it). */
  notBefore?: Date;
}

const pki = forge.pki;

/**
 * A random 16-byte serial that is already a minimal positive DER INTEGER, since forge writes the hex
 * as given: a first byte with the top bit set would read as negative, and a first byte 0x00 before one
 * below 0x80 is padding OpenSSL refuses ("illegal padding"; 1 certificate in 256 when only the top bit
 * was cleared). Fixing the first byte to 0x40-0x7f keeps 126 random bits.
 */
export function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = 0x40 | ((bytes[0] ?? 0) & 0x3f);
  return bytes.toString('hex');
}

function validity(cert: forge.pki.Certificate, days: number, notBefore = new Date(Date.now() - 60_000)): void {
  cert.validity.notBefore = notBefore;
  cert.validity.notAfter = new Date(notBefore.getTime() + days * 86_400_000);
}

export function createCa(commonName: string, days = 3650): KeyAndCert {
  const keys = pki.rsa.generateKeyPair({ bits: 2048 });
  const cert = pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = randomSerial();
  validity(cert, days);
  const subject = [
    { name: 'commonName', value: commonName },
    { name: 'organizationName', value: 'ehrbench' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true }, { name: 'subjectKeyIdentifier' }]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: pki.certificateToPem(cert), keyPem: pki.privateKeyToPem(keys.privateKey) };
}

export function issueCertificate(ca: KeyAndCert, opts: IssueOptions): KeyAndCert {
  const keys = pki.rsa.generateKeyPair({ bits: 2048 });
  return { certPem: certifyPublicKey(ca, keys.publicKey, opts), keyPem: pki.privateKeyToPem(keys.privateKey) };
}

/**
 * A certificate for a public key whose private key ehrbench never sees (a certification request's):
 * everything in it but the key is ehrbench's, as for a certificate it issues with a key of its own.
 */
export function certifyPublicKey(ca: KeyAndCert, publicKey: forge.pki.PublicKey, opts: IssueOptions): string {
  const caCert = pki.certificateFromPem(ca.certPem);
  const caKey = pki.privateKeyFromPem(ca.keyPem);
  const cert = pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = randomSerial();
  validity(cert, opts.days, opts.notBefore);
  const subject: forge.pki.CertificateField[] = [{ name: 'commonName', value: opts.commonName }];
  if (opts.organizationalUnit) subject.push({ shortName: 'OU', value: opts.organizationalUnit });
  subject.push({ name: 'organizationName', value: 'ehrbench' });
  cert.setSubject(subject);
  cert.setIssuer(caCert.subject.attributes);
  const altNames = [...(opts.dnsNames ?? []).map((value) => ({ type: 2, value })), ...(opts.ipAddresses ?? []).map((ip) => ({ type: 7, ip }))];
  const extensions: Record<string, unknown>[] = [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: opts.usage === 'server', clientAuth: opts.usage === 'client' },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ];
  if (altNames.length > 0) extensions.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(extensions);
  cert.sign(caKey, forge.md.sha256.create());
  return pki.certificateToPem(cert);
}
