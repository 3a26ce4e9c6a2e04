/**
 * Disclosure control on crafted small groups: minimum cell size, count ranges, complementary
 * suppression (per cell and per metric), intervals only where n >= k. That values and intervals do
 * not pin the exact count is tests/unit/export-precision.test.ts.
 */
import { metricCell, rangeOf, releasedCount, subgroupCells, suppressPartition, wilson, type DisclosureSettings, type MetricStats } from '../../src/export';

const S: DisclosureSettings = { k: 11, width: 10, decimals: 3 };

function binaryStats(name: string, n: number, successes: number): MetricStats {
  return { name, n, sum: successes, unit: true };
}

describe('released counts', () => {
  it('releases 0 as 0, hides 1..k-1, and shows every other count as a range at or above k that contains it', () => {
    for (const s of [S, { k: 20, width: 25, decimals: 3 }]) {
      for (let n = 0; n <= 2000; n++) {
        const c = releasedCount(n, s);
        if (n === 0) expect(c).toEqual({ low: 0, high: 0 });
        else if (n < s.k) expect(c).toEqual({ suppressed: '<k' });
        else {
          const r = c as { low: number; high: number };
          expect(r.low).toBeGreaterThanOrEqual(s.k);
          expect(r.low).toBeLessThanOrEqual(n);
          expect(r.high).toBeGreaterThanOrEqual(n);
          expect(r.high - r.low).toBeLessThan(s.width);
        }
      }
    }
  });

  it('gives every count of one bucket the same range, so the exact count is not shown', () => {
    expect(rangeOf(11, S)).toEqual({ low: 11, high: 19 });
    expect(rangeOf(19, S)).toEqual({ low: 11, high: 19 });
    expect(rangeOf(40, S)).toEqual(rangeOf(49, S));
    expect(rangeOf(47, S)).toEqual({ low: 40, high: 49 });
  });
});

describe('complementary suppression', () => {
  it.each([
    [
      [30, 20, 7],
      ['released', 'complementary', '<k'],
    ],
    [
      [7, 53],
      ['<k', 'complementary'],
    ],
    [
      [30, 0, 7],
      ['complementary', 'released', '<k'],
    ],
    [
      [30, 20, 7, 5],
      ['released', 'released', '<k', '<k'],
    ],
    [
      [12, 40],
      ['released', 'released'],
    ],
    [
      [0, 0, 25],
      ['released', 'released', 'released'],
    ],
    [
      [7, 0, 0],
      ['<k', 'released', 'released'],
    ],
    // Two hidden cells of 5 are a group of 10 (the total minus the 30): the 30 is hidden too.
    [
      [30, 5, 5],
      ['complementary', '<k', '<k'],
    ],
    [
      [40, 30, 5, 5],
      ['released', 'complementary', '<k', '<k'],
    ],
  ])('partition %j -> %j', (counts, expected) => {
    expect(suppressPartition(counts, 11)).toEqual(expected);
  });

  it('never leaves exactly one hidden cell when the total is released (so none is total minus the rest)', () => {
    let seed = 12345;
    const rand = (max: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % max;
    };
    for (let trial = 0; trial < 5000; trial++) {
      const counts = Array.from({ length: 1 + rand(7) }, () => (rand(3) === 0 ? rand(11) : rand(80)));
      const status = suppressPartition(counts, 11);
      const total = counts.reduce((a, b) => a + b, 0);
      const hidden = counts.filter((n, i) => n > 0 && status[i] !== 'released');
      counts.forEach((n, i) => {
        if (status[i] === 'released') expect(n === 0 || n >= 11).toBe(true);
      });
      if (total >= 11) expect(hidden.length).not.toBe(1);
      // Nor a group of fewer than k hidden instances: the total minus the released cells is 0 or >= k.
      const hiddenSum = hidden.reduce((a, b) => a + b, 0);
      if (hidden.length < counts.filter((n) => n > 0).length) expect(hiddenSum === 0 || hiddenSum >= 11).toBe(true);
      // What an attacker can compute: the sum of the hidden cells, never one of them alone.
      if (hidden.length >= 2) expect(hidden.reduce((a, b) => a + b, 0)).toBe(total - counts.filter((_, i) => status[i] === 'released').reduce((a, b) => a + b, 0));
    }
  });
});

describe('subgroup cells', () => {
  const metrics = ['accuracy'];

  it('hides a 7-instance subgroup and, complementarily, the next smallest', () => {
    const labels = ['lab', 'physical', 'severity'];
    const counts = [30, 20, 7];
    const stats = [new Map([['accuracy', binaryStats('accuracy', 30, 12)]]), undefined, undefined];
    const cells = subgroupCells(labels, counts, stats, metrics, S);
    expect(cells).toEqual([
      { label: 'lab', n: { low: 30, high: 39 }, metrics: [expect.objectContaining({ name: 'accuracy', value: 0.4, n: { low: 30, high: 39 } })] },
      { label: 'physical', suppressed: 'complementary' },
      { label: 'severity', suppressed: '<k' },
    ]);
  });

  it('suppresses per metric too: a metric with fewer than k values in one cell is hidden there and in the next smallest cell', () => {
    const labels = ['a', 'b', 'c'];
    const counts = [30, 25, 20];
    // The metric applies to only 6 instances of c (null elsewhere): c's value rests on 6 instances.
    const stats = [
      new Map([
        ['accuracy', binaryStats('accuracy', 30, 15)],
        ['f1', binaryStats('f1', 30, 10)],
      ]),
      new Map([
        ['accuracy', binaryStats('accuracy', 25, 5)],
        ['f1', binaryStats('f1', 25, 10)],
      ]),
      new Map([
        ['accuracy', binaryStats('accuracy', 6, 3)],
        ['f1', binaryStats('f1', 20, 10)],
      ]),
    ];
    const cells = subgroupCells(labels, counts, stats, ['accuracy', 'f1'], S) as { label: string; metrics: { name: string; suppressed?: string; value?: number }[] }[];
    const status = (cell: number, metric: string) => {
      const m = cells[cell]?.metrics.find((x) => x.name === metric);
      return m?.suppressed ?? 'released';
    };
    expect([status(0, 'accuracy'), status(1, 'accuracy'), status(2, 'accuracy')]).toEqual(['released', 'complementary', '<k']);
    expect([status(0, 'f1'), status(1, 'f1'), status(2, 'f1')]).toEqual(['released', 'released', 'released']);
  });

  it('shows a declared label with no instances as 0', () => {
    const cells = subgroupCells(['lab', 'dosage'], [40, 0], [new Map([['accuracy', binaryStats('accuracy', 40, 20)]]), undefined], metrics, S);
    expect(cells[1]).toEqual({ label: 'dosage', n: { low: 0, high: 0 }, metrics: [{ name: 'accuracy', suppressed: '<k' }] });
  });
});

describe('metric cells and intervals', () => {
  it('hides a metric resting on fewer than k values, with no value and no interval', () => {
    expect(metricCell(binaryStats('acc', 10, 5), 'acc', S)).toEqual({ name: 'acc', suppressed: '<k' });
    expect(metricCell(undefined, 'acc', S)).toEqual({ name: 'acc', suppressed: '<k' });
  });

  it('releases a metric on k values at the resolution of its range (1/10 for 11-19) with the interval of the range', () => {
    // 4/11 = 0.364 would pin n = 11; 0.4 is what some count out of every n in 11-19 rounds to.
    expect(metricCell(binaryStats('acc', 11, 4), 'acc', S)).toEqual({ name: 'acc', value: 0.4, n: { low: 11, high: 19 }, ci95: { low: 0.143, high: 0.717 } });
    // The exact interval of 4/11 lies inside the released one.
    expect(wilson(4, 11).low).toBeGreaterThan(0.143);
    expect(wilson(4, 11).high).toBeLessThan(0.717);
  });

  it('computes the Wilson interval as the textbook does', () => {
    const w = wilson(5, 10);
    expect(w.low).toBeCloseTo(0.2366, 4);
    expect(w.high).toBeCloseTo(0.7634, 4);
    expect(wilson(0, 20).low).toBe(0);
    expect(wilson(0, 20).high).toBeCloseTo(0.1611, 4);
  });
});
