/**
 * Client certificates for certification requests (`ehrbench pki sign`): the holder makes the key and
 * a PKCS#10 request on their own machine, and the private key never exists on the daemon's host.
 *
 * Only the request's public key is taken, and only once the request's signature verifies with it (the
 * requester holds the private key). Its subject, attributes and requested extensions are ignored: the
 * common name is the principal id ehrbench is told, the role is the unit, and the extensions are those
 * of every client certificate ehrbench issues (not a CA, client authentication only).
 */
import { createHash, X509Certificate, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import forge from 'node-forge';
import { UserError } from '../errors';
import { certifyPublicKey } from './pki';
import { certificateFingerprint, loadCa } from './site-pki';

/** A certificate made for a request, in memory: its issuance is audited before it is written. */
export interface PreparedSignedClient {
  certFile: string;
  serial: string;
  issuerFingerprint: string;
  /** sha256 of the certified public key (SubjectPublicKeyInfo, DER): which key the trail says was certified. */
  publicKeySha256: string;
  certPem: string;
}

const MIN_RSA_BITS = 2048;
const MAKE_ONE = 'make one with: openssl req -new -newkey rsa:3072 -nodes -keyout me.key.pem -out me.csr -subj /CN=me';

function refuse(file: string, why: string): never {
  throw new UserError('pki.csr-invalid', `${file}: ${why}`);
}

/** The request's public key, once its signature verifies with it; anything else is refused in one line. */
export function csrPublicKey(file: string, pem: string): forge.pki.rsa.PublicKey {
  if (!/-----BEGIN (NEW )?CERTIFICATE REQUEST-----/.test(pem)) refuse(file, `not a PEM certificate signing request (BEGIN CERTIFICATE REQUEST); ${MAKE_ONE}`);
  let csr: forge.pki.CertificateSigningRequest;
  try {
    // Older tools label the block NEW CERTIFICATE REQUEST; the content is the same.
    csr = forge.pki.certificationRequestFromPem(pem.replace(/NEW CERTIFICATE REQUEST/g, 'CERTIFICATE REQUEST'));
  } catch (err) {
    // forge reads RSA keys only; its message is ours to interpret, never to print (it may quote bytes).
    const notRsa = /OID is not RSA/.test((err as Error).message ?? '');
    refuse(file, notRsa ? `the request's key is not RSA (ehrbench's PKI signs RSA keys only); ${MAKE_ONE}` : `the certificate signing request cannot be parsed; ${MAKE_ONE}`);
  }
  let verified = false;
  try {
    verified = csr.verify();
  } catch {
    verified = false;
  }
  if (!verified) refuse(file, "the request's signature does not verify with its own key (altered, or not made with that key); make a new request");
  const key = csr.publicKey as forge.pki.rsa.PublicKey | null;
  const bits = key?.n?.bitLength() ?? 0;
  if (bits < MIN_RSA_BITS) refuse(file, `the request's key has ${bits} bits; ehrbench signs RSA keys of at least ${MIN_RSA_BITS} bits; ${MAKE_ONE}`);
  return key as forge.pki.rsa.PublicKey;
}

/**
 * A client certificate (CN = principal id, OU = role) for the request's key, in memory. Written to
 * `out`, or next to the certificates `pki issue` writes.
 */
export function prepareCsrCertificate(dir: string, request: { file: string; pem: string }, principal: string, role: string, days: number, out?: string): PreparedSignedClient {
  const publicKey = csrPublicKey(request.file, request.pem);
  const ca = loadCa(dir);
  const certPem = certifyPublicKey(ca, publicKey, { commonName: principal, organizationalUnit: role, usage: 'client', days });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const spki = Buffer.from(forge.asn1.toDer(forge.pki.publicKeyToAsn1(publicKey)).getBytes(), 'binary');
  return {
    certFile: out ?? join(dir, 'clients', `${principal}-${stamp}.pem`),
    serial: new X509Certificate(certPem).serialNumber.toLowerCase(),
    issuerFingerprint: certificateFingerprint(ca.certPem),
    publicKeySha256: createHash('sha256').update(spki).digest('hex'),
    certPem,
  };
}

/**
 * Writes the certificate without ever replacing a file: to a temporary file first, then linked into
 * place (a link fails if the name exists), so a failure leaves neither half a file nor someone else's
 * file removed.
 */
export function writeSignedCertificate(prepared: PreparedSignedClient): void {
  const file = prepared.certFile;
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.partial`);
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  if (existsSync(file)) throw new UserError('pki.already-written', `${file} already exists; an issued certificate is never overwritten (choose another --out)`);
  try {
    writeFileSync(temp, prepared.certPem, { mode: 0o644, flag: 'wx' });
    linkSync(temp, file);
  } finally {
    rmSync(temp, { force: true });
  }
}
