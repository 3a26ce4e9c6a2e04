/**
 * The site's data bindings (schemas/site-data.schema.json): for each benchmark whose data does not
 * ship, where this site keeps it (a CSV or JSONL file, or an OMOP CDM note table), how its columns are
 * named, which columns hold each record's subject and known identifiers, EHRSQL's database, and which
 * allowlisted endpoints judge the LLM-jury benchmarks. The file holds paths and references only:
 * connection strings come from an environment variable or a file.
 */
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { readJsonFile, validateOrThrow } from '../schema';
import { UserError } from '../errors';
import type { TextEncodingName } from './sources/records';
import { stratumLabels, type StratumSpec, resolveStrata } from './strata';
import type { KnownColumns } from './types';

export interface FileSourceSpec {
  type: 'csv' | 'jsonl';
  path: string;
  sha256?: string;
  /** How the file's bytes are text; UTF-8 (checked) when absent. */
  encoding?: TextEncodingName;
}

export interface OmopNoteSourceSpec {
  type: 'omop-note';
  connection: { env?: string; file?: string };
  schema?: string;
  filter?: { noteTypeConceptIds?: number[]; noteClassConceptIds?: number[]; noteTitles?: string[] };
  labels?: { path: string; noteIdColumn?: string; encoding?: TextEncodingName };
  /** sha256 of the labels file: a labels file that differs is refused. */
  labelsSha256?: string;
  /** sha256 over the notes read (note_id order, each id with the sha256 of its text): notes renumbered or rewritten since are refused. */
  noteIdsSha256?: string;
  batchSize?: number;
  /** What person_source_value holds: the MRN (default), a pseudonym (a known "other" identifier), or nothing to use. */
  personSourceValue?: 'mrn' | 'pseudonym' | 'ignore';
  /** CDM tables besides note and person joined for known identifiers (default all of OMOP_IDENTIFIER_TABLES). */
  identifierTables?: OmopIdentifierTable[];
}

/** CDM tables the OMOP source can join for known identifiers; a site may leave any out. */
export const OMOP_IDENTIFIER_TABLES = ['location', 'care_site', 'provider', 'visit_occurrence'] as const;
export type OmopIdentifierTable = (typeof OMOP_IDENTIFIER_TABLES)[number];

export interface SiteBinding {
  source?: FileSourceSpec | OmopNoteSourceSpec;
  columns?: Record<string, string>;
  /** The site's column naming the patient of each record; wins over the definition's and the source's. */
  subject?: string;
  /** The site's columns holding known identifiers, by kind; combined with the definition's and the source's. */
  known?: KnownColumns;
  /** Columns of `subject` and `known` that some records leave out (JSON records): absent holds no identifier. */
  optionalColumns?: string[];
  database?: string;
  /** The tier the site declares for its data (never public; approval-required when absent and data is bound). */
  tier?: 'approval-required' | 'private';
  jury?: { judges: string[]; sameFamily?: 'exclude' | 'allow' };
  /** Stratification fields per instance (strata.ts), for subgroup results in exports. */
  strata?: StratumSpec[];
}

export interface SiteData {
  file: string;
  benchmarks: Record<string, SiteBinding>;
  jury?: { judges: string[]; sameFamily?: 'exclude' | 'allow' };
}

export const SITE_DATA_FILE_NAME = 'site-data.json';

/** Reads the site data file; a file that does not exist binds nothing (every site benchmark then says what to supply). */
export function loadSiteData(file: string): SiteData {
  if (!existsSync(file)) return { file, benchmarks: {} };
  const raw = validateOrThrow<Omit<SiteData, 'file'>>('site-data.schema.json', readJsonFile(file, 'site-data.invalid'), file, 'site-data.invalid');
  const base = dirname(file);
  const at = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const benchmarks: Record<string, SiteBinding> = {};
  for (const [id, b] of Object.entries(raw.benchmarks)) {
    if (b.tier && !b.source && !b.database) {
      throw new UserError(
        'site-data.invalid',
        `${file}: /benchmarks/${id}/tier: a tier is that of site-supplied data, and this binding supplies none; add its source (or database) or remove the tier`,
      );
    }
    const named = new Set([...(b.subject ? [b.subject] : []), ...Object.values(b.known ?? {}).flat()]);
    const stray = (b.optionalColumns ?? []).find((c) => !named.has(c));
    if (stray !== undefined) {
      throw new UserError(
        'site-data.invalid',
        `${file}: /benchmarks/${id}/optionalColumns: "${stray}" is not a column this binding names in subject or known; only identity columns may be absent from a record`,
      );
    }
    if (b.strata) checkStrata(b.strata, b.source?.type === 'omop-note', (field, msg) => new UserError('site-data.invalid', `${file}: /benchmarks/${id}/strata${field}: ${msg}`));
    const source = b.source && resolveSource(b.source, at);
    benchmarks[id] = { ...b, ...(source ? { source } : {}), ...(b.database ? { database: at(b.database) } : {}) };
  }
  return { file, benchmarks, ...(raw.jury ? { jury: raw.jury } : {}) };
}

/**
 * What the schema leaves to the loader, each with its own message: one source per stratum, the right
 * kind of labelling for it, names used once, ascending edges, concept ids that are ids, and at least
 * one label (a stratum whose every value is "(other)" says nothing).
 */
function checkStrata(strata: StratumSpec[], omopSource: boolean, invalid: (field: string, msg: string) => UserError): void {
  const names = new Set<string>();
  strata.forEach((s, i) => {
    const at = `/${i}`;
    if (names.has(s.name)) throw invalid(`${at}/name`, `"${s.name}" is declared twice; give each stratum its own name`);
    names.add(s.name);
    if ((s.column === undefined) === (s.omop === undefined)) throw invalid(at, 'give exactly one of "column" (a column of the site\'s data) and "omop" (a CDM demographic)');
    if (s.omop && !omopSource) throw invalid(`${at}/omop`, 'OMOP demographics need an omop-note source; for a csv or jsonl source use "column" with "map" or "edges"');
    const ageLike = s.omop === 'age' || (s.column !== undefined && s.edges !== undefined);
    if (s.column !== undefined && (s.map === undefined) === (s.edges === undefined)) throw invalid(at, 'a column stratum takes exactly one of "map" (value -> label) and "edges" (age bands)');
    if (s.omop === 'age' && (s.edges === undefined || s.map !== undefined)) throw invalid(at, 'omop "age" takes "edges" (e.g. [18, 45, 65, 80]) and no "map"');
    if (s.omop && s.omop !== 'age' && s.edges !== undefined) throw invalid(`${at}/edges`, `edges are for ages; omop "${s.omop}" takes a "map" of concept id -> label`);
    if (s.omop === 'payer' && s.map === undefined) throw invalid(at, 'omop "payer" has no standard labels; declare its "map" of payer_concept_id -> label');
    if (s.edges && s.edges.some((e, j) => j > 0 && e <= (s.edges?.[j - 1] as number))) throw invalid(`${at}/edges`, 'edges must be strictly ascending, e.g. [18, 45, 65, 80]');
    if (s.omop && s.map) {
      const bad = Object.keys(s.map).findIndex((key) => !/^-?[0-9]{1,12}$/.test(key));
      if (bad >= 0) throw invalid(`${at}/map`, `key ${bad + 1} is not a concept id; the keys of an omop map are concept ids (e.g. "8507")`);
    }
    if (!ageLike && stratumLabels(resolveStrata([s])[0] as ReturnType<typeof resolveStrata>[number]).length === 0) throw invalid(`${at}/map`, 'declares no label');
  });
}

function resolveSource(s: FileSourceSpec | OmopNoteSourceSpec, at: (p: string) => string): FileSourceSpec | OmopNoteSourceSpec {
  if (s.type !== 'omop-note') return { ...s, path: at(s.path) };
  return {
    ...s,
    connection: s.connection.file ? { file: at(s.connection.file) } : s.connection,
    ...(s.labels ? { labels: { ...s.labels, path: at(s.labels.path) } } : {}),
  };
}

/** The judges of a jury benchmark: the site's binding, else the definition's, else the site default. */
export function judgesFor(definitionJudges: string[] | undefined, binding: SiteBinding | undefined, site: SiteData | undefined): string[] {
  return binding?.jury?.judges ?? definitionJudges ?? site?.jury?.judges ?? [];
}

/** Whether a judge of the evaluated model's own family is left out: the binding's choice, else the site's, else yes. */
export function sameFamilyFor(binding: SiteBinding | undefined, site: SiteData | undefined): 'exclude' | 'allow' {
  return binding?.jury?.sameFamily ?? site?.jury?.sameFamily ?? 'exclude';
}
