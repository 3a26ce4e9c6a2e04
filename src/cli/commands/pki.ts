import { userInfo } from 'node:os';
import type { CommandModule } from 'yargs';
import { type Principal, type PrincipalRole, loadPrincipals, savePrincipals } from '../../access';
import { loadConfig } from '../../config';
import { UserError } from '../../errors';
import { hostOperator } from '../../identity';
import { initSitePki, type IssuedClient, prepareClientCertificate, removeClientCertificate, writeClientCertificate } from '../../identity';
import { Operations } from '../../operations';
import { type GlobalArgs, withApp } from '../context';
import { type Io, printJson } from '../output';

/** An error's code for a message and the trail: a system error code or ours, never a foreign message. */
function safeCode(err: unknown): string {
  const code = err instanceof UserError ? err.code : (err as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && /^[A-Za-z0-9._-]{1,64}$/.test(code) ? code : 'error';
}

interface IssueArgs extends GlobalArgs {
  principal: string;
  role?: PrincipalRole;
  'display-name'?: string;
  'local-user'?: string;
  days: number;
}

export function pkiCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  const config = (args: GlobalArgs) => loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
  return {
    command: 'pki <command>',
    describe: 'A site PKI for the daemon: CA, server certificate, client certificates (hospital IT)',
    builder: (y) =>
      y
        .command<GlobalArgs & { hostname?: string[]; ip?: string[] }>({
          command: 'init',
          describe: "Create the site CA and the daemon's server certificate (keeps existing ones)",
          builder: (b) =>
            b
              .option('hostname', { type: 'string', array: true, describe: 'DNS names of the daemon (default: localhost and this host)' })
              .option('ip', { type: 'string', array: true, describe: 'IP addresses of the daemon (default: 127.0.0.1)' }),
          handler: async (args) => {
            const result = initSitePki(config(args).pkiDir, {
              ...(args.hostname ? { dnsNames: args.hostname } : {}),
              ...(args.ip ? { ipAddresses: args.ip } : {}),
            });
            if (args.json) return printJson(io, result);
            for (const f of result.created) io.stdout(`created ${f}\n`);
            if (result.kept.length) io.stdout(`kept ${result.kept.length} existing file(s)\n`);
            io.stdout(`site CA fingerprint (sha256): ${result.caFingerprint}\n`);
          },
        })
        .command<IssueArgs>({
          command: 'issue',
          describe: 'Issue a client certificate, key and PKCS#12 bundle for a principal, and map it in principals.json',
          builder: (b) =>
            b
              .option('principal', { type: 'string', demandOption: true, describe: 'Principal id (the certificate common name)' })
              .option('role', { choices: ['admin', 'researcher', 'compliance', 'auditor'] as const, describe: 'Role, required for a new principal; added to an existing one' })
              .option('display-name', { type: 'string' })
              .option('local-user', { type: 'string', describe: 'Also map this operating-system account (local mode)' })
              .option('days', { type: 'number', default: 365 }),
          handler: async (args) => {
            const out = await withApp(args, io, async (app) => {
              const file = app.config.policies.principals;
              const principals = loadPrincipals(file).principals.map((p) => ({ ...p }));
              let target: Principal | undefined = principals.find((p) => p.id === args.principal);
              if (!target && !args.role) throw new UserError('cli.usage', `principal ${args.principal} is new: give its --role`);
              // Made in memory first: the serial goes into the pki.issue event, which precedes any file.
              const prepared = prepareClientCertificate(app.config.pkiDir, args.principal, args.role ?? target?.roles[0] ?? 'researcher', args.days);
              await app.audit.record({
                type: 'pki.issue',
                action: 'C',
                outcome: 'success',
                rule: 'pki.issue.host-operator',
                actor: hostOperator(),
                detail: { principal: args.principal, serial: prepared.serial, days: args.days },
              });
              if (!target) {
                target = { id: args.principal, roles: [args.role as PrincipalRole], status: 'active' };
                principals.push(target);
              }
              if (args.role && !target.roles.includes(args.role)) target.roles = [...target.roles, args.role];
              if (args['display-name']) target.displayName = args['display-name'];
              if (args['local-user']) target.localUser = args['local-user'];
              const mapping = { commonName: args.principal, issuerFingerprint: prepared.issuerFingerprint };
              if (!target.certificates?.some((c) => c.commonName === mapping.commonName && c.issuerFingerprint === mapping.issuerFingerprint)) {
                target.certificates = [...(target.certificates ?? []), mapping];
              }
              await app.audit.record({
                type: 'policy.change',
                action: 'U',
                outcome: 'success',
                rule: 'policy.principals.host-operator',
                reason: `principal ${args.principal} mapped to a certificate of the site CA`,
                actor: hostOperator(),
                detail: { principal: args.principal, roles: target.roles.join('+') },
              });
              // Both decisions are recorded; only now does anything reach the disk, all of it or none.
              const failed = async (step: string, err: unknown): Promise<never> => {
                const code = safeCode(err);
                await app.audit.record({
                  type: 'pki.issue',
                  action: 'C',
                  outcome: 'failed',
                  rule: 'pki.write-failed',
                  reason: `${step} for principal ${args.principal} failed (${code}); no file of this issuance was left`,
                  actor: hostOperator(),
                  detail: { principal: args.principal, serial: prepared.serial, errorCode: code },
                });
                throw new UserError(
                  'pki.write-failed',
                  `${app.config.pkiDir}: ${step} for principal ${args.principal} failed (${code}); no file of this issuance was left, principals.json is unchanged`,
                );
              };
              let issued: IssuedClient;
              try {
                issued = writeClientCertificate(prepared);
              } catch (err) {
                return failed('writing the certificate files', err);
              }
              try {
                savePrincipals(file, principals);
              } catch (err) {
                removeClientCertificate(issued);
                return failed('mapping the certificate in principals.json', err);
              }
              return issued;
            });
            if (args.json) return printJson(io, out);
            io.stdout(`certificate ${out.certFile}\nkey         ${out.keyFile}\nPKCS#12     ${out.p12File} (password in ${out.p12PasswordFile})\nserial      ${out.serial}\n`);
          },
        })
        .command<GlobalArgs & { principal: string; reason: string }>({
          command: 'revoke',
          describe: 'Revoke every certificate of a principal issued until now (the daemon refuses them at once)',
          builder: (b) => b.option('principal', { type: 'string', demandOption: true }).option('reason', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const out = await withApp(args, io, async (app) => {
              const ops = new Operations(app);
              const operator = {
                principal: { id: `local-${userInfo().username}`.replace(/[^a-z0-9._-]/g, '-').slice(0, 63), roles: ['admin' as const], status: 'active' as const },
                authMethod: 'local-os-user' as const,
              };
              return ops.revokePrincipal(operator, args.principal, args.reason);
            });
            if (args.json) return printJson(io, out);
            io.stdout(`revoked the certificates of ${out.principal} (${out.revoked} issuing CA(s))\n`);
          },
        })
        .demandCommand(1, 'name a subcommand: init, issue or revoke'),
    handler: () => undefined,
  };
}
