/** The span types of de-identification: the 18 HIPAA Safe Harbor identifier kinds, as ehrbench names them. */
export const SPAN_TYPES = [
  'NAME',
  'LOCATION',
  'ZIP',
  'DATE',
  'AGE',
  'PHONE',
  'FAX',
  'EMAIL',
  'SSN',
  'MRN',
  'HEALTH_PLAN',
  'ACCOUNT',
  'LICENSE',
  'VEHICLE',
  'DEVICE',
  'URL',
  'IP',
  'BIOMETRIC',
  'ID',
] as const;

export type SpanType = (typeof SPAN_TYPES)[number];

/** An identifier found in a text: end-exclusive JavaScript string offsets. */
export interface Span {
  start: number;
  end: number;
  type: SpanType;
}

/** Year, month (1-12) and day as read from a date mention; what is absent was not written. */
export interface DateParts {
  year?: number;
  month?: number;
  day?: number;
}

/** A detected span with what replacement needs to know about it. Never leaves src/deid. */
export interface Detection extends Span {
  /** Higher wins the type when spans overlap (their extents are united). */
  priority: number;
  /** Where it came from: a known identifier from structured data, or a detector. */
  source: 'known' | 'detector';
  /** The date read from the text, and how to write a shifted one in the same form. */
  date?: { parts: DateParts; render: (p: Required<DateParts>) => string };
  /** For known names: the canonical (lowercase) name part a variant stands for, so misspellings get the same surrogate. */
  canonical?: string[];
  /** The rule that found it (name.title, place.cue, pattern.phone...), for reports; never the text. */
  rule?: string;
  /** The identifier as the detectors read it (Unicode variants folded), when the original differs: surrogates derive from it. */
  value?: string;
}

export const PRIORITY: Record<SpanType, number> = {
  SSN: 90,
  EMAIL: 88,
  URL: 87,
  IP: 86,
  FAX: 85,
  PHONE: 84,
  MRN: 80,
  HEALTH_PLAN: 79,
  ACCOUNT: 78,
  LICENSE: 77,
  VEHICLE: 76,
  DEVICE: 75,
  BIOMETRIC: 74,
  DATE: 60,
  AGE: 58,
  ZIP: 56,
  LOCATION: 50,
  NAME: 45,
  ID: 40,
};

/**
 * What a dataset taught about words: those that strong rules took as names or places elsewhere in it,
 * more often than they stood as ordinary words. Asked for lowercase words only; never enumerated (a
 * run keeps it as keyed hashes).
 */
export interface DatasetEvidence {
  /** Whether a word is a name elsewhere; `acronym` when written in capitals in a mixed-case text. */
  name(lower: string): boolean;
  /** Whether a word is a place elsewhere; an acronym ("SBH") is asked for with `acronym`. */
  place(lower: string, acronym: boolean): boolean;
}

/** Words of the site's lists that are also ordinary words: names or places only after a cue (site-lexicons.ts). */
export interface SiteCueWords {
  name(lower: string): boolean;
  place(lower: string): boolean;
}

/** Evidence from outside the text being read. */
export interface Evidence {
  /** The site's ordinary-word lexicon entries, taken after a cue. */
  site?: SiteCueWords;
  /** Name words found in the subject's other records (any name rule). */
  subject?: ReadonlySet<string>;
  /** What the whole dataset taught (see DatasetEvidence). */
  dataset?: DatasetEvidence;
}
