/**
 * Notes from an OMOP CDM database: the `note` table, joined to `person`, `location`, `care_site`,
 * `provider` and `visit_occurrence` for the identifiers known from structured data (omop-query.ts),
 * which de-identification always masks. Read-only by construction: the connection starts with
 * default_transaction_read_only=on and every batch runs in its own short `BEGIN TRANSACTION READ ONLY` (never across a model call: the
 * batch is fully read before its records are handed on). Batches page by note_id (keyset), so memory
 * does not grow with the table. Errors name the source, the SQLSTATE and, for a missing table or
 * column, which one (from the catalog, never from the server's message); never a value.
 */
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { UserError } from '../../errors';
import { OMOP_IDENTIFIER_TABLES, type OmopNoteSourceSpec } from '../site-data';
import { type ColumnRead, columnsRead, knownOf, noteFields, noteQuery, type NoteRow } from './omop-query';
import { readRecords, type RawRecord } from './records';

const DEFAULT_BATCH = 500;

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

/** note_id -> the labels row, from the site's labels CSV. */
async function readLabels(spec: OmopNoteSourceSpec): Promise<Map<string, Record<string, unknown>> | undefined> {
  if (!spec.labels) return undefined;
  const idColumn = spec.labels.noteIdColumn ?? 'note_id';
  const labels = new Map<string, Record<string, unknown>>();
  for await (const r of readRecords(spec.labels.path, 'csv')) {
    const id = r.fields[idColumn];
    if (typeof id !== 'string' || !/^-?\d+$/.test(id.trim())) {
      throw new UserError('dataset.bad-column', `${spec.labels.path}: record ${r.position}: column "${idColumn}" must be a note_id (an integer)`);
    }
    if (labels.has(id.trim())) throw new UserError('dataset.duplicate-keys', `${spec.labels.path}: record ${r.position}: note_id occurs more than once`);
    labels.set(id.trim(), r.fields);
  }
  return labels;
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

/** Opens the read-only connection. */
async function connect(spec: OmopNoteSourceSpec, label: string, env: NodeJS.ProcessEnv): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: omopConnectionUrl(spec, label, env),
    // Read-only from the first statement on, whatever the role may do.
    options: '-c default_transaction_read_only=on',
    application_name: 'ehrbench-omop-reader',
  });
  client.on('error', () => undefined); // a dropped connection surfaces as the failing query's error
  try {
    await client.connect();
  } catch (err) {
    throw await failure(undefined, spec, label, 'connecting to the OMOP database', err);
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

/**
 * Streams note records. Each record's fields are the note fields plus the labels row's columns;
 * `known` carries the identifiers of the person, their location and care site, the visit's care site
 * and provider and the note's provider; `subjectId` the person_id.
 */
export async function* readOmopNotes(spec: OmopNoteSourceSpec, label: string, env: NodeJS.ProcessEnv = process.env): AsyncGenerator<RawRecord> {
  const labels = await readLabels(spec);
  const client = await connect(spec, label, env);
  const f = spec.filter ?? {};
  const ids = labels ? [...labels.keys()] : null;
  const sql = noteQuery(spec);
  let after: string | null = null;
  let position = 0;
  try {
    // Until a page comes back empty: a page's row count says nothing exact once notes are joined.
    for (;;) {
      const rows = await readPage(client, spec, label, sql, [after, ids, f.noteTypeConceptIds ?? null, f.noteClassConceptIds ?? null, f.noteTitles ?? null, spec.batchSize ?? DEFAULT_BATCH]);
      if (rows.length === 0) break;
      for (const group of byNote(rows)) {
        const first = group[0] as NoteRow;
        position += 1;
        const noteId = String(first.note_id);
        yield {
          position,
          key: noteId,
          fields: { ...(labels?.get(noteId) ?? {}), ...noteFields(first) },
          known: knownOf(group, spec),
          ...(first.person_id === null ? {} : { subjectId: String(first.person_id) }),
        };
      }
      after = String(rows[rows.length - 1]?.note_id);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  if (labels && position < labels.size) {
    throw new UserError('omop.missing-notes', `${label}: ${labels.size - position} note_id(s) listed in ${spec.labels?.path} are not in the note table (or are filtered out)`);
  }
}
