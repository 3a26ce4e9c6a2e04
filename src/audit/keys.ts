/**
 * Audit keys, all kept in the data directory and never in the database:
 *   keys/audit-signing.key.pem   Ed25519 private key that signs checkpoints
 *   keys/audit-signing.pub.pem   its public key (what a compliance officer needs to verify offline)
 *   keys/audit-trusted/*.pem     earlier public keys still trusted after a rotation
 *   keys/audit-mac*.key          HMAC keys (hex) that MAC every row; audit-mac.key is the current one
 * Keys are identified by fingerprint (sha256 of the public key's SPKI, or of the MAC key), so they can
 * rotate: a record names the key that made it.
 */
import { commandPrefix } from '../command-prefix';
import { createHash, createPrivateKey, createPublicKey, type KeyObject, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors';

export const SIGNING_KEY_FILE = 'audit-signing.key.pem';
export const PUBLIC_KEY_FILE = 'audit-signing.pub.pem';
export const MAC_KEY_FILE = 'audit-mac.key';
export const TRUSTED_DIR = 'audit-trusted';

export function publicKeyFingerprint(key: KeyObject): string {
  return createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

export function macKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

function read(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError(
      'audit.key-missing',
      `${file}: ${what} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); restore the keys folder from the site's key escrow (deploy/README.md, "A lost keys folder"); "${commandPrefix()} init" makes keys for a new site only`,
    );
  }
}

export interface SigningKey {
  privateKey: KeyObject;
  publicKey: KeyObject;
  fingerprint: string;
}

export function loadSigningKey(keysDir: string): SigningKey {
  const file = join(keysDir, SIGNING_KEY_FILE);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(read(file, 'the audit signing key'));
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError('audit.key-invalid', `${file}: not a PEM private key`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new UserError('audit.key-invalid', `${file}: the audit signing key must be Ed25519`);
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, fingerprint: publicKeyFingerprint(publicKey) };
}

export function loadPublicKey(file: string): KeyObject {
  try {
    const key = createPublicKey(read(file, 'public key'));
    if (key.asymmetricKeyType !== 'ed25519') throw new Error('not ed25519');
    return key;
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError('audit.key-invalid', `${file}: not an Ed25519 public key in PEM`);
  }
}

/** Public keys a verifier trusts, by fingerprint: given files, or the data directory's keys. */
export function trustedKeys(keysDir: string | undefined, files: string[] = []): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const add = (k: KeyObject) => keys.set(publicKeyFingerprint(k), k);
  for (const f of files) add(loadPublicKey(f));
  if (files.length === 0 && keysDir) {
    if (existsSync(join(keysDir, PUBLIC_KEY_FILE))) add(loadPublicKey(join(keysDir, PUBLIC_KEY_FILE)));
    const dir = join(keysDir, TRUSTED_DIR);
    if (existsSync(dir)) for (const f of readdirSync(dir).filter((n) => n.endsWith('.pem'))) add(loadPublicKey(join(dir, f)));
  }
  return keys;
}

export interface MacKeys {
  current: { id: string; key: Buffer };
  all: Map<string, Buffer>;
}

function parseMacKey(file: string): Buffer {
  const hex = read(file, 'audit MAC key').trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new UserError('audit.key-invalid', `${file}: the audit MAC key must be 64 hex characters`);
  return Buffer.from(hex, 'hex');
}

export function loadMacKeys(keysDir: string): MacKeys {
  const key = parseMacKey(join(keysDir, MAC_KEY_FILE));
  const all = new Map<string, Buffer>([[macKeyId(key), key]]);
  for (const f of readdirSync(keysDir).filter((n) => /^audit-mac.*\.key$/.test(n) && n !== MAC_KEY_FILE)) {
    const k = parseMacKey(join(keysDir, f));
    all.set(macKeyId(k), k);
  }
  return { current: { id: macKeyId(key), key }, all };
}

/** MAC keys if this machine has them (a verifier elsewhere may have only the public key). */
export function loadMacKeysIfPresent(keysDir: string | undefined): Map<string, Buffer> | undefined {
  if (!keysDir || !existsSync(join(keysDir, MAC_KEY_FILE))) return undefined;
  return loadMacKeys(keysDir).all;
}

export function newMacKeyHex(): string {
  return randomBytes(32).toString('hex');
}

export function writeMacKey(file: string): void {
  writeFileSync(file, newMacKeyHex() + '\n', { mode: 0o600, flag: 'wx' });
}

/** The key files this process needs to record events and seal checkpoints that its keys folder lacks. */
export function missingRecordingKeys(keysDir: string): string[] {
  return [SIGNING_KEY_FILE, MAC_KEY_FILE].filter((f) => !existsSync(join(keysDir, f)));
}

/** What a lost keys folder costs, in one line: which files, what stops, and where the way back is. */
export function lostKeysReason(keysDir: string, missing: string[]): string {
  return `${keysDir} lacks ${missing.join(' and ')}: nothing can be recorded or sealed, so only reading works; restore the keys folder from the site's key escrow (deploy/README.md, "A lost keys folder")`;
}
