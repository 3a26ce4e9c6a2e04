/**
 * SCT-Bench's scoring as the MedHELM package computes it (sct_bench_metrics.py): the parse of
 * "Rating: X" with its quirks, sct_score and sct_expert_set_membership against expert panels worked
 * out by hand (a clear mode, ties, a unanimous panel, ratings nobody chose, shares), 0 for an answer
 * that does not parse; and the records as the scenario reads them (tests/fixtures/medhelm-package,
 * synthetic), MedXpertQA's lettered options included.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog, instancesOf, type Instance } from '../../src/catalog';
import { scoreInstance } from '../../src/metrics';
import { expertSetMembership, parseSctRating, sctScore } from '../../src/metrics/sct';
import { tempDir } from '../helpers/db';
import { failure } from '../helpers/errors';
import { ROOT } from '../helpers/paths';

const FIXTURES = join(ROOT, 'tests', 'fixtures', 'medhelm-package');
const METRICS = ['sct_score', 'sct_expert_set_membership'];

/** An SCT instance with the panel's weights of -2, -1, 0, +1, +2. */
function sct(panel: number[]): Instance {
  const [expertMinus2, expertMinus1, expertZero, expertPlus1, expertPlus2] = panel;
  return { key: 'k', vars: {}, references: [], extra: { expertMinus2, expertMinus1, expertZero, expertPlus1, expertPlus2 } } as Instance;
}

const both = (answer: string, panel: number[]) => scoreInstance(METRICS, sct(panel), answer, {}, 'corrected');

describe('the rating in an answer, read as parse_sct_rating reads it', () => {
  it.each([
    ['Rating: +1', 1],
    ['Rating: -2', -2],
    ['Rating: 0', 0],
    ['Rating: +2\nThe new finding makes the hypothesis much more likely.', 2],
    ['Rating:  -1', -1],
    ['Rating: **+1**', 1],
    ['I first thought +2. Rating: -1', -1],
    ['Rating: -1 or perhaps 0', -1], // only five characters are read: "-1 or"
    ['Rating: 00', 0], // int("00") is 0
    ['Rating: 10', 0], // "1" alone is no token, the "0" is
    ['Rating: 🙂🙂🙂+1', 1], // five code points, as Python slices a str
  ])('%j -> %j', (answer, rating) => {
    expect(parseSctRating(answer)).toBe(rating);
  });

  it.each([
    ['Rating: 1'], // an unsigned 1 or 2 is no token
    ['Rating: 2'],
    ['Rating: -1/0'], // "-10": out of range
    ['Rating: 0,+1'], // "0+1": not a number
    ['Rating: +20'],
    ['rating: +1'],
    ['Rating:+1'],
    ['Rating -1'],
    ['Rating: Rating: +1'], // the text between the first and the second "Rating: " is empty
    ['Rating: the finding strongly supports it, +2'],
    ['+1'],
    [''],
  ])('%j reads as no rating', (answer) => {
    expect(parseSctRating(answer)).toBeUndefined();
  });
});

describe('sct_score and sct_expert_set_membership against an expert panel', () => {
  it('a clear mode (0, 1, 3, 6, 0 experts): the weight of the rating over the mode, and whether anyone chose it', () => {
    const panel = [0, 1, 3, 6, 0];
    expect([-2, -1, 0, 1, 2].map((r) => sctScore(panel, r))).toEqual([0, 1 / 6, 0.5, 1, 0]);
    expect([-2, -1, 0, 1, 2].map((r) => expertSetMembership(panel, r))).toEqual([0, 1, 1, 1, 0]);
  });

  it('a tie at the top (0, 0, 4, 4, 2): both tied ratings score 1', () => {
    expect(both('Rating: 0', [0, 0, 4, 4, 2])).toEqual({ sct_score: 1, sct_expert_set_membership: 1 });
    expect(both('Rating: +1', [0, 0, 4, 4, 2])).toEqual({ sct_score: 1, sct_expert_set_membership: 1 });
    expect(both('Rating: +2', [0, 0, 4, 4, 2])).toEqual({ sct_score: 0.5, sct_expert_set_membership: 1 });
    expect(both('Rating: -1', [0, 0, 4, 4, 2])).toEqual({ sct_score: 0, sct_expert_set_membership: 0 });
  });

  it('a unanimous panel (all 7 chose +2): full credit there, none one step away', () => {
    expect(both('Rating: +2', [0, 0, 0, 0, 7])).toEqual({ sct_score: 1, sct_expert_set_membership: 1 });
    expect(both('Rating: +1', [0, 0, 0, 0, 7])).toEqual({ sct_score: 0, sct_expert_set_membership: 0 });
  });

  it('a panel given as shares (0.5, 0.3, 0.2, 0, 0) scores as the same panel in counts', () => {
    expect(both('Rating: -1', [0.5, 0.3, 0.2, 0, 0]).sct_score).toBeCloseTo(0.6, 12);
    expect(both('Rating: -1', [5, 3, 2, 0, 0]).sct_score).toBeCloseTo(0.6, 12);
    expect(both('Rating: 0', [0.5, 0.3, 0.2, 0, 0])).toEqual({ sct_score: 0.4, sct_expert_set_membership: 1 });
  });

  it('a panel without any weight scores 0, as max_weight == 0 does in the package', () => {
    expect(both('Rating: 0', [0, 0, 0, 0, 0])).toEqual({ sct_score: 0, sct_expert_set_membership: 0 });
  });

  it('an answer that does not parse scores 0 on both, even where the panel agrees with what it meant', () => {
    expect(both('Rating: 2', [0, 0, 0, 0, 7])).toEqual({ sct_score: 0, sct_expert_set_membership: 0 });
    expect(both('Strongly increases the likelihood.', [0, 0, 0, 0, 7])).toEqual({ sct_score: 0, sct_expert_set_membership: 0 });
    expect(both('', [0, 1, 3, 6, 0])).toEqual({ sct_score: 0, sct_expert_set_membership: 0 });
  });

  it('scores the same in helm mode: there is no HELM bug to correct', () => {
    for (const answer of ['Rating: +1', 'Rating: -1', 'Rating: 1']) {
      expect(scoreInstance(METRICS, sct([0, 1, 3, 6, 0]), answer, {}, 'helm')).toEqual(both(answer, [0, 1, 3, 6, 0]));
    }
  });

  it('refuses to score an instance without its panel instead of scoring it 0', () => {
    const bare: Instance = { key: 'k', vars: {}, references: ['+1'] };
    expect(() => scoreInstance(METRICS, bare, 'Rating: +1', {}, 'corrected')).toThrow(/expert panel/);
  });
});

async function read(id: string, dir: string, file: string, binding: Record<string, unknown> = {}): Promise<Instance[]> {
  const siteFile = join(dir, 'site-data.json');
  writeFileSync(siteFile, JSON.stringify({ benchmarks: { [id]: { source: { type: file.endsWith('.csv') ? 'csv' : 'jsonl', path: file }, ...binding } } }));
  const out: Instance[] = [];
  for await (const i of instancesOf(Catalog.load([], { siteDataFile: siteFile }).get(id))) out.push(i);
  return out;
}

describe("SCT-Bench records, as the package's scenario reads them", () => {
  it('fills the three parts of the case, keeps the panel and the most chosen rating (the lower on a tie), and leaves out a case without its finding', async () => {
    const dir = tempDir('sct');
    copyFileSync(join(FIXTURES, 'sct_bench.csv'), join(dir, 'sct.csv'));
    const got = await read('sct_bench', dir, 'sct.csv');
    expect(got.map((i) => [i.key, i.references[0], i.extra])).toEqual([
      ['sct-peaked', '+1', { expertMinus2: 0, expertMinus1: 1, expertZero: 3, expertPlus1: 6, expertPlus2: 0 }],
      ['sct-tie', '0', { expertMinus2: 0, expertMinus1: 0, expertZero: 4, expertPlus1: 4, expertPlus2: 2 }],
      ['sct-unanimous', '+2', { expertMinus2: 0, expertMinus1: 0, expertZero: 0, expertPlus1: 0, expertPlus2: 7 }],
      ['sct-shares', '-2', { expertMinus2: 0.5, expertMinus1: 0.3, expertZero: 0.2, expertPlus1: 0, expertPlus2: 0 }],
    ]);
    expect(got[0]?.vars).toEqual({
      scenario: expect.stringMatching(/^A 64-year-old man .* 104 per minute\.$/),
      hypothesis: 'If you were thinking of: pulmonary embolism',
      additional_information: 'And then you find: a normal D-dimer, measured with a high-sensitivity assay',
    });
  });

  it('refuses a panel weight that is empty, negative or not a number, naming the record and the column, never the value', async () => {
    const dir = tempDir('sct');
    const header = 'question_id,sct_stem,question,additional_info,-2,-1,0,1,2\n';
    for (const [weights, column] of [
      ['0,1,,6,0', '"0"'],
      ['0,-1,3,6,0', '"-1"'],
      ['0,1,3,six,0', '"1"'],
      ['0,1,3,6,nan', '"2"'],
    ] as const) {
      writeFileSync(join(dir, 'bad.csv'), `${header}q1,Case text kept private,Hypothesis kept private,Finding kept private,${weights}\n`);
      const err = await failure(read('sct_bench', dir, 'bad.csv'));
      expect(err.code).toBe('dataset.bad-column');
      expect(err.message).toBe(`${join(dir, 'bad.csv')}: record 1: column ${column} must be the expert panel's weight of that rating, a number of at least 0`);
      expect(err.message).not.toMatch(/private|six|nan/);
    }
  });
});

describe("MedXpertQA's records", () => {
  it("reads the dataset's own layout: options keyed A, B, C... and the answer letter in label", async () => {
    const dir = tempDir('medxpert');
    copyFileSync(join(FIXTURES, 'medxpert_qa_text.jsonl'), join(dir, 'mx.jsonl'));
    const got = await read('medxpert_qa_text', dir, 'mx.jsonl', { columns: { answer: 'label' } });
    expect(got.map((i) => [i.key, i.choices?.length, i.references[0]])).toEqual([
      ['mx-1', 5, 'Levothyroxine'],
      ['mx-2', 5, 'Central retinal artery'],
      ['mx-3', 5, 'Dopamine'],
    ]);
    expect(got[2]?.choices).toEqual(['Acetylcholine', 'Serotonin', 'Dopamine', 'GABA', 'Glutamate']);
  });

  it('refuses options keyed otherwise than A, B, C... in order, as it cannot letter them as HELM does', async () => {
    const dir = tempDir('medxpert');
    for (const options of [
      { B: 'x', A: 'y' },
      { A: 'x', C: 'y' },
      { a: 'x', b: 'y' },
    ]) {
      writeFileSync(join(dir, 'mx.jsonl'), JSON.stringify({ id: 'q', question: 'q', options, label: 'A' }) + '\n');
      const err = await failure(read('medxpert_qa_text', dir, 'mx.jsonl', { columns: { answer: 'label' } }));
      expect(err.code).toBe('dataset.bad-column');
      expect(err.message).toContain('column "options" must be a list of at least two options');
    }
  });
});
