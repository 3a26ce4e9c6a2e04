/**
 * A run's phase in words: a pure function of its status and counts, here so that the pictures (below
 * the engine) and the CLI and report (above it) say it the same way without importing the engine.
 */
const PHASES: Record<string, string> = { requested: 'awaiting approval', approved: 'starting' };

/**
 * What the run is doing, in words, wherever it is shown (the CLI's progress line, the run's picture and
 * report): its status, `awaiting approval` / `starting` before it runs, `planning` while the planned count
 * is unknown. Counts withheld from the caller say nothing of planning either.
 */
export function runPhase(run: { status: string; instanceCount?: number | null; counts: unknown }): string {
  if (run.status === 'running') return (run.instanceCount ?? null) === null && run.counts !== null ? 'planning' : 'running';
  return PHASES[run.status] ?? run.status;
}
