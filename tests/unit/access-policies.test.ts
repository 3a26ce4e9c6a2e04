/** The documented example policies stay valid against their schemas, and the rules read them as documented. */
import { join } from 'node:path';
import { loadPrincipals } from '../../src/access';
import { ROOT } from '../helpers/paths';

describe('access-policies/principals.example.json', () => {
  const dir = loadPrincipals(join(ROOT, 'access-policies', 'principals.example.json'));
  it('identifies people by certificate (common name and issuing CA) or local account', () => {
    const issuer = '3f1a9c0e5b7d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a0c2e4b6d8f0a';
    expect(dir.byCertificate('jdoe', issuer)?.roles).toEqual(['researcher']);
    expect(dir.byCertificate('jdoe', 'f'.repeat(64))).toBeUndefined();
    expect(dir.byLocalUser('ehrbench')?.id).toBe('it-ops');
  });
  it('gives a disabled principal no access', () => {
    expect(dir.get('former-fellow')).toBeUndefined();
    expect(dir.principals.find((p) => p.id === 'former-fellow')).toBeDefined();
  });
});
