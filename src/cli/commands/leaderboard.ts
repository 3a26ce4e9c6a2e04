import { writeFileSync } from 'node:fs';
import type { CommandModule } from 'yargs';
import { readJsonFile } from '../../schema';
import { UserError } from '../../errors';
import { dataRevisionReport, type DataRevisionReport, heatmapSvg, type Leaderboard, leaderboardOf, revisionsLine, type ScoreTable, toScoreTable, unrankedModels } from '../../export';
import { pinReport, scoresFromRuns, versionReport, versionsLine } from '../../export';
import { type PinDifference, pinDifferenceLine } from '../../contracts';
import { CLIENT_OPTIONS, type ClientArgs, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { formatScore, formatTable, type Io, printJson } from '../output';

interface LeaderboardArgs extends ClientArgs {
  scores?: string;
  runs?: string[];
  svg?: string;
  'allow-mixed-data'?: boolean;
}

/** What the output says about the runs' data: runs of one benchmark compared across revisions (allowed), runs whose revision is unknown. */
function revisionNotes(report: DataRevisionReport, versions: ReturnType<typeof versionReport>, pins: PinDifference[]): string {
  const lines = [
    ...(pins.length ? ['Compared across different pins (--allow-mixed-data): these runs of one benchmark differ in what made their scores', ...pins.map((d) => `  ${pinDifferenceLine(d)}`)] : []),
    ...(versions.length ? ['Compared across benchmark versions (--allow-mixed-data): these runs of one benchmark ran other prompts or scoring', ...versions.map((b) => `  ${versionsLine(b)}`)] : []),
    ...(report.mixed.length ? ['Compared across data revisions (--allow-mixed-data): these runs of one benchmark read different data', ...report.mixed.map((b) => `  ${revisionsLine(b)}`)] : []),
    ...(report.unknown.length ? [`Data revision unknown (recorded before revisions were): ${report.unknown.map((r) => `run ${r.runId} (${r.benchmarkId})`).join(', ')}`] : []),
  ];
  return lines.length ? `\n${lines.join('\n')}\n` : '';
}

function summaryTable(board: Leaderboard): string {
  const main = formatTable(
    ['rank', 'model', 'win rate', 'win SD', 'macro avg', 'macro SD', 'benchmarks'],
    board.models.map((r) => [r.rank, r.model, formatScore(r.meanWinRate), formatScore(r.winSd), formatScore(r.macroAverage), formatScore(r.macroSd), r.winRateBenchmarks]),
  );
  const categories = board.models[0]?.categories.map((c) => c.category) ?? [];
  const perCategory = categories.length
    ? '\nMacro average per category (scores mapped to 0-1 by range):\n' +
      formatTable(
        ['model', ...categories],
        board.models.map((r) => [r.model, ...r.categories.map((c) => formatScore(c.macroAverage))]),
      )
    : '';
  const skipped = board.benchmarks.filter((b) => !b.inWinRate).map((b) => b.id);
  const note = skipped.length ? `\nLeft out of win rates (no direction, or fewer than two scores): ${skipped.join(', ')}\n` : '';
  return main + perCategory + note;
}

/** "a", "a and b", "a, b and c". */
function listed(names: string[]): string {
  return names.length <= 1 ? (names[0] ?? '') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/** A ranking compares models on the same benchmarks: a model that shares none with any other is refused. */
function refuseUnranked(table: ScoreTable, source: string, fromRuns: boolean): void {
  const alone = unrankedModels(table);
  if (alone.length === 0) return;
  const one = alone.length === 1;
  const hint = fromRuns ? 'add runs of the same benchmarks on each endpoint' : `give ${one ? 'it' : 'them'} a score on a benchmark another model has, or leave ${one ? 'it' : 'them'} out`;
  throw new UserError(
    'leaderboard.no-overlap',
    `${source}: ${listed(alone)} share${one ? 's' : ''} no scored benchmark with any other model, and a ranking compares models on the same benchmarks; ${hint}`,
  );
}

function writeSvg(file: string, svg: string): void {
  try {
    writeFileSync(file, svg, { mode: 0o644 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError('leaderboard.svg', `${file}: cannot write the heat map (${code ?? 'error'}); check the path and permissions`);
  }
}

export function leaderboardCommand(io: Io): CommandModule<GlobalArgs, LeaderboardArgs> {
  return {
    command: 'leaderboard',
    describe: 'MedHELM leaderboard (mean win rate, win SD, macro average) from per-benchmark scores',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .option('scores', {
          type: 'string',
          describe: 'JSON file {"benchmarks": [...], "models": [...], "scores": {model: {benchmark: number|null}}} (schemas/leaderboard-scores.schema.json)',
        })
        .option('runs', { type: 'string', array: true, describe: 'Or: completed runs (ids, comma-separated or repeated); one row per endpoint, their main metrics' })
        .option('svg', { type: 'string', describe: 'Also write a heat map of scores per benchmark to this SVG file' })
        .option('allow-mixed-data', {
          type: 'boolean',
          describe:
            'With --runs: compare runs of one benchmark that read different data (their data revisions differ) or ran different versions of it; refused without it, and said in the output with it',
        }),
    handler: async (args) => {
      const runIds = (args.runs ?? [])
        .flatMap((x) => x.split(','))
        .map((x) => x.trim())
        .filter(Boolean);
      if ((args.scores === undefined) === (runIds.length === 0)) throw new UserError('cli.usage', 'give either --scores FILE or --runs ID...; see --help');
      const runs = args.scores ? [] : await withClient(args, io, (c) => Promise.all(runIds.map((id) => c.showRun(id))), { writes: false });
      const table = args.scores
        ? toScoreTable(readJsonFile(args.scores, 'leaderboard.invalid'), args.scores)
        : toScoreTable(scoresFromRuns(runs, { allowMixedData: args['allow-mixed-data'] === true }), '--runs');
      const revisions = dataRevisionReport(runs);
      refuseUnranked(table, args.scores ?? '--runs', args.scores === undefined);
      const board = leaderboardOf(table);
      if (args.svg) {
        writeSvg(args.svg, heatmapSvg(table, board));
        io.stderr(`wrote heat map to ${args.svg}\n`);
      }
      const versions = versionReport(runs);
      const pins = pinReport(runs);
      const mentioned = revisions.mixed.length > 0 || revisions.unknown.length > 0;
      if (args.json) {
        return printJson(io, {
          ...board,
          ...(mentioned ? { dataRevisions: revisions } : {}),
          ...(versions.length ? { benchmarkVersions: versions } : {}),
          ...(pins.length ? { mixedPins: pins.map((d) => ({ benchmarkId: d.benchmarkId, differs: d.differs })) } : {}),
        });
      }
      io.stdout(summaryTable(board) + revisionNotes(revisions, versions, pins));
    },
  };
}
