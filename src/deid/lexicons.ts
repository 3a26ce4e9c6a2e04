/**
 * The word lists the detector reads (src/deid/lexicons, see SOURCE.md there): first names, surnames,
 * common English words, Philter's clinical safe words, US city names and the clinical vocabulary that
 * collides with names. Loaded once, on first use, into read-only word sets (src/deid/wordset.ts) of
 * lowercase entries.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths';
import { WordSet } from './wordset';

export const LEXICON_DIR = join(PACKAGE_ROOT, 'src', 'deid', 'lexicons');

const FILES = {
  firstNames: 'first-names.txt',
  surnames: 'surnames.txt',
  english: 'english-words.txt',
  cities: 'us-cities.txt',
  clinical: 'clinical-words.txt',
  regions: 'regions.txt',
  philter: 'safe-words-philter.txt',
  ehrbench: 'safe-words-ehrbench.txt',
} as const;

export type LexiconName = keyof typeof FILES;

/** Lists of several words a line; every other list has one entry a line (which may hold spaces: "new york"). */
const WORDS_A_LINE: ReadonlySet<LexiconName> = new Set(['clinical', 'ehrbench']);

export interface WordLookup extends Iterable<string> {
  has(word: string): boolean;
  readonly size: number;
}

export interface Lexicons {
  firstNames: WordLookup;
  surnames: WordLookup;
  english: WordLookup;
  cities: WordLookup;
  clinical: WordLookup;
  /** Countries, continents, states: geography Safe Harbor lets stay (one entry a line, may have spaces). */
  regions: WordLookup;
  /** Philter's clinical safe-word list (BSD-3, UCSF): English, medical and pharmacy words, names removed. */
  philter: WordLookup;
  /** ehrbench's own safe words: shorthand, recent brands, programs, vehicles (safe-words-ehrbench.txt). */
  ehrbench: WordLookup;
  /** The safe vocabulary: Philter's list, ehrbench's, the English words and the clinical collisions together. */
  safe: WordLookup;
  /** First words of multi-word cities and regions, for a quick "could a place start here?" test. */
  placeFirstWords: ReadonlySet<string>;
  /** The 1,000 most frequent first names (first-names.txt is ordered by frequency). */
  commonFirstNames: ReadonlySet<string>;
  /** sha256 of each file (and of the derived name-shape table), part of the de-identification version. */
  hashes: Record<LexiconName | 'nameShape', string>;
}

let loaded: Lexicons | undefined;

export function lexicons(): Lexicons {
  if (loaded) return loaded;
  const hashes = {} as Record<LexiconName | 'nameShape', string>;
  const bytes = {} as Record<LexiconName, Buffer>;
  for (const [name, file] of Object.entries(FILES) as [LexiconName, string][]) {
    const b = readFileSync(join(LEXICON_DIR, file));
    hashes[name] = createHash('sha256').update(b).digest('hex');
    bytes[name] = b;
  }
  try {
    hashes.nameShape = createHash('sha256').update(readFileSync(join(LEXICON_DIR, 'name-shape.txt'))).digest('hex');
  } catch {
    hashes.nameShape = 'absent'; // only while `npm run lexicons:name-shape` builds it
  }
  const set = (...names: LexiconName[]) => new WordSet(names.map((n) => ({ bytes: bytes[n], options: { byLine: !WORDS_A_LINE.has(n) } })));
  const sets = {} as Record<LexiconName, WordSet>;
  for (const name of Object.keys(FILES) as LexiconName[]) sets[name] = set(name);
  const placeFirstWords = new Set<string>();
  for (const list of [sets.cities, sets.regions]) for (const p of list) placeFirstWords.add(p.includes(' ') ? (p.split(' ')[0] as string) : p);
  const commonFirstNames = new Set<string>();
  for (const n of sets.firstNames) {
    if (commonFirstNames.size >= 1000) break;
    commonFirstNames.add(n);
  }
  const { philter, english, clinical, ehrbench } = sets;
  const safe: WordLookup = {
    has: (w) => philter.has(w) || english.has(w) || clinical.has(w) || ehrbench.has(w),
    size: philter.size + english.size + clinical.size + ehrbench.size,
    [Symbol.iterator]: function* () {
      yield* philter;
      yield* english;
      yield* clinical;
      yield* ehrbench;
    },
  };
  loaded = { ...sets, safe, placeFirstWords, commonFirstNames, hashes };
  return loaded;
}
