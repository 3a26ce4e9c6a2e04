/**
 * How much a word no vocabulary knows looks like a personal name, by its letters: a character-trigram
 * log-likelihood ratio between the name lists (SSA and Census first names and surnames) and the safe
 * vocabulary without them. "Przybylski", "Nkechi", "Okafor" score high; "Tmax", "HomeCycle",
 * "Trulicity" low. It is weak evidence and only ever one part of a decision: the backstop takes a
 * capitalised unknown word as a name only if it also reads like one, so the brand names and coinages
 * the safe vocabulary lacks do not all become names.
 *
 * The table (lexicons/name-shape.txt) is derived from the lexicons by `npm run lexicons:name-shape`;
 * a test rebuilds it and fails when it no longer matches them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEXICON_DIR, lexicons, type WordLookup } from './lexicons';

export const NAME_SHAPE_FILE = 'name-shape.txt';

function grams(word: string): string[] {
  const w = `^${word}$`;
  const out: string[] = [];
  for (let i = 0; i + 3 <= w.length; i++) out.push(w.slice(i, i + 3));
  return out;
}

const LETTERS = /^[a-z]{3,}$/;

/** Trains the table: trigram -> log P(g | name) - log P(g | other word), add-half smoothing, two decimals. */
export function trainNameShape(names: Iterable<string>, others: Iterable<string>): Map<string, number> {
  const count = (words: Iterable<string>) => {
    const c = new Map<string, number>();
    let total = 0;
    for (const w of words) {
      if (!LETTERS.test(w)) continue;
      for (const g of grams(w)) {
        c.set(g, (c.get(g) ?? 0) + 1);
        total++;
      }
    }
    return { c, total };
  };
  const n = count(names);
  const o = count(others);
  const vocab = new Set([...n.c.keys(), ...o.c.keys()]);
  const table = new Map<string, number>();
  for (const g of [...vocab].sort()) {
    const ratio = Math.log(((n.c.get(g) ?? 0) + 0.5) / (n.total + 0.5 * vocab.size)) - Math.log(((o.c.get(g) ?? 0) + 0.5) / (o.total + 0.5 * vocab.size));
    table.set(g, Math.round(ratio * 100) / 100);
  }
  return table;
}

/** The training words: every name-list entry, and every safe word that is in no name list. */
export function trainingWords(): { names: string[]; others: string[] } {
  const lex = lexicons();
  const isName = (w: string) => lex.firstNames.has(w) || lex.surnames.has(w);
  const names = new Set<string>([...lex.firstNames, ...lex.surnames]);
  const others = new Set<string>();
  for (const list of [lex.philter, lex.english] as WordLookup[]) for (const w of list) if (!isName(w)) others.add(w);
  return { names: [...names], others: [...others] };
}

export function renderNameShape(table: Map<string, number>): string {
  const lines = [
    '# Character-trigram log-likelihood ratios, name lists vs the rest of the safe vocabulary (src/deid/name-shape.ts).',
    '# Derived from the lexicons of this folder by `npm run lexicons:name-shape`; do not edit by hand.',
  ];
  for (const [g, v] of table) lines.push(`${g} ${v}`);
  return lines.join('\n') + '\n';
}

let table: Map<string, number> | undefined;

function load(): Map<string, number> {
  if (table) return table;
  table = new Map();
  for (const line of readFileSync(join(LEXICON_DIR, NAME_SHAPE_FILE), 'utf8').split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    table.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return table;
}

/** The mean trigram log-likelihood ratio of a lowercase word: above 0 it reads more like a name than a word. */
export function nameShape(lower: string): number {
  const t = load();
  const gs = grams(lower.replace(/[^a-z]/g, ''));
  if (gs.length === 0) return 0;
  let sum = 0;
  for (const g of gs) sum += t.get(g) ?? 0;
  return sum / gs.length;
}
