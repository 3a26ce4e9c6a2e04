/**
 * Replacement. In `surrogate` mode every identifier becomes a realistic fake chosen by an HMAC of the
 * subject's key and the real value, so the same real name becomes the same fake name in every prompt of
 * that subject ("hiding in plain sight": a missed identifier is hard to tell from the fakes around it).
 * Dates of a subject all move by one secret number of days, so intervals and order survive; ages over
 * 89 become 90+; ZIP codes keep their first three digits (000 where Safe Harbor restricts them).
 * In `tag` mode identifiers become typed tags ([NAME], [DATE]...).
 */
import { createHmac } from 'node:crypto';
import { caseLike } from './detect/dates';
import { lexicons } from './lexicons';
import type { DeidSettings } from './settings';
import { tokenize } from './text';
import type { DateParts, Detection } from './types';

const DAY_MS = 86_400_000;
const MAX_SHIFT_DRAWS = 1000;

/**
 * Whether moving some date by this many days (either way) lands on the same month and day: k years of
 * 365 days plus the 29 Februaries the span holds, which is k/4 rounded either way, or one fewer where
 * it crosses 1900 or 2100 (not leap years).
 */
export function keepsCalendarDay(magnitude: number): boolean {
  for (let years = 1; 365 * years <= magnitude; years++) {
    const leapDays = magnitude - 365 * years;
    if (leapDays >= Math.max(0, Math.floor(years / 4) - 1) && leapDays <= Math.ceil(years / 4)) return true;
  }
  return false;
}

/** Words of places and facilities that stay as they are: they say what kind of place, not which. */
const KEEP_PLACE_WORDS = new Set(
  `street st avenue ave av road rd lane ln drive dr boulevard blvd court ct place pl way terrace ter circle cir parkway pkwy highway hwy route rte
  square sq trail trl pike turnpike alley row path loop plaza apt apartment unit suite ste floor fl room rm box po p o hospital hosp medical
  center centre med ctr health healthcare care system clinic clinics rehab rehabilitation nursing home facility infirmary hospice imaging
  radiology family practice medicine group associates urgent pharmacy manor institute university college school church memorial lodge
  residence assisted senior living laboratories laboratory labs surgery surgical dialysis physicians partners cancer heart va vamc of the and
  north south east west n s e w saint st mount mt general community regional county`.split(/\s+/),
);

const NAME_PARTICLES = new Set(['van', 'von', 'de', 'der', 'den', 'la', 'le', 'da', 'di', 'du', 'del', 'della', 'dos', 'das', 'ter', 'ten', 'bin', 'ibn', 'al', 'el', 'y', 'zu']);

export interface Replacement {
  /** Output offsets of each replacement in the de-identified text. */
  regions: { start: number; end: number }[];
  text: string;
}

/** One subject's surrogate key, date shift and memory of what it has replaced. */
export class SubjectSurrogates {
  private readonly key: Buffer;
  readonly shiftDays: number;
  private readonly lex = lexicons();
  private readonly avoid: Set<string>;
  /** The fakes already drawn for this subject: a value recurs, its draw need not. */
  private readonly picked = new Map<string, string>();

  constructor(secret: Buffer, subject: string, settings: DeidSettings, avoid: Iterable<string>) {
    this.key = createHmac('sha256', secret).update(`subject\u0000${subject}`).digest();
    this.shiftDays = this.drawShift(settings.maxShiftDays);
    this.avoid = new Set([...avoid].map((a) => a.toLowerCase()));
  }

  /**
   * The subject's shift: 1..maxShiftDays days, back or forward, never a whole number of years (a shift
   * of 365 days would leave "12/2" as "12/2" and a birthday on its day). A draw that would is drawn
   * again under the next label; the first label is the one earlier versions used, so other subjects
   * keep their shift.
   */
  private drawShift(maxShiftDays: number): number {
    for (let attempt = 0; attempt < MAX_SHIFT_DRAWS; attempt++) {
      const h = this.hmac(attempt === 0 ? 'date-shift' : `date-shift\u0000${attempt}`);
      const magnitude = 1 + (h.readUInt32BE(0) % Math.max(1, maxShiftDays));
      if (!keepsCalendarDay(magnitude)) return h[4]! & 1 ? magnitude : -magnitude;
    }
    // Unreachable: at most 1 magnitude in 100 is refused, and 1 never is.
    throw new Error(`no date shift found in ${MAX_SHIFT_DRAWS} draws`);
  }

  private hmac(label: string): Buffer {
    return createHmac('sha256', this.key).update(label).digest();
  }

  private index(label: string, n: number): number {
    return this.hmac(`${label}\u00000`).readUInt32BE(0) % n;
  }

  /**
   * A fake from a pool, chosen by the HMAC of the value: the same value gets the same fake. The pool is
   * a lexicon read in place, with the entries a fake may not be (too short or long, a common word, a
   * known identifier) skipped by trying the next choice.
   */
  private pick(kind: string, value: string, pool: SurrogatePool): string {
    const label = `${kind}\u0000${value}`;
    const memo = this.picked.get(label);
    if (memo !== undefined) return memo;
    const fake = this.draw(label, value, pool);
    this.picked.set(label, fake);
    return fake;
  }

  /** Up to 64 choices, eight from each HMAC (a 32-byte digest is eight 32-bit draws). */
  private draw(label: string, value: string, pool: SurrogatePool): string {
    for (let round = 0; round < 8; round++) {
      const h = this.hmac(`${label}\u0000${round}`);
      for (let k = 0; k < 8; k++) {
        const candidate = pool.set.at(h.readUInt32BE(4 * k) % pool.set.size);
        if (candidate !== value && pool.fits(candidate) && !this.avoid.has(candidate)) return candidate;
      }
    }
    return pool.fallback;
  }

  /** A name word: first names from first names, other words from surnames, case and hyphens kept. */
  nameWord(word: string, canonical?: string): string {
    return word
      .split('-')
      .map((part) => {
        const lower = (canonical && !word.includes('-') ? canonical : part).toLowerCase();
        if (part.length === 1) return caseLike(part, this.letter(`initial\u0000${lower}`));
        // The role depends on the word alone, so every mention of it gets the same fake.
        const isFirst = this.lex.commonFirstNames.has(lower) || (this.lex.firstNames.has(lower) && !this.lex.surnames.has(lower));
        const fake = this.pick(isFirst ? 'first' : 'last', lower, isFirst ? surrogateFirstNames() : surrogateSurnames());
        return caseLike(part, fake);
      })
      .join('-');
  }

  /** "first.last" for a fake e-mail address. */
  person(value: string): string {
    return `${this.pick('first', `email\u0000${value}`, surrogateFirstNames())}.${this.pick('last', `email\u0000${value}`, surrogateSurnames())}`;
  }

  letter(label: string): string {
    return String.fromCharCode(65 + this.index(label, 26));
  }

  /** Digits become other digits and letters other letters, separators stay: the shape survives. */
  shape(kind: string, value: string): string {
    const normal = value.replace(/[^A-Za-z0-9]/g, '').toUpperCase();
    const h = this.hmac(`shape\u0000${kind}\u0000${normal}`);
    let i = 0;
    const next = () => h[i++ % h.length] as number;
    return value.replace(/[A-Za-z0-9]/g, (c) => {
      if (/\d/.test(c)) return String(next() % 10);
      const l = String.fromCharCode(65 + (next() % 26));
      return c === c.toLowerCase() ? l.toLowerCase() : l;
    });
  }

  place(word: string): string {
    return caseLike(word, this.pick('place', word.toLowerCase(), surrogatePlaces()));
  }

  shiftDate(parts: DateParts, ref: { year: number; month: number }): Required<DateParts> {
    const year = parts.year ?? ref.year;
    const month = parts.month ?? (parts.day !== undefined ? ref.month : 7);
    const day = parts.day ?? (parts.month !== undefined ? 15 : 1);
    const shifted = new Date(Date.UTC(year, month - 1, day) + this.shiftDays * DAY_MS);
    return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth() + 1, day: shifted.getUTCDate() };
  }
}

/** A lexicon to draw fakes from, and what a drawn entry must be to serve as one. */
interface SurrogatePool {
  set: { at(i: number): string; readonly size: number };
  fits(word: string): boolean;
  /** Used in the (improbable) case that no choice fits. */
  fallback: string;
}

/** Fakes are ordinary-looking names that are not also English words or clinical terms. */
function plainName(w: string): boolean {
  const { english, clinical } = lexicons();
  return w.length >= 3 && w.length <= 10 && /^[a-z]+$/.test(w) && !english.has(w) && !clinical.has(w);
}

let firstPool: SurrogatePool | undefined;
let lastPool: SurrogatePool | undefined;
let placePool: SurrogatePool | undefined;

function surrogateFirstNames(): SurrogatePool {
  return (firstPool ??= { set: lexicons().firstNames, fits: plainName, fallback: 'alex' });
}
function surrogateSurnames(): SurrogatePool {
  return (lastPool ??= { set: lexicons().surnames, fits: (w) => plainName(w) && !lexicons().firstNames.has(w), fallback: 'morrow' });
}
function surrogatePlaces(): SurrogatePool {
  const { english, clinical, firstNames } = lexicons();
  return (placePool ??= { set: lexicons().cities, fits: (c) => /^[a-z]{5,12}$/.test(c) && !english.has(c) && !clinical.has(c) && !firstNames.has(c), fallback: 'eastford' });
}

const STATE_ABBREVIATIONS = new Set(
  'AL AK AZ AR CA CO CT DE DC FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY PR VI GU'.split(' '),
);

/** Safe Harbor's ZIP rule: the first three digits, or 000 where the three-digit area is small. */
function zip3(zip: string, settings: DeidSettings): string {
  const prefix = zip.slice(0, 3);
  return `${settings.restrictedZip3.includes(prefix) ? '000' : prefix}XX`;
}

function tag(d: Detection): string {
  return `[${d.type}]`;
}

/** The first full date in the text anchors dates written without a year or month. */
function reference(detections: Detection[]): { year: number; month: number } {
  for (const d of detections) {
    const p = d.date?.parts;
    if (p?.year !== undefined && p.month !== undefined) return { year: p.year, month: p.month };
  }
  return { year: 2000, month: 1 };
}

export function replaceAll(text: string, detections: Detection[], settings: DeidSettings, subject: () => SubjectSurrogates): Replacement {
  const regions: { start: number; end: number }[] = [];
  let out = '';
  let pos = 0;
  const ref = settings.mode === 'surrogate' ? reference(detections) : { year: 2000, month: 1 };
  for (const d of detections) {
    out += text.slice(pos, d.start);
    const original = d.value ?? text.slice(d.start, d.end);
    const fake = settings.mode === 'tag' ? tag(d) : surrogate(original, d, settings, subject(), ref);
    regions.push({ start: out.length, end: out.length + fake.length });
    out += fake;
    pos = d.end;
  }
  out += text.slice(pos);
  return { text: out, regions };
}

function surrogate(original: string, d: Detection, settings: DeidSettings, s: SubjectSurrogates, ref: { year: number; month: number }): string {
  switch (d.type) {
    case 'NAME': {
      let out = '';
      let pos = 0;
      const tokens = tokenize(original);
      const canonical = d.canonical?.length === 1 && tokens.length === 1 ? d.canonical[0] : undefined;
      for (const t of tokens) {
        // particles ("van", "de la") stay: they say nothing about who
        const keep = t.shape === 'lower' && NAME_PARTICLES.has(t.lower);
        out += original.slice(pos, t.start) + (keep ? t.text : s.nameWord(t.text, canonical));
        pos = t.end;
      }
      return out + original.slice(pos);
    }
    case 'DATE':
      if (d.date) return d.date.render(s.shiftDate(d.date.parts, ref));
      return '[DATE]';
    case 'AGE':
      return '90+';
    case 'ZIP':
      return zip3(original, settings);
    case 'LOCATION': {
      let out = '';
      let pos = 0;
      for (const m of original.matchAll(/[A-Za-z][A-Za-z'’]*|\d+/g)) {
        const word = m[0];
        out += original.slice(pos, m.index);
        if (/^\d{5}$/.test(word) && /[A-Z]{2}\s+$/.test(original.slice(0, m.index))) out += zip3(word, settings);
        else if (/^\d/.test(word)) out += s.shape('loc', word).replace(/^0/, '1');
        else if (/^[A-Z]{2}$/.test(word) && STATE_ABBREVIATIONS.has(word))
          out += word; // states are not identifiers
        else if (KEEP_PLACE_WORDS.has(word.toLowerCase().replace(/['’]s$/, ''))) out += word;
        else {
          const possessive = /['’]s$/.test(word);
          out += s.place(possessive ? word.slice(0, -2) : word) + (possessive ? word.slice(-2) : '');
        }
        pos = m.index + word.length;
      }
      return out + original.slice(pos);
    }
    case 'EMAIL':
      return `${s.person(original.toLowerCase())}@example.org`;
    case 'URL':
      return `https://www.example.org/${s
        .shape('url', original)
        .replace(/[^A-Za-z0-9]/g, '')
        .slice(0, 6)
        .toLowerCase()}`;
    case 'IP':
      return original.includes(':')
        ? `2001:db8::${s
            .shape('ip', original)
            .replace(/[^0-9]/g, '')
            .slice(0, 4)}`
        : `192.0.2.${1 + (Number(s.shape('ip', original).replace(/\D/g, '').slice(0, 3)) % 254)}`;
    case 'SSN':
      // 9xx is never issued as an SSN area number, so a fake can never be someone's
      return s.shape('ssn', original).replace(/\d/, '9');
    default:
      return s.shape(d.type, original);
  }
}
