/**
 * Cost against mean win rate, as in the MedHELM paper: one labelled point per model, estimated cost
 * (USD, the sum over its runs) across, mean win rate up. A model whose cost or win rate is unknown is
 * listed under the plot as such, never plotted at 0. The cost axis is logarithmic when the costs span
 * more than a factor of 20 (models differ by orders of magnitude), linear from 0 otherwise.
 */
import { GRID, INK, MUTED, niceStep, noDataSvg, num, seriesColour, svgDocument, text, textWidth, xmlEscape } from './svg';

export interface CostPoint {
  model: string;
  /** Null: unknown (no price for the endpoint, or a run's figures withheld). */
  costUsd: number | null;
  meanWinRate: number | null;
}

export interface CostWinRateOptions {
  title?: string;
  /** Default `auto`: log when every cost is above 0 and they span more than a factor of 20. */
  scale?: 'auto' | 'linear' | 'log';
}

/** What costWinRatePoints reads of a run: operations' RunView fits. */
export interface RunCost {
  endpointId: string;
  estimatedCostUsd: number | null;
}

/** A model's cost is the sum over its runs; one run of unknown cost makes the sum unknown. */
export function costPerModel(runs: RunCost[]): Map<string, number | null> {
  const out = new Map<string, number | null>();
  for (const r of runs) {
    const before = out.has(r.endpointId) ? out.get(r.endpointId)! : 0;
    const c = typeof r.estimatedCostUsd === 'number' && Number.isFinite(r.estimatedCostUsd) ? r.estimatedCostUsd : null;
    out.set(r.endpointId, before === null || c === null ? null : before + c);
  }
  return out;
}

/** The points of a leaderboard's rows (model, meanWinRate) with the costs of costPerModel; a model without runs has an unknown cost. */
export function costWinRatePoints(rows: { model: string; meanWinRate: number | null }[], costs: Map<string, number | null>): CostPoint[] {
  return rows.map((r) => ({ model: r.model, meanWinRate: r.meanWinRate, costUsd: costs.get(r.model) ?? null }));
}

const PLOT_W = 440;
const PLOT_H = 280;
const LEFT = 64;
const TOP = 48;

function dollars(v: number): string {
  if (v === 0) return '$0';
  if (v >= 100) return `$${v.toFixed(0)}`;
  if (v >= 1) return `$${v.toFixed(2)}`;
  const digits = Math.min(6, Math.max(2, 1 - Math.floor(Math.log10(v))));
  return `$${v.toFixed(digits)}`;
}

export function costWinRateSvg(points: CostPoint[], opts: CostWinRateOptions = {}): string {
  const title = opts.title ?? 'Cost against mean win rate';
  const hasCost = (p: CostPoint) => typeof p.costUsd === 'number' && Number.isFinite(p.costUsd) && p.costUsd >= 0;
  const hasWin = (p: CostPoint) => typeof p.meanWinRate === 'number' && Number.isFinite(p.meanWinRate);
  const plotted = points
    .filter((p) => hasCost(p) && hasWin(p))
    .map((p) => ({ model: p.model, cost: p.costUsd as number, win: Math.min(1, Math.max(0, p.meanWinRate as number)) }))
    .sort((a, b) => a.cost - b.cost || a.win - b.win);
  const unplotted = points.filter((p) => !(hasCost(p) && hasWin(p))).map((p) => `${p.model} (${[hasCost(p) ? '' : 'cost unknown', hasWin(p) ? '' : 'no win rate'].filter(Boolean).join(', ')})`);
  if (plotted.length === 0) {
    return noDataSvg(
      title,
      points.length === 0 ? 'no model' : `no model has both a cost and a win rate: ${unplotted.join('; ')}`,
      points.length === 0 ? 'no completed runs yet: choose completed runs' : 'give the endpoints a price (export.prices) and compare at least two endpoints on one benchmark',
    );
  }
  const costs = plotted.map((p) => p.cost);
  const lo = Math.min(...costs);
  const hi = Math.max(...costs);
  const log = opts.scale === 'log' ? lo > 0 : opts.scale === 'linear' ? false : lo > 0 && hi / lo > 20;
  let xOf: (v: number) => number;
  const ticks: number[] = [];
  if (log) {
    const a = Math.floor(Math.log10(lo));
    const b = Math.max(a + 1, Math.ceil(Math.log10(hi)));
    xOf = (v) => LEFT + (PLOT_W * (Math.log10(v) - a)) / (b - a);
    for (let e = a; e <= b; e++) ticks.push(10 ** e);
  } else {
    const step = niceStep(hi > 0 ? hi : 1);
    const max = Math.max(step, Math.ceil((hi > 0 ? hi : 1) / step) * step);
    xOf = (v) => LEFT + (PLOT_W * v) / max;
    for (let v = 0; v <= max + step / 2; v += step) ticks.push(v);
  }
  const yOf = (w: number) => TOP + PLOT_H * (1 - w);
  const bottom = TOP + PLOT_H;
  const body: string[] = [];
  for (let t = 0; t <= 4; t++) {
    const y = yOf(t / 4);
    body.push(`<line x1="${LEFT}" y1="${num(y)}" x2="${LEFT + PLOT_W}" y2="${num(y)}" stroke="${GRID}" stroke-width="1"/>`);
    body.push(text(LEFT - 6, y + 4, (t / 4).toFixed(2), 'text-anchor="end"'));
  }
  for (const v of ticks) {
    const x = xOf(v);
    body.push(`<line x1="${num(x)}" y1="${TOP}" x2="${num(x)}" y2="${bottom}" stroke="${GRID}" stroke-width="1"/>`);
    body.push(text(x, bottom + 16, dollars(v), 'text-anchor="middle"'));
  }
  body.push(`<rect x="${LEFT}" y="${TOP}" width="${PLOT_W}" height="${PLOT_H}" fill="none" stroke="${INK}" stroke-width="1"/>`);
  body.push(text(LEFT + PLOT_W / 2, bottom + 36, `Estimated cost, USD (sum of the model's runs${log ? '; logarithmic scale' : ''})`, 'text-anchor="middle"'));
  body.push(`<text transform="translate(16,${num(TOP + PLOT_H / 2)}) rotate(-90)" text-anchor="middle">Mean win rate</text>`);
  // Labels to the right of their point (left near the right edge), moved down to clear the ones placed before.
  const placed: { x0: number; x1: number; y: number }[] = [];
  plotted.forEach((p, i) => {
    const x = xOf(p.cost);
    const y = yOf(p.win);
    const label = p.model;
    const w = Math.min(textWidth(label), 260);
    const right = x + 8 + w <= LEFT + PLOT_W + 150;
    const x0 = right ? x + 8 : x - 8 - w;
    let ly = y + 4;
    while (placed.some((q) => q.x0 < x0 + w && x0 < q.x1 && Math.abs(q.y - ly) < 12)) ly += 12;
    placed.push({ x0, x1: x0 + w, y: ly });
    body.push(
      `<g><title>${xmlEscape(`${p.model}: ${dollars(p.cost)}, mean win rate ${p.win.toFixed(3)}`)}</title>` +
        `<circle data-series="${i}" cx="${num(x)}" cy="${num(y)}" r="5" fill="${seriesColour(i)}" stroke="#ffffff" stroke-width="1"/>` +
        `${text(right ? x + 8 : x - 8, ly, label, right ? '' : 'text-anchor="end"')}</g>`,
    );
  });
  let height = bottom + 50;
  if (unplotted.length) {
    body.push(text(12, height, 'Not plotted:', 'font-weight="bold"'));
    for (const line of unplotted) {
      height += 16;
      body.push(text(24, height, line, `fill="${MUTED}"`));
    }
    height += 10;
  }
  const width = Math.max(LEFT + PLOT_W + 160, textWidth(title, 14) + 24);
  const desc = `${plotted.map((p) => `${p.model}: ${dollars(p.cost)}, mean win rate ${p.win.toFixed(3)}`).join('; ')}${unplotted.length ? `. Not plotted: ${unplotted.join('; ')}` : ''}.`;
  return svgDocument({ width, height: height + 8, title, desc }, body);
}
