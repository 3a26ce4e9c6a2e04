import type { CommandModule } from 'yargs';
import { CATEGORIES, Catalog, dataStatus, importHelmBenchmark, loadBenchmark, type Benchmark, TAXONOMY } from '../../catalog';
import { loadConfig } from '../../config';
import { UserError } from '../../errors';
import { TIERS } from '../../tiers';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';

interface ListArgs extends GlobalArgs {
  tier?: string;
  category?: string;
}

interface ImportArgs extends GlobalArgs {
  config_yaml: string;
  out?: string;
  id?: string;
  tier?: string;
  category: string;
  subcategory: string;
  judge?: string[];
}

function catalogFor(args: GlobalArgs, io: Io): Catalog {
  const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
  return Catalog.load(config.catalogDirs, { siteDataFile: config.catalogSiteData });
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
    lines.push(`Data: bound by ${b.siteFile} (${b.site?.source?.type}): ${b.dataPath}`);
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

function showText(b: Benchmark): string {
  const d = b.definition;
  const lines = [
    `${d.displayName} (${d.id} v${d.version})`,
    `  ${d.category} / ${d.subcategory}; tier ${b.tier}${b.tier !== d.tier ? ` (its data ${d.tier}; the site database it is scored on is private)` : ''}; split ${d.split}; de-identification ${d.deidentification ?? (d.tier === 'public' ? 'never' : 'required')}`,
    `  ${d.description ?? ''}`,
    `  main metric ${d.metrics.main} (${d.lowerIsBetter === null ? 'no direction' : d.lowerIsBetter ? 'lower is better' : 'higher is better'})${d.metrics.secondary?.length ? `; also ${d.metrics.secondary.join(', ')}` : ''}`,
    `  output length ${d.prompt.maxTokens} tokens; temperature ${d.prompt.temperature ?? 0}`,
    `  HELM: run spec ${d.helm?.runSpec ?? '-'}${d.helm?.args?.length ? ` (args ${d.helm.args.join(', ')})` : ''}, group ${d.helm?.group ?? '-'}, main metric ${d.helm?.mainMetric ?? '-'}`,
    ...(d.helm?.note ? [`  differs from HELM: ${d.helm.note}`] : []),
    `  references: ${d.references}`,
    ...(d.jury ? [`  jury: criteria ${d.jury.criteria.join(', ')} on ${d.jury.scale?.min ?? 1}-${d.jury.scale?.max ?? 5}; judges ${b.judges?.length ? b.judges.join(', ') : 'NOT CONFIGURED'}`] : []),
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
            const list = catalogFor(args, io)
              .list()
              .filter((b) => !args.tier || b.tier === args.tier)
              .filter((b) => !category || b.definition.category === category);
            if (args.json) {
              return printJson(
                io,
                list.map((b) => ({ ...b.definition, runTier: b.tier, data: dataStatus(b), definitionHash: b.definitionHash, templateHash: b.templateHash })),
              );
            }
            io.stdout(listText(list));
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
          command: 'import-helm <config_yaml>',
          describe: 'Import a HELM configurable benchmark (YAML + prompt template + CSV) as a site benchmark',
          builder: (b) =>
            b
              .positional('config_yaml', { type: 'string', demandOption: true, describe: 'The HELM benchmark config (.yaml)' })
              .option('out', { type: 'string', demandOption: true, describe: 'Site benchmark folder (one listed in catalog.dirs)' })
              .option('id', { type: 'string', describe: 'Benchmark id (default: from the name)' })
              .option('tier', { choices: [...TIERS], default: 'private', describe: 'Access tier of the data' })
              .option('category', { type: 'string', demandOption: true, describe: 'MedHELM category' })
              .option('subcategory', { type: 'string', demandOption: true, describe: 'MedHELM subcategory' })
              .option('judge', { type: 'string', array: true, describe: 'Judge endpoint id for jury_score (repeat; MedHELM uses three)' }),
          handler: async (args) => {
            const category = categoryArg(args.category) as string;
            const report = await importHelmBenchmark(args.config_yaml, {
              outDir: args.out as string,
              category,
              subcategory: args.subcategory,
              tier: args.tier as (typeof TIERS)[number],
              ...(args.id ? { id: args.id } : {}),
              ...(args.judge?.length ? { judges: args.judge } : {}),
            });
            // The written definition must load exactly as the catalog will load it.
            const loaded = loadBenchmark(report.dir);
            if (args.json) return printJson(io, { ...report, definitionHash: loaded.definitionHash });
            io.stdout(
              [
                `imported ${report.id} into ${report.dir}`,
                `  metrics: ${report.metrics.join(', ')}${report.skipped.length ? `; not available here: ${report.skipped.join(', ')}` : ''}`,
                `  data: ${report.dataset} (pinned by sha256; not copied)`,
                ...(report.judgesNeeded ? [`  judges: name them under benchmarks.${report.id}.jury.judges in the site data file`] : []),
                `  make sure ${args.out} is listed in catalog.dirs of the config, then: ehrbench benchmarks show ${report.id}`,
              ].join('\n') + '\n',
            );
          },
        })
        .demandCommand(1, 'name a subcommand: list, show or import-helm'),
    handler: () => undefined,
  };
}
