/**
 * The pictures (src/pictures): standalone SVG documents that parse as XML with any name in them, say
 * "No data" when there is nothing to draw, put numbers where they belong, and hold nothing a strict
 * Content-Security-Policy refuses (no style, script or href) and no text below WCAG AA contrast.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SaxesParser } from 'saxes';
import { heatmapSvg, leaderboardOf, toScoreTable } from '../../src/export';
import {
  bucketCalls,
  bucketCallsAsync,
  type CallRecord,
  callsOverTimeSvg,
  categoryScoresSvg,
  contrastRatio,
  costPerModel,
  costWinRatePoints,
  costWinRateSvg,
  runProgressSvg,
  xmlEscape,
} from '../../src/pictures';
import { runPhase } from '../../src/contracts';
import { ROOT } from '../helpers/paths';

const HOSTILE = `<script>alert("x")</script> & 'co' ]]> \u0001\u0007\u001b end`;
/** What the hostile name reads back as: the characters XML forbids become U+FFFD, the rest verbatim. */
const HOSTILE_READ = `<script>alert("x")</script> & 'co' ]]> \uFFFD\uFFFD\uFFFD end`;

interface Tag {
  name: string;
  attributes: Record<string, string>;
}

/** Strict XML parse: element names, attributes in document order, text; throws on any error. */
function parseXml(xml: string): { tags: Tag[]; text: string[]; allText: string } {
  const parser = new SaxesParser({ xmlns: true });
  const tags: Tag[] = [];
  const text: string[] = [];
  parser.on('error', (e) => {
    throw e;
  });
  parser.on('text', (t) => text.push(t));
  parser.on('opentag', (tag) => {
    const attributes: Record<string, string> = {};
    for (const [k, a] of Object.entries(tag.attributes)) attributes[k] = typeof a === 'string' ? a : a.value;
    tags.push({ name: tag.local ?? tag.name, attributes });
  });
  parser.write(xml).close();
  return { tags, text, allText: text.join('') };
}

/** The house rules of every picture, checked on its text and its parse. */
function expectSafePicture(svg: string): ReturnType<typeof parseXml> {
  const parsed = parseXml(svg);
  const root = parsed.tags[0] as Tag;
  expect(root.name).toBe('svg');
  expect(root.attributes.role).toBe('img');
  // <title> and <desc> come first: the accessible name and description.
  expect(parsed.tags.slice(1, 3).map((t) => t.name)).toEqual(['title', 'desc']);
  for (const forbidden of ['style=', '<style', '<script', 'href=', 'url(', '@import', '@font-face']) expect([forbidden, svg.includes(forbidden)]).toEqual([forbidden, false]);
  expect(parsed.tags.map((t) => t.name)).not.toContain('script');
  expect(parsed.tags.map((t) => t.name)).not.toContain('image');
  // Nothing outside the document: the only URL is the SVG namespace.
  const urls = parsed.tags.flatMap((t) => Object.values(t.attributes)).filter((v) => /(https?:|file:|data:|\/\/)/i.test(v));
  expect(urls).toEqual(['http://www.w3.org/2000/svg']);
  // Text at least 4.5:1 on the white ground (WCAG AA); text without fill inherits the root's.
  const inherited = root.attributes.fill ?? '#000000';
  for (const t of parsed.tags.filter((x) => x.name === 'text')) expect([t.attributes.fill, contrastRatio(t.attributes.fill ?? inherited, '#ffffff') >= 4.5]).toEqual([t.attributes.fill, true]);
  return parsed;
}

const rects = (svg: string, series?: string) =>
  parseXml(svg).tags.filter((t) => t.name === 'rect' && t.attributes['data-series'] !== undefined && (series === undefined || t.attributes['data-series'] === series));

const CATEGORIES = ['Clinical Decision Support', 'Clinical Note Generation', 'Patient Communication and Education'];

describe('xmlEscape: one implementation', () => {
  it('is defined once in src/ (the heat map uses the pictures one)', () => {
    const files = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : n.endsWith('.ts') ? [join(dir, n)] : []));
    const defining = files(join(ROOT, 'src')).filter((f) => /function xmlEscape\s*\(/.test(readFileSync(f, 'utf8')));
    expect(defining.map((f) => f.slice(ROOT.length + 1))).toEqual(['src/pictures/svg.ts']);
    expect(xmlEscape(`a<b>&"c"'d'\u0000`)).toBe('a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;\uFFFD');
  });
});

describe('runProgressSvg', () => {
  const run = { runId: 'run-1', benchmarkId: 'pubmed_qa', endpointId: 'demo', status: 'running', instanceCount: 100, counts: { done: 50, blocked: 25, failed: 25, claimed: 0, pending: 0 } };

  it('draws segments proportional to the counts, and writes every count', () => {
    const svg = runProgressSvg(run);
    const { allText } = expectSafePicture(svg);
    const width = (s: string) => Number(rects(svg, s)[0]?.attributes.width);
    expect(width('done')).toBeCloseTo(2 * width('blocked'), 5);
    expect(width('blocked')).toBeCloseTo(width('failed'), 5);
    expect(width('done') + width('blocked') + width('failed')).toBeCloseTo(576, 0);
    expect(rects(svg, 'pending')).toHaveLength(0); // a zero count has no segment, but is still written
    for (const words of ['done 50', 'blocked 25', 'failed 25', 'in progress 0', 'pending 0', 'Status: running; 100 of 100 finished']) expect(allText).toContain(words);
  });

  it('escapes hostile names', () => {
    const { allText } = expectSafePicture(runProgressSvg({ ...run, runId: HOSTILE, benchmarkId: HOSTILE, endpointId: '"&"' }));
    expect(allText).toContain(`Run ${HOSTILE_READ}: ${HOSTILE_READ} on "&"`);
  });

  it('says the status in words: awaiting approval, starting, planning', () => {
    expect(runPhase({ status: 'requested', counts: null })).toBe('awaiting approval');
    expect(runPhase({ status: 'approved', counts: { pending: 0 } })).toBe('starting');
    expect(runPhase({ status: 'running', instanceCount: null, counts: { pending: 3 } })).toBe('planning');
    expect(runPhase({ status: 'running', instanceCount: 3, counts: { pending: 3 } })).toBe('running');
    expect(runPhase({ status: 'completed', instanceCount: 3, counts: { done: 3 } })).toBe('completed');
  });

  it('shows the rule, and no number, when the figures are withheld', () => {
    const svg = runProgressSvg({ runId: 'r', benchmarkId: 'b', status: 'completed', counts: null, withheld: 'visibility.run-figures.withheld' });
    const { allText } = expectSafePicture(svg);
    expect(allText).toContain('Counts withheld from you (rule visibility.run-figures.withheld)');
    expect(allText).not.toMatch(/\d/);
    expect(rects(svg)).toHaveLength(0);
  });

  it('says "No data" before anything is counted', () => {
    const { allText } = expectSafePicture(runProgressSvg({ ...run, status: 'requested', instanceCount: null, counts: { pending: 0 } }));
    expect(allText).toContain('No data: awaiting approval; no instance counted yet');
  });
});

describe('categoryScoresSvg', () => {
  const models = [
    { model: 'model-a', categories: CATEGORIES.map((category, i) => ({ category, macroAverage: [1, 0.5, null][i] ?? null, meanWinRate: 0.25 })) },
    { model: HOSTILE, categories: CATEGORIES.map((category) => ({ category, macroAverage: 0.25, meanWinRate: 0.75 })) },
  ];

  it('draws bars proportional to the scores, one per model and scored category', () => {
    const svg = categoryScoresSvg(models);
    const { allText } = expectSafePicture(svg);
    const a = rects(svg, '0').map((r) => Number(r.attributes.width));
    const b = rects(svg, '1').map((r) => Number(r.attributes.width));
    expect(a).toHaveLength(2); // the null is written, not drawn
    expect(b).toHaveLength(3);
    expect(a[0]).toBeCloseTo(2 * (a[1] as number), 5);
    expect(a[1]).toBeCloseTo(2 * (b[0] as number), 5);
    expect(allText).toContain('no score');
    expect(allText).toContain(HOSTILE_READ);
    for (const c of ['Clinical Decision Support', 'Patient Communication and']) expect(allText).toContain(c);
  });

  it('draws the mean win rate when asked', () => {
    const svg = categoryScoresSvg(models, { measure: 'meanWinRate' });
    expectSafePicture(svg);
    const a = rects(svg, '0').map((r) => Number(r.attributes.width));
    const b = rects(svg, '1').map((r) => Number(r.attributes.width));
    expect(b[0]).toBeCloseTo(3 * (a[0] as number), 5);
  });

  it('says "No data" for no model or no category', () => {
    expect(expectSafePicture(categoryScoresSvg([])).allText).toContain('No data');
    expect(expectSafePicture(categoryScoresSvg([{ model: 'm', categories: [] }])).allText).toContain('No data');
  });
});

describe('costWinRateSvg', () => {
  it('plots known costs in order and lists an unknown one instead of plotting it at 0', () => {
    const points = [
      { model: 'mid', costUsd: 2, meanWinRate: 0.5 },
      { model: HOSTILE, costUsd: 1, meanWinRate: 0.25 },
      { model: 'priceless', costUsd: null, meanWinRate: 0.9 },
      { model: 'dear', costUsd: 4, meanWinRate: 1 },
    ];
    const svg = costWinRateSvg(points);
    const { tags, allText } = expectSafePicture(svg);
    const circles = tags.filter((t) => t.name === 'circle').map((c) => ({ x: Number(c.attributes.cx), y: Number(c.attributes.cy) }));
    expect(circles).toHaveLength(3);
    // Ordered by cost across (linear: 1, 2, 4 at equal steps of the axis), higher win rate higher up.
    expect(circles[1]!.x - circles[0]!.x).toBeCloseTo((circles[2]!.x - circles[1]!.x) / 2, 5);
    expect(circles.map((c) => c.y)).toEqual([...circles.map((c) => c.y)].sort((p, q) => q - p));
    expect(allText).toContain('Not plotted:');
    expect(allText).toContain('priceless (cost unknown)');
    expect(allText).toContain(HOSTILE_READ);
  });

  it('goes logarithmic when costs span orders of magnitude', () => {
    const svg = costWinRateSvg([
      { model: 'a', costUsd: 0.1, meanWinRate: 0.2 },
      { model: 'b', costUsd: 1, meanWinRate: 0.4 },
      { model: 'c', costUsd: 10, meanWinRate: 0.6 },
    ]);
    const xs = parseXml(svg)
      .tags.filter((t) => t.name === 'circle')
      .map((c) => Number(c.attributes.cx));
    expect(xs[1]! - xs[0]!).toBeCloseTo(xs[2]! - xs[1]!, 5);
    expect(expectSafePicture(svg).allText).toContain('logarithmic');
  });

  it('sums cost per model; one run of unknown cost makes the sum unknown', () => {
    const costs = costPerModel([
      { endpointId: 'a', estimatedCostUsd: 1.5 },
      { endpointId: 'a', estimatedCostUsd: 2 },
      { endpointId: 'b', estimatedCostUsd: 1 },
      { endpointId: 'b', estimatedCostUsd: null },
    ]);
    expect([...costs]).toEqual([
      ['a', 3.5],
      ['b', null],
    ]);
    expect(
      costWinRatePoints(
        [
          { model: 'a', meanWinRate: 1 },
          { model: 'c', meanWinRate: 0 },
        ],
        costs,
      ),
    ).toEqual([
      { model: 'a', meanWinRate: 1, costUsd: 3.5 },
      { model: 'c', meanWinRate: 0, costUsd: null },
    ]);
  });

  it('says "No data" when nothing can be plotted, and names why', () => {
    expect(expectSafePicture(costWinRateSvg([])).allText).toContain('No data: no model');
    expect(expectSafePicture(costWinRateSvg([{ model: 'x', costUsd: null, meanWinRate: null }])).allText).toContain('x (cost unknown, no win rate)');
  });
});

describe('calls over time', () => {
  const opts = { endpointId: 'ep', from: '2025-05-01T10:00:00Z', to: '2025-05-01T11:00:00Z', bucketSeconds: 600 };
  const at = (minute: number, outcome = 'success', endpoint: string | null = 'ep', type = 'endpoint.call'): CallRecord => ({
    event_type: type,
    endpoint_id: endpoint,
    outcome,
    recorded_at: new Date(Date.parse(opts.from) + minute * 60_000).toISOString(),
  });
  const records = [
    at(0),
    at(1),
    at(9.99),
    at(10),
    at(15, 'denied'),
    at(25, 'failed'),
    at(59.9),
    at(60),
    at(-1),
    at(5, 'success', 'other'),
    at(5, 'success', null),
    at(5, 'success', 'ep', 'run.start'),
  ];

  it('counts the endpoint.call records of the endpoint per bucket and outcome, in the range only', () => {
    const b = bucketCalls(records, opts);
    expect(b.buckets).toHaveLength(6);
    expect(b.buckets.map((x) => [x.start.slice(11, 16), x.success, x.denied, x.failed])).toEqual([
      ['10:00', 3, 0, 0],
      ['10:10', 1, 1, 0],
      ['10:20', 0, 0, 1],
      ['10:30', 0, 0, 0],
      ['10:40', 0, 0, 0],
      ['10:50', 1, 0, 0],
    ]);
  });

  it('counts a stream the same way', async () => {
    async function* stream() {
      yield* records;
    }
    expect(await bucketCallsAsync(stream(), opts)).toEqual(bucketCalls(records, opts));
  });

  it('draws stacked bars whose heights are proportional to the counts', () => {
    const svg = callsOverTimeSvg(bucketCalls(records, { ...opts, endpointId: 'ep' }));
    const { allText } = expectSafePicture(svg);
    const h = (s: string) => rects(svg, s).map((r) => Number(r.attributes.height));
    // Lengths are written to 0.1 px.
    expect(h('success')[0]).toBeCloseTo(3 * (h('success')[1] as number), 0);
    expect(h('denied')[0]).toBeCloseTo(h('success')[1] as number, 0);
    expect(allText).toContain('sent 5');
    expect(allText).toContain('refused by a rule 1');
    expect(allText).toContain('failed 1');
  });

  it('escapes a hostile endpoint id and says "No data" for a quiet range', () => {
    const { allText } = expectSafePicture(callsOverTimeSvg(bucketCalls([], { ...opts, endpointId: HOSTILE })));
    expect(allText).toContain(`No data: no call of ${HOSTILE_READ}`);
  });

  it('refuses a range that is backwards, not a time, or too many buckets, in one line', () => {
    expect(() => bucketCalls([], { ...opts, to: opts.from })).toThrow(expect.objectContaining({ code: 'picture.range-invalid' }));
    expect(() => bucketCalls([], { ...opts, from: 'yesterday' })).toThrow(/not an ISO 8601 time/);
    expect(() => bucketCalls([], { ...opts, bucketSeconds: 1 })).toThrow(/3600 buckets .* at most 1000/);
    expect(() => bucketCalls([], { ...opts, bucketSeconds: 0 })).toThrow(expect.objectContaining({ code: 'picture.range-invalid' }));
  });
});

describe('the leaderboard heat map keeps the same rules', () => {
  it('has role="img", a desc, and cell text at AA contrast on its cell', () => {
    const hostile = `<script>alert("x")</script> & 'co' ]]>`; // the leaderboard's input refuses control characters itself
    const input = {
      benchmarks: CATEGORIES.map((c, i) => ({ id: `b${i}`, lowerIsBetter: false, category: c })),
      models: ['m0', 'm1', 'm2', hostile],
      scores: Object.fromEntries(['m0', 'm1', 'm2', hostile].map((m, j) => [m, Object.fromEntries(CATEGORIES.map((_, i) => [`b${i}`, ((i + 1) * (j + 2)) / 16]))])),
    };
    const table = toScoreTable(input, 'test');
    const svg = heatmapSvg(table, leaderboardOf(table));
    const { tags, allText } = parseXml(svg);
    expect(tags[0]?.attributes.role).toBe('img');
    expect(tags.slice(1, 3).map((t) => t.name)).toEqual(['title', 'desc']);
    expect(allText).toContain(hostile);
    let lastFill = '#ffffff';
    let checked = 0;
    for (const t of tags) {
      if (t.name === 'rect' && t.attributes.fill?.startsWith('#')) lastFill = t.attributes.fill;
      if (t.name === 'text' && t.attributes['text-anchor'] === 'middle' && t.attributes.fill) {
        expect([lastFill, t.attributes.fill, contrastRatio(lastFill, t.attributes.fill) >= 4.5]).toEqual([lastFill, t.attributes.fill, true]);
        checked++;
      }
    }
    expect(checked).toBe(4 * 4);
  });
});
