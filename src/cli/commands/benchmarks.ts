import { commandPrefix } from '../../command-prefix';
import { existsSync } from 'node:fs';
import type { CommandModule } from 'yargs';
import {
  CATEGORIES,
  Catalog,
  dataStatus,
  importHelmBenchmark,
  loadBenchmark,
  mapHelmRunEntries,
  resolveStrata,
  strataRecord,
  stratumLabels,
  type Benchmark,
  type RunEntriesReport,
  TAXONOMY,
} from '../../catalog';
import { type Config, configPath, loadConfig } from '../../config';
import { UserError } from '../../errors';
import { requiresDeidentification, TIERS } from '../../tiers';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';
import { checkText, siteCheck } from './benchmarks-check';

interface ListArgs extends GlobalArgs {
  tier?: string;
  category?: string;
}

interface ImportArgs extends GlobalArgs {
  config_yaml?: string;
  'run-entries'?: string;
  out?: string;
  id?: string;
  tier?: string;
  category?: string;
  subcategory?: string;
  judge?: string[];
}

/** The configuration; none before `ehrbench init` (no config at the default place). A config named with --config must exist. */
function configFor(args: GlobalArgs, io: Io): Config | undefined {
  const opts = { ...(args.config ? { file: args.config } : {}), env: io.env };
  if (!args.config && !existsSync(configPath(opts))) return undefined;
  return loadConfig(opts);
}

/** Why a run's tier is not the definition's: the site's data bound to it, the site database it is scored on. */
function tierNote(b: Benchmark): string {
  const d = b.definition;
  const why = [
    ...(b.dataTier !== d.tier ? [`its definition says ${d.tier}; the data site-data.json binds to it is ${b.dataTier}`] : []),
    ...(b.tier !== b.dataTier ? [`the site database it is scored on is ${b.tier}`] : []),
  ];
  return why.length ? ` (${why.join('; ')})` : '';
}

/** The site's catalog, with or without its site data; before `ehrbench init` the shipped catalog alone, so a newcomer can look at the benchmarks first. */
function catalogOf(config: Config | undefined, withSiteData = true): Catalog {
  if (!config) return Catalog.load([]);
  return Catalog.load(config.catalogDirs, { ...(withSiteData ? { siteDataFile: config.catalogSiteData } : {}), limits: config.catalogLimits, files: config.catalogFiles });
}

function catalogFor(args: GlobalArgs, io: Io): Catalog {
  return catalogOf(configFor(args, io));
}

/**
 * The catalog `list` shows: a broken site data file must not hide the benchmarks that need none, so
 * they are listed without it and the problem is reported after them (one line, a non-zero exit).
 */
function listCatalog(args: GlobalArgs, io: Io): { catalog: Catalog; siteProblem?: UserError } {
  const config = configFor(args, io);
  try {
    return { catalog: catalogOf(config) };
  } catch (err) {
    if (!(err instanceof UserError && err.code === 'site-data.invalid')) throw err;
    return { catalog: catalogOf(config, false), siteProblem: err };
  }
}

/** What `list` and `show` say about a benchmark's data. */
function dataLabel(b: Benchmark): string {
  switch (dataStatus(b)) {
    case 'shipped':
      return 'shipped';
    case 'site':
      return 'site data';
    default:
      return 'site must supply';
  }
}

/** Accepts a category by its name or an unambiguous start of it, case-insensitively. */
function categoryArg(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const found = CATEGORIES.filter((c) => c.toLowerCase().startsWith(value.toLowerCase()));
  if (found.length !== 1) throw new UserError('cli.usage', `--category must name one of: ${CATEGORIES.join('; ')}`);
  return found[0];
}

function listText(list: Benchmark[]): string {
  const out: string[] = [];
  for (const category of CATEGORIES) {
    const inCategory = list.filter((b) => b.definition.category === category);
    if (inCategory.length === 0) continue;
    out.push(`${category} (${inCategory.length})`);
    const rows = [...inCategory]
      .sort((a, b) => TAXONOMY[category].indexOf(a.definition.subcategory as never) - TAXONOMY[category].indexOf(b.definition.subcategory as never) || a.definition.id.localeCompare(b.definition.id))
      .map((b) => [b.definition.id, b.definition.displayName, b.definition.subcategory, b.tier, b.definition.metrics.main, dataLabel(b)]);
    out.push(formatTable(['id', 'name', 'subcategory', 'tier', 'main metric', 'data'], rows).trimEnd().replace(/^/gm, '  '));
  }
  const counts = TIERS.map((t) => `${list.filter((b) => b.tier === t).length} ${t}`).join(', ');
  out.push(`${list.length} benchmarks: ${counts}`);
  return out.join('\n') + '\n';
}

/** The part of `show` that tells a site what to supply and how to point ehrbench at it. */
function dataSection(b: Benchmark): string[] {
  const d = b.definition;
  const lines: string[] = [];
  const status = dataStatus(b);
  if (status === 'shipped') {
    lines.push(`Data: shipped with ehrbench (${d.dataset.format}, ${d.dataset.files?.length ?? 0} file(s)); source ${d.dataset.source ?? '-'}; licence ${d.dataset.license ?? '-'}`);
  } else if (status === 'site') {
    // Bound is not readable: the file, the connection or the labels may still be missing.
    lines.push(`Data: bound by ${b.siteFile} (${b.site?.source?.type}): ${b.dataPath}; bound, not checked: run "${commandPrefix()} benchmarks check ${d.id}"`);
  } else {
    lines.push(`Data: NOT CONFIGURED. ${d.id} runs on data this site supplies.`);
  }
  const req = d.dataRequirements;
  if (req) {
    lines.push('', `What to supply: ${req.summary}`, `  accepted formats: ${req.formats.join(', ')}`);
    if (req.obtain) lines.push(`  how to obtain: ${req.obtain}`);
    if (req.columns.length) {
      lines.push('  columns (one row per instance; names as below, or renamed with "columns" in the site data file):');
      for (const c of req.columns) lines.push(`    ${c.name}${c.optional ? ' (optional)' : ''}: ${c.description}`);
    }
    if (req.resources?.includes('ehrsql-database')) lines.push(`  also: the SQLite database the SQL runs against, as benchmarks.${d.id}.database`);
    if (req.notes) lines.push(`  notes: ${req.notes}`);
  }
  if (status !== 'shipped' || req?.resources?.length || d.jury) {
    lines.push('', `Configure it in ${b.siteFile ?? 'site-data.json in the data directory (config catalog.siteData)'}, for example:`);
    lines.push(
      ...exampleBinding(b)
        .split('\n')
        .map((l) => `  ${l}`),
    );
    if (req?.formats.includes('omop-note')) {
      const noteColumn = req.columns.find((c) => c.description.includes('note_text'))?.name ?? '<required column>';
      lines.push(
        '  or, from an OMOP CDM database (notes from the note table; read-only):',
        `  "${d.id}": { "source": { "type": "omop-note", "connection": { "env": "EHRBENCH_OMOP_URL" }, "schema": "cdm",`,
        '               "labels": { "path": "/secure/labels.csv" } },',
        `               "columns": { "${noteColumn}": "note_text" } }`,
        '  (the labels CSV is keyed by note_id and holds the columns the note table lacks; note fields: note_id, person_id,',
        '   note_date, note_datetime, note_type_concept_id, note_class_concept_id, note_title, note_text, visit_occurrence_id)',
        '  known identifiers come from person (person_source_value, birth date), location (addresses), care_site (names) and',
        '  provider (names, NPI, DEA) of the person, the visit and the note; person_id is the subject. In the source:',
        '  "personSourceValue": "mrn" (default) | "pseudonym" | "ignore"; "identifierTables": any of location, care_site,',
        '  provider, visit_occurrence (default all; leave out a table the CDM lacks or the role may not read; [] for none)',
      );
    }
    if (status !== 'shipped') lines.push(...identityLines(d.id));
  }
  return lines;
}

/** How a site names the columns holding each record's patient and known identifiers. */
function identityLines(id: string): string[] {
  return [
    "  optional, for any source: the columns (or OMOP note fields and labels columns) holding each record's patient",
    '  and identifiers known from structured data, which de-identification always masks (any case, initials,',
    '  misspellings) and keeps consistent per patient:',
    `  "${id}": { ..., "subject": "patient_id",`,
    '    "known": { "names": ["patient_name", "nok_name"], "mrns": ["mrn"], "dates": ["dob"], "addresses": ["home_address"],',
    '               "facilities": ["facility"], "phones": ["phone"], "emails": ["email"], "other": ["account"] } }',
    '  (your own column names; empty cells are skipped; combined with what the definition and an OMOP source attach)',
  ];
}

function exampleBinding(b: Benchmark): string {
  const d = b.definition;
  const binding: Record<string, unknown> = {};
  if (dataStatus(b) !== 'shipped') binding.source = { type: d.dataRequirements?.formats.includes('csv') ? 'csv' : 'jsonl', path: `/secure/${d.id}.csv` };
  if (d.dataRequirements?.resources?.includes('ehrsql-database')) binding.database = '/secure/eicu.sqlite';
  if (d.jury) binding.jury = { judges: ['judge-endpoint-1', 'judge-endpoint-2', 'judge-endpoint-3'] };
  return JSON.stringify({ benchmarks: { [d.id]: binding } }, null, 2);
}

/** The binding's strata as an export will report them: each with where it is read and its labels. */
function strataLines(b: Benchmark): string[] {
  const strata = b.site?.strata;
  if (!strata?.length) return [];
  return [
    `  strata (site binding, sha256 ${strataRecord(strata)?.sha256.slice(0, 16)}...):`,
    ...resolveStrata(strata).map((s) => `    ${s.name}: from ${s.omop ? `OMOP ${s.omop}` : `column ${s.column}`}; labels ${[...stratumLabels(s), '(other)'].join(', ')}`),
  ];
}

function showText(b: Benchmark): string {
  const d = b.definition;
  const lines = [
    `${d.displayName} (${d.id} v${d.version})`,
    `  ${d.category} / ${d.subcategory}; tier ${b.tier}${tierNote(b)}; split ${d.split}; de-identification ${requiresDeidentification(b.dataTier) ? 'required' : (d.deidentification ?? 'never')}`,
    `  ${d.description ?? ''}`,
    `  main metric ${d.metrics.main} (${d.lowerIsBetter === null ? 'no direction' : d.lowerIsBetter ? 'lower is better' : 'higher is better'})${d.metrics.secondary?.length ? `; also ${d.metrics.secondary.join(', ')}` : ''}`,
    `  output length ${d.prompt.maxTokens} tokens; temperature ${d.prompt.temperature ?? 0}`,
    `  HELM: run spec ${d.helm?.runSpec ?? '-'}${d.helm?.args?.length ? ` (args ${d.helm.args.join(', ')})` : ''}, group ${d.helm?.group ?? '-'}, main metric ${d.helm?.mainMetric ?? '-'}`,
    ...(d.helm?.note ? [`  differs from HELM: ${d.helm.note}`] : []),
    ...(d.helm?.differences ?? []).map((x) => `  differs from HELM: ${x}`),
    `  references: ${d.references}`,
    ...(d.jury ? [`  jury: criteria ${d.jury.criteria.join(', ')} on ${d.jury.scale?.min ?? 1}-${d.jury.scale?.max ?? 5}; judges ${b.judges?.length ? b.judges.join(', ') : 'NOT CONFIGURED'}`] : []),
    ...strataLines(b),
    `  definition sha256 ${b.definitionHash}`,
    `  template sha256   ${b.templateHash}`,
    '',
    ...dataSection(b),
    '',
    'Prompt template:',
    b.template,
  ];
  return lines.join('\n') + '\n';
}

/** One row per run entry: what it is here, and what the hospital must set up for it. */
function runEntriesText(report: RunEntriesReport): string {
  const rows = report.entries.map((e) => [
    e.line,
    e.runSpec,
    e.benchmarkId ?? 'no match',
    e.modelDeployment,
    e.maxEvalInstances,
    Object.entries(e.settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ') || null,
    e.configure.join('; '),
  ]);
  const matched = report.entries.filter((e) => e.benchmarkId !== null);
  const benchmarks = new Set(matched.map((e) => e.benchmarkId));
  return (
    formatTable(['line', 'run spec', 'benchmark', 'model deployment', 'max_eval_instances', 'settings', 'configure here'], rows) +
    `${report.entries.length} entries in ${report.file}: ${matched.length} map to ${benchmarks.size} catalog benchmarks, ${report.entries.length - matched.length} do not\n`
  );
}

/** The configurable-benchmark import needs its placement; the run-entries report needs nothing else. */
function importPlacement(args: ImportArgs): { config: string; out: string; category: string; subcategory: string } {
  const missing = [...(args.config_yaml ? [] : ['CONFIG.yaml']), ...(['out', 'category', 'subcategory'] as const).filter((k) => !args[k]).map((k) => `--${k}`)];
  if (missing.length) throw new UserError('cli.usage', `import-helm needs ${missing.join(', ')} (or --run-entries FILE.conf to map HELM run entries)`);
  return { config: args.config_yaml as string, out: args.out as string, category: categoryArg(args.category) as string, subcategory: args.subcategory as string };
}

export function benchmarksCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'benchmarks <command>',
    describe: 'The benchmark catalog',
    builder: (y) =>
      y
        .command<ListArgs>({
          command: 'list',
          describe: 'List benchmarks by category with tier, main metric and where their data comes from',
          builder: (b) =>
            b
              .option('tier', { choices: [...TIERS], describe: 'Only this access tier' })
              .option('category', { type: 'string', describe: 'Only this MedHELM category (a unique start of its name is enough)' }),
          handler: async (args) => {
            const category = categoryArg(args.category);
            const { catalog, siteProblem } = listCatalog(args, io);
            const list = catalog
              .list()
              .filter((b) => !args.tier || b.tier === args.tier)
              .filter((b) => !category || b.definition.category === category);
            if (args.json) {
              printJson(
                io,
                list.map((b) => ({ ...b.definition, runTier: b.tier, data: dataStatus(b), definitionHash: b.definitionHash, templateHash: b.templateHash })),
              );
            } else {
              io.stdout(listText(list));
            }
            if (siteProblem) throw siteProblem;
          },
        })
        .command<GlobalArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show one benchmark: definition, and what data a site must supply in which format',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const b = catalogFor(args, io).get(args.id);
            if (args.json) {
              return printJson(io, {
                ...b.definition,
                runTier: b.tier,
                data: dataStatus(b),
                judges: b.judges ?? null,
                definitionHash: b.definitionHash,
                templateHash: b.templateHash,
                template: b.template,
              });
            }
            io.stdout(showText(b));
          },
        })
        .command<ImportArgs>({
          command: 'import-helm [config_yaml]',
          describe: 'Import a HELM configurable benchmark (YAML + prompt template + CSV) as a site benchmark, or map HELM run entries (--run-entries)',
          builder: (b) =>
            b
              .positional('config_yaml', { type: 'string', describe: 'The HELM benchmark config (.yaml)' })
              .option('run-entries', { type: 'string', describe: 'A HELM run-entries file (.conf): say per entry which benchmark and settings it is here, and what to configure; imports nothing' })
              .option('out', { type: 'string', describe: 'Site benchmark folder (one listed in catalog.dirs)' })
              .option('id', { type: 'string', describe: 'Benchmark id (default: from the name)' })
              .option('tier', { choices: [...TIERS], default: 'private', describe: 'Access tier of the data' })
              .option('category', { type: 'string', describe: 'MedHELM category' })
              .option('subcategory', { type: 'string', describe: 'MedHELM subcategory' })
              .option('judge', { type: 'string', array: true, describe: 'Judge endpoint id for jury_score (repeat; MedHELM uses three)' }),
          handler: async (args) => {
            const entries = args['run-entries'];
            if (entries) {
              if (args.config_yaml) throw new UserError('cli.usage', 'import-helm takes a CONFIG.yaml or --run-entries FILE.conf, not both');
              const report = mapHelmRunEntries(entries, catalogFor(args, io));
              if (args.json) return printJson(io, report);
              return io.stdout(runEntriesText(report));
            }
            const { config, out, category, subcategory } = importPlacement(args);
            const files = configFor(args, io)?.catalogFiles;
            const report = await importHelmBenchmark(config, {
              ...(files ? { files } : {}),
              outDir: out,
              category,
              subcategory,
              tier: args.tier as (typeof TIERS)[number],
              ...(args.id ? { id: args.id } : {}),
              ...(args.judge?.length ? { judges: args.judge } : {}),
            });
            // The written definition must load exactly as the catalog will load it.
            const loaded = loadBenchmark(report.dir, files ? { files } : {});
            if (args.json) return printJson(io, { ...report, definitionHash: loaded.definitionHash });
            io.stdout(
              [
                `imported ${report.id} into ${report.dir}`,
                `  metrics: ${report.metrics.join(', ')}${report.skipped.length ? `; not available here: ${report.skipped.join(', ')}` : ''}`,
                `  data: ${report.dataset} (pinned by sha256; not copied)`,
                ...(report.judgesNeeded ? [`  judges: name them under benchmarks.${report.id}.jury.judges in the site data file`] : []),
                `  make sure ${args.out} is listed in catalog.dirs of the config, then: ${commandPrefix()} benchmarks show ${report.id}`,
              ].join('\n') + '\n',
            );
          },
        })
        .command<GlobalArgs & { id: string; pin?: boolean }>({
          command: 'check <id>',
          describe:
            "Check a benchmark's data binding without running it (file, sha256, encoding, sizes, columns, records, EHRSQL database, judges; an OMOP source's connection, labels and notes); one line per check, exit 1 on any problem",
          builder: (b) =>
            b
              .positional('id', { type: 'string', demandOption: true })
              .option('pin', { type: 'boolean', describe: 'Also print the values to pin in the site data file (sha256; labelsSha256 and noteIdsSha256 of an OMOP source)' }),
          handler: async (args) => {
            const config = configFor(args, io);
            const report = await siteCheck({ config, catalog: (withSiteData) => catalogOf(config, withSiteData), id: args.id, pin: args.pin === true, io });
            if (args.json) printJson(io, report);
            else io.stdout(checkText(report, config?.catalogSiteData));
            if (!report.ok) process.exitCode = 1;
          },
        })
        .demandCommand(1, 'name a subcommand: list, show, check or import-helm'),
    handler: () => undefined,
  };
}
