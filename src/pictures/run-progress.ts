/**
 * A run's progress: one stacked bar of its instances by state (done, blocked, failed, in progress,
 * pending), the status in words and every count. A caller from whom policy/visibility withholds the
 * run's figures gets the picture of the rule, never a number.
 */
import { runPhase } from '../contracts';
import { PROGRESS_STATES, type RunCounts } from './progress-states';
import { INK, MUTED, noDataSvg, num, svgDocument, text, textWidth, xmlEscape } from './svg';

export { PROGRESS_STATES, type RunCounts };

/** What the picture reads of a run: operations' RunView fits as it is. */
export interface RunProgressInput {
  runId: string;
  benchmarkId: string;
  endpointId?: string;
  status: string;
  /** Planned instances; null while the run is planning (or when withheld). */
  instanceCount?: number | null;
  /** Null when the run's figures are withheld from the caller. */
  counts: RunCounts | null;
  /** The rule that withheld the figures, if one did. */
  withheld?: string | null;
}

const WIDTH = 600;
const LEFT = 12;
const BAR_W = WIDTH - 2 * LEFT;
const BAR_Y = 62;
const BAR_H = 26;

function count(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
}

export function runProgressSvg(run: RunProgressInput): string {
  const title = `Run ${run.runId}: ${run.benchmarkId}${run.endpointId ? ` on ${run.endpointId}` : ''}`;
  const status = runPhase(run);
  if (run.counts === null) {
    const why = `counts withheld (rule ${run.withheld ?? 'visibility.run-figures.withheld'})`;
    return svgDocument({ width: Math.max(WIDTH, textWidth(title, 14) + 24), height: 110, title, desc: `Run ${run.runId} is ${status}; its ${why}.` }, [
      text(LEFT, 44, `Status: ${status}`),
      `<rect x="${LEFT}" y="${BAR_Y}" width="${BAR_W}" height="${BAR_H}" fill="#ffffff" stroke="${MUTED}" stroke-dasharray="4 3"/>`,
      text(LEFT + 8, BAR_Y + 17, `Counts withheld from you (rule ${run.withheld ?? 'visibility.run-figures.withheld'})`, `fill="${MUTED}"`),
    ]);
  }
  const counts = PROGRESS_STATES.map((s) => ({ ...s, n: count(run.counts?.[s.state]) }));
  const total = counts.reduce((a, c) => a + c.n, 0);
  const planned = typeof run.instanceCount === 'number' && Number.isFinite(run.instanceCount) ? run.instanceCount : null;
  const summary = counts.map((c) => `${c.n} ${c.label}`).join(', ');
  if (total === 0)
    return noDataSvg(title, `${status}; no instance counted yet`, run.status === 'requested' ? 'a compliance officer approves the run first' : 'the counts appear once the run is planned');
  const finished = counts.filter((c) => c.state === 'done' || c.state === 'blocked' || c.state === 'failed').reduce((a, c) => a + c.n, 0);
  const headline = `Status: ${status}; ${finished} of ${planned ?? total} finished${planned === null ? ' (planning: queued so far)' : ''}`;
  const body: string[] = [text(LEFT, 44, headline)];
  let x = LEFT;
  for (const c of counts) {
    if (c.n === 0) continue;
    const w = (BAR_W * c.n) / total;
    body.push(
      `<g><title>${xmlEscape(`${c.label}: ${c.n}`)}</title><rect data-series="${c.state}" x="${num(x)}" y="${BAR_Y}" width="${num(w)}" height="${BAR_H}" fill="${c.fill}" stroke="#ffffff" stroke-width="1"/></g>`,
    );
    x += w;
  }
  body.push(`<rect x="${LEFT}" y="${BAR_Y}" width="${BAR_W}" height="${BAR_H}" fill="none" stroke="${INK}" stroke-width="1"/>`);
  // Legend: every state with its count, zero included, so the numbers are all in text.
  let lx = LEFT;
  let ly = BAR_Y + BAR_H + 24;
  for (const c of counts) {
    const label = `${c.label} ${c.n}`;
    const w = 18 + textWidth(label) + 18;
    if (lx + w > WIDTH - LEFT) {
      lx = LEFT;
      ly += 20;
    }
    body.push(`<rect x="${num(lx)}" y="${num(ly - 10)}" width="12" height="12" fill="${c.fill}"/>`);
    body.push(text(lx + 18, ly, label));
    lx += w;
  }
  return svgDocument(
    { width: Math.max(WIDTH, textWidth(title, 14) + 24), height: ly + 18, title, desc: `Run ${run.runId} is ${status}: ${summary}${planned !== null ? ` of ${planned} planned` : ''}.` },
    body,
  );
}
