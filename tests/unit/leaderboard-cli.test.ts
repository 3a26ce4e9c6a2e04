/** `ehrbench leaderboard`: the table, --json against the output schema, --svg as well-formed XML. */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SaxesParser } from 'saxes';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { formatSchemaErrors, validatorFor } from '../../src/schema/validate';
import { heatmapSvg, leaderboardOf, OUTPUT_SCHEMA, toScoreTable, type Leaderboard, type LeaderboardInput } from '../../src/export/leaderboard';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

const MEDHELM = join(ROOT, 'tests', 'fixtures', 'leaderboard', 'medhelm-2025-05.json');
const HOSTILE = `<script>alert("x")</script> & 'co' ]]>`;

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {} };
  const code = await main(args, io);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

function writeScores(input: unknown): string {
  const file = join(tempDir('leaderboard'), 'scores.json');
  writeFileSync(file, JSON.stringify(input));
  return file;
}

/** Parses with a strict XML parser; returns the text content and the element names, or throws. */
function parseXml(xml: string): { text: string[]; elements: string[]; attributes: string[] } {
  const parser = new SaxesParser({ xmlns: true });
  const text: string[] = [];
  const elements: string[] = [];
  const attributes: string[] = [];
  parser.on('error', (e) => {
    throw e;
  });
  parser.on('text', (t) => text.push(t));
  parser.on('opentag', (tag) => {
    elements.push(tag.name);
    for (const a of Object.values(tag.attributes)) attributes.push(typeof a === 'string' ? a : a.value);
  });
  parser.write(xml).close();
  return { text, elements, attributes };
}

const SMALL: LeaderboardInput = {
  benchmarks: [
    { id: 'note_gen', displayName: 'Note <gen> & "co"', lowerIsBetter: false, range: [1, 5], category: 'Clinical Note Generation' },
    { id: 'em', lowerIsBetter: false, category: 'Clinical Decision Support' },
    { id: 'runtime', lowerIsBetter: true, range: [0, 60], category: 'Clinical Decision Support' },
    { id: 'tokens', lowerIsBetter: null, range: [0, 100000] },
  ],
  models: ['model-a', HOSTILE, '__proto__'],
  scores: {
    'model-a': { note_gen: 4.5, em: 0.7, runtime: 12, tokens: 5000 },
    [HOSTILE]: { note_gen: 3, em: 0.9, runtime: 30, tokens: null },
    ['__proto__']: { em: 0.1 },
  },
};

describe('ehrbench leaderboard', () => {
  it('prints a table ranked by mean win rate with per-category averages', async () => {
    const r = await cli(['leaderboard', '--scores', MEDHELM]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^rank\s+model\s+win rate\s+win SD\s+macro avg\s+macro SD\s+benchmarks$/);
    expect(lines[2]).toMatch(/^1\s+DeepSeek R1\s+0\.66\d\s+0\.099\s+0\.750\s+0\.220\s+35$/);
    expect(lines[3]).toMatch(/^2\s+o3-mini \(2025-01-31\)\s+0\.641\s/);
    expect(r.stdout).toContain('Macro average per category');
    expect(r.stdout).toMatch(/Clinical Decision Support\s+Clinical Note Generation\s+Patient Communication and Education/);
  });

  it('--json: rows sorted by mean win rate, valid against the output schema', async () => {
    const r = await cli(['leaderboard', '--scores', MEDHELM, '--json']);
    expect(r.code).toBe(0);
    const board = JSON.parse(r.stdout) as Leaderboard;
    const validate = validatorFor(OUTPUT_SCHEMA);
    expect(formatSchemaErrors(validate(board) ? [] : validate.errors)).toEqual([]);
    expect(board.models).toHaveLength(9);
    expect(board.models.map((m) => m.rank)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const rates = board.models.map((m) => m.meanWinRate!);
    expect([...rates].sort((a, b) => b - a)).toEqual(rates);
    expect(board.models[0]).toMatchObject({ model: 'DeepSeek R1', winRateBenchmarks: 35, macroBenchmarks: 35, winSdOpponents: 8 });
    expect(board.models[0]!.categories.map((c) => [c.category, c.macroBenchmarks])).toEqual([
      ['Clinical Decision Support', 10],
      ['Clinical Note Generation', 6],
      ['Patient Communication and Education', 8],
      ['Medical Research Assistance', 6],
      ['Administration and Workflow', 5],
    ]);
  });

  it('--json on awkward names: a lower-is-better column, a null direction, "__proto__" as a model', async () => {
    const r = await cli(['leaderboard', '--scores', writeScores(SMALL), '--json']);
    expect(r.code).toBe(0);
    const board = JSON.parse(r.stdout) as Leaderboard;
    const validate = validatorFor(OUTPUT_SCHEMA);
    expect(formatSchemaErrors(validate(board) ? [] : validate.errors)).toEqual([]);
    // note_gen: model-a 1, HOSTILE 0. em: __proto__ 0, model-a 0.5, HOSTILE 1. runtime (lower
    // better): HOSTILE 0, model-a 1. model-a (1 + 0.5 + 1) / 3, HOSTILE (0 + 1 + 0) / 3, __proto__ 0.
    expect(board.models.map((m) => [m.model, m.meanWinRate])).toEqual([
      ['model-a', 2.5 / 3],
      [HOSTILE, 1 / 3],
      ['__proto__', 0],
    ]);
    expect(board.benchmarks.find((b) => b.id === 'tokens')).toMatchObject({ inWinRate: false, category: null, values: 1 });
  });

  it('--svg writes a well-formed standalone SVG with every name escaped', async () => {
    const dir = tempDir('leaderboard');
    const out = join(dir, 'heat.svg');
    const r = await cli(['leaderboard', '--scores', writeScores(SMALL), '--svg', out]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`wrote heat map to ${out}\n`);
    const svg = readFileSync(out, 'utf8');
    const { text, elements, attributes } = parseXml(svg);
    expect(elements[0]).toBe('svg');
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    // The hostile name is text, not markup: no <script> element, and it reads back verbatim.
    expect(elements).not.toContain('script');
    expect(text).toContain(HOSTILE);
    expect(text).toContain('Note <gen> & "co"');
    expect(text.some((t) => t.startsWith(`${HOSTILE} / Note <gen> & "co": 3`))).toBe(true);
    // Standalone: nothing is fetched from elsewhere.
    expect(attributes.filter((a) => /^(https?:|file:|\/\/)/.test(a))).toEqual(['http://www.w3.org/2000/svg']);
    // Rows in leaderboard order, one cell per benchmark and model.
    const modelLabels = text.filter((t) => SMALL.models.includes(t));
    expect(modelLabels).toEqual(['model-a', HOSTILE, '__proto__']);
    expect(elements.filter((e) => e === 'rect').length).toBeGreaterThanOrEqual(SMALL.models.length * SMALL.benchmarks.length);
    expect(text).toContain('runtime (lower is better)');
  });

  it('keeps the SVG well-formed when a name holds a character XML forbids (a lone surrogate)', () => {
    const input = { benchmarks: [{ id: 'em', lowerIsBetter: false }], models: ['odd\uD800name', 'ok'], scores: { 'odd\uD800name': { em: 0.5 }, ok: { em: 0.25 } } };
    const table = toScoreTable(input, 'test');
    const { text } = parseXml(heatmapSvg(table, leaderboardOf(table)));
    expect(text).toContain('odd\uFFFDname');
  });

  it('--svg on the MedHELM table groups 35 columns under five categories', async () => {
    const out = join(tempDir('leaderboard'), 'medhelm.svg');
    expect((await cli(['leaderboard', '--scores', MEDHELM, '--svg', out, '--json'])).code).toBe(0);
    const { text } = parseXml(readFileSync(out, 'utf8'));
    for (const c of ['Clinical Decision Support', 'Clinical Note Generation', 'Patient Communication and Education', 'Medical Research Assistance', 'Administration and Workflow']) {
      expect(text).toContain(c);
    }
    // One tooltip per cell: model / benchmark: value.
    expect(text.filter((t) => / \/ .+: /.test(t))).toHaveLength(9 * 35);
  });

  it('reports a bad scores file in one line naming the file and the JSON path', async () => {
    const file = writeScores({ ...SMALL, scores: { ...SMALL.scores, ghost: { em: 0.5 } } });
    const r = await cli(['leaderboard', '--scores', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: ${file}: /scores/ghost: unknown model (not in /models); add it to models or remove its scores\n`);
    expect(r.stdout).toBe('');
  });

  it('reports a missing file, invalid JSON and an unwritable SVG path in one line', async () => {
    const dir = tempDir('leaderboard');
    const missing = join(dir, 'nope.json');
    expect((await cli(['leaderboard', '--scores', missing])).stderr).toBe(`ehrbench: ${missing}: cannot read (ENOENT); check the path and permissions\n`);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"benchmarks": [');
    const r = await cli(['leaderboard', '--scores', broken]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^ehrbench: ${broken.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not valid JSON`));
    const badOut = join(dir, 'no-such-dir', 'heat.svg');
    const w = await cli(['leaderboard', '--scores', MEDHELM, '--svg', badOut]);
    expect(w.code).toBe(1);
    expect(w.stderr).toBe(`ehrbench: ${badOut}: cannot write the heat map (ENOENT); check the path and permissions\n`);
    expect(existsSync(badOut)).toBe(false);
  });

  it('documents its options in --help (the built binary: yargs prints help on the process stdout)', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'leaderboard', '--help'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('--scores');
    expect(r.stdout).toContain('--svg');
  });

  it('requires --scores or --runs, not both', async () => {
    const r = await cli(['leaderboard']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ehrbench: give either --scores FILE or --runs ID\.\.\.; see --help\n$/);
    expect((await cli(['leaderboard', '--scores', MEDHELM, '--runs', 'x'])).code).toBe(2);
  });
});
