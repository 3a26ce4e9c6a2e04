/**
 * Record adapters: how one raw record of a dataset becomes an Instance. `columns` covers any CSV/JSONL
 * laid out as columns; the named ones cover public datasets whose layout needs a rule (nested
 * contexts, references derived from several columns). An adapter returns null to skip a record the
 * benchmark does not use (as HELM skips MEDEC rows without text).
 */
import { UserError } from '../errors';
import type { RawRecord } from './sources/records';
import { combineIdentity, type Identity, readIdentity } from './identity';
import type { BenchmarkDefinition, ColumnMapping, Instance } from './types';

export interface AdapterContext {
  file: string;
  definition: BenchmarkDefinition;
  /** The site's names for required columns (required column -> site column). */
  rename?: Record<string, string>;
}

export type RecordAdapter = (record: RawRecord, ctx: AdapterContext) => Instance | null;

/** How a column is named in messages: the site's name, and the benchmark's when the site renamed it. */
function columnLabel(column: string, ctx: AdapterContext): string {
  const actual = ctx.rename?.[column];
  return actual && actual !== column ? `"${actual}" (required column "${column}")` : `"${column}"`;
}

function field(record: RawRecord, column: string, ctx: AdapterContext): unknown {
  const actual = ctx.rename?.[column] ?? column;
  if (!(actual in record.fields)) {
    throw new UserError('dataset.missing-column', `${ctx.file}: record ${record.position}: missing column ${columnLabel(column, ctx)}`);
  }
  return record.fields[actual];
}

function text(record: RawRecord, column: string, ctx: AdapterContext): string {
  const value = field(record, column, ctx);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel(column, ctx)} must be text or a number`);
}

/**
 * Structured identifiers travel with the instance to de-identification: those a source attaches to
 * the record (OMOP) and those in the columns the definition's mapping names (the site's names when it
 * renamed them). The site binding's own identity columns are laid on top by the catalog.
 */
function identity(record: RawRecord, mapping: ColumnMapping | undefined, ctx: AdapterContext): Identity {
  const attached: Identity = { ...(record.known ? { known: record.known } : {}), ...(record.subjectId ? { subjectId: record.subjectId } : {}) };
  const naming = { file: ctx.file, actual: (c: string) => ctx.rename?.[c] ?? c, label: (c: string) => columnLabel(c, ctx) };
  return combineIdentity(attached, readIdentity(record, mapping ?? {}, naming));
}

function columnsAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const mapping = ctx.definition.dataset.columns as ColumnMapping | undefined;
  if (!mapping) throw new UserError('benchmark.invalid', `benchmark ${ctx.definition.id}: adapter "columns" needs dataset.columns`);
  const key = mapping.id === '#row' ? (record.key ?? String(record.position)) : text(record, mapping.id, ctx);
  if (key.trim() === '') throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel(mapping.id, ctx)} (the id) is empty`);
  const vars: Record<string, string> = {};
  for (const [name, column] of Object.entries(mapping.vars)) vars[name] = text(record, column, ctx);
  const extra: Record<string, string> = {};
  for (const [name, column] of Object.entries(mapping.extra ?? {})) extra[name] = text(record, column, ctx);
  return {
    key,
    vars,
    ...(mapping.choices ? { choices: mapping.choices } : {}),
    references: mapping.reference === undefined ? [] : [reference(record, mapping, ctx)],
    ...(mapping.extra ? { extra } : {}),
    ...identity(record, mapping, ctx),
  };
}

/** The reference text, through referenceMap when the raw value is a code (CLEAR's 1/0/2). */
function reference(record: RawRecord, mapping: ColumnMapping, ctx: AdapterContext): string {
  const column = mapping.reference as string;
  const raw = text(record, column, ctx);
  if (!mapping.referenceMap) return raw;
  const mapped = mapping.referenceMap[raw.trim()];
  if (mapped === undefined) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel(column, ctx)} must be one of ${Object.keys(mapping.referenceMap).join(', ')}`);
  }
  return mapped;
}

/**
 * EHRSQL (eICU valid/test JSON): the question; the reference is the gold SQL, or "null" when the
 * question cannot be answered from the database (is_impossible). `value` (the sampled slot values) is
 * kept because HELM's scoring falls back to it when the gold query returns nothing.
 */
function ehrSqlAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const f = record.fields;
  const impossible = field(record, 'is_impossible', ctx);
  if (typeof impossible !== 'boolean') {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column "is_impossible" must be true or false`);
  }
  const value = f.value;
  if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value))) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column "value" must be an object`);
  }
  return {
    key: text(record, 'id', ctx),
    vars: { question: text(record, 'question', ctx) },
    references: [text(record, 'query', ctx)],
    extra: { isImpossible: impossible, value: JSON.stringify(value ?? {}) },
  };
}

/** PubMedQA ori_pqal.json: labelled abstract sections + question; answer yes / no / maybe. */
function pubmedQaAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const f = record.fields;
  const contexts = f.CONTEXTS;
  const labels = f.LABELS;
  if (!Array.isArray(contexts) || !contexts.every((c) => typeof c === 'string')) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: CONTEXTS must be a list of strings`);
  }
  const labelled = contexts.map((c, i) => {
    const label = Array.isArray(labels) && typeof labels[i] === 'string' ? `${labels[i] as string}: ` : '';
    return `${label}${c as string}`;
  });
  const decision = text(record, 'final_decision', ctx);
  if (!['yes', 'no', 'maybe'].includes(decision)) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: final_decision must be yes, no or maybe`);
  }
  return {
    key: record.key ?? String(record.position),
    vars: { context: labelled.join('\n'), question: text(record, 'QUESTION', ctx) },
    choices: ['yes', 'no', 'maybe'],
    references: [decision],
  };
}

/**
 * MEDEC (MS test set): numbered sentences; the reference is CORRECT or "<sentence id> <corrected
 * sentence>". The gold sentence id is kept as its own field so sentence accuracy can be scored (HELM
 * tries to parse it back out of the reference and always fails).
 */
function medecAdapter(record: RawRecord, ctx: AdapterContext): Instance | null {
  const sentences = text(record, 'Sentences', ctx);
  if (sentences.trim() === '') return null;
  const flag = text(record, 'Error Flag', ctx).trim();
  if (flag !== '0' && flag !== '1') {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: "Error Flag" must be 0 or 1`);
  }
  const hasError = flag === '1';
  const sentenceId = hasError ? Number.parseInt(text(record, 'Error Sentence ID', ctx), 10) : null;
  if (hasError && !Number.isInteger(sentenceId)) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: "Error Sentence ID" must be an integer when "Error Flag" is 1`);
  }
  return {
    key: text(record, 'Text ID', ctx),
    vars: { sentences },
    references: [hasError ? `${sentenceId} ${text(record, 'Corrected Sentence', ctx)}` : 'CORRECT'],
    // errorType is a declared export subgroup (MEDEC's five error types, "none" for correct notes).
    extra: { errorFlag: hasError, errorSentenceId: sentenceId, errorType: hasError ? text(record, 'Error Type', ctx).trim() : 'none' },
  };
}

/**
 * Multiple choice from a site file: `question`, `options` (a JSON list of option texts) and `answer`
 * (the letter of the correct option). The options are lettered A, B, C... in the prompt, as HELM's
 * multiple_choice_joint adapter does (MedQA, MedMCQA, HeadQA, Medbullets).
 */
function mcqAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const raw = text(record, 'options', ctx);
  let options: unknown;
  try {
    options = JSON.parse(raw);
  } catch {
    options = undefined;
  }
  if (!Array.isArray(options) || options.length < 2 || !options.every((o) => typeof o === 'string')) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel('options', ctx)} must be a JSON list of at least two strings`);
  }
  const letter = text(record, 'answer', ctx).trim().toUpperCase();
  const index = letter.length === 1 ? letter.charCodeAt(0) - 65 : -1;
  if (index < 0 || index >= options.length) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel('answer', ctx)} must be the letter of one of the options`);
  }
  const key = text(record, 'id', ctx);
  if (key.trim() === '') throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel('id', ctx)} (the id) is empty`);
  return { key, vars: { question: text(record, 'question', ctx) }, choices: options as string[], references: [options[index] as string], ...identity(record, undefined, ctx) };
}

const ADAPTERS: Record<string, RecordAdapter> = {
  mcq: mcqAdapter,
  columns: columnsAdapter,
  pubmed_qa: pubmedQaAdapter,
  medec: medecAdapter,
  ehr_sql: ehrSqlAdapter,
};

export function adapterFor(name: string): RecordAdapter | undefined {
  return ADAPTERS[name];
}

export function adapterNames(): string[] {
  return Object.keys(ADAPTERS);
}
