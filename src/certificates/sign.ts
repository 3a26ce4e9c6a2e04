/**
 * A client certificate for a certification request (PKCS#10) made on the holder's machine, so that
 * the private key never exists on the daemon's host: `ehrbench pki sign` on the host (the certificate
 * written to a file) and POST /v1/certificates for an admin (the certificate returned, no file).
 *
 * Either way, in this order: the request checked and the certificate made in memory (a refused request
 * leaves no trace but its one line); the pki.issue event and the issuance record committed together
 * (the daemon accepts only recorded certificates); the mapping's policy.change event; only then the
 * certificate file (host) and principals.json. A failure to write either is audited and leaves neither.
 */
import { accessSync, constants, existsSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { type PrincipalRole, loadPrincipals, savePrincipals } from '../access';
import type { App } from '../app';
import { PolicyDenied, UserError } from '../errors';
import { type Actor, csrPublicKey, IssuedCertificates, type PreparedSignedClient, prepareCsrCertificate, writeSignedCertificate } from '../identity';
import { issuanceFailed, mapToSiteCa, recordMapping, safeCode } from './mapping';

export interface SignInput {
  /** The principal id: the certificate's common name (the request's subject is ignored). */
  principal: string;
  /** Required for a new principal; added to an existing one. */
  role?: PrincipalRole;
  days: number;
  /** The request; `file` is how messages name it (its path on the host, or the API's field). */
  request: { file: string; pem: string };
  /** Host only: where the certificate is written (default: pki/clients/<principal>-<time>.pem). */
  out?: string;
}

/** The certificate made, and where it was written (host only). */
export interface SignedCertificate {
  certFile: string;
  serial: string;
  issuerFingerprint: string;
  publicKeySha256: string;
}

export interface ReturnedCertificate {
  principal: string;
  certificatePem: string;
  serial: string;
  issuerFingerprint: string;
  publicKeySha256: string;
}

/**
 * principals.json is read, changed and written by one issuance at a time in this process (the daemon
 * serves several admins): two interleaved would each write the file they read, and one mapping would
 * be lost (savePrincipals' temporary file is also per process).
 */
const writers = new Map<string, Promise<unknown>>();
function oneAtATime<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const run = (writers.get(file) ?? Promise.resolve()).then(fn, fn);
  const tail = run.then(
    () => undefined,
    () => undefined,
  );
  writers.set(file, tail);
  void tail.then(() => writers.get(file) === tail && writers.delete(file));
  return run;
}

interface Signer {
  actor: Actor;
  rule: 'pki.sign.host-operator' | 'pki.sign.api';
  mappingRule: 'policy.principals.host-operator' | 'policy.principals.api';
  /** The refusal of a new principal without a role, in the words of the command or of the API. */
  missingRole: (principal: string) => UserError;
  /** The roles this signer may give or sign for (default: every role); checked on the file as read for the signing. */
  roles?: readonly PrincipalRole[];
  /** The CA, its key or the certificate could not be made (not the request's fault). */
  caFault?: (err: unknown) => unknown;
  /** After the certificate is prepared, before anything is recorded (the CLI: its file must not exist). */
  beforeRecording?: (prepared: PreparedSignedClient) => void;
  /** Writes the certificate once recorded, or nothing (the API returns it); removal undoes it. */
  deliver?: { write: (prepared: PreparedSignedClient) => void; undo: (prepared: PreparedSignedClient) => void };
  /** For the one line of a failed write: the file or folder, and what is left. */
  where: (prepared: PreparedSignedClient) => string;
  left: string;
}

async function sign(app: App, input: SignInput, by: Signer): Promise<PreparedSignedClient> {
  const file = app.config.policies.principals;
  return oneAtATime(file, async () => {
    const principals = loadPrincipals(file).principals.map((p) => ({ ...p }));
    const existing = principals.find((p) => p.id === input.principal);
    if (!existing && !input.role) throw by.missingRole(input.principal);
    await refuseReservedRoles(app, by, input.principal, [...(existing?.roles ?? []), ...(input.role ? [input.role] : [])]);
    // Checked and made in memory first: a refused request leaves no trace but its one line.
    const unit = input.role ?? existing?.roles[0] ?? 'researcher';
    let prepared: PreparedSignedClient;
    try {
      prepared = prepareCsrCertificate(app.config.pkiDir, input.request, input.principal, unit, input.days, input.out);
    } catch (err) {
      if (err instanceof UserError && err.code === 'pki.csr-invalid') throw err;
      throw by.caFault ? by.caFault(err) : err;
    }
    by.beforeRecording?.(prepared);
    // The event and the issuance record commit together, before the certificate exists anywhere but here.
    await app.db.transaction(async (tx) => {
      await app.audit.recordIn(tx, {
        type: 'pki.issue',
        action: 'C',
        outcome: 'success',
        rule: by.rule,
        actor: by.actor,
        detail: { principal: input.principal, serial: prepared.serial, days: input.days, publicKeySha256: prepared.publicKeySha256 },
      });
      await new IssuedCertificates(tx).record(prepared, input.principal, by.actor.principal);
    });
    const target = mapToSiteCa(principals, input.principal, input.role, prepared.issuerFingerprint);
    await recordMapping(app, by.actor, target, by.mappingRule);
    const issuance = { principal: input.principal, serial: prepared.serial, where: by.where(prepared), left: by.left };
    const failed = (step: string, err: unknown) => issuanceFailed(app, by.actor, issuance, step, err);
    try {
      by.deliver?.write(prepared);
    } catch (err) {
      return failed('writing the certificate', err);
    }
    try {
      // Read again right before it is written: a change made on the host meanwhile (a principal
      // disabled) is kept, not overwritten by the copy read before the certificate was signed.
      const current = loadPrincipals(file).principals.map((p) => ({ ...p }));
      mapToSiteCa(current, input.principal, input.role, prepared.issuerFingerprint);
      savePrincipals(file, current);
    } catch (err) {
      by.deliver?.undo(prepared);
      return failed('mapping the certificate in principals.json', err);
    }
    return prepared;
  });
}

/**
 * The roles an admin may sign for through the daemon: a certificate for a compliance officer or an
 * admin (a new one, an existing one, or such a role added) would let the admin act as one, approve
 * runs and release exports under another name, or give themselves the role; those are signed on the
 * host (`ehrbench pki sign`) by its operator.
 */
export const API_SIGNABLE_ROLES: readonly PrincipalRole[] = ['researcher', 'auditor', 'clinician'];

/** Refuses, audited, a certificate that would carry a role the signer may not give (before anything is made). */
async function refuseReservedRoles(app: App, by: Signer, principal: string, roles: PrincipalRole[]): Promise<void> {
  const reserved = [...new Set(roles.filter((r) => by.roles && !by.roles.includes(r)))];
  if (reserved.length === 0) return;
  const rule = 'pki.sign.api.role-on-host';
  const reason = `a certificate for principal ${principal} would carry the ${reserved.join(' and ')} role, which is signed on the host (ehrbench pki sign --csr FILE --principal ${principal}), not through the daemon`;
  await app.audit.record({ type: 'access.denied', action: 'E', outcome: 'denied', rule, reason, actor: by.actor, detail: { principal, roles: reserved.join('+') } });
  throw new PolicyDenied(rule, reason);
}

/** `ehrbench pki sign`: the certificate written to `out` (or pki/clients), never over a file. */
export async function signOnHost(app: App, input: SignInput, operator: Actor): Promise<SignedCertificate> {
  const prepared = await sign(app, input, {
    actor: operator,
    rule: 'pki.sign.host-operator',
    mappingRule: 'policy.principals.host-operator',
    missingRole: (principal) => new UserError('cli.usage', `principal ${principal} is new: give its --role`),
    beforeRecording: (p) => {
      if (existsSync(p.certFile)) throw new UserError('pki.already-written', `${p.certFile} already exists; an issued certificate is never overwritten (choose another --out)`);
    },
    deliver: { write: writeSignedCertificate, undo: (p) => rmSync(p.certFile, { force: true }) },
    where: (p) => p.certFile,
    left: 'no certificate was left, principals.json is unchanged',
  });
  const { certPem: _pem, ...result } = prepared;
  return result;
}

/**
 * POST /v1/certificates: the certificate returned to the admin who asked, for its holder; no file is
 * written but principals.json. The daemon must be able to read the site CA's key and write
 * principals.json (a site that keeps either from it signs on the host); either fault is refused
 * before anything is recorded, in a line that names no server path.
 */
export async function signForCaller(app: App, input: SignInput, actor: Actor): Promise<ReturnedCertificate> {
  // A request that is refused is refused before anything else is looked at (checked again when signed).
  csrPublicKey(input.request.file, input.request.pem);
  const file = app.config.policies.principals;
  const onHost = `sign the request on the host instead: ehrbench pki sign --csr FILE --principal ${input.principal}`;
  try {
    accessSync(file, constants.R_OK | constants.W_OK);
    accessSync(dirname(file), constants.W_OK);
  } catch (err) {
    throw new UserError('pki.signing-unavailable', `the daemon may not write its principals file (${safeCode(err)}), so it cannot map a certificate; ${onHost}`);
  }
  const prepared = await sign(app, input, {
    actor,
    rule: 'pki.sign.api',
    mappingRule: 'policy.principals.api',
    missingRole: (principal) => new UserError('request.invalid', `role: principal ${principal} is new; give its role`),
    roles: API_SIGNABLE_ROLES,
    caFault: (err) => new UserError('pki.signing-unavailable', `the daemon cannot read the site CA or its key, or sign with it (${safeCode(err)}); ${onHost}`),
    where: () => 'principals.json',
    left: 'the certificate was not returned and principals.json is unchanged; sign the request again once the daemon can write principals.json',
  });
  return { principal: input.principal, certificatePem: prepared.certPem, serial: prepared.serial, issuerFingerprint: prepared.issuerFingerprint, publicKeySha256: prepared.publicKeySha256 };
}
