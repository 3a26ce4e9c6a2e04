/**
 * Identifier shapes that both the detectors and the residual scan look for, so that the last look at a
 * prompt knows every shape the first one does:
 *   web hosts without a scheme or "www." ("portal.lakeside.ai/x", "pacs.trust.nhs.uk"), on any
 *   top-level domain IANA lists (the `tlds` package), not only the common ones;
 *   payment card numbers (13 to 19 digits in groups that pass the Luhn check, or any such run after a
 *   card word: "Visa 4111 1111 1111 1111");
 *   geographic coordinates ("42.3601 N, 71.0589 W", "42°21'36\"N", "lat 42.36 lon -71.05",
 *   "GPS 42.36014, -71.05891");
 *   ages over 89 written in words ("ninety-four-year-old", "aged one hundred and two").
 * Each returns [start, end] pairs; the caller types them.
 */
import tlds from 'tlds';

const TLDS = new Set<string>(tlds);
/** Top-level domains that are not also common words or country codes that typos make ("pt.is", "him.to"). */
const GENERIC_TLDS = new Set('com net org edu gov mil int info biz io ai app dev health care clinic hospital med doctor'.split(' '));
/** Words that show a missing space after a full stop rather than a host ("pt.is.in", "bed.at.home"). */
const PROSE_LABELS = new Set('a an the is in at to on of and or was be it he she we pt for by as no so if up my me us do go'.split(' '));

export type Range = [number, number];

const TLD_AFTER_DOT = /(?<=[a-z0-9])\.([a-z][a-z0-9-]{1,62})(?![a-z0-9-])/gi;
const HOST = /(?<![@\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.){1,8}[a-z][a-z0-9-]{0,62}(?![\w-]|\.[a-z0-9])(?:\/[^\s<>"'{}|\\^`)\]]*)?/gi;

/**
 * Web hosts without a scheme: the last label a top-level domain, and either a path after it, a generic
 * top-level domain, or three labels or more none of which is a word of prose (a missing space after a
 * full stop makes "pt.is.ok", not a host).
 */
export function hosts(text: string): Range[] {
  if (!text.includes('.')) return [];
  // a top-level domain after a dot somewhere, or no host (most texts: a full stop is followed by a space)
  let tld = false;
  for (const m of text.matchAll(TLD_AFTER_DOT)) {
    if (TLDS.has((m[1] as string).toLowerCase())) {
      tld = true;
      break;
    }
  }
  if (!tld) return [];
  const out: Range[] = [];
  for (const m of text.matchAll(HOST)) {
    let value = m[0];
    // a sentence's full stop or comma after a path is not part of it
    while (/[.,;:!?]$/.test(value)) value = value.slice(0, -1);
    const slash = value.indexOf('/');
    const host = (slash < 0 ? value : value.slice(0, slash)).toLowerCase();
    const labels = host.split('.');
    const tld = labels[labels.length - 1] as string;
    if (labels.length < 2 || !TLDS.has(tld) || labels.every((l) => /^\d+$/.test(l))) continue;
    // "e.g", "a.m", "b.i.d": one-letter labels are abbreviations
    if (labels.slice(0, -1).every((l) => l.length === 1)) continue;
    const path = slash >= 0 && value.length > slash + 1;
    const inner = labels.slice(0, -1);
    const prose = inner.some((l) => PROSE_LABELS.has(l));
    const ok = path ? !prose || labels.length > 2 : GENERIC_TLDS.has(tld) ? !prose : labels.length >= 3 && !prose;
    if (ok) out.push([m.index, m.index + value.length]);
  }
  return out;
}

/** The Luhn check digit test of a payment card number (ISO/IEC 7812). */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const CARD = /(?<![\w.-])\d{4}(?:[ -]?\d{2,7}){2,4}(?![\w-]|\.\d)/g;
const CARD_WORD = /\b(?:visa|master\s?card|mc|amex|american\s+express|discover|diners(?:\s+club)?|jcb|maestro|card|credit|debit|cc)\b[^\n\d]{0,20}$/i;

/** Card numbers: 13-19 digits in groups, passing Luhn, or any such run right after a card word. */
export function cards(text: string): Range[] {
  const out: Range[] = [];
  for (const m of text.matchAll(CARD)) {
    const digits = m[0].replace(/\D/g, '');
    if (digits.length < 13 || digits.length > 19) continue;
    const cued = CARD_WORD.test(text.slice(Math.max(0, m.index - 32), m.index));
    const grouped = /[ -]/.test(m[0]);
    if (cued || (grouped && luhn(digits) && !/^0+$/.test(digits))) out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

// Each form looks ahead at its digits before its look-behinds: most positions of a text fail at once.
const DEG = String.raw`\s?(?:°|º|deg\.?)?\s?`;
const COORDINATE_FORMS = [
  // 42.3601 N, 71.0589 W  /  42.3601°N 71.0589°W
  new RegExp(String.raw`(?=\d{1,2}\.\d{2})(?<![\w.])\d{1,2}\.\d{2,8}${DEG}[NS]\b[,;/\s]{1,3}\d{1,3}\.\d{2,8}${DEG}[EW]\b`, 'g'),
  // 42°21'36"N 71°3'32"W
  /(?=\d{1,3}\s?°)(?<![\w.])\d{1,3}\s?°\s?\d{1,2}\s?['′]\s?(?:\d{1,2}(?:\.\d+)?\s?["″]\s?)?[NSEW]\b(?:[,;/\s]{1,3}\d{1,3}\s?°\s?\d{1,2}\s?['′]\s?(?:\d{1,2}(?:\.\d+)?\s?["″]\s?)?[NSEW]\b)?/g,
  // lat 42.36 lon -71.05  /  latitude: 42.3601, longitude: -71.0589
  /\blat(?:itude)?\.?\s*[:=]?\s*[-+]?\d{1,2}\.\d+\s*[,;/]?\s*(?:lon|lng|long|longitude)\.?\s*[:=]?\s*[-+]?\d{1,3}\.\d+/gi,
];
const SIGNED_PAIR = /(?=[-+]?\d{1,2}\.\d{3})(?<![\w.])[-+]?\d{1,2}\.\d{3,8},\s?[-+]?\d{1,3}\.\d{3,8}(?![\w.])/g;
const GEO_CUE = /\b(?:gps|geo(?:location)?|coord(?:inate)?s?|lat(?:itude)?|lon(?:gitude)?|location|loc|position|pin|dropped\s+pin|found\s+at|scene)\b[^\n]{0,20}$/i;

/** Geographic coordinates in the forms EMS sheets and apps write them. */
export function coordinates(text: string): Range[] {
  if (!/\d\.\d|°/.test(text)) return [];
  const out: Range[] = [];
  for (const re of COORDINATE_FORMS) for (const m of text.matchAll(re)) out.push([m.index, m.index + m[0].length]);
  for (const m of text.matchAll(SIGNED_PAIR)) {
    const decimals = m[0].split(',').map((p) => (p.split('.')[1] ?? '').length);
    const precise = decimals.every((d) => d >= 4);
    if (precise || GEO_CUE.test(text.slice(Math.max(0, m.index - 30), m.index))) out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

const UNITS: Record<string, number> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7, eight: 8, nine: 9 };
const TEENS: Record<string, number> = { ten: 10, eleven: 11, twelve: 12, thirteen: 13, fourteen: 14, fifteen: 15, sixteen: 16, seventeen: 17, eighteen: 18, nineteen: 19 };
const UNIT_WORDS = Object.keys(UNITS).join('|');
const SMALL_WORDS = [...Object.keys(TEENS), 'twenty', ...Object.keys(UNITS)].join('|');
/** "ninety", "ninety-four", "one hundred", "a hundred and two", "hundred and ten". */
const AGE_WORDS = String.raw`(?:ninety(?:[\s-]+(?:${UNIT_WORDS}))?|(?:(?:one|a)[\s-]+)?hundred(?:[\s-]+(?:and[\s-]+)?(?:${SMALL_WORDS}))?)`;
const WORD_AGE = new RegExp(
  String.raw`\b(${AGE_WORDS})(?=[\s-]+(?:years?|yrs?)(?:[\s-]+old|[\s-]+of[\s-]+age)\b|[\s-]*y\/?o\b)|\b(?:age[sd]?|turn(?:ed|s|ing)?|is|was|now)[\s:]+(${AGE_WORDS})\b(?![\s-]+(?:percent|%|pounds|lbs|minutes|days|times))`,
  'gi',
);

function wordValue(words: string): number {
  const w = words.toLowerCase().split(/[\s-]+/);
  let n = 0;
  for (const part of w) {
    if (part === 'ninety') n += 90;
    else if (part === 'hundred') n += 100;
    else if (part === 'twenty') n += 20;
    else n += UNITS[part] ?? TEENS[part] ?? 0;
  }
  return n;
}

/** Ages over 89 written in words; a hundred or more is always old, ninety-something too. */
export function wordAges(text: string): Range[] {
  if (!/ninety|hundred/i.test(text)) return [];
  const out: Range[] = [];
  for (const m of text.matchAll(WORD_AGE)) {
    const words = (m[1] ?? m[2]) as string;
    const value = wordValue(words);
    if (value < 90 || value > 130) continue;
    const start = m.index + m[0].lastIndexOf(words);
    out.push([start, start + words.length]);
  }
  return out;
}
