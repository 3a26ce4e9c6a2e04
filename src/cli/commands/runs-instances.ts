/**
 * `ehrbench runs instances ID`: a page of a run's instances, as policy/visibility shows them (locally
 * or through the daemon): a public run's with the start of each text and its score, an EHR tier's
 * failed and blocked instances by ordinal, state and code. A compact table; --json for the whole texts.
 */
import type { CommandModule } from 'yargs';
import { commandPrefix } from '../../command-prefix';
import { UserError } from '../../errors';
import { INSTANCE_PAGE, type InstancesQuery, type InstanceView, type RunInstances } from '../../operations';
import { type ClientArgs, withClient } from '../client';
import { formatScore, formatTable, type Io, printJson } from '../output';

interface InstancesArgs extends ClientArgs {
  id: string;
  failed?: boolean;
  wrong?: boolean;
  metric?: string;
  limit?: number;
  after?: number;
}

const METRIC = /^[a-z0-9_]{1,80}$/;

/** The flags as a query, or a one-line usage error (exit 2) naming the flag. */
export function instancesQuery(args: Omit<InstancesArgs, keyof ClientArgs | 'id'>): InstancesQuery {
  const { limit, after, metric } = args;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > INSTANCE_PAGE.max)) {
    throw new UserError('cli.usage', `--limit must be a whole number from 1 to ${INSTANCE_PAGE.max} (got ${String(limit)})`);
  }
  if (after !== undefined && (!Number.isInteger(after) || after < 0))
    throw new UserError('cli.usage', `--after must be a whole number, 0 or more: the ordinal the last page ended at (got ${String(after)})`);
  if (metric !== undefined && !METRIC.test(metric)) throw new UserError('cli.usage', '--metric must be a metric name (lower-case letters, digits and _), such as exact_match; see "runs show ID"');
  return {
    ...(args.failed ? { failed: true } : {}),
    ...(args.wrong ? { wrong: true } : {}),
    ...(metric !== undefined ? { metric } : {}),
    ...(limit !== undefined ? { limit } : {}),
    ...(after !== undefined ? { after } : {}),
  };
}

/** Control and bidirectional characters written out, so model or dataset text cannot drive the terminal. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line of at most `width` characters of a text: white space folded, unsafe characters written out, the cut marked. */
export function excerpt(text: string | null | undefined, width: number): string {
  if (text === null || text === undefined) return '-';
  const line = text
    .replace(/\s+/g, ' ')
    .trim()
    .replace(UNSAFE, (c) => `[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`;
}

function textRow(i: InstanceView): (string | number)[] {
  return [i.ordinal, i.state, formatScore(i.score), i.errorCode ?? '-', excerpt(i.prompt, 40), excerpt(i.prediction, 30), excerpt(i.references?.join(' | '), 30)];
}

function filterWords(page: RunInstances): string {
  const kinds = [page.filter.failed ? 'failed or blocked' : '', page.filter.wrong ? `wrong (${page.mainMetric} below full marks)` : ''].filter(Boolean);
  return kinds.length ? kinds.join(' or ') : 'all';
}

/** The same command with the next page's --after: every other flag as given. */
function nextCommand(args: InstancesArgs, nextAfter: number): string {
  const flags = [args.failed ? '--failed' : '', args.wrong ? '--wrong' : '', args.metric ? `--metric ${args.metric}` : '', args.limit !== undefined ? `--limit ${args.limit}` : ''].filter(Boolean);
  return [`${commandPrefix()} runs instances ${args.id}`, ...flags, `--after ${nextAfter}`].join(' ');
}

export function printInstances(io: Io, args: InstancesArgs, page: RunInstances): void {
  const n = page.instances.length;
  const head =
    page.view === 'text'
      ? `run ${page.runId}: ${page.benchmarkId} (${page.tier}), ${filterWords(page)} instances, score: ${page.metric}${page.prompts === 'template-changed' ? "; prompts not shown: the benchmark's template changed since the run" : ''}`
      : `run ${page.runId}: ${page.benchmarkId} (${page.tier}), failed and blocked instances only, codes only (rule ${page.rule}): ${page.reason}`;
  io.stdout(`${head}\n`);
  if (n === 0) io.stdout(`no instance${page.after !== null ? ` after ordinal ${page.after}` : ''} matches\n`);
  else if (page.view === 'text') io.stdout(formatTable(['#', 'state', 'score', 'code', 'prompt', 'prediction', 'reference'], page.instances.map(textRow)));
  else
    io.stdout(
      formatTable(
        ['#', 'state', 'code'],
        page.instances.map((i) => [i.ordinal, i.state, i.errorCode ?? '-']),
      ),
    );
  const truncated = page.instances.some((i) => i.truncated) ? '; some texts were longer than the API answers and were cut' : '';
  if (page.nextAfter !== null) io.stdout(`${n} shown; next page: ${nextCommand(args, page.nextAfter)}${page.view === 'text' ? '; --json for whole texts' : ''}${truncated}\n`);
  else if (n > 0) io.stdout(`${n} shown; last page${page.view === 'text' ? '; --json for whole texts' : ''}${truncated}\n`);
}

export function instancesCommand(io: Io): CommandModule<ClientArgs, InstancesArgs> {
  return {
    command: 'instances <id>',
    describe: "A run's instances: a public run's prompts, predictions, references and scores; an EHR tier's failed and blocked instances by code only (requester and compliance)",
    builder: (b) =>
      b
        .positional('id', { type: 'string', demandOption: true })
        .option('failed', { type: 'boolean', describe: 'Only instances that failed for good or were blocked' })
        .option('wrong', { type: 'boolean', describe: 'Only scored instances whose main-metric score is below full marks (public runs)' })
        .option('metric', { type: 'string', describe: "Show this metric's score instead of the main metric's (public runs)" })
        .option('limit', { type: 'number', describe: `Instances per page (default ${INSTANCE_PAGE.default}, at most ${INSTANCE_PAGE.max})` })
        .option('after', { type: 'number', describe: 'Start after this ordinal: the next page, as the last page says' }),
    handler: async (args) => {
      const query = instancesQuery(args);
      const page = await withClient(args, io, (c) => c.listInstances(args.id, query), { writes: false });
      if (args.json) printJson(io, page);
      else printInstances(io, args, page);
    },
  };
}
