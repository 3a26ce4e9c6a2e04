/**
 * ROUGE stems as rouge_score does, with NLTK's PorterStemmer (NLTK_EXTENSIONS mode). The expected stems
 * of every distinct token of the shipped ACI-Bench test data (6,058) were written by NLTK itself
 * (tests/fixtures/porter/generate.py) and are committed; no Python runs here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessMetric, rougeTokens } from '../../src/metrics';
import { porterStem } from '../../src/metrics/porter';
import { ROOT } from '../helpers/paths';

const fixture = JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', 'porter', 'aci-bench-nltk.json'), 'utf8')) as { mode: string; stems: Record<string, string> };

describe("NLTK's Porter stemmer", () => {
  it('stems every ACI-Bench word as NLTK does (6,058 words)', () => {
    const words = Object.keys(fixture.stems);
    expect([fixture.mode, words.length]).toEqual(['NLTK_EXTENSIONS', 6058]);
    const differ = words.filter((w) => porterStem(w) !== fixture.stems[w]).map((w) => `${w}: ${porterStem(w)} (NLTK ${fixture.stems[w]})`);
    expect(differ).toEqual([]);
  });

  it('keeps NLTK_EXTENSIONS where it departs from the 1980 algorithm', () => {
    const cases: Record<string, string> = {
      dies: 'die',
      died: 'die',
      lying: 'lie',
      dying: 'die',
      skies: 'sky',
      news: 'news',
      flies: 'fli',
      spied: 'spi',
      innings: 'inning',
      proceed: 'proceed',
      generalization: 'gener',
      geology: 'geolog',
    };
    expect(Object.fromEntries(Object.keys(cases).map((w) => [w, porterStem(w)]))).toEqual(cases);
  });
});

describe("ROUGE's tokens, as rouge_score's tokenize(text, PorterStemmer())", () => {
  it('stems days, eyes and ages as rouge_score does, where the 1980 algorithm gave dai, ey and ag', () => {
    expect(rougeTokens('Two days; both eyes, all ages, always away, birthday.')).toEqual(['two', 'day', 'both', 'eye', 'all', 'age', 'alway', 'away', 'birthday']);
  });

  it('scores ROUGE-1 on the stems: "eyes" against "eye" is a match', () => {
    const rouge1 = inProcessMetric('rouge_1');
    if (!rouge1) throw new Error('no rouge_1');
    const instance = { key: 'k', vars: {}, references: ['redness in the left eye for two day'] };
    expect(rouge1.score('redness in the left eyes for two days', instance, { mode: 'helm' })).toBe(1);
  });
});
