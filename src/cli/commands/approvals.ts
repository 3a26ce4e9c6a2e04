import type { CommandModule } from 'yargs';
import { type ApprovalChange, type ApprovalInput, approvalStatusAt, coverageText } from '../../access';
import { validateOrThrow } from '../../schema';
import type { Tier } from '../../tiers';
import { CLIENT_OPTIONS, type ClientArgs, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';

interface AddArgs extends ClientArgs {
  protocol: string;
  title?: string;
  pi: string;
  personnel: string[];
  raters?: string[];
  benchmarks?: string[];
  tiers?: string[];
  endpoints?: string[];
  purpose: string;
  dua?: string;
  budget?: number;
  starts?: string;
  expires?: string;
}

const list = (v: string[] | undefined) =>
  (v ?? [])
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter(Boolean);

function isoOrUndefined(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? v : new Date(t).toISOString();
}

export function approvalsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  const change = (name: ApprovalChange, describe: string): CommandModule<GlobalArgs, ClientArgs & { id: string; reason: string }> => ({
    command: `${name} <id>`,
    describe,
    builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('reason', { type: 'string', demandOption: true }),
    handler: async (args) => {
      const a = await withClient(args, io, (c) => c.changeApproval(args.id, name, args.reason), { writes: true });
      if (args.json) return printJson(io, a);
      io.stdout(`approval ${a.approvalId} (${a.protocolNumber}) is ${a.status}, version ${a.version}\n`);
    },
  });
  return {
    command: 'approvals <command>',
    describe: 'IRB approvals (compliance): add, list, show, suspend, reinstate, close',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .command<AddArgs>({
          command: 'add',
          describe: 'Record an IRB approval',
          builder: (b) =>
            b
              .option('protocol', { type: 'string', demandOption: true, describe: 'IRB protocol number' })
              .option('title', { type: 'string' })
              .option('pi', { type: 'string', demandOption: true, describe: 'Principal investigator (principal id)' })
              .option('personnel', { type: 'string', array: true, demandOption: true, describe: 'Approved personnel (principal ids, comma-separated or repeated)' })
              .option('raters', { type: 'string', array: true, describe: 'Clinician raters of rating studies on its runs (principal ids holding the clinician role; none the PI or personnel)' })
              .option('benchmarks', { type: 'string', array: true, describe: 'Benchmarks covered' })
              .option('tiers', { type: 'string', array: true, describe: 'Tiers covered for any benchmark: approval-required, private' })
              .option('endpoints', { type: 'string', array: true, describe: 'Endpoints approved (default: any the tier rules allow)' })
              .option('purpose', { type: 'string', demandOption: true })
              .option('dua', { type: 'string', describe: 'Data use agreement id' })
              .option('budget', { type: 'number', describe: 'Budget cap in USD for runs under this approval' })
              .option('starts', { type: 'string', describe: 'Start (default: now)' })
              .option('expires', { type: 'string', describe: 'Expiry (default: none; many minimal-risk protocols have none)' }),
          handler: async (args) => {
            const input = {
              protocolNumber: args.protocol,
              ...(args.title ? { title: args.title } : {}),
              principalInvestigator: args.pi,
              personnel: list(args.personnel),
              ...(args.raters ? { raters: list(args.raters) } : {}),
              ...(args.benchmarks ? { benchmarks: list(args.benchmarks) } : {}),
              ...(args.tiers ? { tiers: list(args.tiers) as Tier[] } : {}),
              ...(args.endpoints ? { endpoints: list(args.endpoints) } : {}),
              purpose: args.purpose,
              ...(args.dua ? { duaId: args.dua } : {}),
              ...(args.budget !== undefined ? { budgetUsd: args.budget } : {}),
              ...(args.starts ? { startsAt: isoOrUndefined(args.starts) } : {}),
              ...(args.expires ? { expiresAt: isoOrUndefined(args.expires) } : {}),
            };
            const checked = validateOrThrow<ApprovalInput>('api/approval-create.schema.json', input, 'approval', 'approval.invalid');
            const a = await withClient(args, io, (c) => c.createApproval(checked), { writes: true });
            if (args.json) return printJson(io, a);
            io.stdout(`approval ${a.approvalId} recorded for protocol ${a.protocolNumber} (${a.status})\n`);
          },
        })
        .command<ClientArgs>({
          command: 'list',
          describe: 'List approvals (researchers see those naming them)',
          handler: async (args) => {
            const all = await withClient(args, io, (c) => c.listApprovals(), { writes: false });
            if (args.json) return printJson(io, all);
            const now = new Date();
            io.stdout(
              formatTable(
                ['approval id', 'protocol', 'status', 'PI', 'personnel', 'covers', 'expires'],
                all.map((a) => [a.approvalId, a.protocolNumber, approvalStatusAt(a, now), a.principalInvestigator, a.personnel.join(','), coverageText(a), a.expiresAt ?? 'none']),
              ),
            );
          },
        })
        .command<ClientArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show an approval and its full history',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const d = await withClient(args, io, (c) => c.showApproval(args.id), { writes: false });
            if (args.json) return printJson(io, d);
            const a = d.approval;
            io.stdout(
              [
                `approval ${a.approvalId}: protocol ${a.protocolNumber}${a.title ? ` "${a.title}"` : ''}, ${approvalStatusAt(a, new Date())} (version ${a.version})`,
                `  PI ${a.principalInvestigator}; personnel ${a.personnel.join(', ')}${a.raters?.length ? `; clinician raters ${a.raters.join(', ')}` : ''}`,
                `  covers ${coverageText(a)}; endpoints [${a.endpoints.join(', ') || 'any allowed'}]`,
                `  purpose: ${a.purpose}; DUA ${a.duaId ?? '-'}; budget ${a.budgetUsd ?? '-'} USD`,
                `  valid from ${a.startsAt} until ${a.expiresAt ?? 'no expiry'}`,
                '',
              ].join('\n'),
            );
            io.stdout(
              formatTable(
                ['version', 'change', 'by', 'at'],
                d.history.map((h) => [h.version, h.change, h.changedBy, h.changedAt]),
              ),
            );
          },
        })
        .command(change('suspend', 'Suspend an approval: runs under it stop at their next instance'))
        .command(change('reinstate', 'Reinstate a suspended approval (a different compliance officer from the one who suspended it)'))
        .command(change('close', 'Close an approval for good'))
        .demandCommand(1, 'name a subcommand: add, list, show, suspend, reinstate or close'),
    handler: () => undefined,
  };
}
