import { Presets, SingleBar } from 'cli-progress';
import type { CommandModule } from 'yargs';
import type { App } from '../../app';
import { UserError } from '../../errors';
import type { RunRequestInput, RunView } from '../../operations';
import { executeRun, type RunSummary } from '../../runs';
import { CLIENT_OPTIONS, type ClientArgs, localCaller, withClient } from '../client';
import { type GlobalArgs, withApp } from '../context';
import { formatScore, formatTable, type Io, printJson } from '../output';
import { Operations } from '../../operations';

interface RunArgs extends GlobalArgs {
  benchmark: string;
  endpoint: string;
  'max-instances'?: number;
  scoring?: 'corrected' | 'helm';
  purpose?: string;
  approval?: string;
}

function progressPrinter(io: Io, enabled: boolean) {
  return enabled
    ? (c: { done: number; blocked: number; failed: number; pending: number; claimed: number }) =>
        io.stderr(`  done ${c.done}  blocked ${c.blocked}  failed ${c.failed}  left ${c.pending + c.claimed}\n`)
    : undefined;
}

type Summarised = Pick<RunSummary, 'benchmarkId' | 'tier' | 'mainMetric' | 'mainScore' | 'status' | 'runId'> & { counts: RunSummary['counts'] };

export function printSummaries(io: Io, summaries: Summarised[]): void {
  io.stdout(
    formatTable(
      ['benchmark', 'tier', 'n', 'main metric', 'score', 'blocked', 'failed', 'status', 'run id'],
      summaries.map((s) => [s.benchmarkId, s.tier, s.counts.done, s.mainMetric, formatScore(s.mainScore), s.counts.blocked, s.counts.failed, s.status, s.runId]),
    ),
  );
}

function printRun(io: Io, run: RunView): void {
  io.stdout(
    [
      `run ${run.runId}: ${run.benchmarkId} v${run.benchmarkVersion} on ${run.endpointId} (${run.tier}), ${run.status}${run.errorCode ? ` (${run.errorCode})` : ''}`,
      `  requested by ${run.requestedBy} at ${run.createdAt}${run.approvedBy ? `; approved by ${run.approvedBy}` : ''}`,
      `  ${run.irbProtocol ? `IRB protocol ${run.irbProtocol}; ` : ''}scoring ${run.scoring}`,
      `  instances: ${run.instanceCount ?? '?'} planned, ${run.counts.done} done, ${run.counts.blocked} blocked, ${run.counts.failed} failed`,
      `  tokens: ${run.promptTokens} in, ${run.completionTokens} out; estimated cost ${run.estimatedCostUsd === null ? 'unknown (no price in the config)' : `$${run.estimatedCostUsd.toFixed(4)}`}`,
      '',
    ].join('\n'),
  );
  io.stdout(
    formatTable(
      ['metric', 'value', 'n'],
      run.aggregates.map((a) => [a.metric, formatScore(a.value), a.n]),
    ),
  );
}

function runInput(args: Omit<RunArgs, keyof GlobalArgs>): RunRequestInput {
  return {
    benchmarkId: args.benchmark,
    endpointId: args.endpoint,
    ...(args['max-instances'] ? { maxInstances: args['max-instances'] } : {}),
    ...(args.scoring ? { scoring: args.scoring } : {}),
    ...(args.purpose ? { purpose: args.purpose } : {}),
    ...(args.approval ? { approvalId: args.approval } : {}),
  };
}

/** `ehrbench run`: request and execute here, in local mode (the embedded single-user setup). */
async function runHere(app: App, args: RunArgs, io: Io): Promise<RunSummary> {
  const ops = new Operations(app);
  const view = await ops.requestRun(localCaller(app), runInput(args));
  if (view.status === 'requested') {
    throw new UserError('run.awaiting-approval', `run ${view.runId} waits for a compliance officer's approval ("ehrbench runs approve ${view.runId}"); then "ehrbench runs resume ${view.runId}"`);
  }
  const onProgress = progressPrinter(io, !args.json);
  return executeRun(app.engine, view.runId, onProgress ? { onProgress } : {});
}

const runOptions = {
  benchmark: { type: 'string', demandOption: true, describe: 'Benchmark id (see: benchmarks list)' },
  endpoint: { type: 'string', demandOption: true, describe: 'Endpoint id (see: endpoints list)' },
  'max-instances': { type: 'number', describe: 'Stop after this many instances' },
  scoring: { choices: ['corrected', 'helm'] as const, describe: 'corrected (default) or helm: reproduce HELM scoring bugs' },
  purpose: { type: 'string', describe: 'Purpose of use, recorded in the audit trail' },
  approval: { type: 'string', describe: 'IRB approval id to run under (default: any approval that covers the run)' },
} as const;

export function runCommand(io: Io): CommandModule<GlobalArgs, RunArgs> {
  return {
    command: 'run',
    describe: 'Request a run and execute it here (local mode); with a daemon use "runs request"',
    builder: (y) => y.options(runOptions),
    handler: async (args) => {
      const summary = await withApp(args, io, (app) => runHere(app, args, io));
      if (args.json) printJson(io, summary);
      else printSummaries(io, [summary]);
    },
  };
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'halted']);

/** Polls a run and draws a progress bar with counts and an ETA until it ends. */
async function watch(args: ClientArgs & { id: string; interval: number }, io: Io): Promise<RunView> {
  return withClient(args, io, async (client) => {
    let run = await client.showRun(args.id);
    const bar = new SingleBar(
      { format: ' {bar} {percentage}% | {value}/{total} done | blocked {blocked} | failed {failed} | {status} | ETA {eta_formatted}', stream: process.stderr, hideCursor: true },
      Presets.shades_classic,
    );
    if (!args.json) bar.start(run.instanceCount ?? 0, 0, { blocked: 0, failed: 0, status: run.status });
    for (;;) {
      const c = run.counts;
      if (!args.json) {
        bar.setTotal(run.instanceCount ?? c.pending + c.claimed + c.done + c.blocked + c.failed);
        bar.update(c.done + c.blocked + c.failed, { blocked: c.blocked, failed: c.failed, status: run.status });
      }
      if (TERMINAL.has(run.status)) break;
      await new Promise((r) => setTimeout(r, args.interval * 1000));
      run = await client.showRun(args.id);
    }
    if (!args.json) bar.stop();
    return run;
  });
}

export function runsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'runs <command>',
    describe: 'Runs: request, approve, list, show, watch, cancel, resume',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .command<ClientArgs & Omit<RunArgs, keyof GlobalArgs>>({
          command: 'request',
          describe: 'Request a run (a private-tier run then waits for a compliance officer)',
          builder: (b) => b.options(runOptions),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.requestRun(runInput(args)));
            if (args.json) return printJson(io, run);
            io.stdout(`run ${run.runId} ${run.status}${run.status === 'requested' ? ': waits for a compliance officer ("ehrbench runs approve <id>")' : ''}\n`);
          },
        })
        .command<ClientArgs & { id: string }>({
          command: 'approve <id>',
          describe: 'Approve a requested private-tier run (compliance; never your own)',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.approveRun(args.id));
            if (args.json) return printJson(io, run);
            io.stdout(`run ${run.runId} approved by ${run.approvedBy}\n`);
          },
        })
        .command<ClientArgs & { limit: number }>({
          command: 'list',
          describe: 'List runs (researchers see their own)',
          builder: (b) => b.option('limit', { type: 'number', default: 50 }),
          handler: async (args) => {
            const runs = await withClient(args, io, (c) => c.listRuns(args.limit));
            if (args.json) printJson(io, runs);
            else printSummaries(io, runs);
          },
        })
        .command<ClientArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show one run with every aggregate metric',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.showRun(args.id));
            if (args.json) printJson(io, run);
            else printRun(io, run);
          },
        })
        .command<ClientArgs & { id: string; interval: number }>({
          command: 'watch <id>',
          describe: 'Follow a run with a progress bar (counts and ETA) until it ends',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('interval', { type: 'number', default: 1, describe: 'Seconds between updates' }),
          handler: async (args) => {
            const run = await watch(args, io);
            if (args.json) printJson(io, run);
            else printSummaries(io, [run]);
          },
        })
        .command<ClientArgs & { id: string; reason: string }>({
          command: 'cancel <id>',
          describe: 'Stop a run (its requester; compliance and admins may halt any run)',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('reason', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.cancelRun(args.id, args.reason));
            if (args.json) return printJson(io, run);
            io.stdout(`run ${run.runId} ${run.status}\n`);
          },
        })
        .command<GlobalArgs & { id: string }>({
          command: 'resume <id>',
          describe: 'Execute an approved or interrupted run here (local mode): only unfinished instances are sent',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const summary = await withApp(args, io, async (app) => {
              await new Operations(app).showRun(localCaller(app), args.id);
              const onProgress = progressPrinter(io, !args.json);
              return executeRun(app.engine, args.id, onProgress ? { onProgress } : {});
            });
            if (args.json) printJson(io, summary);
            else printSummaries(io, [summary]);
          },
        })
        .demandCommand(1, 'name a subcommand: request, approve, list, show, watch, cancel or resume'),
    handler: () => undefined,
  };
}
