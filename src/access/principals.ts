/**
 * Principals: who may use ehrbench and in which roles (access-policies/principals.json,
 * schemas/principals.schema.json). A person is identified by a client certificate (common name and
 * the fingerprint of the CA that issued it) when talking to the daemon, or by the operating-system
 * account in local mode. Unknown means no access.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync, writeFileSync, renameSync } from 'node:fs';
import { readJsonFile, validateOrThrow } from '../schema';
import { UserError } from '../errors';
import type { Actor } from '../identity';
import type { PrincipalRole } from '../policy';

export type { PrincipalRole };

export interface Principal {
  id: string;
  displayName?: string;
  roles: PrincipalRole[];
  status: 'active' | 'disabled';
  certificates?: { commonName: string; issuerFingerprint: string }[];
  localUser?: string;
}

export interface PrincipalDirectory {
  file: string;
  principals: Principal[];
  byCertificate(commonName: string, issuerFingerprint: string): Principal | undefined;
  byLocalUser(user: string): Principal | undefined;
  get(id: string): Principal | undefined;
}

export function loadPrincipals(file: string): PrincipalDirectory {
  if (!existsSync(file)) throw new UserError('policy.principals-missing', `${file}: no principals file; run "${commandPrefix()} init" or create it (schemas/principals.schema.json)`);
  const { principals } = validateOrThrow<{ principals: Principal[] }>('principals.schema.json', readJsonFile(file, 'policy.invalid'), file, 'policy.invalid');
  const ids = new Set<string>();
  const users = new Set<string>();
  principals.forEach((p, i) => {
    if (ids.has(p.id)) throw new UserError('policy.invalid', `${file}: /principals/${i}/id: duplicate principal "${p.id}"`);
    ids.add(p.id);
    if (p.localUser) {
      if (users.has(p.localUser)) throw new UserError('policy.invalid', `${file}: /principals/${i}/localUser: "${p.localUser}" is mapped twice`);
      users.add(p.localUser);
    }
  });
  const active = (p: Principal | undefined) => (p && p.status === 'active' ? p : undefined);
  return {
    file,
    principals,
    byCertificate: (cn, issuer) => active(principals.find((p) => p.certificates?.some((c) => c.commonName === cn && c.issuerFingerprint === issuer))),
    byLocalUser: (user) => active(principals.find((p) => p.localUser === user)),
    get: (id) => active(principals.find((p) => p.id === id)),
  };
}

/** Writes the principals file atomically after validating it. */
export function savePrincipals(file: string, principals: Principal[]): void {
  validateOrThrow('principals.schema.json', { principals }, file, 'policy.invalid');
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ principals }, null, 2) + '\n', { mode: 0o644 });
  renameSync(tmp, file);
}

/** The actor a principal is when acting in `role`; undefined when the principal does not hold it. */
export function actAs(p: Principal, role: PrincipalRole, authMethod: Actor['authMethod']): Actor | undefined {
  return p.roles.includes(role) ? { principal: p.id, role, authMethod } : undefined;
}
