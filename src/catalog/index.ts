/**
 * The benchmark catalog: definitions as data (one folder per benchmark with benchmark.json and its
 * prompt template), validated against schemas/benchmark.schema.json, and the stream of instances of
 * each. Built-in benchmarks come first; site folders from the config may add more but not shadow one.
 * Benchmarks whose data does not ship load and list all the same; the site binds their data in its
 * site data file (site-data.ts), and reading them without a binding is an error saying what to supply.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { canonicalHash, sha256Hex } from '../canonical';
import type { FilePlaces } from '../config';
import { readJsonFile, validateOrThrow } from '../schema';
import { UserError } from '../errors';
import { getMetric } from '../metrics';
import { BUILTIN_BENCHMARK_DIR } from '../paths';
import { type Tier, TIERS } from '../tiers';
import { adapterFor, isSkip, type Skip } from './adapters';
import { fileProblem, NO_PLACES, openedCheck, readConfinedText, refuseFile } from './confine';
import { helmSample, type SampleMethod } from './sampling';
import { combineIdentity, readIdentity, withIdentity } from './identity';
import { judgesFor, loadSiteData, sameFamilyFor, type SiteData } from './site-data';
import { type CheckOptions, type CheckReport, runChecks } from './check';
import { DEFAULT_LIMITS, dataMissing, hashMismatch, limitsOf } from './readiness';
import { type OmopReadOptions, readOmopNotes } from './sources/omop';
import { MissingStratumColumn, needsPayer, resolveStrata, stratumValues } from './strata';
import { readRecords, type RawRecord } from './sources/records';
import { isSubcategoryOf, MEDHELM_BENCHMARKS, medhelmCategoryOf } from './taxonomy';
import { templateVariables } from './template';
import { juryTemplatePlaceholders, juryTemplateProblem } from './jury-template';
import type { Benchmark, BenchmarkDefinition, CatalogLimits, DataSource, Instance } from './types';

export type { Benchmark, BenchmarkDefinition, CatalogLimits, RubricDefinition, ColumnMapping, DataRequirements, DataSource, Instance, JuryDefinition, KnownColumns, KnownIdentifiers } from './types';
export { renderTemplate, renderChoices, templateVariables } from './template';
export { healthBenchInstance, rubricOfInstance, type RubricCriterion } from './health-bench';
export { conversationText, graderPrompt, GRADER_TEMPLATE } from './grader-template';
export { healthBenchMetaInstance, metaEvalGraderPrompt, metaEvalLabelsOf, metaEvalRow, type MetaEvalRow } from './health-bench-meta';
export { fillJuryTemplate, JURY_PLACEHOLDERS, juryTemplatePlaceholders, juryTemplateProblem, type JuryValues } from './jury-template';
export { CATEGORIES, MEDHELM_BENCHMARK_COUNT, MEDHELM_BENCHMARKS, TAXONOMY, isSubcategoryOf, medhelmCategoryOf } from './taxonomy';
export { summarizeSiteData } from './policy-summary';
export { loadSiteData, judgesFor, OMOP_IDENTIFIER_TABLES, SITE_DATA_FILE_NAME, type OmopIdentifierTable, type SiteBinding, type SiteData } from './site-data';
export { OMOP_NOTE_FIELDS } from './sources/omop-query';
export {
  ageBandAt,
  bandLabels,
  bandOf,
  mappedLabel,
  OMOP_DEFAULT_MAPS,
  OMOP_STRATA,
  OTHER_STRATUM,
  resolveStrata,
  strataRecord,
  stratumLabels,
  type ResolvedStratum,
  type StrataRecord,
  type StratumSpec,
} from './strata';
export { importHelmBenchmark, type HelmImportReport } from './helm-import';
export { mapHelmRunEntries, parseHelmRunEntries, type RunEntriesReport, type RunEntryMapping } from './helm-run-entries';
export { HELM_SAMPLE_SEED, helmSample, Mt19937, numpyPermutation, type SampleMethod } from './sampling';
export { DEFAULT_LIMITS, dataMissing, verifyDataset } from './readiness';
export { dataRevision, type DataRevision, pinnedToRevision, revisionLabel } from './revision';
export type { CheckOptions, CheckReport, CheckResult } from './check';

/** Variables each named adapter fills; `columns` declares its own in the definition. */
const ADAPTER_VARIABLES: Record<string, string[]> = {
  pubmed_qa: ['context', 'question', 'choices'],
  medec: ['sentences'],
  ehr_sql: ['question'],
  mcq: ['question', 'choices'],
  head_qa: ['question', 'choices'],
  ehrshot: ['prompt', 'choices'],
  medalign: ['instruction', 'ehr'],
  n2c2_ct_matching: ['criterion', 'definition', 'note_count', 'notes', 'current_date', 'choices'],
  sct_bench: ['scenario', 'hypothesis', 'additional_information'],
  // a conversation is sent as its turns: the template is not used
  health_bench: [],
  health_bench_professional: [],
  health_bench_meta: [],
};

export interface LoadOptions {
  site?: SiteData;
  /** Size limits from the config (catalog.maxInstanceBytes, catalog.maxRecordBytes); defaults for the rest. */
  limits?: Partial<CatalogLimits>;
  /** Where the files it names may lie (config catalogFiles); without a configuration, its own folder and the shipped datasets. */
  files?: FilePlaces;
}

export function loadBenchmark(dir: string, opts: LoadOptions = {}): Benchmark {
  const file = join(dir, 'benchmark.json');
  const definition = validateOrThrow<BenchmarkDefinition>('benchmark.schema.json', readJsonFile(file, 'benchmark.invalid'), file, 'benchmark.invalid');
  const invalid = (msg: string) => new UserError('benchmark.invalid', `${file}: ${msg}`);
  if (!isSubcategoryOf(definition.category, definition.subcategory)) {
    throw invalid(`/subcategory: "${definition.subcategory}" is not a MedHELM subcategory of ${definition.category}`);
  }
  const places = opts.files ?? NO_PLACES;
  const template = readConfinedText(resolveIn(dir, definition.prompt.templateFile), dir, places, `${file}: prompt.templateFile`);
  checkDataset(definition, invalid);
  definition.dataset.files?.forEach((f, i) => refuseFile('benchmark.invalid', `${file}: dataset.files[${i}].path`, fileProblem(resolveIn(dir, f.path), dir, places)));
  const provided =
    definition.dataset.adapter === 'columns'
      ? [...Object.keys(definition.dataset.columns?.vars ?? {}), ...(definition.dataset.columns?.choices ? ['choices'] : [])]
      : (ADAPTER_VARIABLES[definition.dataset.adapter] ?? []);
  for (const v of templateVariables(template)) {
    if (!provided.includes(v)) throw invalid(`template uses {{${v}}} but the dataset adapter provides only ${provided.join(', ')}`);
  }
  const metrics = [definition.metrics.main, ...(definition.metrics.secondary ?? [])];
  for (const m of metrics) {
    if (!getMetric(m)) throw invalid(`/metrics: unknown metric "${m}"`);
  }
  const juryTemplate = loadJury(dir, definition, metrics, provided, { places, file, invalid });
  checkRubric(definition, metrics, invalid);

  const binding = opts.site?.benchmarks[definition.id];
  if (binding?.source && definition.dataRequirements && !definition.dataRequirements.formats.includes(binding.source.type)) {
    throw new UserError(
      'site-data.invalid',
      `${opts.site?.file}: /benchmarks/${definition.id}/source: type "${binding.source.type}" is not accepted; ${definition.id} takes ${definition.dataRequirements.formats.join(', ')}`,
    );
  }
  if (binding && opts.site) checkBindingFiles(definition.id, binding, opts.site.file, places);
  const source = sourceOf(dir, definition, binding);
  // A rubric benchmark's grader is a judge endpoint too: the same binding, and the same capacity join.
  const judges = definition.jury || definition.rubric ? judgesFor(definition.jury?.judges ?? definition.rubric?.graders, binding, opts.site) : [];
  const sameFamily = sameFamilyFor(binding, opts.site);
  if (binding?.strata) checkStrataNames(definition, binding.strata, opts.site?.file ?? 'site data');
  // The strata are not in the definition's hash: they label instances for exports and change nothing a
  // run sends or scores. A run records them apart (RunSpec.strata), so a change of strata alone
  // leaves the benchmark's own subgroups exportable.
  const { strata: _strata, ...hashedBinding } = binding ?? {};
  const extras = {
    ...(juryTemplate !== undefined ? { juryTemplateSha256: sha256Hex(juryTemplate) } : {}),
    ...(binding ? { site: hashedBinding } : {}),
    ...(judges.length ? { judges } : {}),
    ...(definition.jury && sameFamily !== 'exclude' ? { jurySameFamily: sameFamily } : {}),
  };
  return {
    definition,
    ...tiersOf(definition, binding),
    dir,
    dataPath: source ? describeSource(source) : '',
    ...(source ? { source } : {}),
    ...(binding ? { site: binding } : {}),
    ...(opts.site ? { siteFile: opts.site.file } : {}),
    limits: { ...DEFAULT_LIMITS, ...opts.limits },
    places,
    template,
    ...(juryTemplate !== undefined ? { juryTemplate } : {}),
    ...(definition.jury ? { judges, jurySameFamily: sameFamily } : {}),
    ...(definition.rubric ? { judges } : {}),
    definitionHash: Object.keys(extras).length ? canonicalHash({ definition, ...extras }) : canonicalHash(definition),
    templateHash: sha256Hex(template),
  };
}

/** A stratum may not take the name of a field the benchmark's instances already carry in extra. */
function checkStrataNames(d: BenchmarkDefinition, strata: { name: string }[], siteFile: string): void {
  const taken = new Set([...(d.subgroups ?? []).map((g) => g.field), ...Object.keys(d.dataset.columns?.extra ?? {})]);
  strata.forEach((s, i) => {
    if (taken.has(s.name)) {
      throw new UserError('site-data.invalid', `${siteFile}: /benchmarks/${d.id}/strata/${i}/name: "${s.name}" is a field of ${d.id}'s own instances; give the stratum another name`);
    }
  });
}

function checkDataset(d: BenchmarkDefinition, invalid: (m: string) => UserError): void {
  if (!adapterFor(d.dataset.adapter)) throw invalid(`/dataset/adapter: unknown adapter "${d.dataset.adapter}"`);
  const columns = d.dataset.columns;
  if (d.dataset.adapter === 'columns' && !columns) throw invalid('/dataset: adapter "columns" needs dataset.columns');
  if (d.dataset.origin === 'site') {
    if (!d.dataRequirements) throw invalid('/dataRequirements: a benchmark whose data the site supplies must say what to supply');
    // What `benchmarks show` tells a site must be what the adapter reads.
    const listed = new Set(d.dataRequirements.columns.map((c) => c.name));
    const read = columns ? [columns.id, ...Object.values(columns.vars), columns.reference, ...Object.values(columns.extra ?? {}), ...(columns.skip ?? []).map((s) => s.column)] : [];
    for (const c of read) {
      if (c !== undefined && c !== '#row' && !listed.has(c)) throw invalid(`/dataRequirements/columns: the adapter reads column "${c}", which is not listed`);
    }
  }
}

/**
 * The tiers of a run of the benchmark under the site's binding. Data the site binds is EHR data: at
 * least approval-required (IRB approval, de-identification, in-VPC endpoints), or the tier the binding
 * declares, never less than the definition's. EHRSQL on a site database runs the model's SQL on the
 * site's data: a private run, its prompts (the shipped questions) of their own tier.
 */
function tiersOf(d: BenchmarkDefinition, binding: Benchmark['site']): Pick<Benchmark, 'tier' | 'dataTier'> {
  const dataTier = binding?.source ? highest(d.tier, binding.tier ?? 'approval-required') : d.tier;
  const scoredOnSite = binding?.database !== undefined && d.dataRequirements?.resources?.includes('ehrsql-database') === true;
  return { dataTier, tier: scoredOnSite ? 'private' : highest(dataTier, binding?.database ? (binding.tier ?? 'approval-required') : 'public') };
}

function highest(a: Tier, b: Tier): Tier {
  return TIERS.indexOf(a) >= TIERS.indexOf(b) ? a : b;
}

/** The files a site-data binding names: anywhere the site keeps its data, never the daemon's own. */
function checkBindingFiles(id: string, binding: NonNullable<Benchmark['site']>, siteFile: string, places: FilePlaces): void {
  const s = binding.source;
  const named: [string, string | undefined][] = [
    ['source.path', s && s.type !== 'omop-note' ? s.path : undefined],
    ['source.labels.path', s?.type === 'omop-note' ? s.labels?.path : undefined],
    ['source.connection.file', s?.type === 'omop-note' ? s.connection.file : undefined],
    ['database', binding.database],
  ];
  for (const [field, path] of named) {
    if (path !== undefined) refuseFile('site-data.invalid', `${siteFile}: /benchmarks/${id}/${field.replaceAll('.', '/')}`, fileProblem(path, undefined, places));
  }
}

interface JuryFiles {
  places: FilePlaces;
  /** benchmark.json, for messages. */
  file: string;
  invalid: (m: string) => UserError;
}

function loadJury(dir: string, d: BenchmarkDefinition, metrics: string[], vars: string[], { places, file, invalid }: JuryFiles): string | undefined {
  const usesJury = metrics.some((m) => m.startsWith('jury_'));
  if (usesJury && !d.jury) throw invalid('/jury: the jury metrics need a jury block (judge prompt and criteria)');
  if (!d.jury) return undefined;
  if (!usesJury) throw invalid('/jury: a jury block without the jury_score metric would never be used');
  const text = readConfinedText(resolveIn(dir, d.jury.promptFile), dir, places, `${file}: jury.promptFile`);
  if (!juryTemplatePlaceholders(text).has('RESPONSE')) throw invalid(`jury.promptFile ${d.jury.promptFile} has no {RESPONSE} placeholder`);
  const problem = juryTemplateProblem(text);
  if (problem) throw invalid(`jury.promptFile ${d.jury.promptFile}: ${problem}`);
  const scale = d.jury.scale ?? { min: 1, max: 5 };
  if (scale.max <= scale.min) throw invalid('/jury/scale: max must be above min');
  for (const v of templateVariables(d.jury.question ?? '')) {
    if (!vars.includes(v)) throw invalid(`/jury/question: uses {{${v}}} but the dataset adapter provides only ${vars.join(', ')}`);
  }
  return text;
}

const RUBRIC_ADAPTERS = ['health_bench', 'health_bench_professional'];

/** Rubric metrics need the rubric block and instances that carry a rubric (the health_bench adapter), and the other way round. */
function checkRubric(d: BenchmarkDefinition, metrics: string[], invalid: (m: string) => UserError): void {
  const usesRubric = metrics.some((m) => m.startsWith('rubric_'));
  if (usesRubric && !d.rubric) throw invalid('/rubric: the rubric metrics need a rubric block');
  if (d.rubric && !usesRubric) throw invalid('/rubric: a rubric block without the rubric_score metric would never be used');
  if (usesRubric && !RUBRIC_ADAPTERS.includes(d.dataset.adapter)) throw invalid(`/dataset/adapter: rubric grading reads each instance's rubric; the adapter must be ${RUBRIC_ADAPTERS.join(' or ')}`);
}

/** The data source after the site's binding: the site's source wins, else the shipped files. */
function sourceOf(dir: string, d: BenchmarkDefinition, binding: Benchmark['site']): DataSource | undefined {
  const s = binding?.source;
  if (s?.type === 'omop-note') return { kind: 'omop-note', spec: s, file: '' };
  if (s) return { kind: 'files', format: s.type, files: [{ path: s.path, ...(s.sha256 ? { sha256: s.sha256 } : {}) }], ...(s.encoding ? { encoding: s.encoding } : {}) };
  if (d.dataset.origin === 'shipped' && d.dataset.files && d.dataset.format) {
    return {
      kind: 'files',
      format: d.dataset.format,
      files: d.dataset.files.map((f) => ({ ...f, path: resolveIn(dir, f.path) })),
      folder: dir,
      ...(d.dataset.arrayField ? { arrayField: d.dataset.arrayField } : {}),
    };
  }
  return undefined;
}

function describeSource(s: DataSource): string {
  return s.kind === 'files' ? (s.files[0]?.path ?? '') : `omop:${s.spec.schema ?? 'public'}.note`;
}

function resolveIn(dir: string, p: string): string {
  return isAbsolute(p) ? p : join(dir, p);
}

export interface CatalogLoadOptions {
  /** The site data file (catalog.siteData in the config); absent binds nothing. */
  siteDataFile?: string;
  /** The site data already read (the daemon reads it once, to record it before it takes effect); wins over siteDataFile. */
  site?: SiteData;
  /** Size limits from the config; DEFAULT_LIMITS for what is absent. */
  limits?: Partial<CatalogLimits>;
  /** Where the files benchmarks name may lie (config catalogFiles). */
  files?: FilePlaces;
}

export class Catalog {
  private readonly byId = new Map<string, Benchmark>();

  constructor(
    benchmarks: Benchmark[],
    readonly site?: SiteData,
  ) {
    for (const b of benchmarks) {
      if (this.byId.has(b.definition.id)) {
        throw new UserError('benchmark.duplicate', `${b.dir}: benchmark id "${b.definition.id}" is already defined`);
      }
      this.byId.set(b.definition.id, b);
    }
    for (const id of Object.keys(site?.benchmarks ?? {})) {
      if (!this.byId.has(id)) throw new UserError('site-data.invalid', `${site?.file}: /benchmarks/${id}: no benchmark has this id; see "${commandPrefix()} benchmarks list"`);
    }
  }

  /** Loads every folder holding a benchmark.json under the built-in catalog and the given site folders. */
  static load(siteDirs: string[] = [], opts: CatalogLoadOptions = {}): Catalog {
    const site = opts.site ?? (opts.siteDataFile ? loadSiteData(opts.siteDataFile) : undefined);
    const found: Benchmark[] = [];
    for (const root of [BUILTIN_BENCHMARK_DIR, ...siteDirs]) {
      if (!existsSync(root)) throw new UserError('catalog.missing', `${root}: benchmark folder does not exist; fix catalog.dirs in the config`);
      for (const entry of readdirSync(root, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.isDirectory() && existsSync(join(root, entry.name, 'benchmark.json')))
          found.push(loadBenchmark(join(root, entry.name), { ...(site ? { site } : {}), ...(opts.limits ? { limits: opts.limits } : {}), ...(opts.files ? { files: opts.files } : {}) }));
      }
    }
    checkBuiltIns(found.filter((b) => dirname(b.dir) === BUILTIN_BENCHMARK_DIR));
    return new Catalog(found, site);
  }

  list(): Benchmark[] {
    return [...this.byId.values()];
  }

  get(id: string): Benchmark {
    const b = this.byId.get(id);
    if (!b) throw new UserError('benchmark.unknown', `unknown benchmark "${id}"; see "${commandPrefix()} benchmarks list"`);
    return b;
  }
}

/**
 * The built-in catalog is MedHELM's as the taxonomy lists it (taxonomy.ts): every benchmark there, each
 * in its category, and no other. A folder added, lost or filed under another category is a packaging
 * error, named before anything runs.
 */
export function checkBuiltIns(builtIns: Benchmark[]): void {
  const ids = new Set(builtIns.map((b) => b.definition.id));
  for (const b of builtIns) {
    const category = medhelmCategoryOf(b.definition.id);
    if (category !== b.definition.category) {
      const where = category ? `the MedHELM taxonomy files it under ${category}` : 'the MedHELM taxonomy does not list it';
      throw new UserError('benchmark.invalid', `${join(b.dir, 'benchmark.json')}: /category: "${b.definition.category}", but ${where} (src/catalog/taxonomy.ts)`);
    }
  }
  const missing = Object.values(MEDHELM_BENCHMARKS)
    .flat()
    .filter((id) => !ids.has(id));
  if (missing.length)
    throw new UserError('catalog.missing', `${BUILTIN_BENCHMARK_DIR}: no folder for ${missing.join(', ')}, which the MedHELM taxonomy lists (src/catalog/taxonomy.ts); reinstall ehrbench`);
}

/** Whether a benchmark can be read here: shipped data, site data bound, or nothing yet. */
export function dataStatus(b: Benchmark): 'shipped' | 'site' | 'missing' {
  if (!b.source) return 'missing';
  return b.site?.source ? 'site' : 'shipped';
}

/** The raw records of a benchmark with the file each came from, across its files or from OMOP. */
async function* recordsOf(b: Benchmark, env?: NodeJS.ProcessEnv, pins: 'check' | 'ignore' = 'check'): AsyncGenerator<{ record: RawRecord; file: string }> {
  const source = b.source;
  if (!source) throw dataMissing(b);
  const limits = limitsOf(b);
  if (source.kind === 'omop-note') {
    for await (const record of readOmopNotes(source.spec, omopLabel(b), env ?? process.env, omopOptions(b))) {
      yield { record, file: `omop:${source.spec.schema ?? 'public'}.note` };
    }
    return;
  }
  const opts = {
    ...(source.arrayField ? { arrayField: source.arrayField } : {}),
    ...(source.encoding ? { encoding: source.encoding } : {}),
    encodingAt: `the source of benchmarks.${b.definition.id} in ${b.siteFile ?? 'the site data file'}`,
    maxRecordBytes: limits.maxRecordBytes,
    // The file opened is held to the places the load checked (a link swapped in since is refused).
    opened: openedCheck(source.folder, b.places ?? NO_PLACES, `benchmark ${b.definition.id}: its data file`),
  };
  for (const f of source.files) {
    // A pinned file is checked again on the bytes parsed: verifyDataset's check, a read before this
    // one, cannot see the file replaced in between.
    const pin = f.sha256 && pins === 'check' ? { pin: { sha256: f.sha256, mismatch: () => hashMismatch(b, f.path) } } : {};
    for await (const record of readRecords(f.path, source.format, { ...opts, ...pin })) yield { record, file: f.path };
  }
}

/** The pre-flight of a benchmark's data (`ehrbench benchmarks check`, check.ts), reading as planning reads. */
export function checkBenchmark(b: Benchmark, opts: CheckOptions): Promise<CheckReport> {
  return runChecks(b, opts, {
    // The pre-flight reports a pin on its own line and still checks what the file holds.
    instances: (o) => streamInstances(b, { ...o, env: opts.env, pins: 'ignore' }),
    firstRecord: async () => {
      for await (const r of recordsOf(b, opts.env, 'ignore')) return r;
      return undefined;
    },
    omop: () => ({ label: omopLabel(b), ...omopOptions(b) }),
  });
}

/** How messages name an OMOP source: the benchmark and the site data file binding it. */
function omopLabel(b: Benchmark): string {
  return `benchmark ${b.definition.id} (OMOP source in ${b.siteFile ?? 'site data'})`;
}

/** Where an OMOP source's messages and pins point, and its record limit. */
function omopOptions(b: Benchmark): OmopReadOptions {
  const omopStrata = (b.site?.strata ?? []).some((s) => s.omop !== undefined);
  return {
    benchmarkId: b.definition.id,
    bindingAt: `benchmarks.${b.definition.id} in ${b.siteFile ?? 'the site data file'}`,
    maxRecordBytes: limitsOf(b).maxRecordBytes,
    ...(omopStrata ? { demographics: { payer: needsPayer(b.site?.strata) } } : {}),
  };
}

/** UTF-8 bytes of what an instance puts in the prompt: its variables, its options and its conversation's turns. */
function promptBytes(instance: Instance): number {
  let bytes = 0;
  for (const v of Object.values(instance.vars)) bytes += Buffer.byteLength(v, 'utf8');
  for (const c of instance.choices ?? []) bytes += Buffer.byteLength(c, 'utf8');
  for (const m of instance.messages ?? []) bytes += Buffer.byteLength(m.content, 'utf8');
  return bytes;
}

/** An instance over the per-instance limit is refused by its record, before it is planned, stored or sent. */
function checkInstanceSize(b: Benchmark, record: RawRecord, file: string, instance: Instance): void {
  const limit = limitsOf(b).maxInstanceBytes;
  if (promptBytes(instance) <= limit) return;
  throw new UserError(
    'dataset.record-too-large',
    `${file}: record ${record.position}: its prompt variables exceed the per-instance limit of ${limit} bytes (catalog.maxInstanceBytes in the config); shorten or remove the record, or raise the limit`,
  );
}

/** How many records the adapters left out, by the rule that left them out. */
export type SkipCounts = Partial<Record<Skip['rule'], number>>;

export interface StreamOptions {
  /** At most this many instances. */
  limit?: number;
  /** How a limit picks them: the first in dataset order (default here) or HELM's seeded sample. */
  sample?: SampleMethod;
  /** Filled with the records left out, of those read (with HELM's sample: of the whole dataset). */
  skipped?: SkipCounts;
  env?: NodeJS.ProcessEnv;
  /** Pinned files are checked on the bytes read (default); `benchmarks check` reads past a mismatch, which it reports itself. */
  pins?: 'check' | 'ignore';
}

/** Streams the instances of a benchmark in dataset order; `limit` stops after that many. */
export async function* instancesOf(b: Benchmark, limit?: number, env?: NodeJS.ProcessEnv): AsyncGenerator<Instance> {
  yield* streamInstances(b, { ...(limit !== undefined ? { limit } : {}), ...(env ? { env } : {}) });
}

/**
 * Streams the instances a run takes, in dataset order. Under a limit with HELM's sample the dataset is
 * read twice: once to count it (HELM samples from every eval instance), once to take the chosen ones.
 */
export async function* streamInstances(b: Benchmark, opts: StreamOptions = {}): AsyncGenerator<Instance> {
  const { limit } = opts;
  if (limit === undefined || opts.sample !== 'helm') {
    yield* adapted(b, opts, limit);
    return;
  }
  const key = populationKey(b);
  let population = key === undefined ? undefined : populations.get(key);
  if (population === undefined) {
    population = 0;
    for await (const _ of adapted(b, { ...(opts.env ? { env: opts.env } : {}), ...(opts.pins ? { pins: opts.pins } : {}) })) population += 1;
    if (key !== undefined) rememberPopulation(key, population);
  }
  const chosen = new Set(helmSample(population, limit));
  let position = 0;
  for await (const instance of adapted(b, opts)) {
    if (chosen.has(position)) yield instance;
    position += 1;
  }
  // The sample is of the dataset as counted: one that changed in between would give another selection.
  if (position !== population) {
    if (key !== undefined) populations.delete(key);
    throw new UserError('dataset.changed', `benchmark ${b.definition.id}: the dataset changed while the run was planned (${population} then ${position} instances); plan again once it is stable`);
  }
}

/**
 * Populations counted for HELM's sample in this process, by the benchmark and the identity of its files
 * (path, size, modification time, inode): a daemon that runs a benchmark again reads its dataset once,
 * not twice. A wrong entry cannot choose a wrong sample unnoticed: the selection pass counts the
 * instances again and refuses the run when they differ (dataset.changed), dropping the entry.
 * OMOP sources, which have no file identity, are always counted.
 */
const populations = new Map<string, number>();
const MAX_POPULATIONS = 256;

function populationKey(b: Benchmark): string | undefined {
  const source = b.source;
  if (!source || source.kind !== 'files') return undefined;
  try {
    const files = source.files.map((f) => {
      const st = statSync(f.path);
      return [f.path, st.size, st.mtimeMs, st.ino];
    });
    // The limits too: a lowered one must refuse the dataset in the count, before any instance is queued.
    return JSON.stringify([b.definitionHash, b.site?.columns ?? null, source.format, source.arrayField ?? null, source.encoding ?? null, limitsOf(b), files]);
  } catch {
    return undefined;
  }
}

function rememberPopulation(key: string, population: number): void {
  if (populations.size >= MAX_POPULATIONS) populations.clear();
  populations.set(key, population);
}

/** The adapted instances of the benchmark's records, counting the records the adapter leaves out. */
async function* adapted(b: Benchmark, opts: Pick<StreamOptions, 'skipped' | 'env' | 'pins'>, limit?: number): AsyncGenerator<Instance> {
  const adapter = adapterFor(b.definition.dataset.adapter);
  if (!adapter) throw new UserError('benchmark.invalid', `benchmark ${b.definition.id}: unknown adapter`);
  const rename = b.site?.columns;
  let count = 0;
  for await (const { record, file } of recordsOf(b, opts.env, opts.pins)) {
    if (limit !== undefined && count >= limit) return;
    const instance = adapter(record, { file, definition: b.definition, ...(rename ? { rename } : {}) });
    if (isSkip(instance)) {
      if (opts.skipped) opts.skipped[instance.rule] = (opts.skipped[instance.rule] ?? 0) + 1;
      continue;
    }
    checkInstanceSize(b, record, file, instance);
    count += 1;
    yield withStrata(b, record, file, siteIdentity(b, record, file, instance));
  }
}

/**
 * The binding's strata of the record, laid in the instance's extra: each a declared label or
 * "(other)". A stratum's column missing from the record is refused by its name and the record's
 * position (a misspelt column would put every record in "(other)"), never by a value.
 */
function withStrata(b: Benchmark, record: RawRecord, file: string, instance: Instance): Instance {
  const strata = b.site?.strata;
  if (!strata || strata.length === 0) return instance;
  let values: Record<string, string>;
  try {
    values = stratumValues(resolveStrata(strata), record.fields, record.demographics);
  } catch (err) {
    if (!(err instanceof MissingStratumColumn)) throw err;
    throw new UserError(
      'dataset.missing-column',
      `${file}: record ${record.position}: has no column "${err.column}" (stratum "${err.stratum}" of benchmarks.${b.definition.id} in ${b.siteFile ?? 'the site data file'}); fix the column name in the binding, or give every record the column (empty is "(other)")`,
    );
  }
  // A named adapter's own extra fields (a metric's inputs) are not all declared: never overwrite one.
  const taken = Object.keys(values).find((name) => Object.hasOwn(instance.extra ?? {}, name));
  if (taken !== undefined) {
    throw new UserError(
      'site-data.invalid',
      `${b.siteFile ?? 'site data'}: /benchmarks/${b.definition.id}/strata: "${taken}" is a field ${b.definition.id}'s adapter sets on each instance; give the stratum another name`,
    );
  }
  return { ...instance, extra: { ...(instance.extra ?? {}), ...values } };
}

/**
 * Lays the site binding's subject and known-identifier columns on the adapter's instance, whatever the
 * adapter: the site knows which of its columns identify a patient, the definition cannot.
 */
function siteIdentity(b: Benchmark, record: RawRecord, file: string, instance: Instance): Instance {
  const site = b.site;
  if (!site || (site.subject === undefined && !site.known)) return instance;
  const where = `benchmarks.${b.definition.id}`;
  const naming = {
    file,
    actual: (c: string) => c,
    label: (c: string, key: string) => `"${c}" (${where}.${key} in ${b.siteFile ?? 'the site data file'})`,
    optional: new Set(site.optionalColumns ?? []),
    absentHint: `; if some records leave it out, list it in ${where}.optionalColumns`,
  };
  return withIdentity(instance, combineIdentity(instance, readIdentity(record, site, naming)));
}
export { CHOICE_LETTERS } from './template';
