import { userInfo } from 'node:os';
import type { CommandModule } from 'yargs';
import { type Principal, type PrincipalRole, loadPrincipals, savePrincipals } from '../../access';
import { loadConfig } from '../../config';
import { UserError } from '../../errors';
import type { Actor } from '../../identity/actor';
import { initSitePki, issueClientCertificate } from '../../identity/site-pki';
import { Operations } from '../../operations';
import { type GlobalArgs, withApp } from '../context';
import { type Io, printJson } from '../output';

/** PKI is managed by whoever holds the CA key on the host: recorded as that operating-system account. */
function hostOperator(): Actor {
  return { principal: `local:${userInfo().username}`, role: 'admin', authMethod: 'local-os-user' };
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
              if (!target && !args.role) throw new UserError('cli.usage', `principal ${args.principal} is new: give its --role`, 2);
              const issued = issueClientCertificate(app.config.pkiDir, args.principal, args.role ?? target?.roles[0] ?? 'researcher', args.days);
              await app.audit.record({
                type: 'pki.issue',
                action: 'C',
                outcome: 'success',
                rule: 'pki.issue.host-operator',
                actor: hostOperator(),
                detail: { principal: args.principal, serial: issued.serial, days: args.days },
              });
              if (!target) {
                target = { id: args.principal, roles: [args.role as PrincipalRole], status: 'active' };
                principals.push(target);
              }
              if (args.role && !target.roles.includes(args.role)) target.roles = [...target.roles, args.role];
              if (args['display-name']) target.displayName = args['display-name'];
              if (args['local-user']) target.localUser = args['local-user'];
              const mapping = { commonName: args.principal, issuerFingerprint: issued.issuerFingerprint };
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
              savePrincipals(file, principals);
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
              const operator = { principal: { id: `local-${userInfo().username}`.replace(/[^a-z0-9._-]/g, '-').slice(0, 63), roles: ['admin' as const], status: 'active' as const }, authMethod: 'local-os-user' as const };
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
