/**
 * `ehrbench pki sign`: a client certificate for a certification request, so that the holder's private
 * key never exists on the daemon's host (the recommended way; `pki issue` makes the key here, for
 * convenience). Audited like `pki issue`: the pki.issue event and the issuance record commit before the
 * certificate file is written, and the principal is mapped in principals.json the same way. The
 * signing is src/certificates' (the daemon's POST /v1/certificates signs the same way).
 */
import { readFileSync } from 'node:fs';
import type { CommandModule } from 'yargs';
import type { PrincipalRole } from '../../access';
import { safeCode, signOnHost } from '../../certificates';
import { UserError } from '../../errors';
import { csrPublicKey, hostOperator } from '../../identity';
import { type GlobalArgs, withApp } from '../context';
import { type Io, printJson } from '../output';

export const ROLES = ['admin', 'researcher', 'compliance', 'auditor', 'clinician'] as const;
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

function readRequest(file: string): { file: string; pem: string } {
  try {
    return { file, pem: readFileSync(file, 'utf8') };
  } catch (err) {
    throw new UserError('pki.csr-invalid', `${file}: the certificate signing request cannot be read (${safeCode(err)})`);
  }
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
      const out = await withApp(
        args,
        io,
        (app) => signOnHost(app, { principal: args.principal, ...(args.role ? { role: args.role } : {}), days: args.days, request, ...(args.out ? { out: args.out } : {}) }, hostOperator()),
        { writes: true, announceStore: true },
      );
      if (args.json) return printJson(io, out);
      io.stdout(`certificate ${out.certFile}\nserial      ${out.serial}\nkey sha256  ${out.publicKeySha256}\nsend the certificate to its holder; their key stays where the request was made\n`);
    },
  };
}
