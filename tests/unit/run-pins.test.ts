/**
 * Pins (src/contracts/pins.ts, src/runs/pins.ts): which differences make two runs incomparable, and the
 * scorer and judge-set hashes move when (and only when) what they pin moves.
 */
import { pinDifferenceLine, pinDifferences, type RunPins } from '../../src/contracts';
import { scorerPin } from '../../src/metrics';
import { judgesPin } from '../../src/runs/pins';

const base: RunPins = { dataset: 'a'.repeat(64), definition: 'b'.repeat(64), template: 'c'.repeat(64), scorer: 'd'.repeat(64), judges: null };
const jury = { judgesAsked: ['j1', 'j2'], judgesLeftOut: [], sameFamily: 'exclude' as const, floor: 'empty-answer-or-refusal' as const };

describe('pin differences', () => {
  it('finds each differing pin per benchmark, and only between known values', () => {
    const runs = [
      { runId: 'r1', benchmarkId: 'x', pins: base },
      { runId: 'r2', benchmarkId: 'x', pins: { ...base, template: 'e'.repeat(64), scorer: 'unknown' } },
      { runId: 'r3', benchmarkId: 'y', pins: base },
      { runId: 'r4', benchmarkId: 'y', pins: { ...base, dataset: 'unknown' } },
    ];
    const diffs = pinDifferences(runs);
    expect(diffs.map((d) => [d.benchmarkId, d.differs])).toEqual([['x', ['template']]]);
    expect(pinDifferenceLine(diffs[0] as (typeof diffs)[number])).toBe(`x: runs that used different prompt templates: template (run r1 cccccccccccc, run r2 eeeeeeeeeeee)`);
  });

  it('tells a jury benchmark from one without (null against a hash differs)', () => {
    expect(
      pinDifferences([
        { runId: 'r1', benchmarkId: 'x', pins: base },
        { runId: 'r2', benchmarkId: 'x', pins: { ...base, judges: 'f'.repeat(64) } },
      ])[0]?.differs,
    ).toEqual(['judges']);
  });
});

describe('scorer pin', () => {
  it('depends on the scoring mode and the metrics, in order, and on nothing else', () => {
    const p = scorerPin(['exact_match', 'quasi_exact_match'], 'corrected');
    expect(p).toMatch(/^[0-9a-f]{64}$/);
    expect(scorerPin(['exact_match', 'quasi_exact_match'], 'corrected')).toBe(p);
    expect(scorerPin(['exact_match', 'quasi_exact_match'], 'helm')).not.toBe(p);
    expect(scorerPin(['exact_match'], 'corrected')).not.toBe(p);
    // An unknown metric still pins its name.
    expect(scorerPin(['no_such_metric'], 'corrected')).not.toBe(scorerPin(['another_unknown'], 'corrected'));
  });
});

describe('judge-set pin', () => {
  const judges = [
    { id: 'j1', model: 'gpt-4o', deployment: null },
    { id: 'j2', model: 'llama-3', deployment: 'llama' },
  ];
  it('is null without a jury and moves when a judge serves another model', () => {
    expect(judgesPin(undefined, judges)).toBeNull();
    const p = judgesPin(jury, judges);
    expect(p).toMatch(/^[0-9a-f]{64}$/);
    expect(judgesPin(jury, [judges[0] as (typeof judges)[number], { id: 'j2', model: 'llama-3.1', deployment: 'llama' }])).not.toBe(p);
    expect(judgesPin({ ...jury, sameFamily: 'allow' }, judges)).not.toBe(p);
    expect(judgesPin(jury, [...judges].reverse())).not.toBe(p);
  });
});
