import type { CommandModule } from 'yargs';
import type { App } from '../../app';
import { UserError } from '../../errors';
import { executeRun, requestRun, summarize, type RunSummary } from '../../runs/engine';
import { type GlobalArgs, localActor, withApp } from '../context';
import { formatScore, formatTable, type Io, printJson } from '../output';

interface RunArgs extends GlobalArgs {
  benchmark: string;
  endpoint: string;
  'max-instances'?: number;
  scoring?: 'corrected' | 'helm';
}

function progressPrinter(io: Io, enabled: boolean) {
  return enabled
    ? (c: { done: number; blocked: number; failed: number; pending: number; claimed: number }) =>
        io.stderr(`  done ${c.done}  blocked ${c.blocked}  failed ${c.failed}  left ${c.pending + c.claimed}\n`)
    : undefined;
}

export function printSummaries(io: Io, summaries: RunSummary[]): void {
  io.stdout(
    formatTable(
      ['benchmark', 'tier', 'n', 'main metric', 'score', 'blocked', 'failed', 'status', 'run id'],
      summaries.map((s) => [s.benchmarkId, s.tier, s.counts.done, s.mainMetric, formatScore(s.mainScore), s.counts.blocked, s.counts.failed, s.status, s.runId]),
    ),
  );
}

async function runOne(app: App, args: RunArgs, io: Io): Promise<RunSummary> {
  const run = await requestRun(app.engine, {
    benchmarkId: args.benchmark,
    endpointId: args.endpoint,
    requester: localActor(),
    ...(args['max-instances'] ? { maxInstances: args['max-instances'] } : {}),
    ...(args.scoring ? { scoring: args.scoring } : {}),
  });
  const onProgress = progressPrinter(io, !args.json);
  return executeRun(app.engine, run.run_id, onProgress ? { onProgress } : {});
}

export function runCommand(io: Io): CommandModule<GlobalArgs, RunArgs> {
  return {
    command: 'run',
    describe: 'Request a run of a benchmark on an endpoint and execute it here',
    builder: (y) =>
      y
        .option('benchmark', { type: 'string', demandOption: true, describe: 'Benchmark id (see: benchmarks list)' })
        .option('endpoint', { type: 'string', demandOption: true, describe: 'Endpoint id (see: endpoints list)' })
        .option('max-instances', { type: 'number', describe: 'Stop after this many instances' })
        .option('scoring', { choices: ['corrected', 'helm'] as const, describe: 'corrected (default) or helm: reproduce HELM scoring bugs' }),
    handler: async (args) => {
      const summary = await withApp(args, io, (app) => runOne(app, args, io));
      if (args.json) printJson(io, summary);
      else printSummaries(io, [summary]);
    },
  };
}

export function runsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'runs <command>',
    describe: 'Runs: list, show, resume',
    builder: (y) =>
      y
        .command<GlobalArgs & { limit: number }>({
          command: 'list',
          describe: 'List recent runs',
          builder: (b) => b.option('limit', { type: 'number', default: 50 }),
          handler: async (args) => {
            const summaries = await withApp(args, io, async (app) => {
              const runs = await app.engine.store.listRuns(args.limit);
              return Promise.all(runs.map((r) => summarize(app.engine, r)));
            });
            if (args.json) printJson(io, summaries);
            else printSummaries(io, summaries);
          },
        })
        .command<GlobalArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show one run with every aggregate metric',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const out = await withApp(args, io, async (app) => {
              const run = await app.engine.store.getRun(args.id);
              if (!run) return undefined;
              return { run: { ...run }, summary: await summarize(app.engine, run) };
            });
            if (!out) throw new UserError('run.not-found', `run ${args.id} does not exist; see "ehrbench runs list"`);
            if (args.json) return printJson(io, out);
            const { run, summary } = out;
            io.stdout(
              [
                `run ${run.run_id}: ${run.benchmark_id} v${run.benchmark_version} on ${run.endpoint_id} (${run.tier}), ${run.status}`,
                `  requested by ${run.requested_by} at ${run.created_at.toISOString()}`,
                `  definition sha256 ${run.benchmark_hash}; template sha256 ${run.template_hash}; scoring ${run.spec.scoring}`,
                `  instances: ${run.instance_count ?? '?'} planned, ${summary.counts.done} done, ${summary.counts.blocked} blocked, ${summary.counts.failed} failed`,
                `  tokens: ${summary.promptTokens} in, ${summary.completionTokens} out`,
                '',
              ].join('\n'),
            );
            io.stdout(formatTable(['metric', 'value', 'n'], summary.aggregates.map((a) => [a.metric, formatScore(a.value), a.n])));
          },
        })
        .command<GlobalArgs & { id: string }>({
          command: 'resume <id>',
          describe: 'Continue an interrupted run: only unfinished instances are sent',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const summary = await withApp(args, io, (app) => {
              const onProgress = progressPrinter(io, !args.json);
              return executeRun(app.engine, args.id, onProgress ? { onProgress } : {});
            });
            if (args.json) printJson(io, summary);
            else printSummaries(io, [summary]);
          },
        })
        .demandCommand(1, 'name a subcommand: list, show or resume'),
    handler: () => undefined,
  };
}
