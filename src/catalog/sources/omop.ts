/**
 * Notes from an OMOP CDM database: the `note` table, joined to `person`, `location`, `care_site`,
 * `provider` and `visit_occurrence` for the identifiers known from structured data (omop-query.ts),
 * which de-identification always masks. Read-only by construction: the connection starts with
 * default_transaction_read_only=on (added to the URL's own options=, which are kept), checked once
 * connected, and every batch runs in its own short `BEGIN TRANSACTION READ ONLY` (never across a
 * model call: the batch is fully read before its records are handed on). Batches page by note_id
 * (keyset), so memory does not grow with the table; a note_text over the record limit is refused
 * without being fetched. The labels and the notes they pair with can be pinned (labelsSha256,
 * noteIdsSha256): a refresh that renumbers notes is refused, not paired with the old labels. Errors
 * name the source, the SQLSTATE and, for a missing table or column, which one (from the catalog,
 * never from the server's message); never a value.
 */
import { commandPrefix } from '../../command-prefix';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { UserError } from '../../errors';
import { OMOP_IDENTIFIER_TABLES, type OmopNoteSourceSpec } from '../site-data';
import type { OmopDemographics } from '../strata';
import { type ColumnRead, columnsRead, demographicsQuery, knownOf, noteFields, noteQuery, notesPinQuery, type NoteRow } from './omop-query';
import { readRecords, type RawRecord } from './records';

const DEFAULT_BATCH = 500;

/** Where a source's messages and pins point. */
export interface OmopReadOptions {
  benchmarkId: string;
  /** "benchmarks.<id> in <site data file>": where the source and its pins are written. */
  bindingAt: string;
  /** The most bytes of one note's text, and of one labels row; none when absent. */
  maxRecordBytes?: number;
  /** The binding declares OMOP strata: read each note's demographics (and its payer, with `payer`). */
  demographics?: { payer: boolean };
}

/** The connection URL, by reference only. */
export function omopConnectionUrl(spec: OmopNoteSourceSpec, label: string, env: NodeJS.ProcessEnv = process.env): string {
  if (spec.connection.env) {
    const url = env[spec.connection.env]?.trim();
    if (!url) throw new UserError('omop.no-connection', `${label}: environment variable ${spec.connection.env} (the OMOP database URL) is not set`);
    return url;
  }
  const file = spec.connection.file as string;
  if (!existsSync(file)) throw new UserError('omop.no-connection', `${label}: connection file ${file} does not exist`);
  const url = readFileSync(file, 'utf8').trim();
  if (!url) throw new UserError('omop.no-connection', `${label}: connection file ${file} is empty`);
  return url;
}

/** The site's labels: note_id -> the labels row, and the sha256 of the bytes they were read from. */
export interface Labels {
  byNoteId: Map<string, Record<string, unknown>>;
  sha256: string;
}

/** Reads the labels CSV, hashing exactly the bytes it parses, and refuses a file that differs from labelsSha256. */
export async function readLabels(spec: OmopNoteSourceSpec, label: string, opts: OmopReadOptions): Promise<Labels | undefined> {
  if (!spec.labels) return undefined;
  const { path } = spec.labels;
  const idColumn = spec.labels.noteIdColumn ?? 'note_id';
  const byNoteId = new Map<string, Record<string, unknown>>();
  const digest = createHash('sha256');
  const read = {
    digest,
    encodingAt: `source.labels of ${opts.bindingAt}`,
    ...(spec.labels.encoding ? { encoding: spec.labels.encoding } : {}),
    ...(opts.maxRecordBytes ? { maxRecordBytes: opts.maxRecordBytes } : {}),
  };
  for await (const r of readRecords(path, 'csv', read)) {
    const id = r.fields[idColumn];
    if (typeof id !== 'string' || !/^-?\d+$/.test(id.trim())) {
      throw new UserError('dataset.bad-column', `${path}: record ${r.position}: column "${idColumn}" must be a note_id (an integer)`);
    }
    if (byNoteId.has(id.trim())) throw new UserError('dataset.duplicate-keys', `${path}: record ${r.position}: note_id occurs more than once`);
    byNoteId.set(id.trim(), r.fields);
  }
  const sha256 = digest.digest('hex');
  if (spec.labelsSha256 && sha256 !== spec.labelsSha256) throw labelsChanged(spec, label, opts);
  return { byNoteId, sha256 };
}

/** The refusal of a labels file that differs from its pin. */
export function labelsChanged(spec: OmopNoteSourceSpec, label: string, opts: OmopReadOptions): UserError {
  return new UserError(
    'dataset.hash-mismatch',
    `${label}: the labels file ${spec.labels?.path} differs from source.labelsSha256 (${opts.bindingAt}); restore it, or check it against the notes and pin again with "${commandPrefix()} benchmarks check ${opts.benchmarkId} --pin"`,
  );
}

/** The refusal of labelled notes the note table does not hold (or the source's filters leave out). */
export function notesMissing(spec: OmopNoteSourceSpec, label: string, count: number): UserError {
  return new UserError('omop.missing-notes', `${label}: ${count} note_id(s) listed in ${spec.labels?.path} are not in the note table (or are filtered out)`);
}

/** The columns the query reads that the role cannot see in the schema: absent, or not granted. */
async function unseenColumns(client: pg.Client, spec: OmopNoteSourceSpec, read: ColumnRead[]): Promise<ColumnRead[]> {
  await client.query('BEGIN TRANSACTION READ ONLY');
  try {
    const { rows } = await client.query<{ t: string; c: string }>(
      `SELECT r.t, r.c FROM unnest($2::text[], $3::text[]) AS r(t, c)
        WHERE NOT EXISTS (SELECT 1 FROM information_schema.columns i WHERE i.table_schema = $1 AND i.table_name = r.t AND i.column_name = r.c)`,
      [spec.schema ?? 'public', read.map((x) => x.table), read.map((x) => x.column)],
    );
    return read.filter((x) => rows.some((r) => r.t === x.table && r.c === x.column));
  } finally {
    await client.query('COMMIT').catch(() => undefined);
  }
}

/** Names the first few of a list, and how many more there are. */
function few(items: string[]): string {
  return items.slice(0, 4).join(', ') + (items.length > 4 ? ` and ${items.length - 4} more` : '');
}

/** What is missing and the fix, from the names ehrbench reads (the server's message may quote data). */
function missingHint(schema: string, unseen: ColumnRead[], read: ColumnRead[]): string | undefined {
  if (unseen.length === 0) return undefined;
  // Tables in the order the site data schema lists them, so the message reads like the option.
  const order = ['note', 'person', ...OMOP_IDENTIFIER_TABLES] as string[];
  const byOrder = (a: string | undefined, b: string | undefined) => order.indexOf(a ?? '') - order.indexOf(b ?? '');
  const tables = [...new Set(read.map((c) => c.table))].filter((t) => read.filter((c) => c.table === t).every((c) => unseen.includes(c))).sort(byOrder);
  if (tables.includes('note') || tables.includes('person')) return 'the note or person table is not in that schema; set "schema" in the site data file';
  const columns = unseen.filter((c) => !tables.includes(c.table)).map((c) => `${schema}.${c.table}.${c.column}`);
  const what = [
    ...(tables.length ? [`table ${few(tables.map((t) => `${schema}.${t}`))} is missing or not readable by this role`] : []),
    ...(columns.length ? [`column ${few(columns)} is missing (CDM v5.3/5.4 expected)`] : []),
  ].join('; ');
  const optional = [...new Set(unseen.map((c) => c.for))].sort(byOrder);
  if (optional.includes(undefined)) return what;
  // Every gap is in an identifier table's join: the site can read the notes without that table.
  return `${what}; fix the CDM or the role's grants, or leave ${optional.map((t) => `"${t}"`).join(', ')} out of "identifierTables" of this source in the site data file`;
}

function staticHint(sqlstate: string): string {
  if (sqlstate === '42P01' || sqlstate === '3F000') return 'the note or person table is not in that schema; set "schema" in the site data file';
  if (sqlstate === '42703') return 'a CDM column is missing from note, person, location, care_site, provider or visit_occurrence (CDM v5.3/5.4 expected)';
  if (sqlstate === '25006') return 'a write was attempted on the read-only connection';
  return "check the connection and the role's SELECT grants";
}

async function failure(client: pg.Client | undefined, spec: OmopNoteSourceSpec, label: string, what: string, err: unknown): Promise<UserError> {
  if (err instanceof UserError) return err;
  const code = (err as { code?: unknown })?.code;
  const sqlstate = typeof code === 'string' ? code : 'connection';
  // A missing table, column or grant: ask the catalog which one, so the site knows what to fix.
  const diagnosable = client && (sqlstate === '42P01' || sqlstate === '42703' || sqlstate === '42501');
  const read = columnsRead(spec);
  const unseen = diagnosable ? await unseenColumns(client, spec, read).catch(() => []) : [];
  const hint = missingHint(spec.schema ?? 'public', unseen, read) ?? staticHint(sqlstate);
  return new UserError('omop.query-failed', `${label}: ${what} failed (${sqlstate}); ${hint}`);
}

/** The session option that makes every transaction read-only from the first statement on, whatever the role may do. */
const READ_ONLY_SESSION = '-c default_transaction_read_only=on';

/**
 * The URL and the session options. pg lets a URL's options= (a site's search_path) replace options
 * given beside it, which would drop the read-only default: it is taken out of the URL and both are
 * passed, ours last, so that no -c default_transaction_read_only in the URL can turn it off.
 */
export function sessionOf(url: string): { connectionString: string; options: string } {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined; // not a URL (pg also takes "/socket/dir dbname"): it cannot carry options=
  }
  const theirs = parsed?.searchParams.get('options');
  if (!parsed || theirs === null || theirs === undefined) return { connectionString: url, options: READ_ONLY_SESSION };
  parsed.searchParams.delete('options');
  return { connectionString: parsed.toString(), options: `${theirs} ${READ_ONLY_SESSION}` };
}

/** Opens the connection and refuses it unless its session is read-only by default. */
export async function connectOmop(spec: OmopNoteSourceSpec, label: string, env: NodeJS.ProcessEnv): Promise<pg.Client> {
  const client = new pg.Client({ ...sessionOf(omopConnectionUrl(spec, label, env)), application_name: 'ehrbench-omop-reader' });
  client.on('error', () => undefined); // a dropped connection surfaces as the failing query's error
  let readOnly: string | undefined;
  try {
    await client.connect();
    readOnly = (await client.query<{ default_transaction_read_only: string }>('SHOW default_transaction_read_only')).rows[0]?.default_transaction_read_only;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw await failure(undefined, spec, label, 'connecting to the OMOP database', err);
  }
  // A pooler that drops startup options would leave the session writable: fail closed.
  if (readOnly !== 'on') {
    await client.end().catch(() => undefined);
    throw new UserError(
      'omop.not-read-only',
      `${label}: the OMOP session is not read-only by default (default_transaction_read_only is ${readOnly ?? 'unknown'}); connect without a pooler that drops startup options, or set it on for the role`,
    );
  }
  return client;
}

/** One page of joined rows in its own short READ ONLY transaction, read whole before anything is yielded. */
async function readPage(client: pg.Client, spec: OmopNoteSourceSpec, label: string, sql: string, params: unknown[]): Promise<NoteRow[]> {
  try {
    await client.query('BEGIN TRANSACTION READ ONLY');
    const { rows } = await client.query<NoteRow>(sql, params);
    await client.query('COMMIT');
    return rows;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await failure(client, spec, label, `reading ${spec.schema ?? 'public'}.note`, err);
  }
}

/**
 * The demographics of a page's notes, by note_id, in a short READ ONLY transaction of their own. A
 * failure names the tables strata read, never the server's message (it may quote a value).
 */
async function readDemographics(client: pg.Client, spec: OmopNoteSourceSpec, label: string, noteIds: string[], payer: boolean): Promise<Map<string, OmopDemographics>> {
  try {
    await client.query('BEGIN TRANSACTION READ ONLY');
    const { rows } = await client.query<OmopDemographics & { note_id: string }>(demographicsQuery(spec, payer), [noteIds]);
    await client.query('COMMIT');
    return new Map(rows.map(({ note_id, ...d }) => [note_id, d]));
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    if (err instanceof UserError) throw err;
    const code = (err as { code?: unknown })?.code;
    const tables = ['person', 'visit_occurrence', 'care_site', ...(payer ? ['payer_plan_period'] : [])].map((t) => `${spec.schema ?? 'public'}.${t}`).join(', ');
    throw new UserError(
      'omop.query-failed',
      `${label}: reading the demographics of its strata failed (${typeof code === 'string' ? code : 'connection'}); the OMOP strata read ${tables} (CDM v5.3/5.4): fix the CDM or the role's grants, or remove those strata from the binding`,
    );
  }
}

/**
 * The rows of each note, in note_id order. A note has several rows only where the CDM repeats a key
 * (no primary keys): its identifiers are merged rather than the note read twice. Rows whose note
 * fields differ stay apart, so a note_id the note table itself repeats is still reported as such.
 */
function byNote(rows: NoteRow[]): NoteRow[][] {
  const groups = new Map<string, NoteRow[]>();
  for (const row of rows) {
    const key = JSON.stringify(noteFields(row));
    const group = groups.get(key);
    if (group) group.push(row);
    else groups.set(key, [row]);
  }
  return [...groups.values()];
}

/** The parameters of one page: after `after`, of the labelled `ids`, under the source's filters and the text limit. */
function pageParams(spec: OmopNoteSourceSpec, after: string | null, ids: string[] | null, maxBytes: number | undefined): unknown[] {
  const f = spec.filter ?? {};
  return [after, ids, f.noteTypeConceptIds ?? null, f.noteClassConceptIds ?? null, f.noteTitles ?? null, spec.batchSize ?? DEFAULT_BATCH, maxBytes ?? null];
}

/** How many notes the first page holds: what `benchmarks check` reads to show the source answers. */
export async function firstPage(client: pg.Client, spec: OmopNoteSourceSpec, label: string, ids: string[] | null): Promise<number> {
  const rows = await readPage(client, spec, label, noteQuery(spec), pageParams(spec, null, ids, 1));
  return byNote(rows).length;
}

/**
 * The pin of the notes the source reads (noteIdsSha256): sha256 over "note_id:sha256(note_text)"
 * lines in note_id order, from one snapshot. The server hashes the texts; none is transferred.
 */
export async function notesPin(client: pg.Client, spec: OmopNoteSourceSpec, label: string, ids: string[] | null): Promise<{ sha256: string; notes: number }> {
  const f = spec.filter ?? {};
  const digest = createHash('sha256');
  // Distinct note_ids: a CDM without keys may repeat one, which the pin still covers row by row.
  let notes = 0;
  let last: string | undefined;
  try {
    await client.query('BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await client.query(`DECLARE ehrbench_notes_pin NO SCROLL CURSOR FOR ${notesPinQuery(spec)}`, [ids, f.noteTypeConceptIds ?? null, f.noteClassConceptIds ?? null, f.noteTitles ?? null]);
    for (;;) {
      const { rows } = await client.query<{ note_id: string; text_sha256: string }>('FETCH 1000 FROM ehrbench_notes_pin');
      if (rows.length === 0) break;
      for (const r of rows) {
        digest.update(`${r.note_id}:${r.text_sha256}\n`);
        if (r.note_id !== last) notes += 1;
        last = r.note_id;
      }
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw await failure(client, spec, label, `pinning ${spec.schema ?? 'public'}.note`, err);
  }
  return { sha256: digest.digest('hex'), notes };
}

/** The refusal of notes that differ from their pin: the labels keyed by note_id may now name other notes. */
export function notesChanged(label: string, opts: OmopReadOptions): UserError {
  return new UserError(
    'omop.notes-changed',
    `${label}: the notes read differ from source.noteIdsSha256 (${opts.bindingAt}); the note table changed since it was pinned (an ETL refresh that renumbers or rewrites notes), so labels keyed by note_id may pair with other notes: check the labels against the new note_ids, then pin again with "${commandPrefix()} benchmarks check ${opts.benchmarkId} --pin"`,
  );
}

/** A note the demographics query did not return (deleted in between): every stratum "(other)". */
const NO_DEMOGRAPHICS: OmopDemographics = {
  year_of_birth: null,
  month_of_birth: null,
  day_of_birth: null,
  note_date: null,
  gender_concept_id: null,
  race_concept_id: null,
  ethnicity_concept_id: null,
  visit_concept_id: null,
  place_of_service_concept_id: null,
  payer_concept_id: null,
};

/** A note whose text is over the record limit, refused by its position (its text was not fetched). */
function noteTooLarge(label: string, position: number, limit: number): UserError {
  return new UserError(
    'dataset.record-too-large',
    `${label}: record ${position}: note_text is larger than the per-record limit of ${limit} bytes (catalog.maxRecordBytes in the config); shorten or remove the note, filter it out, or raise the limit`,
  );
}

/**
 * Streams note records. Each record's fields are the note fields plus the labels row's columns;
 * `known` carries the identifiers of the person, their location and care site, the visit's care site
 * and provider and the note's provider; `subjectId` the person_id. A pinned source is checked against
 * its pins before the first note is read.
 */
export async function* readOmopNotes(spec: OmopNoteSourceSpec, label: string, env: NodeJS.ProcessEnv, opts: OmopReadOptions): AsyncGenerator<RawRecord> {
  const labels = await readLabels(spec, label, opts);
  const client = await connectOmop(spec, label, env);
  const ids = labels ? [...labels.byNoteId.keys()] : null;
  const sql = noteQuery(spec);
  let after: string | null = null;
  let position = 0;
  try {
    if (spec.noteIdsSha256 && (await notesPin(client, spec, label, ids)).sha256 !== spec.noteIdsSha256) throw notesChanged(label, opts);
    // Until a page comes back empty: a page's row count says nothing exact once notes are joined.
    for (;;) {
      const rows = await readPage(client, spec, label, sql, pageParams(spec, after, ids, opts.maxRecordBytes));
      if (rows.length === 0) break;
      const demographics = opts.demographics ? await readDemographics(client, spec, label, [...new Set(rows.map((r) => String(r.note_id)))], opts.demographics.payer) : undefined;
      for (const group of byNote(rows)) {
        const first = group[0] as NoteRow;
        position += 1;
        if (opts.maxRecordBytes !== undefined && Number(first.note_text_bytes) > opts.maxRecordBytes) throw noteTooLarge(label, position, opts.maxRecordBytes);
        const noteId = String(first.note_id);
        yield {
          position,
          key: noteId,
          fields: { ...(labels?.byNoteId.get(noteId) ?? {}), ...noteFields(first) },
          known: knownOf(group, spec),
          ...(first.person_id === null ? {} : { subjectId: String(first.person_id) }),
          ...(demographics ? { demographics: demographics.get(noteId) ?? NO_DEMOGRAPHICS } : {}),
        };
      }
      after = String(rows[rows.length - 1]?.note_id);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  if (labels && position < labels.byNoteId.size) throw notesMissing(spec, label, labels.byNoteId.size - position);
}
