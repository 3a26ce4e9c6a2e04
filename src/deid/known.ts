/**
 * Known identifiers: the PHI a data source passes from structured EHR data with each record (patient,
 * relative and care-team names, MRN, birth date, address, facility, phone, e-mail). These are always
 * found, including the variants notes use: any case, last or first name alone, initials ("M.H.",
 * "M. Hollis"), "Hollis, Marguerite", and misspellings within one edit ("Hollsi", "Marguerit").
 */
import type { KnownIdentifiers } from '../catalog';
import { monthNumber } from './detect/dates';
import { lexicons } from './lexicons';
import { foldValue } from './normalize';
import { consonantKey, foreignRuns, latinOf } from './scripts';
import { tokenize, type Token } from './text';
import { type DateParts, type Detection, PRIORITY, type SpanType } from './types';

export type { KnownIdentifiers };

/** Generic words of facility and address names that do not identify on their own. */
const PLACE_GENERIC = new Set(
  'the of and at for hospital medical center centre clinic health healthcare care system rehab rehabilitation nursing home facility practice family group associates memorial general regional community university street st avenue ave road rd lane ln drive dr boulevard blvd court ct place pl way apt unit suite ste north south east west saint mount mt new'.split(
    ' ',
  ),
);

interface Literal {
  type: SpanType;
  re: RegExp;
  date?: DateParts;
}

/** Damerau-Levenshtein distance, stopping once it exceeds 1. */
export function withinOneEdit(a: string, b: string): boolean {
  if (a === b) return true;
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > 1) return false;
  let i = 0;
  while (i < la && i < lb && a[i] === b[i]) i++;
  if (la === lb) {
    // one substitution, or one transposition of neighbours
    if (a.slice(i + 1) === b.slice(i + 1)) return true;
    return a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
  }
  return la > lb ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A phrase matched with any case, spacing and punctuation between its words. */
function phrase(words: string[]): RegExp {
  return new RegExp(`(?<![A-Za-z0-9])${words.map(escape).join(`[\\s,.'’-]{0,3}`)}(?![A-Za-z0-9])`, 'gi');
}

/** An identifier matched whatever separators a writer put between its characters (and without leading zeros). */
function code(value: string): RegExp | undefined {
  const chars = value.replace(/[^A-Za-z0-9]/g, '');
  if (chars.length < 3) return undefined;
  const body = chars.replace(/^0+(?=.)/, '');
  const zeros = chars.length - body.length;
  return new RegExp(`(?<![A-Za-z0-9])${zeros ? '0*' : ''}${body.split('').map(escape).join('[\\s.()/-]?')}(?![A-Za-z0-9])`, 'gi');
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** Reads a known date: 2087-03-11, 3/11/2087, March 11, 2087, 11 Mar 2087. */
export function parseKnownDate(value: string): Required<DateParts> | undefined {
  const v = value.trim();
  let m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ].*)?$/.exec(v);
  if (m) return { year: +(m[1] as string), month: +(m[2] as string), day: +(m[3] as string) };
  m = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$/.exec(v);
  // month first unless the first number cannot be a month (14/03/1946)
  if (m) return +(m[1] as string) > 12 ? { year: +(m[3] as string), month: +(m[2] as string), day: +(m[1] as string) } : { year: +(m[3] as string), month: +(m[1] as string), day: +(m[2] as string) };
  m = /^([A-Za-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})$/.exec(v);
  if (m && monthNumber(m[1] as string)) return { year: +(m[3] as string), month: monthNumber(m[1] as string) as number, day: +(m[2] as string) };
  m = /^(\d{1,2})\s+([A-Za-z]+)\.?\s+(\d{4})$/.exec(v);
  if (m && monthNumber(m[2] as string)) return { year: +(m[3] as string), month: monthNumber(m[2] as string) as number, day: +(m[1] as string) };
  return undefined;
}

function dateLiterals(p: Required<DateParts>): RegExp[] {
  const { year, month, day } = p;
  const mm = String(month).padStart(2, '0');
  const dd = String(day).padStart(2, '0');
  const yy = String(year % 100).padStart(2, '0');
  const mon = MONTHS[month - 1] as string;
  const ab = mon.slice(0, 3);
  const sep = '[/.-]';
  const monthWord = `(?:${mon}|${ab}\\.?${month === 9 ? '|Sept\\.?' : ''})`;
  return [
    new RegExp(`(?<![\\d/.-])0?${month}${sep}0?${day}${sep}(?:${year}|${yy})(?![\\d/])`, 'g'),
    // day first, as Europe writes a birth date: 11/03/2087, 11.03.87
    new RegExp(`(?<![\\d/.-])0?${day}${sep}0?${month}${sep}(?:${year}|${yy})(?![\\d/])`, 'g'),
    new RegExp(`(?<![\\d/.-])${year}${sep}${mm}${sep}${dd}(?![\\d/])`, 'g'),
    new RegExp(`(?<![\\d/.-])${year}${sep}${month}${sep}${day}(?![\\d/])`, 'g'),
    new RegExp(`\\b${monthWord}\\s+0?${day}(?:st|nd|rd|th)?,?\\s+(?:${year}|'${yy})\\b`, 'gi'),
    new RegExp(`\\b0?${day}(?:st|nd|rd|th)?(?:\\s+of)?[\\s-]+${monthWord}[\\s,-]+(?:${year}|${yy})\\b`, 'gi'),
    // the birthday without its year, in the forms that carry a month word or a slash
    new RegExp(`(?<![\\d/.-])0?${month}/0?${day}(?![\\d/]|\\.\\d)`, 'g'),
    new RegExp(`\\b${monthWord}\\s+0?${day}(?:st|nd|rd|th)?\\b`, 'gi'),
    new RegExp(`\\b${mm}${dd}${year}\\b|\\b${year}${mm}${dd}\\b`, 'g'),
  ];
}

/** The parts of one person's name, lowercase, without dots. */
function nameParts(name: string): string[] {
  return name
    .split(/[\s,]+/)
    .map((p) => p.replace(/\./g, '').toLowerCase())
    .filter((p) => /[a-z]/.test(p));
}

/** A known name and, when it is written in another script, its Latin reading too ("Иван Петров" -> "ivan petrov"). */
function withLatinReading(name: string): string[] {
  return foreignRuns(name).length > 0 ? [name, latinOf(name)] : [name];
}

function foldKnown(k: KnownIdentifiers): KnownIdentifiers {
  const out: KnownIdentifiers = {};
  for (const [kind, values] of Object.entries(k) as [keyof KnownIdentifiers, string[] | undefined][]) if (values) out[kind] = values.map(foldValue);
  return out;
}

export class KnownMatcher {
  private readonly literals: Literal[] = [];
  /** Name part (lowercase, >= 2 letters) -> the full parts of the names it belongs to. */
  private readonly parts = new Map<string, string[][]>();
  /** Name parts of four letters or more by length, for the one-edit search. */
  private readonly partsByLength = new Map<number, string[]>();
  /** Consonant keys of name parts and of a given name joined to a surname, for words in other scripts. */
  private readonly keys = new Map<string, string>();
  /** Distinctive words of facilities and addresses, matched as whole words. */
  private readonly placeWords = new Set<string>();
  private readonly lex = lexicons();
  readonly empty: boolean;

  constructor(known: KnownIdentifiers | undefined) {
    // Values from structured data are matched in the detection view: folded like the text (NFKC, no accents).
    const k = foldKnown(known ?? {});
    for (const name of (k.names ?? []).flatMap(withLatinReading)) {
      const parts = nameParts(name);
      for (const p of parts) if (p.length >= 3) this.keys.set(consonantKey(p), p);
      for (let a = 0; a < parts.length; a++) for (let b = 0; b < parts.length; b++) if (a !== b) this.keys.set(consonantKey((parts[a] as string) + (parts[b] as string)), parts[a] as string);
      for (const part of parts) {
        if (part.length < 2) continue;
        const list = this.parts.get(part) ?? [];
        list.push(parts);
        this.parts.set(part, list);
      }
      const initials = parts.map((p) => p.charAt(0).toUpperCase());
      if (initials.length >= 2) {
        // M.H. / M. E. H. always; MH / MEH only where it is not a clinical abbreviation
        this.literals.push({ type: 'NAME', re: new RegExp(`(?<![A-Za-z])${initials.join('\\.\\s?')}\\.(?![A-Za-z])`, 'g') });
        const bare = initials.join('');
        if (!this.lex.clinical.has(bare.toLowerCase()) && !this.lex.english.has(bare.toLowerCase())) this.literals.push({ type: 'NAME', re: new RegExp(`(?<![A-Za-z])${bare}(?![A-Za-z])`, 'g') });
      }
    }
    for (const mrn of k.mrns ?? []) this.addCode('MRN', mrn);
    for (const other of k.other ?? []) this.addCode('ID', other);
    for (const phone of k.phones ?? []) {
      const digits = phone.replace(/\D/g, '').replace(/^1(?=\d{10}$)/, '');
      if (digits.length >= 7) this.literals.push({ type: 'PHONE', re: new RegExp(`(?<!\\d)(?:\\+?1[\\s.-]?)?${digits.split('').join('[\\s().-]{0,2}')}(?!\\d)`, 'g') });
    }
    for (const email of k.emails ?? []) if (email.trim()) this.literals.push({ type: 'EMAIL', re: new RegExp(escape(email.trim()), 'gi') });
    for (const d of k.dates ?? []) {
      const parts = parseKnownDate(d);
      if (parts) for (const re of dateLiterals(parts)) this.literals.push({ type: 'DATE', re, date: parts });
      else this.addPhrase('DATE', d);
    }
    for (const a of [...(k.addresses ?? []), ...(k.facilities ?? [])]) {
      this.addPhrase('LOCATION', a);
      for (const component of a.split(',')) {
        const c = component.trim();
        if (/^\d{5}(?:-\d{4})?$/.test(c) || /^[A-Z]{2}\s+\d{5}/.test(c)) {
          const zip = /\d{5}(?:-\d{4})?/.exec(c)?.[0];
          if (zip) this.literals.push({ type: 'ZIP', re: new RegExp(`(?<!\\d)${zip}(?!\\d)`, 'g') });
          continue;
        }
        if (c.length >= 4) this.addPhrase('LOCATION', c);
        // the street without its number: "Pellham Road"
        const street = /^\d+[A-Za-z]?\s+(.{4,})$/.exec(c)?.[1];
        if (street) this.addPhrase('LOCATION', street);
      }
      for (const w of a.split(/[\s,]+/)) {
        const lw = w
          .toLowerCase()
          .replace(/['’]s$/, '')
          .replace(/[^a-z'’-]/g, '');
        if (lw.length >= 4 && !PLACE_GENERIC.has(lw) && !this.lex.english.has(lw) && !this.lex.clinical.has(lw)) this.placeWords.add(lw);
      }
    }
    for (const part of this.parts.keys()) {
      if (part.length < 4) continue;
      const list = this.partsByLength.get(part.length) ?? [];
      list.push(part);
      this.partsByLength.set(part.length, list);
    }
    this.empty = this.literals.length === 0 && this.parts.size === 0 && this.placeWords.size === 0;
  }

  /**
   * Known names written in another script ("Петров" for PETROV, "王伟" for WANG WEI): each other-script
   * word read in Latin and compared with the name parts exactly, within one edit, or by consonant key.
   */
  private otherScripts(text: string, out: Detection[]): void {
    for (const [start, end] of foreignRuns(text)) {
      for (const m of text.slice(start, end).matchAll(/[^\s'’\-·・‧]+/g)) {
        const latin = latinOf(m[0]);
        const joined = latin.replace(/\s+/g, '');
        if (joined.length < 2) continue;
        const words = latin.split(/\s+/);
        const part =
          words.find((w) => this.parts.has(w)) ??
          words.map((w) => (w.length >= 4 ? [...this.parts.keys()].find((p) => p.length >= 4 && withinOneEdit(w, p)) : undefined)).find((p) => p !== undefined) ??
          this.keys.get(consonantKey(joined)) ??
          words.map((w) => (w.length >= 3 ? this.keys.get(consonantKey(w)) : undefined)).find((p) => p !== undefined);
        if (!part) continue;
        const s = start + m.index;
        out.push({ start: s, end: s + m[0].length, type: 'NAME', priority: PRIORITY.NAME + 100, source: 'known', canonical: [part] });
      }
    }
  }

  private addCode(type: SpanType, value: string): void {
    const re = code(value);
    if (re) this.literals.push({ type, re });
  }

  private addPhrase(type: SpanType, value: string): void {
    const words = value.split(/[\s,]+/).filter((w) => /[A-Za-z0-9]/.test(w));
    if (words.length === 0) return;
    this.literals.push({ type, re: phrase(words) });
  }

  /** Every occurrence of a known identifier or one of its variants in the text. */
  find(text: string, tokens?: Token[]): Detection[] {
    if (this.empty) return [];
    const out: Detection[] = [];
    for (const lit of this.literals) {
      // exec in a loop: matchAll would clone (and recompile) each per-record regex on every call
      lit.re.lastIndex = 0;
      for (let m = lit.re.exec(text); m; m = lit.re.exec(text)) {
        if (m[0].length === 0) {
          lit.re.lastIndex++;
          continue;
        }
        out.push({ start: m.index, end: m.index + m[0].length, type: lit.type, priority: PRIORITY[lit.type] + 100, source: 'known' });
      }
    }
    if (this.parts.size > 0 || this.placeWords.size > 0) this.words(text, tokens ?? tokenize(text), out);
    if (this.parts.size > 0) this.otherScripts(text, out);
    return out;
  }

  private words(text: string, tokens: Token[], out: Detection[]): void {
    const { english, clinical } = this.lex;
    const hits: { token: Token; canonical: string; type: SpanType }[] = [];
    for (const t of tokens) {
      const lower = t.lower;
      if (this.placeWords.has(lower)) {
        hits.push({ token: t, canonical: lower, type: 'LOCATION' });
        continue;
      }
      if (lower.length < 2) continue;
      const exact = this.parts.has(lower);
      if (exact) {
        // A name part that is also a word ("Rose", "Will", "Brown") is the name only when capitalised.
        if (t.shape === 'lower' && (english.has(lower) || clinical.has(lower))) continue;
        if (lower.length === 2 && t.shape !== 'upper' && t.shape !== 'title') continue;
        hits.push({ token: t, canonical: lower, type: 'NAME' });
        continue;
      }
      if (lower.length < 4) continue;
      const hyphenParts = lower.includes('-') ? lower.split('-') : undefined;
      if (hyphenParts?.some((p) => this.parts.has(p))) {
        hits.push({ token: t, canonical: lower, type: 'NAME' });
        continue;
      }
      // Misspellings within one edit: not for plain English words written in lowercase ("many" is not "Mary").
      if ((english.has(lower) || clinical.has(lower)) && (t.shape === 'lower' || english.has(lower))) continue;
      const near = [...(this.partsByLength.get(lower.length - 1) ?? []), ...(this.partsByLength.get(lower.length) ?? []), ...(this.partsByLength.get(lower.length + 1) ?? [])];
      const part = near.find((p) => withinOneEdit(lower, p));
      if (part) hits.push({ token: t, canonical: part, type: 'NAME' });
    }
    // Particles of a known name ("van de Berg", "de Groot") belong to the match next to them.
    const hitAt = new Set(hits.map((h) => h.token.index));
    for (const h of [...hits]) {
      if (h.type !== 'NAME') continue;
      const names = this.parts.get(h.canonical) ?? [];
      for (let k = h.token.index - 1; k >= 0 && k >= h.token.index - 3; k--) {
        const p = tokens[k] as Token;
        if (hitAt.has(k) || !names.some((parts) => parts.includes(p.lower)) || !/^\s+$/.test(text.slice(p.end, (tokens[k + 1] as Token).start))) break;
        hits.push({ token: p, canonical: p.lower, type: 'NAME' });
        hitAt.add(k);
      }
    }
    for (const h of hits) {
      let start = h.token.start;
      // "M. Hollis": an initial of the same person's name just before the match
      if (h.type === 'NAME') {
        const m = /([A-Z])\.?\s$/.exec(text.slice(Math.max(0, start - 3), start));
        if (m && !/[A-Za-z]/.test(text.charAt(start - m[0].length - 1))) {
          const letter = (m[1] as string).toLowerCase();
          const names = this.parts.get(h.canonical) ?? [];
          if (names.some((parts) => parts.some((p) => p.charAt(0) === letter && p !== h.canonical))) start -= m[0].length;
        }
      }
      out.push({ start: Math.min(start, h.token.start), end: h.token.end, type: h.type, priority: PRIORITY[h.type] + 100, source: 'known', canonical: [h.canonical] });
    }
  }
}
