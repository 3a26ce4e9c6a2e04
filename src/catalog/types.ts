import type { Tier } from '../tiers';
import type { SiteBinding } from './site-data';

export type RecordFormat = 'csv' | 'jsonl' | 'json-array' | 'json-object';

/** A benchmark definition as written in benchmarks/<id>/benchmark.json (schemas/benchmark.schema.json). */
export interface BenchmarkDefinition {
  id: string;
  version: string;
  displayName: string;
  description?: string;
  category: string;
  subcategory: string;
  tier: Tier;
  helm?: { runSpec?: string; group?: string; mainMetric?: string; args?: string[]; note?: string; differences?: string[] };
  dataset: {
    origin: 'shipped' | 'site';
    files?: { path: string; sha256?: string }[];
    format?: RecordFormat;
    arrayField?: string;
    adapter: string;
    columns?: ColumnMapping;
    source?: string;
    license?: string;
  };
  dataRequirements?: DataRequirements;
  prompt: { templateFile: string; maxTokens: number; temperature?: number };
  references: string;
  metrics: { main: string; secondary?: string[] };
  /** Subgroups an export may report: an `extra` field of each instance and its declared values. */
  subgroups?: { field: string; values: string[] }[];
  jury?: JuryDefinition;
  /** Rubric grading (HealthBench): one grader call per criterion of each instance's rubric. */
  rubric?: RubricDefinition;
  split: 'test' | 'valid';
  lowerIsBetter: boolean | null;
  deidentification?: 'required' | 'optional' | 'never';
}

export interface ColumnMapping {
  /** A column holding a unique id, or '#row' to number the records. */
  id: string;
  vars: Record<string, string>;
  reference?: string;
  referenceMap?: Record<string, string>;
  choices?: string[];
  extra?: Record<string, string>;
  /** Column naming whose record this is (one surrogate map and date shift per subject). */
  subject?: string;
  /** Columns holding known identifiers from structured data, by kind; empty cells are skipped. */
  known?: KnownColumns;
  /**
   * Records left out, as HELM's loader leaves them out: when a column is the empty string (`empty`) or
   * blank once trimmed (`blank`). Each is counted under its rule and reported with the run.
   */
  skip?: { column: string; when: 'empty' | 'blank' }[];
}

/** Columns holding known identifiers, by kind (a definition's mapping or a site binding). */
export type KnownColumns = Partial<Record<keyof KnownIdentifiers, string[]>>;

export interface DataRequirements {
  summary: string;
  formats: ('csv' | 'jsonl' | 'omop-note')[];
  columns: { name: string; description: string; optional?: boolean }[];
  obtain?: string;
  resources?: 'ehrsql-database'[];
  notes?: string;
}

export interface JuryDefinition {
  promptFile: string;
  criteria: string[];
  question?: string;
  scale?: { min: number; max: number };
  judges?: string[];
}

export interface RubricDefinition {
  /** Grader endpoints, the first grading (the site binding's `jury.judges` wins, then the site default). */
  graders?: string[];
  /** Attempts at a well-formed grade per criterion before the grade counts as failed (default 3). */
  maxGradeAttempts?: number;
  /** Grader calls in flight per instance (default 4); the grader endpoint's own limit still applies. */
  concurrency?: number;
}

/**
 * How large what a benchmark reads may be (config catalog.maxRecordBytes and catalog.maxInstanceBytes):
 * one record as read (refused while it is read, where the reader can), and the prompt variables and
 * options of one instance (refused before it is planned, stored or sent).
 */
export interface CatalogLimits {
  maxRecordBytes: number;
  maxInstanceBytes: number;
}

/** Where the instances of a benchmark are read from, once the site's bindings are applied. */
export type DataSource =
  | {
      kind: 'files';
      format: RecordFormat;
      files: { path: string; sha256?: string }[];
      arrayField?: string;
      encoding?: import('./sources/records').TextEncodingName;
      /** The benchmark's folder, for files its definition names (held to it, confine.ts); absent for a site binding's. */
      folder?: string;
    }
  | { kind: 'omop-note'; spec: import('./site-data').OmopNoteSourceSpec; file: string };

/** A definition with everything resolved that a run needs, and the hashes a run records. */
export interface Benchmark {
  definition: BenchmarkDefinition;
  /**
   * The tier a run of it is held to: its data's tier (dataTier), raised to private when its scoring
   * reads the site's own data (EHRSQL's database).
   */
  tier: Tier;
  /**
   * The tier of what its prompts carry, which de-identification follows: the definition's tier, or for
   * data the site binds (site-data.json source) at least approval-required, or the binding's own tier.
   * A file of notes bound to a shipped public benchmark is EHR data, whatever the definition says.
   */
  dataTier: Tier;
  /** Folder holding benchmark.json. */
  dir: string;
  /** The first data file, or the site's; for messages. Empty when no data is configured. */
  dataPath: string;
  /** Where instances come from; undefined when the site has not configured this benchmark's data. */
  source?: DataSource;
  /** The site's settings for this benchmark (data, columns, EHRSQL database, judges), if any. */
  site?: SiteBinding;
  /** The file the site binding came from, for messages. */
  siteFile?: string;
  /** Size limits of its records and instances; the catalog's defaults when absent. */
  limits?: CatalogLimits;
  /** Where its files may lie and the daemon's files they may never be (config catalogFiles); checked again when a file is opened. */
  places?: import('../config').FilePlaces;
  template: string;
  /** Judge prompt template, for jury benchmarks. */
  juryTemplate?: string;
  /** Judge endpoint ids in force for a jury benchmark (site binding, definition, site default). */
  judges?: string[];
  /** Judges of the evaluated model's own family: left out (default) or asked. */
  jurySameFamily?: 'exclude' | 'allow';
  /**
   * sha256 of the RFC 8785 canonical JSON of the definition; when the definition has a judge prompt or
   * the site binds data or judges to it, of {definition, juryTemplateSha256, site} so a run notices.
   */
  definitionHash: string;
  /** sha256 of the prompt template text. */
  templateHash: string;
}

/**
 * Known identifiers of a record, passed from structured EHR data to de-identification: names of the
 * patient, relatives, household members and care team; MRNs; dates (birth date, admission...);
 * addresses; facility and ward names; phone numbers; e-mail addresses; any other identifying code.
 */
export interface KnownIdentifiers {
  names?: string[];
  mrns?: string[];
  dates?: string[];
  addresses?: string[];
  facilities?: string[];
  phones?: string[];
  emails?: string[];
  other?: string[];
}

/**
 * One instance of a benchmark. Every string in it is treated as PHI: it lives in the run store and in
 * the prompt sent through the egress guard, and nowhere else.
 */
export interface Instance {
  /** Stable key within the dataset (used to resume; may itself be sensitive, never logged). */
  key: string;
  vars: Record<string, string>;
  /**
   * A conversation (system, user and assistant turns, ending with the turn the model answers), sent as
   * it is instead of the template (HealthBench). Every turn is de-identified like a prompt.
   */
  messages?: { role: 'system' | 'user' | 'assistant'; content: string }[];
  /** Options of a multiple-choice question, lettered A, B, C... in the prompt. */
  choices?: string[];
  references: string[];
  /** Inputs to the metric (limits, categories, gold sentence ids). */
  extra?: Record<string, string | number | boolean | null>;
  known?: KnownIdentifiers;
  /** Subject whose identifiers these are; one surrogate map and date shift per subject. */
  subjectId?: string;
  /**
   * Name words de-identification found in the subject's other records of the same run, gathered while
   * the run is planned and attached in the run store; looked for in this record too.
   */
  evidence?: string[];
}
