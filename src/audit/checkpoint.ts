/**
 * Signed checkpoints: a statement "the chain of site S had head H at seq N at time T", signed with
 * Ed25519 by a key the database never sees. Each one is also appended to witness histories outside
 * the database (witness.ts), so that a chain cut short or rolled back, or an older checkpoint replayed
 * as the latest, disagrees with a witness.
 */
import { sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../canonical';
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
