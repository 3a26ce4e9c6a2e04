import { commandPrefix } from '../../command-prefix';
import type { CommandModule } from 'yargs';
import type { App } from '../../app';
import { UserError } from '../../errors';
import { interruptibly } from '../interrupt';
import type { RunRequestInput, RunView, StoppedRunView } from '../../operations';
import { executeRun, juryPolicyText, readProgress, type RunOutcome, type RunProgress, type RunSummary } from '../../runs';
import { followLocal, ProgressDisplay } from '../progress';
import { CLIENT_OPTIONS, type ClientArgs, localCaller, withClient } from '../client';
import { type GlobalArgs, withApp } from '../context';
import { PIN_KINDS } from '../../contracts';
import { formatScore, formatTable, type Io, printJson } from '../output';
import { MAX_REPEATS, Operations } from '../../operations';
import { TEST_ENDPOINT_DESCRIPTION } from '../../setup';
import { instancesCommand } from './runs-instances';
import { metaEvalCommand } from './runs-meta-eval';
import { stabilityCommand, stabilityLines } from './runs-stability';

interface RunArgs extends GlobalArgs {
  benchmark: string;
  endpoint: string;
  'max-instances'?: number;
  scoring?: 'corrected' | 'helm';
  purpose?: string;
  approval?: string;
  'max-output-tokens'?: number;
  'reasoning-effort'?: 'low' | 'medium' | 'high';
  sample?: 'helm' | 'first';
  preset?: 'medhelm-leaderboard';
  repeat?: number;
}

/** A run summary, or a run view whose figures may be withheld (null) from the caller. */
type Summarised = Pick<RunSummary, 'benchmarkId' | 'tier' | 'mainMetric' | 'status' | 'runId'> & {
  mainScore: number | null;
  counts: RunSummary['counts'] | null;
  outcome: RunOutcome | null;
  /** Its approval has an unreviewed detected drift (run views only). */
  stale?: boolean;
};

export function printSummaries(io: Io, summaries: Summarised[]): void {
  io.stdout(
    formatTable(
      ['benchmark', 'tier', 'n', 'main metric', 'score', 'blocked', 'failed', 'status', 'run id'],
      summaries.map((s) => [
        s.benchmarkId,
        s.tier,
        s.counts?.done ?? '-',
        s.mainMetric,
        formatScore(s.mainScore),
        s.counts?.blocked ?? '-',
        s.counts?.failed ?? '-',
        `${s.outcome?.label ?? s.status}${s.stale ? ' [STALE: drift not reviewed]' : ''}`,
        s.runId,
      ]),
    ),
  );
}

/** How the planned instances were picked, for `runs show`. */
function sampled(run: RunView): string {
  const s = run.sample;
  if (!s) return '';
  return s.method === 'helm' ? ` (HELM's sample of ${s.maxInstances}, seed ${s.seed})` : ` (the first ${s.maxInstances})`;
}

/**
 * The data the run read, for `runs show`: one hash to compare runs by, then each file's (or what
 * identifies an OMOP source). A run from before data revisions were recorded says "unknown".
 */
function dataLines(run: RunView): string[] {
  const d = run.data;
  if (!d) return ['  data: unknown (the run was recorded before data revisions were)'];
  const parts = d.files?.map((f) => `${f.name} sha256 ${f.sha256}`) ?? [];
  if (d.omop) {
    parts.push(
      `OMOP notes${d.omop.schema ? ` (schema ${d.omop.schema})` : ''}: labels sha256 ${d.omop.labelsSha256 ?? 'none'}, note ids ${d.omop.noteIdsSha256 ? `sha256 ${d.omop.noteIdsSha256}` : 'not pinned'}`,
    );
  }
  return [`  data: revision ${d.sha256}`, ...parts.map((p) => `    ${p}`)];
}

/** The run's pins, for `runs show`: runs whose pins differ are compared only when the caller says so. */
function pinLines(run: RunView): string[] {
  const p = run.pins;
  return ['  pins (runs are comparable when all are the same):', ...PIN_KINDS.map((kind) => `    ${kind}: ${p[kind] ?? 'none (no jury)'}`)];
}

/** The records the dataset left out, one line per rule, so none is left out silently. */
function skippedLines(run: RunView): string[] {
  return Object.entries(run.skipped ?? {}).map(([rule, n]) => `  skipped: ${n} record${n === 1 ? '' : 's'} (${rule})`);
}

/** A warning when an endpoint did not report usage truthfully: those calls were charged their worst case. */
function underReportedLines(run: RunView): string[] {
  const n = run.usageUnderReported ?? 0;
  if (!n) return [];
  return [
    `  warning: ${n} call${n === 1 ? '' : 's'} of this run came back without truthful usage (missing, negative, beyond the request or implausibly low); each was charged its worst case, so tokens and cost are upper bounds for them. Check the endpoint (metric ehrbench_endpoint_usage_under_reported_total)`,
  ];
}

/** One line per cause of instances without a result: the code, what it means, how many. */
function causeLines(outcome: RunOutcome, endpointId: string): string[] {
  return outcome.causes.map((c) => `  ${c.state}: ${c.state === 'failed' ? `endpoint ${endpointId}: ` : ''}${c.code} (${c.meaning}): ${c.instances} instance${c.instances === 1 ? '' : 's'}`);
}

/**
 * A finished run that is not a success fails the command, so a script notices: a run with no result
 * or stopped on an error (run.failed, exit 5), one whose instances partly failed for good
 * (run.instances-failed, exit 5), one cancelled or halted (run.stopped). The causes are on stderr.
 */
function failUnlessSucceeded(io: Io, args: GlobalArgs, run: { runId: string; endpointId: string; status: string; outcome: RunOutcome | null }): void {
  const kind = run.outcome?.kind ?? (run.status === 'completed' ? 'completed' : run.status);
  if (kind === 'completed') return;
  if (run.outcome && !args.json) for (const line of causeLines(run.outcome, run.endpointId)) io.stderr(`${line}\n`);
  const why = run.outcome?.summary ?? run.status;
  if (kind === 'completed-with-failures') throw new UserError('run.instances-failed', `run ${run.runId} completed with failures: ${why}`);
  if (kind === 'halted' || kind === 'cancelled') throw new UserError('run.stopped', `run ${run.runId} ${why}`);
  throw new UserError('run.failed', `run ${run.runId} failed: ${why}`);
}

function printRun(io: Io, run: RunView): void {
  io.stdout(
    [
      `run ${run.runId}: ${run.benchmarkId} v${run.benchmarkVersion} on ${run.endpointId}${run.testEndpoint ? ` [${TEST_ENDPOINT_DESCRIPTION}]` : ''} (${run.tier}), ${run.outcome?.label ?? run.status}${run.errorCode ? ` (${run.errorCode})` : ''}`,
      ...(run.outcome ? [`  ${run.outcome.summary}`, ...causeLines(run.outcome, run.endpointId)] : []),
      `  requested by ${run.requestedBy} at ${run.createdAt}${run.approvedBy ? `; approved by ${run.approvedBy}` : ''}`,
      `  ${run.irbProtocol ? `IRB protocol ${run.irbProtocol}; ` : ''}scoring ${run.scoring}${run.preset ? `; preset ${run.preset}` : ''}`,
      ...(run.jury ? [`  jury: ${juryPolicyText(run.jury)}`] : []),
      ...(run.stale ? [`  STALE: the model behind an endpoint of approval ${run.irbProtocol ?? run.approvalId} drifted and compliance has not reviewed it ("approvals drift")`] : []),
      ...(run.fingerprints ?? []).map(
        (f) => `  served by: ${f.endpointId} model ${f.model ?? '-'}, fingerprint ${f.systemFingerprint ?? '-'} (${f.fingerprint.slice(0, 12)}), ${f.firstSeenDay}..${f.lastSeenDay}`,
      ),
      ...dataLines(run),
      ...pinLines(run),
      ...(run.counts
        ? [
            `  instances: ${run.instanceCount ?? '?'} planned${sampled(run)}, ${run.counts.done} done, ${run.counts.blocked} blocked, ${run.counts.failed} failed`,
            ...skippedLines(run),
            `  tokens: ${run.promptTokens} in, ${run.completionTokens} out${run.reasoningTokens ? ` (${run.reasoningTokens} of them reasoning)` : ''}; estimated cost ${run.estimatedCostUsd === null ? 'unknown (no price in the config)' : `$${run.estimatedCostUsd.toFixed(4)}`}`,
            ...underReportedLines(run),
          ]
        : [`  counts, scores and usage: withheld (rule ${run.withheld}); before a release only the requester and compliance officers see them`]),
      '',
    ].join('\n'),
  );
  if (!run.aggregates) return;
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
    ...(args['max-output-tokens'] !== undefined ? { maxOutputTokens: args['max-output-tokens'] } : {}),
    ...(args['reasoning-effort'] ? { reasoningEffort: args['reasoning-effort'] } : {}),
    ...(args.sample ? { sample: args.sample } : {}),
    ...(args.preset ? { preset: args.preset } : {}),
    ...(args.repeat !== undefined ? { repeat: args.repeat } : {}),
  };
}

/** `ehrbench run`: request and execute here, in local mode (the embedded single-user setup). */
async function runHere(app: App, args: RunArgs, io: Io): Promise<RunSummary> {
  const ops = new Operations(app);
  const view = await ops.requestRun(localCaller(app), runInput(args));
  if (view.status === 'requested') {
    throw new UserError(
      'run.awaiting-approval',
      `run ${view.runId} waits for a compliance officer's approval ("${commandPrefix()} runs approve ${view.runId}"); then "${commandPrefix()} runs resume ${view.runId}"`,
    );
  }
  if (!view.repeat) return executeHere(app, view.runId, view.benchmarkId, args, io);
  // A repeat group: its runs one after another, each as any run, then the group's stability.
  const summaries: RunSummary[] = [];
  for (const runId of view.repeat.runIds) {
    const summary = await executeHere(app, runId, `${view.benchmarkId} ${summaries.length + 1}/${view.repeat.of}`, args, io);
    summaries.push(summary);
    if (summary.status !== 'completed') return summary;
  }
  if (!args.json) io.stderr(`${stabilityLines(await ops.stability(localCaller(app), view.runId))}\n`);
  return summaries[summaries.length - 1] as RunSummary;
}

/** Executes a run in this process, stoppable with Ctrl-C, with its progress on stderr. */
async function executeHere(app: App, runId: string, label: string, args: GlobalArgs, io: Io): Promise<RunSummary> {
  const progress = args.json ? undefined : followLocal(io, label, () => readProgress(app.engine.store, runId));
  return interruptibly(
    io,
    (signal) => executeRun(app.engine, runId, { signal }).finally(() => progress?.stop()),
    () => runId,
  );
}

/** Prints a run's summary; a run that is not a success then fails the command (failUnlessSucceeded). */
function report(io: Io, args: GlobalArgs, summary: RunSummary): void {
  if (args.json) printJson(io, summary);
  else printSummaries(io, [summary]);
  failUnlessSucceeded(io, args, summary);
}

const runOptions = {
  benchmark: { type: 'string', demandOption: true, describe: 'Benchmark id (see: benchmarks list)' },
  endpoint: { type: 'string', demandOption: true, describe: 'Endpoint id (see: endpoints list)' },
  'max-instances': { type: 'number', describe: 'Run at most this many instances, picked as --sample says' },
  sample: {
    choices: ['helm', 'first'] as const,
    describe: "How --max-instances picks: helm (default) = HELM's seeded sample (numpy seed 0), the instances MedHELM's leaderboard scored; first = the first N in dataset order",
  },
  scoring: { choices: ['corrected', 'helm'] as const, describe: 'corrected (default) or helm: reproduce HELM scoring bugs' },
  preset: {
    choices: ['medhelm-leaderboard'] as const,
    describe:
      "Settings in one word. medhelm-leaderboard = MedHELM's leaderboard: --max-instances 1000 by HELM's seeded sample, --scoring helm, HELM's max tokens and temperature; a flag that contradicts it is refused. Recorded with the run",
  },
  purpose: { type: 'string', describe: 'Purpose of use, recorded in the audit trail' },
  approval: { type: 'string', describe: 'IRB approval id to run under (default: any approval that covers the run)' },
  'max-output-tokens': { type: 'number', describe: "Output tokens per model call instead of the benchmark's max_tokens (reasoning models; MedHELM ran them with up to 4000)" },
  'reasoning-effort': { choices: ['low', 'medium', 'high'] as const, describe: 'reasoning_effort for reasoning models whose API takes it (default: the endpoint policy)' },
  repeat: {
    type: 'number',
    describe: `K runs of the same sample on the same endpoint (2-${MAX_REPEATS}), each checked and audited like any run; "runs stability ID" then says how often the answers and scores agreed`,
  },
} as const;

export function runCommand(io: Io): CommandModule<GlobalArgs, RunArgs> {
  return {
    command: 'run',
    describe: 'Request a run and execute it here (local mode); with a daemon use "runs request"',
    builder: (y) => y.options(runOptions),
    handler: async (args) => {
      const summary = await withApp(args, io, (app) => runHere(app, args, io), { writes: true });
      report(io, args, summary);
    },
  };
}

/**
 * What a cancel did: no new call of the run starts, and the calls in flight finish. Their number is
 * known when the answering process executes the run (the daemon's workers); a run that never started
 * has none.
 */
function stoppedLine(run: StoppedRunView): string {
  const verb = run.status === 'halted' ? 'halting' : 'cancelling';
  const n = run.callsInFlight;
  if (n === 0 || (n === undefined && !run.startedAt)) return `run ${run.runId} ${run.status}; no call was in flight`;
  if (n === undefined) return `run ${run.runId} ${verb}; calls in flight will finish`;
  return `run ${run.runId} ${verb}; ${n} call${n === 1 ? '' : 's'} in flight will finish`;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'halted']);

/** A run as the daemon shows it, as the progress display reads it (figures withheld: null). */
function progressOf(run: RunView): RunProgress {
  return { status: run.status, instanceCount: run.instanceCount ?? null, counts: run.counts ?? null };
}

/** Polls a run and shows its progress (a bar on a terminal, lines otherwise) until it ends. */
async function watch(args: ClientArgs & { id: string; interval: number }, io: Io): Promise<RunView> {
  return withClient(
    args,
    io,
    async (client) => {
      let run = await client.showRun(args.id);
      const display = args.json ? undefined : new ProgressDisplay(io, { label: run.benchmarkId });
      try {
        for (;;) {
          display?.update(progressOf(run));
          if (TERMINAL.has(run.status)) break;
          await new Promise((r) => setTimeout(r, args.interval * 1000));
          run = await client.showRun(args.id);
        }
      } finally {
        display?.stop();
      }
      return run;
    },
    { writes: false },
  );
}

export function runsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'runs <command>',
    describe: 'Runs: request, approve, list, show, instances, watch, cancel, resume',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .command<ClientArgs & Omit<RunArgs, keyof GlobalArgs>>({
          command: 'request',
          describe: 'Request a run (a private-tier run then waits for a compliance officer)',
          builder: (b) => b.options(runOptions),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.requestRun(runInput(args)), { writes: true });
            if (args.json) return printJson(io, run);
            for (const id of run.repeat?.runIds ?? [run.runId]) {
              io.stdout(`run ${id} ${run.status}${run.status === 'requested' ? `: waits for a compliance officer ("${commandPrefix()} runs approve ${id}")` : ''}\n`);
            }
            if (run.repeat) io.stdout(`repeat group ${run.repeat.groupId}: "${commandPrefix()} runs stability ${run.runId}" once they are done\n`);
          },
        })
        .command<ClientArgs & { id: string }>({
          command: 'approve <id>',
          describe: 'Approve a requested private-tier run (compliance; never your own)',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.approveRun(args.id), { writes: true });
            if (args.json) return printJson(io, run);
            io.stdout(`run ${run.runId} approved by ${run.approvedBy}\n`);
          },
        })
        .command<ClientArgs & { limit: number }>({
          command: 'list',
          describe: 'List runs (researchers see their own)',
          builder: (b) => b.option('limit', { type: 'number', default: 50 }),
          handler: async (args) => {
            const runs = await withClient(args, io, (c) => c.listRuns(args.limit), { writes: false });
            if (args.json) printJson(io, runs);
            else printSummaries(io, runs);
          },
        })
        .command<ClientArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show one run with every aggregate metric',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.showRun(args.id), { writes: false });
            if (args.json) printJson(io, run);
            else printRun(io, run);
          },
        })
        .command(instancesCommand(io))
        .command(metaEvalCommand(io))
        .command(stabilityCommand(io))
        .command<ClientArgs & { id: string; interval: number }>({
          command: 'watch <id>',
          describe: 'Follow a run with a progress bar (counts and ETA) until it ends',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('interval', { type: 'number', default: 1, describe: 'Seconds between updates' }),
          handler: async (args) => {
            const run = await watch(args, io);
            if (args.json) printJson(io, run);
            else printSummaries(io, [run]);
            failUnlessSucceeded(io, args, run);
          },
        })
        .command<ClientArgs & { id: string; reason: string }>({
          command: 'cancel <id>',
          describe: 'Stop a run (its requester; compliance and admins may halt any run)',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('reason', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const run = await withClient(args, io, (c) => c.cancelRun(args.id, args.reason), { writes: true });
            if (args.json) return printJson(io, run);
            io.stdout(`${stoppedLine(run)}\n`);
          },
        })
        .command<GlobalArgs & { id: string }>({
          command: 'resume <id>',
          describe: 'Execute an approved or interrupted run here (local mode): only unfinished instances are sent',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const summary = await withApp(
              args,
              io,
              async (app) => {
                const run = await new Operations(app).showRun(localCaller(app), args.id);
                return executeHere(app, args.id, run.benchmarkId, args, io);
              },
              { writes: true },
            );
            report(io, args, summary);
          },
        })
        .demandCommand(1, 'name a subcommand: request, approve, list, show, instances, watch, cancel or resume'),
    handler: () => undefined,
  };
}
