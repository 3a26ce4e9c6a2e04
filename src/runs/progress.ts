/**
 * Where a run stands, as progress displays show it (`ehrbench run`, `runs resume`, `demo`, `runs
 * watch`): its status, the instances planned (null while the planner still reads the dataset) and
 * the instances per state (null when they are withheld from the caller). Counts only, never data.
 */
import type { RunStore, StateCounts } from './store';

export interface RunProgress {
  status: string;
  instanceCount: number | null;
  counts: StateCounts | null;
}

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

/** A run's progress from the store, in two cheap reads (the run row, the counts per state). */
export async function readProgress(store: Pick<RunStore, 'getRun' | 'counts'>, runId: string): Promise<RunProgress> {
  const [run, counts] = await Promise.all([store.getRun(runId), store.counts(runId)]);
  return { status: run?.status ?? 'unknown', instanceCount: run?.instance_count ?? null, counts };
}
