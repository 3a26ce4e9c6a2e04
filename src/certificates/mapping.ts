/**
 * What `pki issue`, `pki sign` and POST /v1/certificates share once a certificate is prepared: the
 * principal mapped to the site CA in principals.json, that mapping's policy.change event, and the
 * audited failure of an issuance whose files or mapping could not be written.
 */
import type { Principal, PrincipalRole } from '../access';
import type { App } from '../app';
import { UserError } from '../errors';
import type { Actor } from '../identity';

/** The rule of a mapping's policy.change event: who changed principals.json, and how. */
export type MappingRule = 'policy.principals.host-operator' | 'policy.principals.api';

/** An error's code for a message and the trail: a system error code or ours, never a foreign message. */
export function safeCode(err: unknown): string {
  const code = err instanceof UserError ? err.code : (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(code) ? code : 'error';
}

/** The principal as principals.json will hold it: created or given the role, mapped to the site CA's certificate. */
export function mapToSiteCa(principals: Principal[], principalId: string, role: PrincipalRole | undefined, issuerFingerprint: string): Principal {
  let target = principals.find((p) => p.id === principalId);
  if (!target) {
    target = { id: principalId, roles: [role as PrincipalRole], status: 'active' };
    principals.push(target);
  }
  if (role && !target.roles.includes(role)) target.roles = [...target.roles, role];
  const mapping = { commonName: principalId, issuerFingerprint };
  if (!target.certificates?.some((c) => c.commonName === mapping.commonName && c.issuerFingerprint === mapping.issuerFingerprint)) {
    target.certificates = [...(target.certificates ?? []), mapping];
  }
  return target;
}

/** The mapping's policy.change event, recorded before principals.json is written. */
export function recordMapping(app: App, actor: Actor, target: Principal, rule: MappingRule = 'policy.principals.host-operator'): Promise<void> {
  return app.audit.record({
    type: 'policy.change',
    action: 'U',
    outcome: 'success',
    rule,
    reason: `principal ${target.id} mapped to a certificate of the site CA`,
    actor,
    detail: { principal: target.id, roles: target.roles.join('+') },
  });
}

/**
 * An issuance that could not be written: its failure recorded (its files are already removed), then
 * one line for the operator, `where` naming the file or folder and `left` what remains.
 */
export async function issuanceFailed(app: App, actor: Actor, issuance: { principal: string; serial: string; where: string; left: string }, step: string, err: unknown): Promise<never> {
  const code = safeCode(err);
  await app.audit.record({
    type: 'pki.issue',
    action: 'C',
    outcome: 'failed',
    rule: 'pki.write-failed',
    reason: `${step} for principal ${issuance.principal} failed (${code}); no file of this issuance was left`,
    actor,
    detail: { principal: issuance.principal, serial: issuance.serial, errorCode: code },
  });
  throw new UserError('pki.write-failed', `${issuance.where}: ${step} for principal ${issuance.principal} failed (${code}); ${issuance.left}`);
}
