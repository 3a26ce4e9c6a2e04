/** RFC 8785 JSON canonicalisation (the `canonicalize` package, by the RFC's author) and its hash. */
import { hash } from 'node:crypto';
import canonicalizeJson from 'canonicalize';

export function canonicalJson(value: unknown): string {
  const text = canonicalizeJson(value);
  if (text === undefined) throw new Error('value cannot be canonicalised');
  return text;
}

export function sha256Hex(data: string | Buffer): string {
  // One-shot: the same digest as createHash().update().digest(), without a Hash object per call.
  return hash('sha256', data, 'hex');
}

export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
