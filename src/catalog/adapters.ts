/**
 * Record adapters: how one raw record of a dataset becomes an Instance. `columns` covers any CSV/JSONL
 * laid out as columns; the named ones cover public datasets whose layout needs a rule (nested
 * contexts, references derived from several columns). An adapter skips a record the benchmark does not
 * use where HELM's loader skips it (MEDEC rows without text, CLEAR rows with a blank label, ENT-Referral
 * rows with an empty label), and names the rule, so the run counts and reports what it left out.
 */
import { UserError } from '../errors';
import { SCT_PANEL_FIELDS } from '../metrics';
import type { RuleId } from '../policy';
import { CHOICE_LETTERS } from './template';
import { ehrshotHelmPrompt, ehrshotWithinLength, medalignEhrFits, N2C2_DEFINITIONS, n2c2Notes, pubmedQaBackground } from './helm-prompts';
import type { RawRecord } from './sources/records';
import { combineIdentity, type Identity, readIdentity } from './identity';
import { healthBenchInstance } from './health-bench';
import { healthBenchMetaInstance } from './health-bench-meta';
import type { BenchmarkDefinition, ColumnMapping, Instance } from './types';

export interface AdapterContext {
  file: string;
  definition: BenchmarkDefinition;
  /** The site's names for required columns (required column -> site column). */
  rename?: Record<string, string>;
}

/** A record left out of the benchmark, and the rule that left it out. */
export interface Skip {
  skip: true;
  rule: Extract<RuleId, `dataset.skip.${string}`>;
}

export type RecordAdapter = (record: RawRecord, ctx: AdapterContext) => Instance | Skip;

export function isSkip(x: Instance | Skip): x is Skip {
  return (x as Skip).skip === true;
}

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

/**
 * The skip a definition declares for this record (`columns.skip`): a column that is the empty string
 * (HELM's `row["label"] != ""`) or blank once trimmed (HELM's `str(...).strip()` then `if not ...`).
 */
function declaredSkip(record: RawRecord, mapping: ColumnMapping, ctx: AdapterContext): Skip | undefined {
  for (const s of mapping.skip ?? []) {
    const value = text(record, s.column, ctx);
    if (s.when === 'empty' ? value === '' : value.trim() === '') return { skip: true, rule: s.when === 'empty' ? 'dataset.skip.empty-column' : 'dataset.skip.blank-column' };
  }
  return undefined;
}

function columnsAdapter(record: RawRecord, ctx: AdapterContext): Instance | Skip {
  const mapping = ctx.definition.dataset.columns as ColumnMapping | undefined;
  if (!mapping) throw new UserError('benchmark.invalid', `benchmark ${ctx.definition.id}: adapter "columns" needs dataset.columns`);
  const skipped = declaredSkip(record, mapping, ctx);
  if (skipped) return skipped;
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

/**
 * PubMedQA ori_pqal.json: the labelled abstract sections laid out as HELM's PubMedQAScenario lays
 * them ("Background. ...", one section a line, the label title-cased as Python's str.title() does),
 * the question; answer yes / no / maybe. HELM asserts one label per section: so does this.
 */
function pubmedQaAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const f = record.fields;
  const contexts = f.CONTEXTS;
  const labels = f.LABELS;
  if (!Array.isArray(contexts) || !contexts.every((c) => typeof c === 'string')) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: CONTEXTS must be a list of strings`);
  }
  if (!Array.isArray(labels) || labels.length !== contexts.length || !labels.every((l) => typeof l === 'string')) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: LABELS must be a list of strings, one for each of CONTEXTS`);
  }
  const decision = text(record, 'final_decision', ctx);
  if (!['yes', 'no', 'maybe'].includes(decision)) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: final_decision must be yes, no or maybe`);
  }
  return {
    key: record.key ?? String(record.position),
    vars: { context: pubmedQaBackground(labels as string[], contexts as string[]), question: text(record, 'QUESTION', ctx) },
    choices: ['yes', 'no', 'maybe'],
    references: [decision],
  };
}

/**
 * MEDEC (MS test set): numbered sentences; the reference is CORRECT or "<sentence id> <corrected
 * sentence>". The gold sentence id is kept as its own field so sentence accuracy can be scored (HELM
 * tries to parse it back out of the reference and always fails).
 */
function medecAdapter(record: RawRecord, ctx: AdapterContext): Instance | Skip {
  // HELM's MedecScenario sends the sentences stripped (row["Sentences"].strip()).
  const sentences = text(record, 'Sentences', ctx).trim();
  if (sentences === '') return { skip: true, rule: 'dataset.skip.blank-column' };
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
 * Options written as an object keyed by their letters, {"A": ..., "B": ...} (MedXpertQA's files, as
 * HELM reads them with options.items()): the values in order, when the keys are A, B, C... in that
 * order and none is missing; anything else is not options of this form (undefined).
 */
function letteredOptions(value: unknown): unknown[] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  if (keys.length === 0 || keys.some((k, i) => k !== CHOICE_LETTERS[i])) return undefined;
  return Object.values(value);
}

/**
 * The options of a multiple-choice record: a JSONL list as it is, or a list written as JSON text (all
 * a CSV cell can hold), or either as an object keyed A, B, C... (letteredOptions). Numbers and
 * booleans become their text (5 -> "5", true -> "true"), as the prompt shows them; anything else is
 * refused by record and column.
 */
function optionsOf(record: RawRecord, ctx: AdapterContext): string[] {
  const value = field(record, 'options', ctx);
  let list: unknown = value;
  if (typeof value === 'string') {
    try {
      list = JSON.parse(value);
    } catch {
      list = undefined;
    }
  }
  list = letteredOptions(list) ?? list;
  const scalar = (o: unknown) => typeof o === 'string' || typeof o === 'number' || typeof o === 'boolean';
  if (!Array.isArray(list) || list.length < 2 || !list.every(scalar)) {
    throw new UserError(
      'dataset.bad-column',
      `${ctx.file}: record ${record.position}: column ${columnLabel('options', ctx)} must be a list of at least two options (text or numbers), or an object of them keyed A, B, C..., or either written as JSON text`,
    );
  }
  return list.map((o) => String(o));
}

/**
 * Multiple choice from a site file: `question`, `options` (a list of option texts) and `answer` (the
 * letter of the correct option). The options are lettered A, B, C... in the prompt, as HELM's
 * multiple_choice_joint adapter does (MedQA, MedMCQA, HeadQA, Medbullets).
 */
function mcqAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  const options = optionsOf(record, ctx);
  const letter = text(record, 'answer', ctx).trim().toUpperCase();
  const index = letter.length === 1 ? letter.charCodeAt(0) - 65 : -1;
  if (index < 0 || index >= options.length) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel('answer', ctx)} must be the letter of one of the options`);
  }
  const key = text(record, 'id', ctx);
  if (key.trim() === '') throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel('id', ctx)} (the id) is empty`);
  return { key, vars: { question: text(record, 'question', ctx) }, choices: options, references: [options[index] as string], ...identity(record, undefined, ctx) };
}

/** The instance key from `column`, which must not be empty. */
function keyOf(record: RawRecord, column: string, ctx: AdapterContext): string {
  const key = text(record, column, ctx);
  if (key.trim() === '') throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel(column, ctx)} (the id) is empty`);
  return key;
}

/**
 * HeadQA as HELM reads it (HeadQAScenario with SKIP_VQA): a question with an image is left out. The
 * `image` column must be there, empty (or null) for a text question: without it the questions HELM
 * leaves out cannot be told from the others, and the run would silently not be HELM's.
 */
function headQaAdapter(record: RawRecord, ctx: AdapterContext): Instance | Skip {
  const image = field(record, 'image', ctx);
  const none = image === null || (typeof image === 'string' && image.trim() === '');
  if (!none) return { skip: true, rule: 'dataset.skip.image-question' };
  return mcqAdapter(record, ctx);
}

/** A yes/no label as a site or HELM's own prompt file writes it (EHRSHOT's boolean_value). */
function yesNo(record: RawRecord, column: string, ctx: AdapterContext): 'yes' | 'no' {
  const value = field(record, column, ctx);
  const s = typeof value === 'boolean' ? String(value) : typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (s === 'yes' || s === 'true') return 'yes';
  if (s === 'no' || s === 'false') return 'no';
  throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel(column, ctx)} must be yes, no, true or false`);
}

/**
 * EHRSHOT from HELM's own prompts (the `prompt` of EHRSHOTScenario's medhelm_prompts.parquet: persona,
 * instruction, serialized timeline), reworded and filtered as HELM does: a prompt over 100,000
 * cl100k_base tokens is left out.
 */
function ehrshotAdapter(record: RawRecord, ctx: AdapterContext): Instance | Skip {
  const key = keyOf(record, 'id', ctx);
  const reference = yesNo(record, 'label', ctx);
  const prompt = ehrshotHelmPrompt(text(record, 'prompt', ctx));
  if (!ehrshotWithinLength(prompt)) return { skip: true, rule: 'dataset.skip.prompt-over-max-length' };
  return { key, vars: { prompt }, choices: ['yes', 'no'], references: [reference], ...identity(record, undefined, ctx) };
}

/** MedAlign: the instruction, the EHR and the clinician's answer; an EHR over HELM's token budget is left out. */
function medalignAdapter(record: RawRecord, ctx: AdapterContext): Instance | Skip {
  const key = keyOf(record, 'instruction_id', ctx);
  const instruction = text(record, 'instruction', ctx);
  const ehr = text(record, 'ehr', ctx);
  const reference = text(record, 'clinician_response', ctx);
  if (!medalignEhrFits(instruction, ehr)) return { skip: true, rule: 'dataset.skip.ehr-over-token-budget' };
  return { key, vars: { instruction, ehr }, references: [reference], ...identity(record, undefined, ctx) };
}

/**
 * N2C2-CT: a patient's n2c2 record text and one criterion, laid out as HELM's N2C2CTMatchingScenario
 * does (dated notes, HELM's definition of the criterion, the current date). met / not met become HELM's
 * options yes / no.
 */
function n2c2Adapter(record: RawRecord, ctx: AdapterContext): Instance {
  const key = keyOf(record, 'id', ctx);
  const criterion = text(record, 'criterion', ctx).trim();
  if (!Object.prototype.hasOwnProperty.call(N2C2_DEFINITIONS, criterion)) {
    throw new UserError(
      'dataset.bad-column',
      `${ctx.file}: record ${record.position}: column ${columnLabel('criterion', ctx)} must be one of the 13 n2c2 2018 criteria (${Object.keys(N2C2_DEFINITIONS).join(', ')})`,
    );
  }
  const label = text(record, 'label', ctx).trim();
  if (label !== 'met' && label !== 'not met') throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel('label', ctx)} must be met or not met`);
  const { notes, count, currentDate } = n2c2Notes(text(record, 'notes', ctx));
  return {
    key,
    vars: { criterion, definition: N2C2_DEFINITIONS[criterion] as string, note_count: String(count), notes, current_date: currentDate },
    choices: ['yes', 'no'],
    references: [label === 'met' ? 'yes' : 'no'],
    ...identity(record, undefined, ctx),
  };
}

/**
 * SCT-Bench's columns for the panel's weight of each rating, as sct_cleaned_full.csv names them, in the
 * order of the instance fields the sct metrics read (SCT_PANEL_FIELDS: -2, -1, 0, +1, +2).
 */
const SCT_PANEL: readonly { column: string; rating: string }[] = [
  { column: '-2', rating: '-2' },
  { column: '-1', rating: '-1' },
  { column: '0', rating: '0' },
  { column: '1', rating: '+1' },
  { column: '2', rating: '+2' },
];

/**
 * One expert panel weight: a count or share of the experts who chose the rating, a number not below
 * zero. HELM's float() would stop the whole run on an empty cell and score a negative or NaN weight
 * as if it meant something; here the record is refused, naming it and the column.
 */
function panelWeight(record: RawRecord, column: string, ctx: AdapterContext): number {
  const value = field(record, column, ctx);
  const raw = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : '';
  const weight = /^[+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isFinite(weight)) {
    throw new UserError('dataset.bad-column', `${ctx.file}: record ${record.position}: column ${columnLabel(column, ctx)} must be the expert panel's weight of that rating, a number of at least 0`);
  }
  return weight;
}

/**
 * SCT-Bench (the MedHELM package's SCTBenchScenario): the case, the hypothesis and the new finding;
 * a record missing any of the three (the empty string) is left out as the scenario leaves it out. The
 * reference is the rating most experts chose (the lower one on a tie, as the scenario's index(max)
 * picks it); the metrics score against the whole panel, which the instance carries.
 */
function sctBenchAdapter(record: RawRecord, ctx: AdapterContext): Instance | Skip {
  const scenario = text(record, 'sct_stem', ctx);
  const hypothesis = text(record, 'question', ctx);
  const finding = text(record, 'additional_info', ctx);
  if (scenario === '' || hypothesis === '' || finding === '') return { skip: true, rule: 'dataset.skip.empty-column' };
  const key = keyOf(record, 'question_id', ctx);
  const weights = SCT_PANEL.map((p) => panelWeight(record, p.column, ctx));
  const best = weights.indexOf(Math.max(...weights));
  const extra: Record<string, number> = {};
  SCT_PANEL_FIELDS.forEach((f, i) => (extra[f] = weights[i] as number));
  return {
    key,
    vars: { scenario, hypothesis, additional_information: finding },
    references: [SCT_PANEL[best]?.rating as string],
    extra,
    ...identity(record, undefined, ctx),
  };
}

/** HealthBench (health-bench.ts): a conversation and its rubric; the site's identity columns still apply. */
function healthBenchAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  return { ...healthBenchInstance(record, ctx.file), ...identity(record, undefined, ctx) };
}

/** HealthBench Professional: the same, its turns under conversation.messages and its rubric under rubric_items. */
function healthBenchProfessionalAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  return { ...healthBenchInstance(record, ctx.file, 'health_bench_professional'), ...identity(record, undefined, ctx) };
}

/** HealthBench's meta-evaluation file: the grader under evaluation, asked about one criterion per line. */
function healthBenchMetaAdapter(record: RawRecord, ctx: AdapterContext): Instance {
  return { ...healthBenchMetaInstance(record, ctx.file), ...identity(record, undefined, ctx) };
}

const ADAPTERS: Record<string, RecordAdapter> = {
  mcq: mcqAdapter,
  columns: columnsAdapter,
  pubmed_qa: pubmedQaAdapter,
  medec: medecAdapter,
  ehr_sql: ehrSqlAdapter,
  head_qa: headQaAdapter,
  ehrshot: ehrshotAdapter,
  medalign: medalignAdapter,
  n2c2_ct_matching: n2c2Adapter,
  sct_bench: sctBenchAdapter,
  health_bench: healthBenchAdapter,
  health_bench_professional: healthBenchProfessionalAdapter,
  health_bench_meta: healthBenchMetaAdapter,
};

export function adapterFor(name: string): RecordAdapter | undefined {
  return ADAPTERS[name];
}

export function adapterNames(): string[] {
  return Object.keys(ADAPTERS);
}
