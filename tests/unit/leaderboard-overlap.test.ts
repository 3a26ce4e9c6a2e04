/**
 * Two stumbles of `ehrbench leaderboard`: a ranking of models that share no benchmark (each column has
 * one value, so nothing is compared), and category labels cut short in the heat map.
 */
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { heatmapSvg, leaderboardOf, toScoreTable, unrankedModels, type LeaderboardInput } from '../../src/export/leaderboard';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/db';

const DISJOINT: LeaderboardInput = {
  benchmarks: [
    { id: 'a', lowerIsBetter: false, category: 'Clinical Decision Support' },
    { id: 'b', lowerIsBetter: false, category: 'Clinical Decision Support' },
    { id: 'c', lowerIsBetter: false, category: 'Patient Communication and Education' },
  ],
  models: ['m1', 'm2', 'm3'],
  scores: { m1: { a: 0.5, b: 0.7 }, m2: { a: 0.6 }, m3: { c: 0.9, a: null } },
};

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {} };
  const code = await main(args, io);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

describe('a ranking needs overlapping benchmarks', () => {
  it('names the models that share no scored benchmark with any other', () => {
    expect(unrankedModels(toScoreTable(DISJOINT, 'test'))).toEqual(['m3']);
    expect(unrankedModels(toScoreTable({ ...DISJOINT, models: ['m1'], scores: { m1: { a: 1 } } }, 'test'))).toEqual([]);
  });

  it('is refused by the command, naming them', async () => {
    const file = join(tempDir('overlap'), 'scores.json');
    writeFileSync(file, JSON.stringify(DISJOINT));
    const r = await cli(['leaderboard', '--scores', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `ehrbench: ${file}: m3 shares no scored benchmark with any other model, and a ranking compares models on the same benchmarks; give it a score on a benchmark another model has, or leave it out\n`,
    );
  });
});

describe('the heat map', () => {
  it('writes every category label in full, in a band wide enough for it', () => {
    const input: LeaderboardInput = {
      benchmarks: [
        { id: 'x', lowerIsBetter: false, category: 'Clinical Note Generation' },
        { id: 'y', lowerIsBetter: false, category: 'Medical Research Assistance' },
        { id: 'z', lowerIsBetter: false, category: 'Administration and Workflow' },
      ],
      models: ['m1', 'm2'],
      scores: { m1: { x: 0.1, y: 0.2, z: 0.3 }, m2: { x: 0.3, y: 0.2, z: 0.1 } },
    };
    const table = toScoreTable(input, 'test');
    const svg = heatmapSvg(table, leaderboardOf(table));
    const bands = [...svg.matchAll(/<rect x="([\d.]+)" y="\d+" width="([\d.]+)" height="16" fill="#f0f0f0"\/>\n<text x="[\d.]+" y="\d+" font-weight="bold"><title>[^<]*<\/title>([^<]*)<\/text>/g)];
    expect(bands.map((m) => m[3])).toEqual(['Clinical Note Generation', 'Medical Research Assistance', 'Administration and Workflow']);
    expect(svg).not.toContain('\u2026');
    // Bands do not overlap one another.
    const spans = bands.map((m) => [Number(m[1]), Number(m[1]) + Number(m[2])] as const);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
    // Each band is wide enough for its label (6.6 px a character at 11 px).
    bands.forEach((m) => expect(Number(m[2])).toBeGreaterThanOrEqual((m[3] as string).length * 6.6));
  });
});

describe('the heat map of a single benchmark', () => {
  it('is wide enough for its legend (a narrow table does not cut it off)', () => {
    const table = toScoreTable({ benchmarks: [{ id: 'b', displayName: 'B', lowerIsBetter: false }], models: ['m'], scores: { m: { b: 0.5 } } }, 'inline');
    const svg = heatmapSvg(table, leaderboardOf(table));
    const width = Number(svg.match(/<svg [^>]*width="([\d.]+)"/)![1]);
    const label = [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+">no direction<\/text>/g)][0]!;
    expect(Number(label[1]) + 'no direction'.length * 6.6).toBeLessThanOrEqual(width);
  });
});
