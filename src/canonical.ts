/** RFC 8785 JSON canonicalisation (the `canonicalize` package, by the RFC's author) and its hash. */
import { createHash } from 'node:crypto';
import canonicalizeJson from 'canonicalize';

export function canonicalJson(value: unknown): string {
  const text = canonicalizeJson(value);
  if (text === undefined) throw new Error('value cannot be canonicalised');
  return text;
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
