/**
 * The word lists the detector reads (src/deid/lexicons, see SOURCE.md there): first names, surnames,
 * common English words, US city names and the clinical vocabulary that collides with them. Loaded once,
 * on first use, into sets of lowercase entries.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths';

export const LEXICON_DIR = join(PACKAGE_ROOT, 'src', 'deid', 'lexicons');

const FILES = {
  firstNames: 'first-names.txt',
  surnames: 'surnames.txt',
  english: 'english-words.txt',
  cities: 'us-cities.txt',
  clinical: 'clinical-words.txt',
  regions: 'regions.txt',
} as const;

export type LexiconName = keyof typeof FILES;

export interface Lexicons {
  firstNames: ReadonlySet<string>;
  surnames: ReadonlySet<string>;
  english: ReadonlySet<string>;
  cities: ReadonlySet<string>;
  clinical: ReadonlySet<string>;
  /** Countries, continents, states: geography Safe Harbor lets stay (one entry a line, may have spaces). */
  regions: ReadonlySet<string>;
  /** First words of multi-word cities and regions, for a quick "could a place start here?" test. */
  placeFirstWords: ReadonlySet<string>;
  /** The 1,000 most frequent first names (first-names.txt is ordered by frequency). */
  commonFirstNames: ReadonlySet<string>;
  /** sha256 of each file, part of the de-identification version. */
  hashes: Record<LexiconName, string>;
}

let loaded: Lexicons | undefined;

function readList(text: string, byLine: boolean): Set<string> {
  const set = new Set<string>(); // insertion order is file order
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    if (byLine) {
      if (line.trim()) set.add(line.trim());
      continue;
    }
    for (const word of line.trim().split(/\s+/)) if (word) set.add(word);
  }
  return set;
}

export function lexicons(): Lexicons {
  if (loaded) return loaded;
  const hashes = {} as Record<LexiconName, string>;
  const sets = {} as Record<LexiconName, Set<string>>;
  for (const [name, file] of Object.entries(FILES) as [LexiconName, string][]) {
    const text = readFileSync(join(LEXICON_DIR, file), 'utf8');
    hashes[name] = createHash('sha256').update(text).digest('hex');
    sets[name] = readList(text, name === 'regions' || name === 'cities');
  }
  const placeFirstWords = new Set<string>();
  for (const p of [...sets.cities, ...sets.regions]) placeFirstWords.add(p.split(' ')[0] as string);
  loaded = { ...sets, placeFirstWords, commonFirstNames: new Set([...sets.firstNames].slice(0, 1000)), hashes };
  return loaded;
}
