/**
 * The detection view of a text. Identifiers written with Unicode variants must be found as if they
 * were plain: decomposed accents and stray combining marks, full-width letters and digits, digits of
 * other scripts, no-break and other odd spaces, zero-width and other format characters inside a
 * number, typographic dashes and quotes, and Cyrillic or Greek letters mixed into a Latin word. Every
 * detector, the known-identifier matcher and the residual scan read the folded text; the offsets they
 * find are mapped back to the original text, which is what replacement rewrites.
 *
 * Folding is per original character (a code point with its combining marks): NFKC, then diacritics
 * removed (NFD without marks), then the small tables below. Each folded character remembers the
 * original range it came from, so a span maps back to whole original characters.
 */

/** A folded text and the way back to the original. */
export interface Folded {
  /** The text the detectors read: ASCII letters and digits wherever the original had a variant of one. */
  text: string;
  /** Whether folding changed anything (when not, offsets are the same and the maps are absent). */
  changed: boolean;
  /** For each UTF-16 index of `text`, the original index where its character starts. */
  readonly from?: Int32Array;
  /** For each UTF-16 index of `text`, the original index where its character ends. */
  readonly to?: Int32Array;
}

/** Plain ASCII text (the usual case) needs no folding. */
const PLAIN = /^[\x09\x0a\x0d\x20-\x7e]*$/;

/** Format characters (zero-width space, joiners, soft hyphen, bidi controls, BOM...): removed. */
const FORMAT = /^\p{Cf}$/u;
const MARK = /\p{M}/gu;
const SPACE = /^[\p{Zs}]$/u;
const LINE = /^[\p{Zl}\p{Zp}\x85]$/u;
const DASH = /^[\p{Pd}\u2212\u2043\ufe63\uff0d]$/u;
const DIGIT = /^\p{Nd}$/u;
const LATIN = /\p{Script=Latin}/u;

/** Quotes a writer may use for an apostrophe or a quotation mark. */
const QUOTES: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': "'",
  '\u201b': "'",
  '\u2032': "'",
  '\u02bc': "'",
  '\u00b4': "'",
  '\u0060': "'",
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u2033': '"',
  '\u00ab': '"',
  '\u00bb': '"',
};

/** Letters folding to one or more ASCII letters that NFD does not decompose. */
const LETTERS: Record<string, string> = {
  Đ: 'D',
  đ: 'd',
  Ł: 'L',
  ł: 'l',
  ß: 'ss',
  Ø: 'O',
  ø: 'o',
  ı: 'i',
  Æ: 'AE',
  æ: 'ae',
  Œ: 'OE',
  œ: 'oe',
  Þ: 'Th',
  þ: 'th',
  Ð: 'D',
  ð: 'd',
  Ħ: 'H',
  ħ: 'h',
  ŀ: 'l',
  Ŀ: 'L',
  ſ: 's',
};

/**
 * Cyrillic and Greek letters that look like Latin ones. Folded only inside a word that also has Latin
 * letters: "Аnna" with a Cyrillic A is an attempt to hide "Anna"; a word wholly in Cyrillic is Russian.
 */
const CONFUSABLES: Record<string, string> = {
  А: 'A',
  В: 'B',
  Е: 'E',
  К: 'K',
  М: 'M',
  Н: 'H',
  О: 'O',
  Р: 'P',
  С: 'C',
  Т: 'T',
  Х: 'X',
  У: 'Y',
  І: 'I',
  Ј: 'J',
  Ѕ: 'S',
  Ԛ: 'Q',
  Ԝ: 'W',
  а: 'a',
  е: 'e',
  о: 'o',
  р: 'p',
  с: 'c',
  у: 'y',
  х: 'x',
  і: 'i',
  ј: 'j',
  ѕ: 's',
  ԁ: 'd',
  ԛ: 'q',
  ԝ: 'w',
  һ: 'h',
  ӏ: 'l',
  ɡ: 'g',
  Α: 'A',
  Β: 'B',
  Ε: 'E',
  Ζ: 'Z',
  Η: 'H',
  Ι: 'I',
  Κ: 'K',
  Μ: 'M',
  Ν: 'N',
  Ο: 'O',
  Ρ: 'P',
  Τ: 'T',
  Υ: 'Y',
  Χ: 'X',
  ο: 'o',
  ν: 'v',
  ι: 'i',
  κ: 'k',
  ρ: 'p',
  τ: 't',
  υ: 'u',
  χ: 'x',
};

const digitCache = new Map<number, string>();

/** The ASCII digit of any decimal digit (Arabic-Indic, Devanagari...): Unicode encodes each script's 0-9 contiguously. */
function asciiDigit(cp: number): string {
  let d = digitCache.get(cp);
  if (d !== undefined) return d;
  let start = cp;
  while (start > 0 && DIGIT.test(String.fromCodePoint(start - 1))) start--;
  d = String((cp - start) % 10);
  digitCache.set(cp, d);
  return d;
}

const foldCache = new Map<string, string>();

/** The folded form of one original character (a code point with its combining marks). */
function foldCharacter(ch: string): string {
  let out = foldCache.get(ch);
  if (out !== undefined) return out;
  const base = ch.codePointAt(0) as number;
  const first = String.fromCodePoint(base);
  if (FORMAT.test(first)) out = '';
  else if (LINE.test(first)) out = '\n';
  else if (SPACE.test(first) || first === '\u3000') out = ' ';
  else if (DASH.test(first)) out = '-';
  else if (QUOTES[first]) out = QUOTES[first] as string;
  else if (DIGIT.test(first)) out = asciiDigit(base);
  else {
    const k = ch.normalize('NFKC');
    out = '';
    for (const c of k) {
      if (LETTERS[c]) out += LETTERS[c];
      else if (QUOTES[c]) out += QUOTES[c];
      else if (DIGIT.test(c)) out += asciiDigit(c.codePointAt(0) as number);
      else if (DASH.test(c)) out += '-';
      else if (FORMAT.test(c)) continue;
      else out += c.normalize('NFD').replace(MARK, '');
    }
  }
  if (foldCache.size < 20_000) foldCache.set(ch, out);
  return out;
}

const IS_MARK = /^\p{M}$/u;

function isPlain(c: number): boolean {
  return (c >= 0x20 && c <= 0x7e) || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Whether a word (a run of letters) mixes Latin with look-alike letters of another script. */
function mixedScript(word: string): boolean {
  let latin = false;
  let other = false;
  for (const c of word) {
    if (CONFUSABLES[c]) other = true;
    else if (LATIN.test(c)) latin = true;
  }
  return latin && other;
}

/** Words (runs of letters, marks and format characters) holding a look-alike letter among Latin ones: [start, end) ranges. */
function confusableWords(text: string): [number, number][] {
  const out: [number, number][] = [];
  for (const m of text.matchAll(/[\p{L}\p{M}\p{Cf}]+/gu)) if (mixedScript(m[0])) out.push([m.index, m.index + m[0].length]);
  return out;
}

export function fold(text: string): Folded {
  if (PLAIN.test(text)) return { text, changed: false };
  const n = text.length;
  let from = new Int32Array(n + 16);
  let to = new Int32Array(n + 16);
  let out = '';
  let len = 0;
  const room = (more: number) => {
    if (len + more <= from.length) return;
    const size = Math.max(from.length * 2, len + more);
    const f = new Int32Array(size);
    const t = new Int32Array(size);
    f.set(from);
    t.set(to);
    from = f;
    to = t;
  };
  const emit = (s: string, start: number, end: number) => {
    room(s.length);
    for (let k = 0; k < s.length; k++) {
      from[len] = start;
      to[len] = end;
      len++;
    }
    out += s;
  };
  const mixed = /[\u0370-\u03ff\u0400-\u052f\u0261\u04cf]/.test(text) ? confusableWords(text) : [];
  let w = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (isPlain(c)) {
      // a run of plain characters is copied as it is
      let j = i + 1;
      while (j < n && isPlain(text.charCodeAt(j))) j++;
      // a combining mark after the run belongs to the run's last character: leave that one to the slow path
      if (j < n && j - 1 > i && IS_MARK.test(String.fromCodePoint(text.codePointAt(j) as number))) j--;
      else if (j < n && j - 1 === i && IS_MARK.test(String.fromCodePoint(text.codePointAt(j) as number))) j = i;
      if (j === i) {
        const start = i;
        i++;
        while (i < n && IS_MARK.test(String.fromCodePoint(text.codePointAt(i) as number))) i += (text.codePointAt(i) as number) > 0xffff ? 2 : 1;
        emit(foldCharacter(text.slice(start, i)), start, i);
        continue;
      }
      room(j - i);
      for (let k = i; k < j; k++) {
        from[len] = k;
        to[len] = k + 1;
        len++;
      }
      out += text.slice(i, j);
      i = j;
      continue;
    }
    // one original character: a code point and the combining marks after it
    const start = i;
    const cp = text.codePointAt(i) as number;
    i += cp > 0xffff ? 2 : 1;
    while (i < n) {
      const next = text.codePointAt(i) as number;
      if (!IS_MARK.test(String.fromCodePoint(next))) break;
      i += next > 0xffff ? 2 : 1;
    }
    const ch = text.slice(start, i);
    while (w < mixed.length && (mixed[w] as [number, number])[1] <= start) w++;
    const inMixed = w < mixed.length && (mixed[w] as [number, number])[0] <= start;
    const head = String.fromCodePoint(cp);
    emit(inMixed && CONFUSABLES[head] ? (CONFUSABLES[head] as string) : foldCharacter(ch), start, i);
  }
  return { text: out, changed: out !== text, from: from.subarray(0, len), to: to.subarray(0, len) };
}

/** Folds a value from structured data (a known name, an MRN) the same way, for matching. */
export function foldValue(value: string): string {
  return fold(value).text;
}

/**
 * The original range of a folded span [start, end): from the start of the character at `start` to
 * the end of the character at `end - 1`. Original characters removed by folding (zero-width) between
 * them are inside the range, so nothing of the identifier is left behind.
 */
export function originalRange(f: Folded, start: number, end: number): { start: number; end: number } {
  if (!f.from || !f.to) return { start, end };
  if (end <= start) {
    const at = start < f.from.length ? (f.from[start] as number) : (f.to[f.to.length - 1] ?? 0);
    return { start: at, end: at };
  }
  return { start: f.from[start] as number, end: f.to[end - 1] as number };
}
