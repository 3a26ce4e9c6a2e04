/**
 * Record adapters: how one raw record of a dataset becomes an Instance. `columns` covers any CSV/JSONL
 * laid out as columns; the named ones cover public datasets whose layout needs a rule (nested
 * contexts, references derived from several columns). An adapter returns null to skip a record the
 * benchmark does not use (as HELM skips MEDEC rows without text).
 */
import { UserError } from '../errors';
import type { RawRecord } from './sources/records';
import type { BenchmarkDefinition, ColumnMapping, Instance, KnownIdentifiers } from './types';

export interface AdapterContext {
  file: string;
  definition: BenchmarkDefinition;
}

export type RecordAdapter = (record: RawRecord, ctx: AdapterContext) => Instance | null;

function field(record: RawRecord, column: string, ctx: AdapterContext): unknown {
  if (!(column in record.fields)) {
    throw new UserError('dataset.missing-column', `${ctx.file}: record ${record.position}: missing column "${column}"`);
  }
  return record.fields[column];
}

function text(record: RawRecord, column: string, ctx: AdapterContext): string {
  const value = field(record, column, ctx);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column "${column}" must be text or a number`);
}

function columnsAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const mapping = ctx.definition.dataset.columns as ColumnMapping | undefined;
  if (!mapping) throw new UserError('benchmark.invalid', `benchmark ${ctx.definition.id}: adapter "columns" needs dataset.columns`);
  const key = text(record, mapping.id, ctx);
  if (key.trim() === '') throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column "${mapping.id}" (the id) is empty`);
  const vars: Record<string, string> = {};
  for (const [name, column] of Object.entries(mapping.vars)) vars[name] = text(record, column, ctx);
  const extra: Record<string, string> = {};
  for (const [name, column] of Object.entries(mapping.extra ?? {})) extra[name] = text(record, column, ctx);
  const known = knownOf(record, mapping, ctx);
  const subject = mapping.subject ? text(record, mapping.subject, ctx).trim() : '';
  return {
    key,
    vars,
    ...(mapping.choices ? { choices: mapping.choices } : {}),
    references: [text(record, mapping.reference, ctx)],
    ...(mapping.extra ? { extra } : {}),
    ...(known ? { known } : {}),
    ...(subject ? { subjectId: subject } : {}),
  };
}

/** Known identifiers of the record from the columns the mapping names (for de-identification). */
function knownOf(record: RawRecord, mapping: ColumnMapping, ctx: AdapterContext): KnownIdentifiers | undefined {
  if (!mapping.known) return undefined;
  const known: KnownIdentifiers = {};
  for (const [kind, columns] of Object.entries(mapping.known) as [keyof KnownIdentifiers, string[]][]) {
    const values = columns.map((c) => text(record, c, ctx).trim()).filter((v) => v !== '');
    if (values.length) known[kind] = values;
  }
  return known;
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
    extra: { errorFlag: hasError, errorSentenceId: sentenceId },
  };
}

const ADAPTERS: Record<string, RecordAdapter> = {
  columns: columnsAdapter,
  pubmed_qa: pubmedQaAdapter,
  medec: medecAdapter,
};

export function adapterFor(name: string): RecordAdapter | undefined {
  return ADAPTERS[name];
}

export function adapterNames(): string[] {
  return Object.keys(ADAPTERS);
}
