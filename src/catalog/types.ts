import type { Tier } from '../tiers';

/** A benchmark definition as written in benchmarks/<id>/benchmark.json (schemas/benchmark.schema.json). */
export interface BenchmarkDefinition {
  id: string;
  version: string;
  displayName: string;
  description?: string;
  category: string;
  subcategory: string;
  tier: Tier;
  helm?: { runSpec?: string; group?: string; mainMetric?: string };
  dataset: {
    path: string;
    format: 'csv' | 'jsonl' | 'json-array' | 'json-object';
    adapter: string;
    columns?: ColumnMapping;
    source?: string;
    license?: string;
    sha256?: string;
  };
  prompt: { templateFile: string; maxTokens: number; temperature?: number };
  references: string;
  metrics: { main: string; secondary?: string[] };
  split: 'test' | 'valid';
  lowerIsBetter: boolean | null;
  deidentification?: 'required' | 'optional' | 'never';
}

export interface ColumnMapping {
  id: string;
  vars: Record<string, string>;
  reference: string;
  choices?: string[];
  extra?: Record<string, string>;
  /** Column naming whose record this is (one surrogate map and date shift per subject). */
  subject?: string;
  /** Columns holding known identifiers from structured data, by kind; empty cells are skipped. */
  known?: Partial<Record<keyof KnownIdentifiers, string[]>>;
}

/** A definition with everything resolved that a run needs, and the hashes a run records. */
export interface Benchmark {
  definition: BenchmarkDefinition;
  /** Folder holding benchmark.json. */
  dir: string;
  dataPath: string;
  template: string;
  /** sha256 of the RFC 8785 canonical JSON of the definition. */
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
  /** Options of a multiple-choice question, lettered A, B, C... in the prompt. */
  choices?: string[];
  references: string[];
  /** Inputs to the metric (limits, categories, gold sentence ids). */
  extra?: Record<string, string | number | boolean | null>;
  known?: KnownIdentifiers;
  /** Subject whose identifiers these are; one surrogate map and date shift per subject. */
  subjectId?: string;
}
