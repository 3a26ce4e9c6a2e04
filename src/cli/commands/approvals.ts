import type { CommandModule } from 'yargs';
import { type ApprovalChange, type ApprovalInput, approvalStatusAt, coverageText } from '../../access';
import { UserError } from '../../errors';
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
  canaryBenchmark?: string;
  canaryInstances?: number;
  canaryEvery?: string;
  canaryThreshold?: number;
  canaryMinDifference?: number;
}

/** `7d`, `7` or `1w` as days; anything else is left as it is for the schema to refuse, naming the field. */
function days(v: string | undefined): number | string | undefined {
  if (v === undefined) return undefined;
  const m = /^(\d+)\s*(d|w)?$/i.exec(v.trim());
  if (!m) return v;
  return Number(m[1]) * (m[2]?.toLowerCase() === 'w' ? 7 : 1);
}

/** The canary of `approvals add`, or undefined without --canary-benchmark (a setting without it is refused). */
function canaryOf(args: AddArgs): Record<string, unknown> | undefined {
  const given = [args.canaryInstances, args.canaryEvery, args.canaryThreshold, args.canaryMinDifference].some((v) => v !== undefined);
  if (!args.canaryBenchmark) {
    if (given) throw new UserError('approval.invalid', 'canary: --canary-instances, --canary-every, --canary-threshold and --canary-min-difference need --canary-benchmark');
    return undefined;
  }
  return {
    benchmarkId: args.canaryBenchmark,
    instances: args.canaryInstances ?? 50,
    ...(args.canaryEvery !== undefined ? { everyDays: days(args.canaryEvery) } : {}),
    ...(args.canaryThreshold !== undefined ? { threshold: args.canaryThreshold } : {}),
    ...(args.canaryMinDifference !== undefined ? { minDifference: args.canaryMinDifference } : {}),
  };
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
    describe: 'IRB approvals (compliance): add, list, show, drift, review-drift, suspend, reinstate, close',
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
              .option('expires', { type: 'string', describe: 'Expiry (default: none; many minimal-risk protocols have none)' })
              .option('canary-benchmark', { type: 'string', describe: 'A canary: this benchmark (covered by the approval) re-run on each listed endpoint to detect drift' })
              .option('canary-instances', { type: 'number', describe: 'Instances in the canary (HELM seeded sample, pinned at the baseline; at least 11, default 50)' })
              .option('canary-every', { type: 'string', describe: 'Days between canary re-runs, e.g. 7d or 2w (default 7d); a new endpoint fingerprint re-runs it at once' })
              .option('canary-threshold', { type: 'number', describe: "Drift when the paired test's p-value is below this (default 0.05)" })
              .option('canary-min-difference', { type: 'number', describe: 'and the mean score moved by at least this much (default 0.05)' }),
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
              ...(canaryOf(args) ? { canary: canaryOf(args) } : {}),
            };
            const checked = validateOrThrow<ApprovalInput>('api/approval-create.schema.json', input, 'approval', 'approval.invalid');
            const a = await withClient(args, io, (c) => c.createApproval(checked), { writes: true });
            if (args.json) return printJson(io, a);
            io.stdout(
              `approval ${a.approvalId} recorded for protocol ${a.protocolNumber} (${a.status})${a.canary ? `; canary ${a.canary.benchmarkId} x${a.canary.instances} every ${a.canary.everyDays}d` : ''}\n`,
            );
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
                ...(a.canary
                  ? [
                      `  canary: ${a.canary.instances} instances of ${a.canary.benchmarkId} every ${a.canary.everyDays}d and on a new endpoint fingerprint; drift when p < ${a.canary.threshold} and |mean difference| >= ${a.canary.minDifference}`,
                    ]
                  : []),
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
        .command<ClientArgs>({
          command: 'drift',
          describe: "The approvals' canary checks: drift detected, stable, pending (compliance sees every approval's)",
          handler: async (args) => {
            const checks = await withClient(args, io, (c) => c.driftChecks(), { writes: false });
            if (args.json) return printJson(io, checks);
            const fig = (x: number | null, digits = 2) => (x === null ? '-' : x.toFixed(digits));
            io.stdout(
              formatTable(
                ['approval', 'protocol', 'endpoint', 'trigger', 'state', 'test', 'pairs', 'baseline', 'canary', 'p', 'reviewed by'],
                checks.map((d) => [
                  d.approvalId,
                  d.protocolNumber,
                  d.endpointId,
                  d.trigger,
                  d.state === 'drift' && !d.reviewedAt ? 'DRIFT (results stale)' : d.state,
                  d.test ?? '-',
                  d.pairs ?? '-',
                  fig(d.baselineMean),
                  fig(d.canaryMean),
                  d.pValue === null ? '-' : String(Number(d.pValue.toPrecision(2))),
                  d.reviewedBy ?? '-',
                ]),
              ),
            );
          },
        })
        .command<ClientArgs & { id: string; note?: string }>({
          command: 'review-drift <id>',
          describe: "Review an approval's detected drift (compliance): its results are no longer marked stale",
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('note', { type: 'string', describe: 'A note kept with the checks (up to 300 characters)' }),
          handler: async (args) => {
            const r = await withClient(args, io, (c) => c.reviewDrift(args.id, args.note), { writes: true });
            if (args.json) return printJson(io, r);
            io.stdout(`approval ${r.approvalId}: ${r.reviewed} drift check(s) reviewed; its results are no longer marked stale\n`);
          },
        })
        .command(change('suspend', 'Suspend an approval: runs under it stop at their next instance'))
        .command(change('reinstate', 'Reinstate a suspended approval (a different compliance officer from the one who suspended it)'))
        .command(change('close', 'Close an approval for good'))
        .demandCommand(1, 'name a subcommand: add, list, show, drift, review-drift, suspend, reinstate or close'),
    handler: () => undefined,
  };
}
