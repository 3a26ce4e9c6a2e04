/**
 * The heat map of scores per benchmark, as in the MedHELM paper: one row per model (leaderboard
 * order), one column per benchmark, columns grouped by category. A standalone SVG document written
 * as text: no browser, no external references. Cell colour is the score mapped to 0-1 by the
 * benchmark's range (flipped for lowerIsBetter, so dark is always better); the cell text is the raw
 * score. Every string from the input passes through xmlEscape.
 */
import { inkOn, xmlEscape } from '../../pictures';
import { normalizedScore } from './normalize';
import type { Leaderboard, ScoreTable, TableBenchmark } from './types';

const CELL_W = 46;
const CELL_H = 22;
const GROUP_GAP = 10;
const CHAR_W = 6.6; // average advance of 11px sans-serif, for layout only
const BOLD = 1.1; // bold text runs about a tenth wider
const BAND_PAD = 6;
const FONT = 11;
/** A sequential palette (light = low, dark = high); colours are interpolated between the stops. */
const STOPS: [number, number, number][] = [
  [255, 255, 217],
  [199, 233, 180],
  [65, 182, 196],
  [34, 94, 168],
  [8, 29, 88],
];
const NO_DIRECTION_FILL = '#e0e0e0';
const MISSING_FILL = '#ffffff';
const WIN_LABEL = 'Mean win rate';

function labelOf(b: TableBenchmark): string {
  return b.lowerIsBetter === true ? `${b.displayName} (lower is better)` : b.displayName;
}

function hex(n: number): string {
  return Math.round(n).toString(16).padStart(2, '0');
}

/** Colour of a 0-1 score on the palette. */
export function colourOf(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [STOPS[i]!, STOPS[i + 1]!];
  return `#${hex(a[0] + (b[0] - a[0]) * f)}${hex(a[1] + (b[1] - a[1]) * f)}${hex(a[2] + (b[2] - a[2]) * f)}`;
}

function num(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

interface Column {
  index: number;
  x: number;
}

interface Group {
  label: string | null;
  x: number;
  width: number;
}

/** Width of a category band's label in full (bold), with its padding. */
function bandLabelWidth(label: string | null): number {
  return label === null ? 0 : label.length * CHAR_W * BOLD + BAND_PAD;
}

/**
 * Columns grouped by category in order of first appearance; uncategorised benchmarks last, unlabelled.
 * A band is as wide as its columns or its label, whichever is wider (a one-benchmark category has a
 * long name), with its columns centred in it: labels are never cut.
 */
function layoutColumns(benchmarks: TableBenchmark[], left: number): { columns: Column[]; groups: Group[]; right: number } {
  const order = new Map<string | null, number[]>();
  benchmarks.forEach((b, i) => {
    if (b.category !== null) order.set(b.category, [...(order.get(b.category) ?? []), i]);
  });
  const uncategorised = benchmarks.flatMap((b, i) => (b.category === null ? [i] : []));
  if (uncategorised.length) order.set(null, uncategorised);
  const columns: Column[] = [];
  const groups: Group[] = [];
  let x = left;
  for (const [label, indexes] of order) {
    const width = Math.max(indexes.length * CELL_W, bandLabelWidth(label));
    let cx = x + (width - indexes.length * CELL_W) / 2;
    for (const index of indexes) {
      columns.push({ index, x: cx });
      cx += CELL_W;
    }
    groups.push({ label, x, width });
    x += width + GROUP_GAP;
  }
  return { columns, groups, right: x - GROUP_GAP };
}

function cell(table: ScoreTable, m: number, b: number, x: number, y: number): string {
  const benchmark = table.benchmarks[b]!;
  const value = table.cells[m]![b] ?? null;
  const model = table.models[m]!;
  const tooltip = `${model} / ${benchmark.displayName}: ${value === null ? 'no score' : String(value)}`;
  let fill = MISSING_FILL;
  let ink = '#555555';
  if (value !== null) {
    const t = normalizedScore(value, benchmark);
    fill = t === null ? NO_DIRECTION_FILL : colourOf(t);
    ink = inkOn(fill); // black or white, whichever gives at least 4.5:1 (WCAG AA)
  }
  const text = value === null ? '\u2013' : value.toFixed(2);
  return (
    `<g><title>${xmlEscape(tooltip)}</title>` +
    `<rect x="${num(x)}" y="${num(y)}" width="${CELL_W}" height="${CELL_H}" fill="${fill}" stroke="#ffffff"/>` +
    `<text x="${num(x + CELL_W / 2)}" y="${num(y + CELL_H / 2 + 4)}" text-anchor="middle" fill="${ink}">${xmlEscape(text)}</text></g>`
  );
}

const LEGEND_STEPS = 10;
const LEGEND_STEP_W = 16;
const NO_DIRECTION_LABEL = 'no direction';
/** How far the legend reaches right of where it starts: the colour steps, the grey swatch, its label. */
const LEGEND_WIDTH = Math.max(LEGEND_STEPS * LEGEND_STEP_W + 34 + NO_DIRECTION_LABEL.length * CHAR_W, '0-1 score (by range; 1 = best)'.length * CHAR_W);

function legend(x: number, y: number): string {
  const steps = LEGEND_STEPS;
  const w = LEGEND_STEP_W;
  const parts = [`<text x="${num(x)}" y="${num(y - 4)}">0-1 score (by range; 1 = best)</text>`];
  for (let i = 0; i < steps; i += 1) {
    parts.push(`<rect x="${num(x + i * w)}" y="${num(y)}" width="${w}" height="10" fill="${colourOf((i + 0.5) / steps)}"/>`);
  }
  parts.push(`<text x="${num(x)}" y="${num(y + 22)}">0</text>`);
  parts.push(`<text x="${num(x + steps * w)}" y="${num(y + 22)}" text-anchor="end">1</text>`);
  parts.push(`<rect x="${num(x + steps * w + 14)}" y="${num(y)}" width="${w}" height="10" fill="${NO_DIRECTION_FILL}"/>`);
  parts.push(`<text x="${num(x + steps * w + 34)}" y="${num(y + 9)}">${NO_DIRECTION_LABEL}</text>`);
  return parts.join('');
}

/** The SVG document for `table`, rows in the order of `board`. */
/**
 * `rowLabel` names a row: its key by default; the console passes "model (endpoint)", since a row is an
 * endpoint (two endpoints may serve one model) and a reader looks for the model.
 */
export function heatmapSvg(table: ScoreTable, board: Leaderboard, title = 'Scores per benchmark', rowLabel: (key: string) => string = (k) => k): string {
  const modelIndex = new Map(table.models.map((m, i) => [m, i]));
  const rows = board.models.map((r) => modelIndex.get(r.model)!);
  const longestModel = Math.max(...table.models.map((m) => rowLabel(m).length), 5);
  const longestBench = Math.max(...table.benchmarks.map((b) => labelOf(b).length), WIN_LABEL.length);
  const left = 12 + Math.min(320, longestModel * CHAR_W) + 10;
  const labelHeight = Math.min(220, longestBench * CHAR_W * 0.87) + 12; // labels at -60 degrees
  const titleY = 22;
  const bandY = titleY + 14;
  const labelBaseY = bandY + 20 + labelHeight;
  const gridY = labelBaseY + 6;
  const { columns, groups, right } = layoutColumns(table.benchmarks, left);
  const winX = right + GROUP_GAP;
  // Labels rise to the right at 60 degrees: leave room for the last ones to end inside the picture.
  const labelOverhang = Math.max(...columns.map((c) => c.x + CELL_W / 2 + labelOf(table.benchmarks[c.index]!).length * CHAR_W * 0.5), winX + CELL_W / 2 + WIN_LABEL.length * CHAR_W * 0.5);
  // The legend sits under the grid from `left`: a table of one or two columns is narrower than it.
  const width = Math.max(winX + CELL_W, labelOverhang, left + LEGEND_WIDTH) + 12;
  const gridBottom = gridY + rows.length * CELL_H;
  const height = gridBottom + 52;

  const out: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" role="img" width="${num(width)}" height="${num(height)}" viewBox="0 0 ${num(width)} ${num(height)}" font-family="Helvetica, Arial, sans-serif" font-size="${FONT}">`,
    `<title>${xmlEscape(title)}</title>`,
    `<desc>${xmlEscape(`${rows.length} model(s) by ${table.benchmarks.length} benchmark(s); cells are raw scores, coloured by the score mapped to 0-1 by range (darker is better); the last column is the mean win rate`)}</desc>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="12" y="${titleY}" font-size="14" font-weight="bold">${xmlEscape(title)}</text>`,
  ];
  for (const g of groups) {
    if (g.label === null) continue;
    out.push(`<rect x="${num(g.x)}" y="${bandY}" width="${num(g.width)}" height="16" fill="#f0f0f0"/>`);
    out.push(`<text x="${num(g.x + BAND_PAD / 2)}" y="${bandY + 12}" font-weight="bold"><title>${xmlEscape(g.label)}</title>${xmlEscape(g.label)}</text>`);
  }
  for (const c of columns) {
    const b = table.benchmarks[c.index]!;
    const x = c.x + CELL_W / 2;
    out.push(`<text transform="translate(${num(x)},${num(labelBaseY)}) rotate(-60)">${xmlEscape(labelOf(b))}</text>`);
  }
  out.push(`<text transform="translate(${num(winX + CELL_W / 2)},${num(labelBaseY)}) rotate(-60)" font-weight="bold">${WIN_LABEL}</text>`);
  rows.forEach((m, r) => {
    const y = gridY + r * CELL_H;
    out.push(`<text x="${num(left - 8)}" y="${num(y + CELL_H / 2 + 4)}" text-anchor="end">${xmlEscape(rowLabel(table.models[m]!))}</text>`);
    for (const c of columns) out.push(cell(table, m, c.index, c.x, y));
    const win = board.models[r]!.meanWinRate;
    const winFill = win === null ? MISSING_FILL : colourOf(win);
    out.push(
      `<rect x="${num(winX)}" y="${num(y)}" width="${CELL_W}" height="${CELL_H}" fill="${winFill}" stroke="#ffffff"/>` +
        `<text x="${num(winX + CELL_W / 2)}" y="${num(y + CELL_H / 2 + 4)}" text-anchor="middle" fill="${win === null ? '#555555' : inkOn(winFill)}">${win === null ? '\u2013' : win.toFixed(2)}</text>`,
    );
  });
  out.push(`<g>${legend(left, gridBottom + 22)}</g>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
