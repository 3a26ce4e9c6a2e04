/**
 * The word lists the detector reads (src/deid/lexicons, see SOURCE.md there): first names, surnames,
 * common English words, Philter's clinical safe words, US city names and the clinical vocabulary that
 * collides with names. Loaded once, on first use, into read-only word sets (src/deid/wordset.ts) of
 * lowercase entries.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
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

/** A lexicon read in place: lookups, and its entries by position (surrogates are drawn by position). */
export interface WordList extends WordLookup {
  at(i: number): string;
}

export interface Lexicons {
  firstNames: WordList;
  surnames: WordList;
  english: WordList;
  cities: WordList;
  clinical: WordList;
  /** Countries, continents, states: geography Safe Harbor lets stay (one entry a line, may have spaces). */
  regions: WordList;
  /** Philter's clinical safe-word list (BSD-3, UCSF): English, medical and pharmacy words, names removed. */
  philter: WordList;
  /** ehrbench's own safe words: shorthand, recent brands, programs, vehicles (safe-words-ehrbench.txt). */
  ehrbench: WordList;
  /** The safe vocabulary: Philter's list, ehrbench's, the English words and the clinical collisions in one set. */
  safe: WordSet;
  /** First words of multi-word cities and regions, for a quick "could a place start here?" test. */
  placeFirstWords: ReadonlySet<string>;
  /** The first words of countries, continents and states of two or three words ("el", "south", "new"). */
  regionFirstWords: ReadonlySet<string>;
  /** The 1,000 most frequent first names (first-names.txt is ordered by frequency). */
  commonFirstNames: ReadonlySet<string>;
  /** sha256 of each file (and of the derived name-shape table), part of the de-identification version. */
  hashes: Record<LexiconName | 'nameShape', string>;
}

let loaded: Lexicons | undefined;

/** Where the build keeps each list's word-set index (build-lexicon-index.ts), beside this file in dist/. */
export const INDEX_DIR = join(__dirname, 'lexicon-index');

/**
 * The word set of one list: from the build's index when it was made from these very bytes (its first
 * 32 bytes are their sha256), otherwise built now.
 */
function wordSet(name: LexiconName, bytes: Buffer, sha256: string): WordSet {
  const index = readIndex(name, sha256);
  return index ? WordSet.fromIndex([bytes], index) : buildWordSet(name, bytes);
}

/** The build's index `<name>.bin` if it was made from input with this sha256, else nothing. */
function readIndex(name: string, sha256: string): Buffer | undefined {
  const file = join(INDEX_DIR, `${name}.bin`);
  if (!existsSync(file)) return undefined;
  try {
    const index = readFileSync(file);
    return index.subarray(0, 32).toString('hex') === sha256 ? index.subarray(32) : undefined;
  } catch {
    return undefined; // a damaged index: build the set instead
  }
}

export function buildWordSet(name: LexiconName, bytes: Buffer): WordSet {
  return WordSet.build([{ bytes, options: { byLine: !WORDS_A_LINE.has(name) } }]);
}

/** The lists of the safe vocabulary, in one set: a word is looked up once, not in four lists. */
export const SAFE_LISTS: readonly LexiconName[] = ['philter', 'english', 'clinical', 'ehrbench'];

/** What the safe set's index was built from: the sha256 of its lists' sha256s. */
export function safeSha256(hashes: Record<LexiconName, string>): string {
  return createHash('sha256')
    .update(SAFE_LISTS.map((n) => hashes[n]).join('\n'))
    .digest('hex');
}

export function buildSafeSet(bytes: Record<LexiconName, Buffer>): WordSet {
  return WordSet.build(SAFE_LISTS.map((n) => ({ bytes: bytes[n], options: { byLine: !WORDS_A_LINE.has(n) } })));
}

function safeSet(bytes: Record<LexiconName, Buffer>, hashes: Record<LexiconName, string>): WordSet {
  const index = readIndex('safe', safeSha256(hashes));
  return index
    ? WordSet.fromIndex(
        SAFE_LISTS.map((n) => bytes[n]),
        index,
      )
    : buildSafeSet(bytes);
}

/** The bytes and sha256 of a list, for the index builder. */
export function listFile(name: LexiconName): { bytes: Buffer; sha256: string } {
  const bytes = readFileSync(join(LEXICON_DIR, FILES[name]));
  return { bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

export const LEXICON_NAMES = Object.keys(FILES) as LexiconName[];

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
    hashes.nameShape = createHash('sha256')
      .update(readFileSync(join(LEXICON_DIR, 'name-shape.txt')))
      .digest('hex');
  } catch {
    hashes.nameShape = 'absent'; // only while `npm run lexicons:name-shape` builds it
  }
  const sets = {} as Record<LexiconName, WordSet>;
  for (const name of Object.keys(FILES) as LexiconName[]) sets[name] = wordSet(name, bytes[name], hashes[name]);
  const placeFirstWords = new Set<string>();
  for (const list of [sets.cities, sets.regions]) for (const p of list) placeFirstWords.add(p.includes(' ') ? (p.split(' ')[0] as string) : p);
  const commonFirstNames = new Set<string>();
  for (const n of sets.firstNames) {
    if (commonFirstNames.size >= 1000) break;
    commonFirstNames.add(n);
  }
  const safe = safeSet(bytes, hashes);
  const regionFirstWords = new Set<string>();
  for (const p of sets.regions) if (p.includes(' ')) regionFirstWords.add(p.split(' ')[0] as string);
  loaded = { ...sets, safe, placeFirstWords, regionFirstWords, commonFirstNames, hashes };
  return loaded;
}
