/**
 * What a policy.change event says about the principals file (src/audit/policy-change.ts): per
 * principal a fingerprint of each field, so a role granted, a certificate mapped or an account
 * re-enabled is named, and the roles (and a disabled status) as facts. Ids and role names only: no
 * display name, no certificate fingerprint, no operating-system account name.
 */
import { canonicalHash } from '../canonical';
import type { PrincipalDirectory } from './principals';

type Entry = { fields: Record<string, string>; facts: Record<string, string> };

/** Short and stable (canonical JSON): tells that a field changed, says nothing of its value. */
const fingerprint = (value: unknown) => canonicalHash(value ?? null).slice(0, 16);

export function summarizePrincipals(directory: PrincipalDirectory): Map<string, Entry> {
  return new Map(
    directory.principals.map((p) => {
      const fields = {
        roles: [...p.roles].sort().join('/'),
        status: p.status,
        certificates: fingerprint(p.certificates ?? []),
        localUser: fingerprint(p.localUser),
        displayName: fingerprint(p.displayName),
      };
      const facts = { roles: p.roles.join('/'), ...(p.status === 'active' ? {} : { status: p.status }) };
      return [p.id, { fields, facts }];
    }),
  );
}
