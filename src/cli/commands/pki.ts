import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { type Principal, type PrincipalRole, loadPrincipals, savePrincipals } from '../../access';
import { loadConfig } from '../../config';
import { UserError } from '../../errors';
import type { App } from '../../app';
import { streamRecords } from '../../audit';
import { issuanceFailed, mapToSiteCa, recordMapping } from '../../certificates';
import { certificateFingerprint, hostOperator, IssuedCertificates, siteClientCertificates } from '../../identity';
import { initSitePki, type IssuedClient, prepareClientCertificate, removeClientCertificate, writeClientCertificate } from '../../identity';
import { Operations } from '../../operations';
import { type GlobalArgs, withApp } from '../context';
import { type Io, printJson } from '../output';
import { checkDays, pkiSignCommand } from './pki-sign';

interface IssueArgs extends GlobalArgs {
  principal: string;
  role?: PrincipalRole;
  'display-name'?: string;
  'local-user'?: string;
  days: number;
}

interface RecordedExisting {
  recorded: { principal: string; serial: string; issuedAt: string }[];
  /** Certificates of the site CA in pki/clients without a pki.issue event of theirs: not recorded. */
  withoutEvent: string[];
  alreadyRecorded: number;
}

/**
 * Records the client certificates issued before ehrbench kept an issuance record: each one in
 * pki/clients that the site CA signed and whose own pki.issue event (same serial and principal) is in
 * the audit trail, with that event's time as its issue time, so that blanket revocations made since
 * still cover it. A certificate without its event is left unrecorded, and the daemon refuses it.
 */
async function recordExisting(app: App): Promise<RecordedExisting> {
  const issuedEvents = new Map<string, { principal: string; at: string }>();
  for await (const r of streamRecords(app.db, { type: 'pki.issue' })) {
    if (r.outcome === 'success' && r.rule === 'pki.issue.host-operator' && typeof r.detail.serial === 'string') {
      issuedEvents.set(r.detail.serial, { principal: String(r.detail.principal), at: r.recorded_at });
    }
  }
  const issued = new IssuedCertificates(app.db);
  const issuerFingerprint = certificateFingerprint(readFileSync(join(app.config.pkiDir, 'ca.pem'), 'utf8'));
  const out: RecordedExisting = { recorded: [], withoutEvent: [], alreadyRecorded: 0 };
  for (const cert of siteClientCertificates(app.config.pkiDir)) {
    if (await issued.find(certificateFingerprint(cert.certPem))) {
      out.alreadyRecorded += 1;
      continue;
    }
    const event = issuedEvents.get(cert.serial);
    if (!event || event.principal !== cert.commonName) {
      out.withoutEvent.push(cert.file);
      continue;
    }
    const operator = hostOperator();
    await app.db.transaction(async (tx) => {
      await app.audit.recordIn(tx, {
        type: 'pki.issue',
        action: 'U',
        outcome: 'success',
        rule: 'pki.issue.recorded-existing',
        actor: operator,
        detail: { principal: cert.commonName, serial: cert.serial, issuedAt: event.at },
      });
      await new IssuedCertificates(tx).record({ certPem: cert.certPem, issuerFingerprint }, cert.commonName, operator.principal, new Date(event.at));
    });
    out.recorded.push({ principal: cert.commonName, serial: cert.serial, issuedAt: event.at });
  }
  return out;
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
          describe:
            'Issue a client certificate, key and PKCS#12 bundle for a principal, and map it in principals.json (convenience: the key is made on this host and must be handed over; prefer pki sign)',
          builder: (b) =>
            b
              .option('principal', { type: 'string', demandOption: true, describe: 'Principal id (the certificate common name)' })
              .option('role', { choices: ['admin', 'researcher', 'compliance', 'auditor', 'clinician'] as const, describe: 'Role, required for a new principal; added to an existing one' })
              .option('display-name', { type: 'string' })
              .option('local-user', { type: 'string', describe: 'Also map this operating-system account (local mode)' })
              .option('days', { type: 'number', default: 365, describe: 'Validity in whole days (at least 1)' }),
          handler: async (args) => {
            checkDays(args.days);
            const out = await withApp(
              args,
              io,
              async (app) => {
                const file = app.config.policies.principals;
                const principals = loadPrincipals(file).principals.map((p) => ({ ...p }));
                const existing: Principal | undefined = principals.find((p) => p.id === args.principal);
                if (!existing && !args.role) throw new UserError('cli.usage', `principal ${args.principal} is new: give its --role`);
                // Made in memory first: the serial goes into the pki.issue event, which precedes any file.
                const prepared = prepareClientCertificate(app.config.pkiDir, args.principal, args.role ?? existing?.roles[0] ?? 'researcher', args.days);
                // The event and the issuance record commit together: the daemon accepts only recorded
                // certificates, and a blanket revocation covers those recorded before it.
                const operator = hostOperator();
                await app.db.transaction(async (tx) => {
                  await app.audit.recordIn(tx, {
                    type: 'pki.issue',
                    action: 'C',
                    outcome: 'success',
                    rule: 'pki.issue.host-operator',
                    actor: operator,
                    detail: { principal: args.principal, serial: prepared.serial, days: args.days },
                  });
                  await new IssuedCertificates(tx).record(prepared, args.principal, operator.principal);
                });
                const target = mapToSiteCa(principals, args.principal, args.role, prepared.issuerFingerprint);
                if (args['display-name']) target.displayName = args['display-name'];
                if (args['local-user']) target.localUser = args['local-user'];
                await recordMapping(app, operator, target);
                // Both decisions are recorded; only now does anything reach the disk, all of it or none.
                const issuance = { principal: args.principal, serial: prepared.serial, where: app.config.pkiDir, left: 'no file of this issuance was left, principals.json is unchanged' };
                const failed = (step: string, err: unknown) => issuanceFailed(app, operator, issuance, step, err);
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
              },
              { writes: true, announceStore: true },
            );
            if (args.json) return printJson(io, out);
            io.stdout(`certificate ${out.certFile}\nkey         ${out.keyFile}\nPKCS#12     ${out.p12File} (password in ${out.p12PasswordFile})\nserial      ${out.serial}\n`);
          },
        })
        .command<GlobalArgs & { principal: string; reason: string }>({
          command: 'revoke',
          describe: 'Revoke every certificate of a principal issued until now (the daemon refuses them at once)',
          builder: (b) => b.option('principal', { type: 'string', demandOption: true }).option('reason', { type: 'string', demandOption: true }),
          handler: async (args) => {
            // A revocation reaches only the store it is written to: the command says which one.
            const out = await withApp(
              args,
              io,
              async (app) => {
                const ops = new Operations(app);
                const operator = {
                  // The host operator, spelled as in every other host command's events (local:<user>).
                  principal: { id: hostOperator().principal, roles: ['admin' as const], status: 'active' as const },
                  authMethod: 'local-os-user' as const,
                };
                return ops.revokePrincipal(operator, args.principal, args.reason);
              },
              { writes: true, announceStore: true },
            );
            if (args.json) return printJson(io, out);
            io.stdout(`revoked the certificates of ${out.principal} (${out.revoked} issuing CA(s))${out.stoppedRuns.length ? `; halted their runs ${out.stoppedRuns.join(', ')}` : ''}\n`);
          },
        })
        .command<GlobalArgs>({
          command: 'record-existing',
          describe: 'Record the client certificates issued before ehrbench kept an issuance record (those in pki/clients with their pki.issue event)',
          handler: async (args) => {
            const out = await withApp(args, io, recordExisting, { writes: true });
            if (args.json) return printJson(io, out);
            for (const r of out.recorded) io.stdout(`recorded ${r.principal} serial ${r.serial} (issued ${r.issuedAt})\n`);
            for (const f of out.withoutEvent) io.stdout(`not recorded ${f}: no pki.issue event of it in the audit trail; issue a new certificate\n`);
            io.stdout(`${out.recorded.length} recorded, ${out.alreadyRecorded} already recorded, ${out.withoutEvent.length} without an event\n`);
          },
        })
        .command(pkiSignCommand(io))
        .demandCommand(1, 'name a subcommand: init, sign, issue, revoke or record-existing'),
    handler: () => undefined,
  };
}
