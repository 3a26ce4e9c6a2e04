/**
 * Words in scripts other than Latin (Cyrillic, Greek, Arabic, Hebrew, Chinese, Japanese, Korean,
 * Devanagari and the other Indic scripts, Thai, Armenian, Georgian, Ethiopic...). In a note written in
 * English such a word is nearly always a name or a place written as its owner writes it ("daughter
 * Ольга", "王伟 at bedside"), and the vocabularies cannot read it: every run of them is masked
 * (rule name.script). A lone Greek letter or a pair ("β-blocker", "TNF-α", "γδ T cells") is clinical
 * notation and stays.
 *
 * Known names are compared across scripts: a word in another script is transliterated to Latin (the
 * `transliteration` package: Cyrillic, Greek, Arabic, Hebrew, Chinese as pinyin, Hangul, kana, Indic
 * scripts...) and compared with the known name parts exactly, within one edit, or by a consonant
 * key that forgets vowels and the usual romanisation differences (ts/c, kh/h, sh/s, y/i): "Кузнецова"
 * reads "kuznecova" and matches KUZNETSOVA; "حسن" reads "Hsn" and matches HASSAN. What this cannot do:
 * romanisations that differ in consonants (Wade-Giles "Chang" for pinyin "Zhang", Korean "Lee" for 이
 * read "i"), Chinese characters read in another language (Cantonese, Japanese kanji names), and names
 * whose other-script spelling is not a transliteration but another name altogether.
 */
import { transliterate } from 'transliteration';

export type Range = [number, number];

/** A letter of a script other than Latin (with its combining marks: Devanagari vowel signs, Arabic harakat). */
const FOREIGN_WORD = /[^\P{L}\p{Script=Latin}][\p{M}\p{L}]*/gu;
const LATIN = /\p{Script=Latin}/u;
const GREEK = /^\p{Script=Greek}+$/u;

/** Runs of other-script words, with the spaces, hyphens and apostrophes between the words of one run. */
export function foreignRuns(text: string): Range[] {
  if (!/[^\u0000-\u024f]/.test(text)) return [];
  const out: Range[] = [];
  for (const m of text.matchAll(FOREIGN_WORD)) {
    let start = m.index;
    let end = m.index + m[0].length;
    // only the other-script part of a word (a Latin tail is read by the vocabularies)
    const latinAt = m[0].search(LATIN);
    if (latinAt > 0) end = start + latinAt;
    const word = text.slice(start, end);
    // clinical Greek: one or two letters, or letters glued to Latin letters, digits or a hyphen ("β2", "α-1")
    if (GREEK.test(word) && (word.length <= 2 || /[\w-]/.test(text.charAt(start - 1)) || /[\w-]/.test(text.charAt(end)))) continue;
    const last = out[out.length - 1];
    if (last && /^[\s'’\-·・‧]{1,2}$/.test(text.slice(last[1], start)) && !/\n/.test(text.slice(last[1], start))) last[1] = end;
    else out.push([start, end]);
  }
  return out;
}

/** The Latin reading of an other-script word, lowercase ASCII letters and spaces. */
export function latinOf(word: string): string {
  return transliterate(word)
    .toLowerCase()
    .replace(/[^a-z\s]/g, '')
    .trim();
}

/**
 * A consonant key for comparing romanisations: digraphs made one letter, vowels (and y, w, h after a
 * consonant) dropped after the first letter, doubled letters made one.
 */
export function consonantKey(latin: string): string {
  const w = latin
    .toLowerCase()
    .replace(/[^a-z]/g, '')
    .replace(/tch|tsch|ch|tz|ts|c(?=[eiy])/g, 'c')
    .replace(/kh|gh|q|ck/g, 'k')
    .replace(/zh|dzh|dj|j/g, 'z')
    .replace(/sh|sch|sz|x/g, 's')
    .replace(/ph|v|w/g, 'f')
    .replace(/th/g, 't')
    .replace(/dh/g, 'd');
  if (w.length === 0) return '';
  const rest = w.slice(1).replace(/[aeiouyh]/g, '');
  return (w.charAt(0) + rest).replace(/(.)\1+/g, '$1');
}
