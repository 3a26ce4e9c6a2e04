/**
 * The export signing key: Ed25519, created by `ehrbench init` next to (and separate from) the audit key.
 *   keys/export-signing.key.pem   signs released bundles; never leaves the data directory
 *   keys/export-signing.pub.pem   what a recipient needs to run `ehrbench export verify`
 * A key is named by its fingerprint: sha256 of the public key's SPKI (DER), in lowercase hex.
 */
import { commandPrefix } from '../command-prefix';
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors';

export const EXPORT_SIGNING_KEY_FILE = 'export-signing.key.pem';
export const EXPORT_PUBLIC_KEY_FILE = 'export-signing.pub.pem';

export interface ExportSigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  fingerprint: string;
}

export function keyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

function readPem(file: string, what: string, hint: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError('export.key-missing', `${file}: ${what} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); ${hint}`);
  }
}

export function loadExportSigningKey(keysDir: string): ExportSigningKey {
  const file = join(keysDir, EXPORT_SIGNING_KEY_FILE);
  const pem = readPem(file, 'the export signing key', `run "${commandPrefix()} init" to create it (existing keys are kept)`);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch {
    throw new UserError('export.key-invalid', `${file}: not a PEM private key`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new UserError('export.key-invalid', `${file}: the export signing key must be Ed25519`);
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, fingerprint: keyFingerprint(publicKey) };
}

/** A recipient's copy of the public key (PEM, SPKI). */
export function loadExportPublicKey(file: string): KeyObject {
  const pem = readPem(file, 'the public key', "pass the site's export-signing.pub.pem with --key");
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new UserError('export.key-invalid', `${file}: not a public key in PEM`);
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new UserError('export.key-invalid', `${file}: not an Ed25519 public key`);
  return key;
}
