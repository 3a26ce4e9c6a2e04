/**
 * Who a record is about, for de-identification: the subject id (one surrogate map and date shift per
 * subject) and the identifiers known from structured data (always masked, with their variants). They
 * come from three places, combined here: what the source attaches (OMOP: person, location, care site,
 * provider), the columns the benchmark definition names, and the columns the site binding names.
 * Cell values are PHI: errors name the file, the record and the column, never a value.
 */
import { UserError } from '../errors';
import type { RawRecord } from './sources/records';
import type { Instance, KnownColumns, KnownIdentifiers } from './types';

export type Identity = Pick<Instance, 'known' | 'subjectId'>;

/** The columns naming a record's subject and known identifiers. */
export interface IdentityColumns {
  subject?: string;
  known?: KnownColumns;
}

/** How columns are found and named in messages: the file, the record's name of a column, and its label. */
export interface ColumnNaming {
  file: string;
  /** The column as the record names it (a definition column may be renamed by the site). */
  actual(column: string): string;
  /** The column in a message; `where` is the binding key that named it ("subject", "known.names"). */
  label(column: string, where: string): string;
  /** Columns a record may leave out (the binding's optionalColumns): absent holds no identifier. */
  optional?: ReadonlySet<string>;
  /** What to do about a column a record lacks, after the message (where optionalColumns is the way). */
  absentHint?: string;
}

/** The text values of one identity cell: empty cells and JSON nulls hold none; a JSON list holds several. */
function cellValues(record: RawRecord, column: string, where: string, naming: ColumnNaming): string[] {
  const actual = naming.actual(column);
  if (!(actual in record.fields)) {
    if (naming.optional?.has(column)) return [];
    throw new UserError('dataset.missing-column', `${naming.file}: record ${record.position}: missing column ${naming.label(column, where)}${naming.absentHint ?? ''}`);
  }
  const value = record.fields[actual];
  const items = Array.isArray(value) && where !== 'subject' ? value : [value];
  return items.map((v) => scalar(v, record, column, where, naming)).filter((v) => v !== '');
}

function scalar(value: unknown, record: RawRecord, column: string, where: string, naming: ColumnNaming): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const expected = where === 'subject' ? 'text or a number' : 'text, a number or a list of them';
  throw new UserError('dataset.bad-column', `${naming.file}: record ${record.position}: column ${naming.label(column, where)} must be ${expected}`);
}

/** Reads the subject and known identifiers a set of columns names; absent keys stay absent. */
export function readIdentity(record: RawRecord, columns: IdentityColumns, naming: ColumnNaming): Identity {
  const known: KnownIdentifiers = {};
  for (const [kind, list] of Object.entries(columns.known ?? {}) as [keyof KnownIdentifiers, string[]][]) {
    const values = list.flatMap((c) => cellValues(record, c, `known.${kind}`, naming));
    if (values.length) known[kind] = values;
  }
  const subject = columns.subject === undefined ? undefined : cellValues(record, columns.subject, 'subject', naming)[0];
  return { ...(Object.keys(known).length ? { known } : {}), ...(subject ? { subjectId: subject } : {}) };
}

/**
 * Lays `over` on `base`: known values of both are kept (each value once, since every value costs the
 * matcher a pattern), and the subject of `over` wins when it has one.
 */
export function combineIdentity(base: Identity, over: Identity): Identity {
  const known: KnownIdentifiers = {};
  for (const k of [base.known, over.known]) {
    for (const [kind, values] of Object.entries(k ?? {}) as [keyof KnownIdentifiers, string[] | undefined][]) {
      if (values?.length) known[kind] = [...new Set([...(known[kind] ?? []), ...values])];
    }
  }
  const subjectId = over.subjectId ?? base.subjectId;
  return { ...(Object.keys(known).length ? { known } : {}), ...(subjectId ? { subjectId } : {}) };
}

/** An instance with `identity` in place of whatever identity it had. */
export function withIdentity(instance: Instance, identity: Identity): Instance {
  const { known: _known, subjectId: _subject, ...rest } = instance;
  return { ...rest, ...identity };
}
