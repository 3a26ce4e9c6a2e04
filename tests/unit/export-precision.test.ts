/**
 * A released metric (count range, value, 95% interval) must not give away its exact count. The attack,
 * written out: for the released range, try every n in it and every success count k in 0..n, release
 * each (n, k) as ehrbench would, and keep those that produce exactly what was released. With values at
 * 3 decimals and the interval of the exact (n, k), that pinned n (and k) for almost every cell; the
 * released triple must leave every n of the range possible.
 */
import { metricCell, type DisclosureSettings, type MetricCell, type MetricStats } from '../../src/export';

const binary = (n: number, k: number): MetricStats => ({ name: 'acc', n, sum: k, unit: true });

/** Every (n, k) with n in [low, high], grouped by what its release looks like. */
function candidatesByRelease(low: number, high: number, s: DisclosureSettings): Map<string, Set<number>> {
  const byRelease = new Map<string, Set<number>>();
  for (let n = low; n <= high; n++) {
    for (let k = 0; k <= n; k++) {
      const key = JSON.stringify(metricCell(binary(n, k), 'acc', s));
      let ns = byRelease.get(key);
      if (!ns) byRelease.set(key, (ns = new Set()));
      ns.add(n);
    }
  }
  return byRelease;
}

/** The released count ranges from k up to `top`, as rangeOf makes them. */
function ranges(s: DisclosureSettings, top: number): [number, number][] {
  const out: [number, number][] = [];
  for (let base = 0; base + s.width - 1 <= top; base += s.width) {
    if (base + s.width - 1 < s.k) continue;
    out.push([Math.max(s.k, base), base + s.width - 1]);
  }
  return out;
}

describe.each<[string, DisclosureSettings, number[]]>([
  ['k 11, ranges of 10', { k: 11, width: 10, decimals: 3 }, [209, 1009]],
  ['k 20, ranges of 25', { k: 20, width: 25, decimals: 3 }, [1024]],
])('the exact count behind a released proportion (%s)', (_name, s, extra) => {
  const tried = [...ranges(s, 99), ...extra.map((high): [number, number] => [high - s.width + 1, high])];

  it.each(tried)('leaves every n of %i-%i possible, for every n in it and every success count', (low, high) => {
    const byRelease = candidatesByRelease(low, high, s);
    let pinned = 0;
    let releases = 0;
    for (let n = low; n <= high; n++) {
      for (let k = 0; k <= n; k++) {
        const released = metricCell(binary(n, k), 'acc', s) as Extract<MetricCell, { value: number }>;
        expect(released.n).toEqual({ low, high });
        const candidates = byRelease.get(JSON.stringify(released)) as Set<number>;
        expect(candidates.has(n)).toBe(true);
        releases++;
        if (candidates.size < 2) pinned++;
        // Not merely two: no n of the released range can be ruled out.
        expect(candidates.size).toBe(high - low + 1);
      }
    }
    expect(releases).toBeGreaterThan(0);
    expect(pinned).toBe(0);
  });
});

describe('what a released proportion still says', () => {
  const s: DisclosureSettings = { k: 11, width: 10, decimals: 3 };

  it('rounds the value to a resolution no finer than 1 / the low end of the range', () => {
    for (let n = 11; n <= 1500; n++) {
      const c = metricCell(binary(n, Math.floor(n / 3)), 'acc', s) as Extract<MetricCell, { value: number }>;
      // value = j / D for the largest D of 1000, 500, ..., 10 that is at most the low end.
      const d = [1000, 500, 200, 100, 50, 20, 10].find((x) => x <= c.n.low) as number;
      expect(Math.abs(c.value * d - Math.round(c.value * d))).toBeLessThan(1e-9);
    }
  });

  it('gives an interval that depends on the range and the value only, and covers the exact interval', () => {
    const seen = new Map<string, string>();
    for (let n = 20; n <= 29; n++) {
      for (let k = 0; k <= n; k++) {
        const c = metricCell(binary(n, k), 'acc', s) as Extract<MetricCell, { value: number }>;
        const key = `${c.n.low}-${c.n.high}:${c.value}`;
        const ci = JSON.stringify(c.ci95);
        expect(seen.get(key) ?? ci).toBe(ci);
        seen.set(key, ci);
        const p = k / n;
        expect(c.ci95?.low).toBeLessThanOrEqual(p);
        expect(c.ci95?.high).toBeGreaterThanOrEqual(p);
      }
    }
  });

  it('releases a [0, 1] metric that is not 0/1 the same way, and no interval for a metric outside [0, 1]', () => {
    const rouge = (n: number, mean: number): MetricStats => ({ name: 'rouge_l', n, sum: mean * n, unit: true });
    const a = metricCell(rouge(23, 0.4123), 'rouge_l', s);
    const b = metricCell(rouge(27, 0.3951), 'rouge_l', s);
    expect(a).toEqual(b);
    const jury = metricCell({ name: 'jury_score', n: 23, sum: 23 * 3.7, unit: false }, 'jury_score', s);
    expect(jury).toEqual({ name: 'jury_score', value: 3.7, n: { low: 20, high: 29 } });
  });
});
