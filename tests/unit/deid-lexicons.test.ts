/**
 * The vocabularies the backstop reads: the word sets built over the lexicon files, the word classes,
 * and the derived name-shape table, which must match the lexicons it was trained on.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEXICON_DIR, lexicons } from '../../src/deid/lexicons';
import { NAME_SHAPE_FILE, nameShape, renderNameShape, trainingWords, trainNameShape } from '../../src/deid/name-shape';
import { vocabulary } from '../../src/deid/vocabulary';
import { prefixHashes, WordSet } from '../../src/deid/wordset';

describe('word sets', () => {
  const set = WordSet.build([
    { bytes: Buffer.from('# a comment\nalpha\nbeta\n\nalpha\n  gamma  \n'), options: { byLine: true } },
    { bytes: Buffer.from('new york\n'), options: { byLine: true } },
    { bytes: Buffer.from('delta epsilon\nzeta\n') },
  ]);
  it('round-trips through its index, as the build writes it', () => {
    const again = WordSet.fromIndex([Buffer.from('# a comment\nalpha\nbeta\n\nalpha\n  gamma  \n'), Buffer.from('new york\n'), Buffer.from('delta epsilon\nzeta\n')], set.index());
    expect([...again]).toEqual([...set]);
    for (const w of ['alpha', 'new york', 'zeta', 'omega']) expect(again.has(w)).toBe(set.has(w));
    expect(() => WordSet.fromIndex([], Buffer.alloc(16))).toThrow(/not a word-set index/);
  });

  it('holds every entry once, without comments or blank lines, one a line or several', () => {
    expect([...set]).toEqual(['alpha', 'beta', 'gamma', 'new york', 'delta', 'epsilon', 'zeta']);
    expect(set.size).toBe(7);
    for (const w of ['alpha', 'gamma', 'new york', 'epsilon']) expect(set.has(w)).toBe(true);
    for (const w of ['', 'alph', 'alphas', '# a comment', 'new', 'york']) expect(set.has(w)).toBe(false);
  });
});

describe('looking a variant of a word up in place', () => {
  const words = ['tolerate', 'secretion', 'ab', 'alpha', 'new york'];
  const set = WordSet.build([{ bytes: Buffer.from(words.join('\n')), options: { byLine: true } }]);
  // every splice of every probe word, against the same splice built as a string
  const probes = ['tolerate', 'tolerrate', 'tolreate', 'tolerat', 'secreation', 'alpah', 'alphx', 'ab', 'a', 'new yrok', 'zzzzz'];
  it('agrees with building the variant and looking it up, for every deletion, transposition, substitution and insertion', () => {
    let found = 0;
    for (const word of probes) {
      const prefix = prefixHashes(word);
      for (let at = 0; at <= word.length; at++) {
        for (let remove = 0; remove <= Math.min(2, word.length - at); remove++) {
          for (const insert of ['', 'a', 'e', 'r', 'x', ' ', (word[at + 1] ?? '') + (word[at] ?? '')]) {
            const built = word.slice(0, at) + insert + word.slice(at + remove);
            const inPlace = set.hasSplice(word, prefix, at, remove, insert);
            expect([word, at, remove, insert, inPlace]).toEqual([word, at, remove, insert, set.has(built)]);
            if (inPlace) found++;
          }
        }
      }
    }
    expect(found).toBeGreaterThan(10); // the probes do reach the entries: the check is not all "false"
  });
});

describe('the safe vocabulary', () => {
  it('is the union of its four lists, in one set', () => {
    const lex = lexicons();
    for (const w of ['tolerating', 'levophed', 'the', 'cabg', 'pines'].concat(
      ['philter', 'english', 'clinical', 'ehrbench'].flatMap((n) => [0, 7, 1000].map((i) => lex[n as 'philter'].at(Math.min(i, lex[n as 'philter'].size - 1)))),
    )) {
      expect([w, lex.safe.has(w)]).toEqual([w, lex.philter.has(w) || lex.english.has(w) || lex.clinical.has(w) || lex.ehrbench.has(w)]);
    }
    expect(lex.safe.has('okafor')).toBe(false);
  });
});

describe('word classes', () => {
  it.each([
    ['tolerating', 'safe'],
    ['levophed', 'safe'],
    ['non-tender', 'safe'],
    ['rose', 'ambiguous'],
    ['okafor', 'name'],
    ['secreations', 'misspelt'],
    ['zorbanna', 'unknown'],
  ])('%s is %s', (word, cls) => {
    expect(vocabulary().facts(word).cls).toBe(cls);
  });
});

describe('the name-shape table', () => {
  it('matches the lexicons it is derived from (run "npm run lexicons:name-shape" after changing them)', () => {
    const { names, others } = trainingWords();
    const rebuilt = renderNameShape(trainNameShape(names, others));
    expect(rebuilt === readFileSync(join(LEXICON_DIR, NAME_SHAPE_FILE), 'utf8')).toBe(true);
  });

  it('reads names as names and coinages as words', () => {
    for (const w of ['przybylski', 'okafor', 'kowalczyk']) expect({ w, shape: nameShape(w) > 0.3 }).toEqual({ w, shape: true });
    for (const w of ['homecycle', 'trulicity', 'tmax']) expect({ w, shape: nameShape(w) < 0 }).toEqual({ w, shape: true });
  });
});
