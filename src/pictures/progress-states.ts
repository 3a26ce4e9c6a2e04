/**
 * A run's instance states in the order and colours every progress display uses (the run's SVG picture,
 * the console's live bar), and the estimate of when a running run ends. A leaf with no imports: the
 * console's pages bundle it, so the page and the picture cannot draw the states differently.
 */

/** Instances per state, as operations' RunView `counts` (schemas/api/run.schema.json). */
export interface RunCounts {
  pending?: number;
  claimed?: number;
  done?: number;
  blocked?: number;
  failed?: number;
}

type State = keyof Required<RunCounts>;

/** The states in the bar's order, their words and colours (each at least 3:1 on white, named by text). */
export const PROGRESS_STATES: { state: State; label: string; fill: string }[] = [
  { state: 'done', label: 'done', fill: '#1b7837' },
  { state: 'blocked', label: 'blocked', fill: '#b35806' },
  { state: 'failed', label: 'failed', fill: '#b2182b' },
  { state: 'claimed', label: 'in progress', fill: '#0b5fa5' },
  { state: 'pending', label: 'pending', fill: '#6e6e6e' },
];

/** The instances finished (done, blocked or failed) of these counts. */
export function finishedOf(counts: RunCounts): number {
  return (counts.done ?? 0) + (counts.blocked ?? 0) + (counts.failed ?? 0);
}

/**
 * When a running run should end, at the rate its instances have finished since it started: null
 * before any has finished (no rate yet) or without a planned count. Milliseconds from `now`.
 */
export function remainingMs(run: { startedAt: string | null; instanceCount: number | null; counts: RunCounts | null }, now: number): number | null {
  if (!run.startedAt || run.instanceCount === null || !run.counts) return null;
  const finished = finishedOf(run.counts);
  const elapsed = now - Date.parse(run.startedAt);
  if (finished === 0 || !(elapsed > 0)) return null;
  return Math.max(0, ((run.instanceCount - finished) * elapsed) / finished);
}
