/**
 * Notes from an OMOP CDM database: the `note` table, joined to `person` for the identifiers known from
 * structured data (person_source_value is usually the MRN; the birth date), which de-identification
 * uses. Read-only by construction: the connection starts with default_transaction_read_only=on and
 * every batch runs in its own short `BEGIN TRANSACTION READ ONLY` (never across a model call: the
 * batch is fully read before its records are handed on). Batches page by note_id (keyset), so memory
 * does not grow with the table. Errors name the source and the SQLSTATE, never a value.
 */
import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { UserError } from '../../errors';
import type { OmopNoteSourceSpec } from '../site-data';
import { readRecords, type RawRecord } from './records';

/** The note fields a benchmark's column mapping can name. */
export const OMOP_NOTE_FIELDS = [
  'note_id',
  'person_id',
  'note_date',
  'note_datetime',
  'note_type_concept_id',
  'note_class_concept_id',
  'note_title',
  'note_text',
  'visit_occurrence_id',
] as const;

const DEFAULT_BATCH = 500;

interface NoteRow {
  note_id: string;
  person_id: string;
  note_date: string | null;
  note_datetime: string | null;
  note_type_concept_id: number | null;
  note_class_concept_id: number | null;
  note_title: string | null;
  note_text: string | null;
  visit_occurrence_id: string | null;
  person_source_value: string | null;
  birth_date: string | null;
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

function queryText(schema: string): string {
  // The schema name is checked against ^[a-z_][a-z0-9_]*$ by the site data schema and quoted here.
  const s = `"${schema}"`;
  return `SELECT n.note_id::text AS note_id, n.person_id::text AS person_id,
                 n.note_date::text AS note_date, n.note_datetime::text AS note_datetime,
                 n.note_type_concept_id, n.note_class_concept_id, n.note_title, n.note_text,
                 n.visit_occurrence_id::text AS visit_occurrence_id,
                 p.person_source_value,
                 COALESCE(p.birth_datetime::date::text,
                          CASE WHEN p.year_of_birth IS NOT NULL AND p.month_of_birth IS NOT NULL AND p.day_of_birth IS NOT NULL
                               THEN make_date(p.year_of_birth, p.month_of_birth, p.day_of_birth)::text END) AS birth_date
            FROM ${s}.note n LEFT JOIN ${s}.person p ON p.person_id = n.person_id
           WHERE ($1::bigint IS NULL OR n.note_id > $1::bigint)
             AND ($2::bigint[] IS NULL OR n.note_id = ANY($2::bigint[]))
             AND ($3::integer[] IS NULL OR n.note_type_concept_id = ANY($3::integer[]))
             AND ($4::integer[] IS NULL OR n.note_class_concept_id = ANY($4::integer[]))
             AND ($5::text[] IS NULL OR n.note_title = ANY($5::text[]))
           ORDER BY n.note_id
           LIMIT $6`;
}

function failure(label: string, what: string, err: unknown): UserError {
  if (err instanceof UserError) return err;
  const code = (err as { code?: unknown })?.code;
  const sqlstate = typeof code === 'string' ? code : 'connection';
  const hint =
    sqlstate === '42P01' || sqlstate === '3F000'
      ? 'the note or person table is not in that schema; set "schema" in the site data file'
      : sqlstate === '42703'
        ? 'a CDM column is missing from note or person (CDM v5.3/5.4 expected)'
        : sqlstate === '25006'
          ? 'a write was attempted on the read-only connection'
          : 'check the connection and the role\'s SELECT grants';
  return new UserError('omop.query-failed', `${label}: ${what} failed (${sqlstate}); ${hint}`);
}

/**
 * Streams note records. Each record's fields are the note fields plus the labels row's columns;
 * `known` carries the person's MRN and birth date, `subjectId` the person_id.
 */
export async function* readOmopNotes(spec: OmopNoteSourceSpec, label: string, env: NodeJS.ProcessEnv = process.env): AsyncGenerator<RawRecord> {
  const labels = await readLabels(spec);
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
    throw failure(label, 'connecting to the OMOP database', err);
  }
  const f = spec.filter ?? {};
  const ids = labels ? [...labels.keys()] : null;
  const batch = spec.batchSize ?? DEFAULT_BATCH;
  const sql = queryText(spec.schema ?? 'public');
  let after: string | null = null;
  let position = 0;
  try {
    for (;;) {
      let rows: NoteRow[];
      try {
        await client.query('BEGIN TRANSACTION READ ONLY');
        rows = (await client.query<NoteRow>(sql, [after, ids, f.noteTypeConceptIds ?? null, f.noteClassConceptIds ?? null, f.noteTitles ?? null, batch])).rows;
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw failure(label, `reading ${spec.schema ?? 'public'}.note`, err);
      }
      for (const row of rows) {
        position += 1;
        const extra = labels?.get(row.note_id) ?? {};
        const { person_source_value: mrn, birth_date: birth, ...note } = row;
        yield {
          position,
          key: row.note_id,
          fields: { ...extra, ...note },
          known: { ...(mrn ? { mrns: [mrn] } : {}), ...(birth ? { dates: [birth] } : {}) },
          subjectId: row.person_id,
        };
      }
      if (rows.length < batch) break;
      after = rows[rows.length - 1]?.note_id ?? null;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  if (labels && position < labels.size) {
    throw new UserError('omop.missing-notes', `${label}: ${labels.size - position} note_id(s) listed in ${spec.labels?.path} are not in the note table (or are filtered out)`);
  }
}
