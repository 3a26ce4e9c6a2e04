/**
 * Signed checkpoints: a statement "the chain of site S had head H at seq N at time T", signed with
 * Ed25519 by a key the database never sees. The newest one is also written to witness files outside
 * the database (the data directory, and optionally a folder owned by compliance), so that a chain cut
 * short, or an older checkpoint replayed as the latest, disagrees with the witness.
 */
import { sign, verify, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { canonicalJson } from '../canonical';
import { UserError } from '../errors';
import type { SigningKey } from './keys';

export interface CheckpointStatement {
  type: 'ehrbench.audit.checkpoint';
  version: 1;
  siteId: string;
  checkpointId: number;
  seq: number;
  headHash: string;
  signedAt: string;
  keyFingerprint: string;
}

export interface SignedCheckpoint {
  statement: CheckpointStatement;
  /** The exact canonical JSON that was signed. */
  statementText: string;
  /** base64 Ed25519 signature over statementText. */
  signature: string;
}

export function signCheckpoint(key: SigningKey, fields: Omit<CheckpointStatement, 'type' | 'version' | 'keyFingerprint'>): SignedCheckpoint {
  const statement: CheckpointStatement = { type: 'ehrbench.audit.checkpoint', version: 1, ...fields, keyFingerprint: key.fingerprint };
  const statementText = canonicalJson(statement);
  return { statement, statementText, signature: sign(null, Buffer.from(statementText), key.privateKey).toString('base64') };
}

/** Checks a checkpoint's signature with the trusted keys; returns the problem, or undefined. */
export function checkSignature(cp: SignedCheckpoint, trusted: Map<string, KeyObject>): string | undefined {
  let parsed: CheckpointStatement;
  try {
    parsed = JSON.parse(cp.statementText) as CheckpointStatement;
  } catch {
    return 'statement is not JSON';
  }
  if (canonicalJson(parsed) !== cp.statementText) return 'statement is not in canonical form';
  if (canonicalJson(parsed) !== canonicalJson(cp.statement)) return 'statement fields differ from the signed text';
  const key = trusted.get(parsed.keyFingerprint);
  if (!key) return `signed by unknown key fingerprint ${parsed.keyFingerprint.slice(0, 16)}`;
  let ok = false;
  try {
    ok = verify(null, Buffer.from(cp.statementText), key, Buffer.from(cp.signature, 'base64'));
  } catch {
    ok = false;
  }
  return ok ? undefined : 'signature does not verify';
}

export const WITNESS_FILE = 'audit-witness.json';

/**
 * Writes the checkpoint to each witness folder atomically (temp file, then rename). A witness only
 * moves forward: one holding a later checkpoint (from another writer) is kept.
 */
export function writeWitness(dirs: string[], cp: SignedCheckpoint): void {
  const text = JSON.stringify({ statement: cp.statementText, signature: cp.signature }, null, 2) + '\n';
  for (const dir of dirs) {
    const file = join(dir, WITNESS_FILE);
    if (existsSync(file)) {
      try {
        if (readWitness(file).statement.checkpointId >= cp.statement.checkpointId) continue;
      } catch {
        // An unreadable witness is replaced by a valid one.
      }
    }
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, text, { mode: 0o644 });
    renameSync(tmp, file);
  }
}

export function readWitness(file: string): SignedCheckpoint {
  let raw: { statement?: unknown; signature?: unknown };
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as typeof raw;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError('audit.witness-unreadable', `${file}: witness checkpoint ${code ? `cannot be read (${code})` : 'is not valid JSON'}`);
  }
  if (typeof raw.statement !== 'string' || typeof raw.signature !== 'string') {
    throw new UserError('audit.witness-invalid', `${file}: witness must hold "statement" and "signature" strings`);
  }
  let statement: CheckpointStatement;
  try {
    statement = JSON.parse(raw.statement) as CheckpointStatement;
  } catch {
    throw new UserError('audit.witness-invalid', `${file}: witness statement is not JSON`);
  }
  return { statement, statementText: raw.statement, signature: raw.signature };
}
