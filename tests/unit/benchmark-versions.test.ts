/**
 * A built-in benchmark's version says what it sends and how it scores: the same version on two runs
 * means the same prompt, the same judge prompt and the same scoring settings, so their scores can be
 * set side by side. Issue 30 rewrote every prompt without moving a version; this test makes that
 * impossible to repeat. tests/fixtures/benchmark-versions.json keeps, version by version, the
 * fingerprint of each benchmark's prompt template, judge prompt, and the definition's prompt, metrics,
 * jury, rubric, split and lowerIsBetter (descriptions and HELM notes can change freely).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchmarkDefinition } from '../../src/catalog';
import { ROOT } from '../helpers/paths';

interface Recorded {
  version: string;
  sha256: string;
}

const BENCHMARKS = join(ROOT, 'benchmarks');
const HISTORY = (JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', 'benchmark-versions.json'), 'utf8')) as { benchmarks: Record<string, Recorded[]> }).benchmarks;

const builtIns = () => readdirSync(BENCHMARKS).filter((d) => existsSync(join(BENCHMARKS, d, 'benchmark.json')));

/** What the benchmark sends and how it scores, as one sha256 (each part named and length-prefixed). */
function fingerprint(id: string): Recorded {
  const dir = join(BENCHMARKS, id);
  const d = JSON.parse(readFileSync(join(dir, 'benchmark.json'), 'utf8')) as BenchmarkDefinition;
  const h = createHash('sha256');
  const part = (name: string, bytes: Buffer) => {
    h.update(`${name}\0${bytes.length}\0`);
    h.update(bytes);
  };
  part('prompt', readFileSync(join(dir, d.prompt.templateFile)));
  if (d.jury?.promptFile) part('jury', readFileSync(join(dir, d.jury.promptFile)));
  const scoring = { prompt: d.prompt, metrics: d.metrics, jury: d.jury ?? null, rubric: d.rubric ?? null, split: d.split, lowerIsBetter: d.lowerIsBetter };
  part('definition', Buffer.from(JSON.stringify(scoring)));
  return { version: d.version, sha256: h.digest('hex') };
}

/** -1, 0 or 1 as a is before, the same as or after b (major.minor.patch, numerically). */
function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return Math.sign(x[i]! - y[i]!);
  return 0;
}

describe('built-in benchmark versions', () => {
  it('every built-in benchmark has a recorded history, and the history names no benchmark that is gone', () => {
    expect(Object.keys(HISTORY).sort()).toEqual(builtIns().sort());
  });

  it.each(builtIns())('%s: what it sends and scores is what its version recorded', (id) => {
    const history = HISTORY[id] ?? [];
    // Failing here: prompt.txt, jury.txt or a scoring setting changed. Move the version (a minor step
    // at least) and add {version, sha256} to tests/fixtures/benchmark-versions.json.
    expect(fingerprint(id)).toEqual(history[history.length - 1]);
  });

  it.each(Object.keys(HISTORY))('%s: each recorded change moved the version forward', (id) => {
    const history = HISTORY[id]!;
    for (let i = 1; i < history.length; i++) {
      expect(history[i]!.sha256).not.toBe(history[i - 1]!.sha256);
      expect(compareVersions(history[i]!.version, history[i - 1]!.version)).toBe(1);
    }
  });
});

it('compares versions numerically, not as text', () => {
  expect(compareVersions('1.10.0', '1.9.0')).toBe(1);
  expect(compareVersions('1.1.0', '1.1.0')).toBe(0);
  expect(compareVersions('1.0.9', '1.1.0')).toBe(-1);
});
