/**
 * The one query of the OMOP note source, and how its rows become known identifiers. A page of notes
 * (keyset on note_id, filters applied) is selected first and only then LEFT JOINed to person and the
 * CDM 5.3/5.4 tables that hold identifiers: location, care_site, provider, visit_occurrence. Paging the
 * notes before the joins keeps the keyset exact even where a dimension row is duplicated (a CDM
 * without primary keys): every row of a note is in the same page, and rows of one note are merged.
 */
import type { KnownIdentifiers } from '../types';
import { OMOP_IDENTIFIER_TABLES, type OmopIdentifierTable, type OmopNoteSourceSpec } from '../site-data';

/** The note fields a benchmark's column mapping can name. */
export const OMOP_NOTE_FIELDS = ['note_id', 'person_id', 'note_date', 'note_datetime', 'note_type_concept_id', 'note_class_concept_id', 'note_title', 'note_text', 'visit_occurrence_id'] as const;

type CdmTable = 'note' | 'person' | OmopIdentifierTable;

/** The identifying columns read from each dimension table (CDM 5.4 names, present in 5.3 too). */
const IDENTIFYING: Record<'location' | 'care_site' | 'provider', string[]> = {
  location: ['address_1', 'address_2', 'city', 'state', 'zip', 'county', 'location_source_value'],
  care_site: ['care_site_name', 'care_site_source_value'],
  provider: ['provider_name', 'npi', 'dea', 'provider_source_value'],
};

interface Join {
  alias: string;
  table: OmopIdentifierTable;
  /** Aliases as `x.column`; read back to tell a site which column its CDM lacks. */
  on: string;
  /** Every table the join passes through: left out when the site leaves any of them out. */
  needs: OmopIdentifierTable[];
}

/** Whose location, care site and provider: the person's, the note's visit's, and the note's own. */
const JOINS: Join[] = [
  { alias: 'pl', table: 'location', on: 'pl.location_id = p.location_id', needs: ['location'] },
  { alias: 'pcs', table: 'care_site', on: 'pcs.care_site_id = p.care_site_id', needs: ['care_site'] },
  { alias: 'pcsl', table: 'location', on: 'pcsl.location_id = pcs.location_id', needs: ['care_site', 'location'] },
  { alias: 'v', table: 'visit_occurrence', on: 'v.visit_occurrence_id = n.visit_occurrence_id', needs: ['visit_occurrence'] },
  { alias: 'vcs', table: 'care_site', on: 'vcs.care_site_id = v.care_site_id', needs: ['visit_occurrence', 'care_site'] },
  { alias: 'vcsl', table: 'location', on: 'vcsl.location_id = vcs.location_id', needs: ['visit_occurrence', 'care_site', 'location'] },
  { alias: 'np', table: 'provider', on: 'np.provider_id = n.provider_id', needs: ['provider'] },
  { alias: 'vp', table: 'provider', on: 'vp.provider_id = v.provider_id', needs: ['visit_occurrence', 'provider'] },
  { alias: 'pp', table: 'provider', on: 'pp.provider_id = p.provider_id', needs: ['provider'] },
];

const NOTE_COLUMNS = [...OMOP_NOTE_FIELDS];
const PERSON_COLUMNS = ['person_id', 'person_source_value', 'birth_datetime', 'year_of_birth', 'month_of_birth', 'day_of_birth'];

/** The joins in force for a source: those whose tables the site has not left out. */
function joinsFor(spec: OmopNoteSourceSpec): Join[] {
  const tables = new Set<OmopIdentifierTable>(spec.identifierTables ?? OMOP_IDENTIFIER_TABLES);
  return JOINS.filter((j) => j.needs.every((t) => tables.has(t)));
}

/** visit_occurrence holds no identifier itself: it is the way to the visit's care site and provider. */
function identifyingOf(table: OmopIdentifierTable): string[] {
  return table === 'visit_occurrence' ? [] : IDENTIFYING[table];
}

/** A column the query reads, with the identifier table it is read for (none: note and person). */
export interface ColumnRead {
  table: CdmTable;
  column: string;
  for?: OmopIdentifierTable;
}

/** Every column the query reads, once each; what a failed query is checked against. */
export function columnsRead(spec: OmopNoteSourceSpec): ColumnRead[] {
  const joins = joinsFor(spec);
  const tableOf = new Map<string, CdmTable>([['n', 'note'], ['p', 'person'], ...joins.map((j) => [j.alias, j.table] as [string, CdmTable])]);
  const out: ColumnRead[] = [...NOTE_COLUMNS.map((column) => ({ table: 'note' as const, column })), ...PERSON_COLUMNS.map((column) => ({ table: 'person' as const, column }))];
  for (const j of joins) {
    for (const [, alias, column] of j.on.matchAll(/(\w+)\.(\w+)/g)) out.push({ table: tableOf.get(alias as string) as CdmTable, column: column as string, for: j.table });
    for (const column of identifyingOf(j.table)) out.push({ table: j.table, column, for: j.table });
  }
  // Once per column, with the first identifier table it is read for.
  const once = new Map<string, ColumnRead>();
  for (const c of out) if (!once.has(`${c.table}.${c.column}`)) once.set(`${c.table}.${c.column}`, c);
  return [...once.values()];
}

/** The filters of the note table from parameter $first on: the labelled note_ids, the concept and title filters. */
function noteFilters(first: number): string {
  const [ids, types, classes, titles] = [first, first + 1, first + 2, first + 3];
  return `($${ids}::bigint[] IS NULL OR note_id = ANY($${ids}::bigint[]))
                     AND ($${types}::integer[] IS NULL OR note_type_concept_id = ANY($${types}::integer[]))
                     AND ($${classes}::integer[] IS NULL OR note_class_concept_id = ANY($${classes}::integer[]))
                     AND ($${titles}::text[] IS NULL OR note_title = ANY($${titles}::text[]))`;
}

/**
 * The batched query: $1 the last note_id read, $2 the labelled note_ids, $3-$5 the filters, $6 the
 * page size, $7 the most bytes of note_text fetched (a longer text comes back NULL, with its length
 * in note_text_bytes, so it is refused without being transferred). The schema name is checked against
 * ^[a-z_][a-z0-9_]*$ by the site data schema and quoted.
 */
export function noteQuery(spec: OmopNoteSourceSpec): string {
  const s = `"${spec.schema ?? 'public'}"`;
  const joins = joinsFor(spec);
  // Cast to text: a CDM may type zip, npi or a source value as a number; the matcher takes text.
  const identifying = joins.flatMap((j) => identifyingOf(j.table).map((c) => `${j.alias}.${c}::text AS ${j.alias}_${c}`));
  const noteProvider = joins.some((j) => j.alias === 'np') ? ', provider_id' : '';
  const noteColumns = NOTE_COLUMNS.map((c) =>
    c === 'note_text' ? 'CASE WHEN $7::bigint IS NULL OR octet_length(note_text) <= $7::bigint THEN note_text END AS note_text, octet_length(note_text) AS note_text_bytes' : c,
  );
  return `SELECT n.note_id::text AS note_id, n.person_id::text AS person_id,
                 n.note_date::text AS note_date, n.note_datetime::text AS note_datetime,
                 n.note_type_concept_id, n.note_class_concept_id, n.note_title, n.note_text, n.note_text_bytes,
                 n.visit_occurrence_id::text AS visit_occurrence_id,
                 p.person_source_value::text AS person_source_value,
                 COALESCE(p.birth_datetime::date::text,
                          CASE WHEN p.year_of_birth IS NOT NULL AND p.month_of_birth IS NOT NULL AND p.day_of_birth IS NOT NULL
                               THEN make_date(p.year_of_birth, p.month_of_birth, p.day_of_birth)::text END) AS birth_date${identifying.map((c) => `,\n                 ${c}`).join('')}
            FROM (SELECT ${noteColumns.join(', ')}${noteProvider}
                    FROM ${s}.note
                   WHERE ($1::bigint IS NULL OR note_id > $1::bigint)
                     AND ${noteFilters(2)}
                   ORDER BY note_id
                   LIMIT $6) n
            LEFT JOIN ${s}.person p ON p.person_id = n.person_id${joins.map((j) => `\n            LEFT JOIN ${s}.${j.table} ${j.alias} ON ${j.on}`).join('')}
           ORDER BY n.note_id`;
}

/**
 * The notes the source reads, for their pin (noteIdsSha256): each note_id with the sha256 of its
 * text, hashed by the server so that no text is transferred, in a stable order. $1-$4 are noteQuery's
 * $2-$5 (labelled note_ids, filters).
 */
export function notesPinQuery(spec: OmopNoteSourceSpec): string {
  return `SELECT note_id::text AS note_id, encode(sha256(convert_to(note_text, 'UTF8')), 'hex') AS text_sha256
            FROM "${spec.schema ?? 'public'}".note
           WHERE ${noteFilters(1)}
           ORDER BY note_id, text_sha256`;
}

export type NoteRow = Record<string, string | number | null>;

/** Collects values by kind, trimmed, each once. */
class KnownBuilder {
  private readonly byKind = new Map<keyof KnownIdentifiers, Set<string>>();

  add(kind: keyof KnownIdentifiers, ...values: unknown[]): void {
    for (const v of values) {
      const text = typeof v === 'string' ? v.trim() : typeof v === 'number' ? String(v) : '';
      if (text === '') continue;
      const set = this.byKind.get(kind) ?? new Set<string>();
      set.add(text);
      this.byKind.set(kind, set);
    }
  }

  build(): KnownIdentifiers {
    return Object.fromEntries([...this.byKind].map(([k, v]) => [k, [...v]]));
  }
}

/** "address_1, address_2, city, state zip": the form notes write, which de-identification splits by comma. */
function addressLine(row: NoteRow, a: string): string {
  const text = (c: string) => String(row[`${a}_${c}`] ?? '').trim();
  const stateZip = [text('state'), text('zip')].filter(Boolean).join(' ');
  return [text('address_1'), text('address_2'), text('city'), stateZip].filter(Boolean).join(', ');
}

/** One joined row's identifiers, by the table each join reads. */
function addJoined(known: KnownBuilder, row: NoteRow, j: Join): void {
  const col = (c: string) => row[`${j.alias}_${c}`];
  if (j.table === 'location') {
    // The whole address, and the city and county alone: notes name them without the street.
    known.add('addresses', addressLine(row, j.alias), col('city'), col('county'));
    known.add('other', col('location_source_value'));
  } else if (j.table === 'care_site') {
    known.add('facilities', col('care_site_name'));
    known.add('other', col('care_site_source_value'));
  } else if (j.table === 'provider') {
    known.add('names', col('provider_name'));
    known.add('other', col('npi'), col('dea'), col('provider_source_value'));
  }
}

/** The known identifiers of one note from all its rows (more than one only where a CDM repeats a key). */
export function knownOf(rows: NoteRow[], spec: OmopNoteSourceSpec): KnownIdentifiers {
  const known = new KnownBuilder();
  const joins = joinsFor(spec);
  const meaning = spec.personSourceValue ?? 'mrn';
  for (const row of rows) {
    if (meaning !== 'ignore') known.add(meaning === 'mrn' ? 'mrns' : 'other', row.person_source_value);
    known.add('dates', row.birth_date);
    for (const j of joins) addJoined(known, row, j);
  }
  return known.build();
}

/** The note's own fields of a row (what a benchmark's mapping can name). */
export function noteFields(row: NoteRow): Record<string, string | number | null> {
  return Object.fromEntries(NOTE_COLUMNS.map((c) => [c, row[c] ?? null]));
}

/**
 * The demographics of a page's notes, for a binding's strata (catalog/strata.ts), by note_id ($1):
 * the person's birth (year, month, day; birth_datetime where the parts are missing) and gender, race
 * and ethnicity concepts, the note's day, the visit's concept and its care site's place of service,
 * and, with `payer`, the payer of the person's plan covering the note's day (the latest such plan).
 * A query of its own beside noteQuery: it joins visit_occurrence and care_site whatever
 * identifierTables says, and payer_plan_period only when a stratum asks for it (a CDM may lack it).
 * One row per note (DISTINCT ON: a CDM without keys may repeat a dimension row).
 */
export function demographicsQuery(spec: OmopNoteSourceSpec, payer: boolean): string {
  const s = `"${spec.schema ?? 'public'}"`;
  const payerColumn = payer ? 'pp.payer_concept_id::text' : 'NULL::text';
  const payerJoin = payer
    ? `
            LEFT JOIN LATERAL (SELECT payer_concept_id FROM ${s}.payer_plan_period x
                                WHERE x.person_id = n.person_id AND n.note_date BETWEEN x.payer_plan_period_start_date AND x.payer_plan_period_end_date
                                ORDER BY x.payer_plan_period_start_date DESC, x.payer_concept_id LIMIT 1) pp ON true`
    : '';
  return `SELECT DISTINCT ON (n.note_id) n.note_id::text AS note_id,
                 COALESCE(p.year_of_birth, EXTRACT(YEAR FROM p.birth_datetime))::integer AS year_of_birth,
                 COALESCE(p.month_of_birth, EXTRACT(MONTH FROM p.birth_datetime))::integer AS month_of_birth,
                 COALESCE(p.day_of_birth, EXTRACT(DAY FROM p.birth_datetime))::integer AS day_of_birth,
                 n.note_date::text AS note_date,
                 p.gender_concept_id::text AS gender_concept_id, p.race_concept_id::text AS race_concept_id, p.ethnicity_concept_id::text AS ethnicity_concept_id,
                 v.visit_concept_id::text AS visit_concept_id, cs.place_of_service_concept_id::text AS place_of_service_concept_id,
                 ${payerColumn} AS payer_concept_id
            FROM ${s}.note n
            LEFT JOIN ${s}.person p ON p.person_id = n.person_id
            LEFT JOIN ${s}.visit_occurrence v ON v.visit_occurrence_id = n.visit_occurrence_id
            LEFT JOIN ${s}.care_site cs ON cs.care_site_id = v.care_site_id${payerJoin}
           WHERE n.note_id = ANY($1::bigint[])
           ORDER BY n.note_id, v.visit_concept_id NULLS LAST, cs.place_of_service_concept_id NULLS LAST`;
}
