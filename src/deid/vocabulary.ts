/**
 * What a word is, by the vocabularies: the safe-vocabulary backstop's first question. A word of a note
 * is one of
 *   safe       in the safe vocabulary (Philter's clinical safe-word list, SCOWL English, ehrbench's
 *              clinical collisions), possibly inflected, and in no name list;
 *   ambiguous  safe, and also a first name or surname ("rose", "will", "hunt", "grant");
 *   name       in a name list and not safe ("okafor", "przybylski", "marguerite");
 *   misspelt   in no list, but one edit from a safe word of five letters or more ("secreations",
 *              "tolerting"): notes are misspelt far more often than they name someone;
 *   unknown    in no list and no misspelling: a candidate identifier, which context decides.
 * Hyphenated words are judged by their parts, contractions by their stem. Facts are cached per
 * lowercase word: a note repeats its vocabulary.
 */
import { lexicons } from './lexicons';
import { prefixHashes } from './wordset';

export type WordClass = 'safe' | 'ambiguous' | 'name' | 'misspelt' | 'unknown';

export interface WordFacts {
  cls: WordClass;
  /** In the first-name or surname list (any part of a hyphenated word). */
  first: boolean;
  last: boolean;
  /** On the US city list. */
  city: boolean;
  /** ehrbench's clinical collisions (eponyms, drugs, shorthand): never a name on lexicon evidence alone. */
  clinical: boolean;
  /** In the English word list (SCOWL) itself, not only the clinical safe list. */
  english: boolean;
}

const CONTRACTION = /^(.{1,})(?:n't|'s|'m|'re|'ve|'ll|'d)$/;
/** Inflections whose stem is safe: "pines" (pine), "tolerated" (tolerate), "secretions". */
const SUFFIXES: [string, string][] = [
  ['s', ''],
  ['es', ''],
  ['ies', 'y'],
  ['ed', ''],
  ['ed', 'e'],
  ['ied', 'y'],
  ['ing', ''],
  ['ing', 'e'],
  ['ly', ''],
  ['er', ''],
  ['ers', ''],
  ['est', ''],
];

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz';

export class Vocabulary {
  private readonly lex = lexicons();
  private readonly cache = new Map<string, WordFacts>();

  /** Whether a lowercase word (no hyphen) is safe, directly or as an inflection of a safe word. */
  isSafe(word: string): boolean {
    const { safe } = this.lex;
    if (safe.has(word)) return true;
    const c = CONTRACTION.exec(word);
    if (c) return safe.has(c[1] as string) || (c[1] as string).length <= 2;
    for (const [suffix, stem] of SUFFIXES) {
      if (word.length - suffix.length >= 3 && word.endsWith(suffix) && safe.has(word.slice(0, word.length - suffix.length) + stem)) return true;
    }
    return false;
  }

  /** One edit (deletion, transposition, substitution, insertion) from a safe word. Only for words of five letters or more. */
  misspelt(word: string): boolean {
    // a word longer than any the vocabularies hold is no misspelling of one (and would cost ~50 lookups a letter)
    if (word.length < 5 || word.length > 30 || !/^[a-z]+$/.test(word)) return false;
    const { safe } = this.lex;
    const n = word.length;
    // the variants are looked up in place (hasSplice), not built as strings: about 54 a letter
    const prefix = prefixHashes(word);
    for (let i = 0; i < n; i++) {
      if (safe.hasSplice(word, prefix, i, 1, '')) return true; // deletion
      if (i + 1 < n && safe.hasSplice(word, prefix, i, 2, (word[i + 1] as string) + word[i])) return true; // transposition
      for (const c of ALPHABET) if (c !== word[i] && safe.hasSplice(word, prefix, i, 1, c)) return true; // substitution
    }
    for (let i = 0; i <= n; i++) {
      for (const c of ALPHABET) if (safe.hasSplice(word, prefix, i, 0, c)) return true; // insertion
    }
    return false;
  }

  facts(lower: string): WordFacts {
    let f = this.cache.get(lower);
    if (f) return f;
    f = lower.includes('-') ? this.compound(lower) : this.simple(lower);
    if (this.cache.size < 100_000) this.cache.set(lower, f);
    return f;
  }

  private simple(w: string): WordFacts {
    const { firstNames, surnames, cities, clinical, english } = this.lex;
    const stem = CONTRACTION.exec(w)?.[1] ?? w;
    const first = firstNames.has(stem);
    const last = surnames.has(stem);
    const isClinical = clinical.has(stem);
    const safe = isClinical || this.isSafe(w);
    let cls: WordClass;
    if (safe) cls = first || last ? 'ambiguous' : 'safe';
    else if (first || last) cls = 'name';
    else cls = this.misspelt(stem) ? 'misspelt' : 'unknown';
    return { cls, first, last, city: cities.has(w), clinical: isClinical, english: english.has(stem) };
  }

  /** "non-tender" is safe, "Abernathy-Quist" a name, "Oyelaran-Birch" a name with an unknown part. */
  private compound(w: string): WordFacts {
    const parts = w.split('-').filter((p) => p.length > 0);
    const facts = parts.map((p) => (p.length <= 1 ? undefined : this.facts(p)));
    const known = facts.filter((f): f is WordFacts => f !== undefined);
    const any = (k: keyof Omit<WordFacts, 'cls'>) => known.some((f) => f[k]);
    const classes = new Set(known.map((f) => f.cls));
    let cls: WordClass;
    if (known.length === 0 || known.every((f) => f.cls === 'safe')) cls = 'safe';
    else if (classes.has('name')) cls = 'name';
    else if (classes.has('unknown')) cls = 'unknown';
    else if (classes.has('ambiguous')) cls = known.every((f) => f.cls === 'ambiguous') ? 'ambiguous' : 'safe';
    else cls = 'misspelt';
    return { cls, first: any('first'), last: any('last'), city: this.lex.cities.has(w), clinical: any('clinical'), english: known.length > 0 && known.every((f) => f.english) };
  }
}

let shared: Vocabulary | undefined;

/** One vocabulary per process: its cache is the point. */
export function vocabulary(): Vocabulary {
  return (shared ??= new Vocabulary());
}
