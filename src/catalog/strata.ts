/**
 * Strata: the stratification fields a site binding declares (site-data.json `strata`), and each
 * instance's value of them. A stratum's value is always one of the labels the binding declares, or
 * "(other)": a value outside the declared map, a missing demographic (no year of birth, no visit), an
 * age that the birth date known cannot place in one band. Values are computed when the instances are
 * read and kept in the instance's `extra` (the run store), where the export's subgroup machinery reads
 * them like a benchmark's own subgroup fields. No function here puts a value of the data in a message.
 */
import { canonicalHash } from '../canonical';

/** The label of every value the binding does not declare, as the export's subgroups name it. */
export const OTHER_STRATUM = '(other)';

/** OMOP CDM fields a stratum can read: the person's, and the note's visit's. */
export const OMOP_STRATA = ['age', 'sex', 'race', 'ethnicity', 'care_site_type', 'visit_type', 'payer'] as const;
export type OmopStratum = (typeof OMOP_STRATA)[number];

/** A stratum as the site data file declares it (schemas/site-data.schema.json, $defs/stratum). */
export interface StratumSpec {
  /** The field name in the instance's extra and in an export's subgroups. */
  name: string;
  /** A column of the site's file (or, for an OMOP source, of its labels file or note fields). */
  column?: string;
  /** An OMOP CDM demographic of the note's person or visit. */
  omop?: OmopStratum;
  /** Value (or concept id) -> declared label. */
  map?: Record<string, string>;
  /** Age bands by their lower edges in years: [18, 45, 65] -> 0-17, 18-44, 45-64, 65+. */
  edges?: number[];
}

/**
 * The standard OMOP concepts, labelled, for the strata that have defaults. Payer has none: payer
 * concepts vary by site, so a payer stratum declares its map.
 */
export const OMOP_DEFAULT_MAPS: Partial<Record<OmopStratum, Record<string, string>>> = {
  sex: { '8507': 'male', '8532': 'female' },
  race: {
    '8527': 'White',
    '8516': 'Black or African American',
    '8515': 'Asian',
    '8657': 'American Indian or Alaska Native',
    '8557': 'Native Hawaiian or Other Pacific Islander',
  },
  ethnicity: { '38003563': 'Hispanic or Latino', '38003564': 'Not Hispanic or Latino' },
  visit_type: { '9201': 'inpatient', '9202': 'outpatient', '9203': 'emergency', '262': 'emergency and inpatient', '581476': 'home' },
  care_site_type: { '8717': 'inpatient hospital', '8756': 'outpatient hospital', '8870': 'emergency room', '8716': 'clinic', '8940': 'office' },
};

/** A stratum with its defaults filled in: what a run records the hash of. */
export interface ResolvedStratum {
  name: string;
  column?: string;
  omop?: OmopStratum;
  map?: Record<string, string>;
  edges?: number[];
}

export function resolveStrata(strata: readonly StratumSpec[]): ResolvedStratum[] {
  return strata.map((s) => {
    const defaults = s.omop ? OMOP_DEFAULT_MAPS[s.omop] : undefined;
    const map = s.map ?? (s.edges ? undefined : defaults);
    return { name: s.name, ...(s.column ? { column: s.column } : {}), ...(s.omop ? { omop: s.omop } : {}), ...(map ? { map } : {}), ...(s.edges ? { edges: [...s.edges] } : {}) };
  });
}

/**
 * What a run records of the strata it read: their names and the sha256 of their resolved declaration,
 * so that an export uses a binding's strata only for runs that computed them under the same one.
 */
export interface StrataRecord {
  names: string[];
  sha256: string;
}

export function strataRecord(strata: readonly StratumSpec[] | undefined): StrataRecord | undefined {
  if (!strata || strata.length === 0) return undefined;
  const resolved = resolveStrata(strata);
  return { names: resolved.map((s) => s.name), sha256: canonicalHash({ format: 'ehrbench.strata.v1', strata: resolved }) };
}

/** The band labels of age edges: under the first edge its own band, then one per edge, the last open. */
export function bandLabels(edges: readonly number[]): string[] {
  const labels: string[] = [];
  if ((edges[0] ?? 0) > 0) labels.push(`0-${(edges[0] as number) - 1}`);
  edges.forEach((e, i) => {
    const next = edges[i + 1];
    labels.push(next === undefined ? `${e}+` : `${e}-${next - 1}`);
  });
  return labels;
}

/** The band of an age in whole years; "(other)" for no age or one below 0. */
export function bandOf(age: number | undefined, edges: readonly number[]): string {
  if (age === undefined || !Number.isInteger(age) || age < 0) return OTHER_STRATUM;
  const labels = bandLabels(edges);
  const offset = (edges[0] ?? 0) > 0 ? 1 : 0;
  let band = -1;
  edges.forEach((e, i) => {
    if (age >= e) band = i;
  });
  if (band === -1) return offset ? (labels[0] as string) : OTHER_STRATUM;
  return labels[band + offset] as string;
}

/** The declared labels of a stratum, each once, in declaration order: an export's cells. */
export function stratumLabels(s: ResolvedStratum): string[] {
  if (s.edges) return bandLabels(s.edges);
  return [...new Set(Object.values(s.map ?? {}))];
}

/** A calendar day: year, month 1-12, day 1-31. */
export interface Day {
  year: number;
  month: number;
  day: number;
}

/** Whole years from birth to `on`: the birthday counts from its day (29 February: from 1 March in other years). */
function yearsBetween(birth: Day, on: Day): number {
  const before = on.month < birth.month || (on.month === birth.month && on.day < birth.day);
  return on.year - birth.year - (before ? 1 : 0);
}

const validInt = (v: number | null | undefined, lo: number, hi: number): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v : undefined);

/** Days in a month of a year (proleptic Gregorian). */
function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * The age band at a note's date from what the person row holds: year of birth, and month and day
 * where known. A month or day missing (or out of range) leaves the birth anywhere in the year or
 * month; the band is given when every birth date still possible falls in it, else "(other)" (so a
 * person is never put in a band the data does not show). No year of birth or no note date: "(other)".
 */
export function ageBandAt(birth: { year?: number | null; month?: number | null; day?: number | null }, on: Day | undefined, edges: readonly number[]): string {
  const year = validInt(birth.year, 1, 9999);
  if (year === undefined || !on) return OTHER_STRATUM;
  const month = validInt(birth.month, 1, 12);
  const day = month === undefined ? undefined : validInt(birth.day, 1, daysIn(year, month));
  // The earliest and the latest birth date the row allows: the oldest and the youngest the person can be.
  const earliest: Day = { year, month: month ?? 1, day: day ?? 1 };
  const latest: Day = { year, month: month ?? 12, day: day ?? daysIn(year, month ?? 12) };
  const oldest = bandOf(yearsBetween(earliest, on), edges);
  const youngest = bandOf(yearsBetween(latest, on), edges);
  return oldest === youngest ? oldest : OTHER_STRATUM;
}

/** "YYYY-MM-DD..." (a date or timestamp as text) as a day; undefined when it is not one. */
export function dayOf(text: unknown): Day | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  return { year, month, day };
}

/** A value through a declared map: its label, or "(other)" for a value the map does not hold (or none). */
export function mappedLabel(value: unknown, map: Readonly<Record<string, string>> | undefined): string {
  if (value === null || value === undefined || !map) return OTHER_STRATUM;
  const key = typeof value === 'string' ? value.trim() : typeof value === 'number' || typeof value === 'bigint' ? String(value) : undefined;
  if (key === undefined || key === '' || !Object.hasOwn(map, key)) return OTHER_STRATUM;
  return map[key] as string;
}

/** A whole number of years from a file's age column: digits only (a number, or text of one). */
function ageOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? Math.floor(value) : undefined;
  if (typeof value !== 'string' || !/^\s*\d{1,3}(\.\d+)?\s*$/.test(value)) return undefined;
  return Math.floor(Number(value));
}

/**
 * What an OMOP source reads for strata, per note: the person's birth and concepts, the note's day,
 * the visit's concept, its care site's place of service, and the payer of the person's plan on the
 * note's day. Null where the CDM has none.
 */
export interface OmopDemographics {
  year_of_birth: number | null;
  month_of_birth: number | null;
  day_of_birth: number | null;
  note_date: string | null;
  /** Concept ids as text (a CDM may type them integer or bigint). */
  gender_concept_id: string | null;
  race_concept_id: string | null;
  ethnicity_concept_id: string | null;
  visit_concept_id: string | null;
  place_of_service_concept_id: string | null;
  payer_concept_id: string | null;
}

const OMOP_FIELD: Record<Exclude<OmopStratum, 'age'>, keyof OmopDemographics> = {
  sex: 'gender_concept_id',
  race: 'race_concept_id',
  ethnicity: 'ethnicity_concept_id',
  visit_type: 'visit_concept_id',
  care_site_type: 'place_of_service_concept_id',
  payer: 'payer_concept_id',
};

/** Whether a declaration needs the payer_plan_period join (a CDM may not have the table). */
export function needsPayer(strata: readonly StratumSpec[] | undefined): boolean {
  return (strata ?? []).some((s) => s.omop === 'payer');
}

/** Thrown (by the caller, with its own wording) when a stratum's column is not in a record at all. */
export class MissingStratumColumn {
  constructor(
    readonly stratum: string,
    readonly column: string,
  ) {}
}

/**
 * One record's value of each stratum: a declared label or "(other)". A column absent from the record
 * (a misspelt name would otherwise put every record in "(other)") is reported, by name only.
 */
export function stratumValues(strata: readonly ResolvedStratum[], fields: Readonly<Record<string, unknown>>, demographics: OmopDemographics | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of strata) {
    if (s.column !== undefined) {
      if (!Object.hasOwn(fields, s.column)) throw new MissingStratumColumn(s.name, s.column);
      const value = fields[s.column];
      out[s.name] = s.edges ? bandOf(ageOf(value), s.edges) : mappedLabel(value, s.map);
    } else if (s.omop === 'age') {
      const d = demographics;
      out[s.name] = d ? ageBandAt({ year: d.year_of_birth, month: d.month_of_birth, day: d.day_of_birth }, dayOf(d.note_date), s.edges ?? []) : OTHER_STRATUM;
    } else if (s.omop) {
      out[s.name] = mappedLabel(demographics?.[OMOP_FIELD[s.omop]], s.map);
    }
  }
  return out;
}
