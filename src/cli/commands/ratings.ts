/**
 * `ehrbench ratings agreement --from FILE.csv [--datasets a,b] [--json]`: how far an LLM jury agrees with
 * clinicians on a MedHELM-format ratings file (src/agreement: MedHELM's method, per dataset and ALL).
 * `ehrbench ratings plan --icc R --width W --raters K --assurance A [--population N]`: how many items a
 * rating study needs (Zou 2012, with the finite-population correction).
 *
 * Local files, local output: no configuration, no store, no audit event (the file is the operator's,
 * and nothing leaves the machine). The output has figures, counts and rater ids, never a cell's text.
 * --json prints schemas/ratings-agreement-output.schema.json and ratings-plan-output.schema.json.
 */
import { resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { agreement, type AgreementReport, type Comparison, type Icc, type Maybe, planInstances, readMedhelmRatings, type SelectionAgreement } from '../../agreement';
import { UserError } from '../../errors';
import type { StudyDetail, StudyView } from '../../operations';
import { CLIENT_OPTIONS, type ClientArgs, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { formatScore, formatTable, type Io, printJson } from '../output';

export const AGREEMENT_OUTPUT_SCHEMA = 'ratings-agreement-output.schema.json';
export const PLAN_OUTPUT_SCHEMA = 'ratings-plan-output.schema.json';

interface AgreementArgs extends ClientArgs {
  from?: string;
  study?: string;
  datasets?: string;
}

interface PlanArgs extends GlobalArgs {
  icc: number;
  width: number;
  raters: number;
  assurance: number;
  alpha: number;
  population?: number;
}

function iccText(m: Maybe<Icc>): string {
  return m.value === null ? '-' : `${formatScore(m.value.icc)} [${formatScore(m.value.ci[0])}, ${formatScore(m.value.ci[1])}]`;
}

function rhoText(m: Maybe<{ rho: number }>): string {
  return m.value === null ? '-' : formatScore(m.value.rho);
}

function row(name: string, s: SelectionAgreement): (string | number)[] {
  const pair = s.clinicians.pair ? `${iccText(s.clinicians.icc)} (${s.clinicians.items} items)` : '-';
  return [name, s.items, s.raters, iccText(s.jury.icc), rhoText(s.jury.spearman), s.jury.kappa.value === null ? '-' : formatScore(s.jury.kappa.value), pair];
}

/** Why a figure is missing, one line each, so a '-' in the table is never left unexplained. */
function reasons(name: string, s: SelectionAgreement): string[] {
  const out: string[] = [];
  const note = (what: string, m: Maybe<unknown>) => m.value === null && out.push(`${name}: ${what}: ${m.reason}`);
  note('jury ICC', s.jury.icc);
  note('jury kappa', s.jury.kappa);
  note('clinician-clinician ICC', s.clinicians.icc);
  for (const e of s.excludedRaters) out.push(`${name}: rater ${e.rater} left out (${e.reason})`);
  return out;
}

function extraTable(title: string, entries: [string, Comparison][]): string {
  if (entries.length === 0) return '';
  return (
    `\n${title}\n` +
    formatTable(
      ['against the clinicians', 'items', 'ICC(3,k) [95% CI]', 'Spearman'],
      entries.map(([n, c]) => [n, c.items, iccText(c.icc), rhoText(c.spearman)]),
    )
  );
}

export function formatAgreement(report: AgreementReport, file: string): string {
  const selections: [string, SelectionAgreement][] = [...Object.entries(report.byDataset), ['ALL', report.ALL]];
  const table = formatTable(
    ['dataset', 'items', 'raters', 'jury ICC(3,k) [95% CI]', 'Spearman', 'kappa (quadratic)', 'clinician-clinician ICC(3,k)'],
    selections.map(([n, s]) => row(n, s)),
  );
  const pair = report.ALL.clinicians.pair;
  const judges = extraTable('Each judge alone (ALL):', Object.entries(report.ALL.judges));
  const rouge = report.ALL.rouge ? extraTable('ROUGE-L (ALL):', [['ROUGE-L', report.ALL.rouge]]) : '';
  const notes = selections.flatMap(([n, s]) => reasons(n, s));
  return [
    `${file}: criteria ${report.criteria.join(', ')}; each rater's composite (mean of the criteria) z-scored over its own ratings (sd with ddof ${report.zScoreDdof}); ICC(3,k) of the clinicians' mean against the jury, ${Math.round((1 - report.alpha) * 100)}% intervals from the F distribution\n\n`,
    table,
    pair ? `\nClinician-clinician (ALL): ${pair[0]} and ${pair[1]}, the pair with the most items in common.\n` : '',
    judges,
    rouge,
    notes.length ? `\n${notes.join('\n')}\n` : '',
  ].join('');
}

function datasetsOf(list: string | undefined): string[] | undefined {
  if (list === undefined) return undefined;
  const names = list
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  if (names.length === 0) throw new UserError('cli.usage', '--datasets needs dataset names separated by commas, e.g. --datasets aci_bench,mediqa');
  return names;
}

function agreementCommand(io: Io): CommandModule<GlobalArgs, AgreementArgs> {
  return {
    command: 'agreement',
    describe: "Agreement of the LLM jury with clinicians' ratings (ICC(3,k), Spearman, quadratic kappa), per dataset and pooled, as MedHELM validated its jury",
    builder: (y) =>
      y
        .usage('$0 ratings agreement --from FILE.csv [--datasets a,b] [--json]')
        .options(CLIENT_OPTIONS)
        .option('study', { type: 'string', describe: 'A rating study in the store (its id): its agreement, as the console shows it (aggregates only)' })
        .option('from', {
          type: 'string',
          describe: 'MedHELM ratings CSV: username, instance_id, dataset_name, accuracy, completeness, clarity, llm_accuracy, llm_completeness, llm_clarity (one row per rating)',
        })
        .option('datasets', { type: 'string', describe: 'Only these datasets (comma-separated), pooled as ALL; ratings are z-scored within this selection' })
        .epilog('Exit codes: 0 the figures were computed (a figure the data cannot give is "-" with its reason); 1 the file is unreadable or invalid (the error names line and column); 2 usage.'),
    handler: async (args) => {
      if ((args.from === undefined) === (args.study === undefined))
        throw new UserError('cli.usage', 'give either --from FILE.csv (a MedHELM ratings file) or --study ID (a rating study in the store)');
      if (args.study !== undefined) {
        if (args.datasets !== undefined) throw new UserError('cli.usage', '--datasets applies to --from only: a study is one benchmark');
        const detail = await withClient(args, io, (c) => c.showStudy(args.study as string), { writes: false });
        if (args.json) return printJson(io, detail);
        return io.stdout(formatStudy(detail));
      }
      const datasets = datasetsOf(args.datasets);
      const input = readMedhelmRatings(resolve(args.from as string));
      const report = agreement(input, datasets ? { datasets } : {});
      if (args.json) return printJson(io, report);
      io.stdout(formatAgreement(report, args.from as string));
    },
  };
}

function planCommand(io: Io): CommandModule<GlobalArgs, PlanArgs> {
  return {
    command: 'plan',
    describe: 'Items a rating study needs for its ICC to be estimated within a given width (Zou 2012, with the finite-population correction)',
    builder: (y) =>
      y
        .usage('$0 ratings plan --icc 0.5 --width 0.3 --raters 2 --assurance 0.8 [--population N]')
        .option('icc', { type: 'number', demandOption: true, describe: 'The ICC you expect (MedHELM planned with 0.75)' })
        .option('width', { type: 'number', demandOption: true, describe: 'Full width of the 95% interval you want (upper - lower)' })
        .option('raters', { type: 'number', demandOption: true, describe: "Raters per item (2: the clinicians' mean and the jury)" })
        .option('assurance', { type: 'number', demandOption: true, describe: 'Probability that the interval is no wider than --width (e.g. 0.8)' })
        .option('alpha', { type: 'number', default: 0.05, describe: '1 - the confidence of the interval' })
        .option('population', { type: 'number', describe: 'Items in the dataset: applies the finite-population correction' }),
    handler: (args) => {
      const plan = planInstances({
        expectedIcc: args.icc,
        width: args.width,
        raters: args.raters,
        assurance: args.assurance,
        alpha: args.alpha,
        ...(args.population !== undefined ? { population: args.population } : {}),
      });
      const request = { expectedIcc: args.icc, width: args.width, raters: args.raters, assurance: args.assurance, alpha: args.alpha, population: args.population ?? null };
      if (args.json) return printJson(io, { ...request, ...plan });
      io.stdout(
        `${plan.instances} items (Zou 2012: ICC ${args.icc}, 95% interval width ${args.width}, ${args.raters} raters, assurance ${args.assurance})\n` +
          (plan.corrected === null ? '' : `${plan.corrected} items of a dataset of ${args.population} (finite-population correction)\n`),
      );
    },
  };
}

type Stat = { value: number | null; ci95?: { low: number; high: number } | null };
const statText = (s: Stat) => (s.value === null ? '-' : s.ci95 ? `${formatScore(s.value)} [${formatScore(s.ci95.low)}, ${formatScore(s.ci95.high)}]` : formatScore(s.value));

/** A study's progress and agreement: aggregates, never a rating. */
export function formatStudy(d: StudyDetail): string {
  const s = d.study;
  const head = `study ${s.studyId} (${s.status}): ${s.benchmarkId ?? 'blinded'}, ${s.items} items, ${s.ratersPerItem} clinicians per item; ${d.progress.itemsCovered} items fully rated, ${d.progress.rated} ratings by ${d.progress.raters} clinicians, ${d.progress.skipped} skipped, ${d.progress.flagged} flagged\n`;
  if (!d.agreement) return `${head}no agreement yet: no item is rated\n`;
  const table = formatTable(
    ['dataset', 'items', 'clinicians', 'jury ICC(3,k) [95% CI]', 'Spearman', 'kappa (quadratic)', 'clinician-clinician ICC(3,k)', 'ROUGE-L ICC(3,k)'],
    d.agreement.rows.map((r) => [
      r.dataset,
      r.items,
      r.clinicians,
      statText(r.icc),
      statText(r.spearman),
      statText(r.kappa),
      statText(r.clinicianClinicianIcc),
      r.rougeL ? statText(r.rougeL.icc) : '-',
    ]),
  );
  const judges = d.agreement.rows.flatMap((r) => r.judges.map((j) => [r.dataset, j.judge, statText(j.icc), statText(j.spearman)]));
  const stability = d.agreement.rankStability.map((r) => [r.judge, r.tau === null ? `- (${r.reason ?? ''})` : formatScore(r.tau)]);
  return [
    head,
    '\n',
    table,
    judges.length ? `\nEach judge against the clinicians:\n${formatTable(['dataset', 'judge', 'ICC(3,k) [95% CI]', 'Spearman'], judges)}` : '',
    stability.length ? `\nLeaderboard rank stability, each judge left out (Kendall tau against the full jury):\n${formatTable(['judge left out', 'tau'], stability)}` : '',
    `\n${d.agreement.note}\n`,
  ].join('');
}

interface OpenArgs extends ClientArgs {
  title: string;
  runs: string;
  instances: number;
  raters: number;
  seed?: number;
}

function openCommand(io: Io): CommandModule<GlobalArgs, OpenArgs> {
  return {
    command: 'open',
    describe: 'Open a rating study on completed runs of one jury benchmark (a researcher on their own runs, or a compliance officer)',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .option('title', { type: 'string', demandOption: true, describe: 'A short label the clinicians see (no patient detail)' })
        .option('runs', { type: 'string', demandOption: true, describe: 'Completed runs of one jury benchmark, comma-separated' })
        .option('instances', { type: 'number', demandOption: true, describe: 'Instances sampled per run (see ratings plan)' })
        .option('raters', { type: 'number', default: 2, describe: 'Clinicians per item' })
        .option('seed', { type: 'number', describe: 'Seed of the sample (default: random, recorded)' }),
    handler: async (args) => {
      const runIds = args.runs
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean);
      const spec = { title: args.title, runIds, instancesPerRun: args.instances, ratersPerItem: args.raters, ...(args.seed !== undefined ? { seed: args.seed } : {}) };
      const d = await withClient(args, io, (c) => c.openStudy(spec), { writes: true });
      if (args.json) return printJson(io, d);
      io.stdout(`opened rating study ${d.study.studyId}: ${d.study.items} items, ${d.study.ratersPerItem} clinicians per item; clinicians rate it in the console (Rating studies)\n`);
    },
  };
}

function listCommand(io: Io): CommandModule<GlobalArgs, ClientArgs> {
  return {
    command: 'list',
    describe: 'Rating studies you may see',
    builder: (y) => y.options(CLIENT_OPTIONS),
    handler: async (args) => {
      const all: StudyView[] = await withClient(args, io, (c) => c.listStudies(), { writes: false });
      if (args.json) return printJson(io, all);
      io.stdout(
        all.length === 0
          ? 'no rating study\n'
          : formatTable(
              ['study', 'title', 'benchmark', 'status', 'items', 'opened by', 'opened'],
              all.map((s) => [s.studyId, s.title, s.benchmarkId ?? 'blinded', s.status, s.items, s.openedBy, s.openedAt]),
            ),
      );
    },
  };
}

function closeCommand(io: Io): CommandModule<GlobalArgs, ClientArgs & { id: string }> {
  return {
    command: 'close <id>',
    describe: 'Close a rating study to new ratings (its opener or a compliance officer); its agreement then validates the jury in exports',
    builder: (y) => y.options(CLIENT_OPTIONS).positional('id', { type: 'string', demandOption: true }),
    handler: async (args) => {
      const s = await withClient(args, io, (c) => c.closeStudy(args.id), { writes: true });
      if (args.json) return printJson(io, s);
      io.stdout(`closed rating study ${s.studyId}\n`);
    },
  };
}

export function ratingsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'ratings',
    describe: "Clinicians' ratings: agreement with the LLM jury, and the size of a rating study",
    builder: (y) =>
      y
        .usage(
          '$0 ratings agreement --from FILE.csv [--datasets a,b] [--json]\n$0 ratings agreement --study ID [--json]\n$0 ratings plan --icc R --width W --raters K --assurance A [--population N]\n$0 ratings open --title T --runs A,B --instances N [--raters K]\n$0 ratings list\n$0 ratings close ID',
        )
        .command(agreementCommand(io))
        .command(planCommand(io))
        .command(openCommand(io))
        .command(listCommand(io))
        .command(closeCommand(io))
        .demandCommand(1, 'name a subcommand: agreement, plan, open, list or close'),
    handler: () => undefined,
  };
}
