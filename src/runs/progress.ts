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

/** A run's progress from the store, in two cheap reads (the run row, the counts per state). */
export async function readProgress(store: Pick<RunStore, 'getRun' | 'counts'>, runId: string): Promise<RunProgress> {
  const [run, counts] = await Promise.all([store.getRun(runId), store.counts(runId)]);
  return { status: run?.status ?? 'unknown', instanceCount: run?.instance_count ?? null, counts };
}
