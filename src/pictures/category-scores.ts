/**
 * Per-category scores of chosen models (the leaderboard's per-category aggregates, CategoryRow of
 * src/export/leaderboard): a grouped horizontal bar chart, one group per category, one bar per model,
 * the value written at the end of each bar. Both measures are on 0-1: the macro average of scores
 * mapped to 0-1 by each benchmark's range, or the mean win rate within the category.
 */
import { GRID, INK, MUTED, noDataSvg, num, seriesColour, svgDocument, text, textWidth, wrap, xmlEscape } from './svg';

/** One category of one model: the leaderboard's CategoryRow fits. */
export interface CategoryScore {
  category: string;
  macroAverage: number | null;
  meanWinRate: number | null;
}

/** One model and its categories: a LeaderboardRow of src/export/leaderboard fits. */
export interface CategoryModel {
  model: string;
  categories: CategoryScore[];
}

export type CategoryMeasure = 'macroAverage' | 'meanWinRate';

export interface CategoryScoresOptions {
  /** Default `macroAverage`. */
  measure?: CategoryMeasure;
  title?: string;
}

const MEASURE_LABEL: Record<CategoryMeasure, string> = {
  macroAverage: 'macro average of scores mapped to 0-1 by range',
  meanWinRate: 'mean win rate within the category',
};

const PLOT_W = 360;
const BAR_H = 14;
const BAR_GAP = 3;
const GROUP_GAP = 14;
const LABEL_CHARS = 28;

function value(v: number | null | undefined): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : null;
}

export function categoryScoresSvg(models: CategoryModel[], opts: CategoryScoresOptions = {}): string {
  const measure = opts.measure ?? 'macroAverage';
  const title = opts.title ?? 'Scores per category';
  const categories: string[] = [];
  for (const m of models) for (const c of m.categories) if (!categories.includes(c.category)) categories.push(c.category);
  if (models.length === 0 || categories.length === 0) return noDataSvg(title, 'no endpoint has a scored category', 'choose completed runs of benchmarks that have a MedHELM category');

  const labelLines = new Map(categories.map((c) => [c, wrap(c, LABEL_CHARS)]));
  const modelW = Math.max(...models.map((m) => textWidth(m.model)));
  const labelW = Math.min(LABEL_CHARS * 6.6 * 1.1, Math.max(...categories.map((c) => Math.max(...(labelLines.get(c) ?? []).map((l) => textWidth(l) * 1.1))))) + 12;
  const left = 12 + labelW;
  const plotRight = left + PLOT_W;
  const width = Math.max(plotRight + 60, 12 + Math.min(modelW, 400) + 40, textWidth(title, 14) + 24);

  const body: string[] = [text(12, 40, `Measure: ${MEASURE_LABEL[measure]}`, `fill="${MUTED}"`)];
  // Legend: one swatch and name per model.
  let ly = 62;
  models.forEach((m, i) => {
    body.push(`<rect x="12" y="${num(ly - 10)}" width="12" height="12" fill="${seriesColour(i)}"/>`);
    body.push(text(30, ly, m.model));
    ly += 18;
  });
  const top = ly + 14;
  const groupH = models.length * (BAR_H + BAR_GAP) - BAR_GAP;
  const plotBottom = top + categories.length * (groupH + GROUP_GAP) - GROUP_GAP;
  // Grid and axis: 0, 0.25, ... 1.
  for (let t = 0; t <= 4; t++) {
    const x = left + (PLOT_W * t) / 4;
    body.push(`<line x1="${num(x)}" y1="${num(top - 6)}" x2="${num(x)}" y2="${num(plotBottom + 4)}" stroke="${GRID}" stroke-width="1"/>`);
    body.push(text(x, plotBottom + 18, (t / 4).toFixed(2), 'text-anchor="middle"'));
  }
  const descParts: string[] = [];
  categories.forEach((cat, g) => {
    const y0 = top + g * (groupH + GROUP_GAP);
    const lines = labelLines.get(cat) ?? [cat];
    const firstY = y0 + groupH / 2 - ((lines.length - 1) * 13) / 2 + 4;
    body.push(
      `<text x="${num(left - 10)}" y="${num(firstY)}" text-anchor="end" font-weight="bold"><title>${xmlEscape(cat)}</title>` +
        lines.map((l, i) => `<tspan x="${num(left - 10)}" dy="${i === 0 ? 0 : 13}">${xmlEscape(l)}</tspan>`).join('') +
        '</text>',
    );
    models.forEach((m, i) => {
      const y = y0 + i * (BAR_H + BAR_GAP);
      const v = value(m.categories.find((c) => c.category === cat)?.[measure]);
      const tooltip = `${m.model} / ${cat}: ${v === null ? 'no score' : v.toFixed(3)}`;
      descParts.push(tooltip);
      if (v === null) {
        body.push(`<g><title>${xmlEscape(tooltip)}</title>${text(left + 4, y + BAR_H - 3, 'no score', `fill="${MUTED}"`)}</g>`);
        return;
      }
      const w = PLOT_W * v;
      body.push(
        `<g><title>${xmlEscape(tooltip)}</title><rect data-series="${i}" x="${num(left)}" y="${num(y)}" width="${num(w)}" height="${BAR_H}" fill="${seriesColour(i)}"/>` +
          `${text(left + w + 4, y + BAR_H - 3, v.toFixed(2))}</g>`,
      );
    });
  });
  body.push(`<line x1="${num(left)}" y1="${num(top - 6)}" x2="${num(left)}" y2="${num(plotBottom + 4)}" stroke="${INK}" stroke-width="1"/>`);
  return svgDocument({ width, height: plotBottom + 32, title, desc: `${MEASURE_LABEL[measure]}, per category and model: ${descParts.join('; ')}.` }, body);
}
