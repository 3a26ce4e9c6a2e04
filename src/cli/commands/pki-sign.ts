/**
 * `ehrbench pki sign`: a client certificate for a certification request, so that the holder's private
 * key never exists on the daemon's host (the recommended way; `pki issue` makes the key here, for
 * convenience). Audited like `pki issue`: the pki.issue event and the issuance record commit before the
 * certificate file is written, and the principal is mapped in principals.json the same way.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import type { CommandModule } from 'yargs';
import { type Principal, type PrincipalRole, loadPrincipals, savePrincipals } from '../../access';
import type { App } from '../../app';
import { UserError } from '../../errors';
import { csrPublicKey, hostOperator, IssuedCertificates, type PreparedSignedClient, prepareCsrCertificate, writeSignedCertificate } from '../../identity';
import { type GlobalArgs, withApp } from '../context';
import { type Io, printJson } from '../output';

export const ROLES = ['admin', 'researcher', 'compliance', 'auditor'] as const;
const PRINCIPAL_ID = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** `--days` of `pki issue` and `pki sign`: a whole number of days, at least one. */
export function checkDays(days: unknown): number {
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 1) {
    throw new UserError('cli.usage', `--days must be a whole number of days, at least 1 (got ${String(days)})`);
  }
  return days;
}

export interface SignArgs extends GlobalArgs {
  csr: string;
  principal: string;
  role?: PrincipalRole;
  days: number;
  out?: string;
}

export interface SignedClient {
  certFile: string;
  serial: string;
  issuerFingerprint: string;
  publicKeySha256: string;
}

/** An error's code for a message and the trail: a system error code or ours, never a foreign message. */
function safeCode(err: unknown): string {
  const code = err instanceof UserError ? err.code : (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(code) ? code : 'error';
}

function readRequest(file: string): { file: string; pem: string } {
  try {
    return { file, pem: readFileSync(file, 'utf8') };
  } catch (err) {
    throw new UserError('pki.csr-invalid', `${file}: the certificate signing request cannot be read (${safeCode(err)})`);
  }
}

/** The principal as principals.json will hold it: created or given the role, mapped to the site CA's certificate. */
function mapped(principals: Principal[], args: SignArgs, issuerFingerprint: string): Principal {
  let target = principals.find((p) => p.id === args.principal);
  if (!target) {
    target = { id: args.principal, roles: [args.role as PrincipalRole], status: 'active' };
    principals.push(target);
  }
  if (args.role && !target.roles.includes(args.role)) target.roles = [...target.roles, args.role];
  const mapping = { commonName: args.principal, issuerFingerprint };
  if (!target.certificates?.some((c) => c.commonName === mapping.commonName && c.issuerFingerprint === mapping.issuerFingerprint)) {
    target.certificates = [...(target.certificates ?? []), mapping];
  }
  return target;
}

async function sign(app: App, args: SignArgs, request: { file: string; pem: string }): Promise<SignedClient> {
  const file = app.config.policies.principals;
  const principals = loadPrincipals(file).principals.map((p) => ({ ...p }));
  const existing = principals.find((p) => p.id === args.principal);
  if (!existing && !args.role) throw new UserError('cli.usage', `principal ${args.principal} is new: give its --role`);
  // Checked and made in memory first: a refused request leaves no trace but its one line.
  const prepared: PreparedSignedClient = prepareCsrCertificate(app.config.pkiDir, request, args.principal, args.role ?? existing?.roles[0] ?? 'researcher', args.days, args.out);
  if (existsSync(prepared.certFile)) throw new UserError('pki.already-written', `${prepared.certFile} already exists; an issued certificate is never overwritten (choose another --out)`);
  const operator = hostOperator();
  // The event and the issuance record commit together, before the certificate exists anywhere but here.
  await app.db.transaction(async (tx) => {
    await app.audit.recordIn(tx, {
      type: 'pki.issue',
      action: 'C',
      outcome: 'success',
      rule: 'pki.sign.host-operator',
      actor: operator,
      detail: { principal: args.principal, serial: prepared.serial, days: args.days, publicKeySha256: prepared.publicKeySha256 },
    });
    await new IssuedCertificates(tx).record(prepared, args.principal, operator.principal);
  });
  const target = mapped(principals, args, prepared.issuerFingerprint);
  await app.audit.record({
    type: 'policy.change',
    action: 'U',
    outcome: 'success',
    rule: 'policy.principals.host-operator',
    reason: `principal ${args.principal} mapped to a certificate of the site CA`,
    actor: operator,
    detail: { principal: args.principal, roles: target.roles.join('+') },
  });
  const failed = async (step: string, err: unknown): Promise<never> => {
    const code = safeCode(err);
    await app.audit.record({
      type: 'pki.issue',
      action: 'C',
      outcome: 'failed',
      rule: 'pki.write-failed',
      reason: `${step} for principal ${args.principal} failed (${code}); no file of this issuance was left`,
      actor: operator,
      detail: { principal: args.principal, serial: prepared.serial, errorCode: code },
    });
    throw new UserError('pki.write-failed', `${prepared.certFile}: ${step} for principal ${args.principal} failed (${code}); no certificate was left, principals.json is unchanged`);
  };
  try {
    writeSignedCertificate(prepared);
  } catch (err) {
    return failed('writing the certificate', err);
  }
  try {
    savePrincipals(file, principals);
  } catch (err) {
    rmSync(prepared.certFile, { force: true });
    return failed('mapping the certificate in principals.json', err);
  }
  const { certPem: _pem, ...out } = prepared;
  return out;
}

export function pkiSignCommand(io: Io): CommandModule<GlobalArgs, SignArgs> {
  return {
    command: 'sign',
    describe: "Issue a client certificate for a certification request (CSR) made on the holder's machine, and map it in principals.json (recommended: the key never leaves that machine)",
    builder: (b) =>
      b
        .option('csr', { type: 'string', demandOption: true, describe: 'The PKCS#10 request (PEM), e.g. from: openssl req -new -newkey rsa:3072 -nodes -keyout me.key.pem -out me.csr' })
        .option('principal', { type: 'string', demandOption: true, describe: "Principal id: the certificate's common name (the request's subject is ignored)" })
        .option('role', { choices: ROLES, describe: 'Role, required for a new principal; added to an existing one' })
        .option('days', { type: 'number', default: 365, describe: 'Validity in whole days (at least 1)' })
        .option('out', { type: 'string', describe: 'Write the certificate here (default: pki/clients/<principal>-<time>.pem); never overwrites' }),
    handler: async (args) => {
      checkDays(args.days);
      if (!PRINCIPAL_ID.test(args.principal))
        throw new UserError('cli.usage', `--principal must be a principal id (lower case letters, digits, . _ -; at most 63), got "${args.principal.slice(0, 64)}"`);
      const request = readRequest(args.csr);
      // A request that is refused is refused before any store is opened (checked again when signed).
      csrPublicKey(request.file, request.pem);
      const out = await withApp(args, io, (app) => sign(app, args, request), { announceStore: true });
      if (args.json) return printJson(io, out);
      io.stdout(`certificate ${out.certFile}\nserial      ${out.serial}\nkey sha256  ${out.publicKeySha256}\nsend the certificate to its holder; their key stays where the request was made\n`);
    },
  };
}
