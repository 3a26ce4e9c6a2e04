/**
 * Planning: the dataset streamed into the run's work queue in batches. Idempotent, so a plan that was
 * interrupted is completed by the next execution, which inserts only what is missing. Runs beside the
 * workers: each batch wakes them, so the first instances are sent while the rest are still read.
 */
import { instancesOf, verifyDataset, type Instance } from '../catalog';
import { UserError } from '../errors';
import type { Engine } from './engine';
import type { RunContext } from './stages';
import type { RunRow } from './store';

/** Small first batch so work starts quickly; larger ones after that for fewer statements. */
const FIRST_BATCH = 64;
const BATCH = 500;

export interface Planning {
  done: boolean;
  /** Set when planning failed; the run stops with it. */
  error?: unknown;
  /** Resolves at the next batch enqueued or when planning ends. */
  progressed(): Promise<void>;
  finished: Promise<void>;
}

export function startPlanning(engine: Engine, run: RunRow, ctx: RunContext): Planning {
  let waiters: (() => void)[] = [];
  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };
  const planning: Planning = {
    done: false,
    progressed: () => new Promise<void>((resolve) => waiters.push(resolve)),
    finished: Promise.resolve(),
  };
  planning.finished = plan(engine, run, ctx, wake).then(
    () => {
      planning.done = true;
      wake();
    },
    (err: unknown) => {
      planning.error = err;
      planning.done = true;
      wake();
    },
  );
  return planning;
}

async function plan(engine: Engine, run: RunRow, ctx: RunContext, onBatch: () => void): Promise<void> {
  await verifyDataset(ctx.benchmark);
  let batch: { itemKey: string; ordinal: number; instance: Instance }[] = [];
  let ordinal = 0;
  let limit = FIRST_BATCH;
  for await (const instance of instancesOf(ctx.benchmark, run.max_instances ?? undefined)) {
    batch.push({ itemKey: instance.key, ordinal, instance });
    ordinal += 1;
    if (batch.length >= limit) {
      await engine.store.enqueue(run.run_id, batch);
      onBatch();
      batch = [];
      limit = BATCH;
    }
  }
  await engine.store.enqueue(run.run_id, batch);
  const stored = await engine.store.countItems(run.run_id);
  if (stored !== ordinal) {
    throw new UserError('dataset.duplicate-keys', `${ctx.benchmark.dataPath}: ${ordinal - stored} instance ids occur more than once; ids must be unique`);
  }
  await engine.store.markPlanned(run.run_id, ordinal);
  engine.logger.info('run.planned', { runId: run.run_id, total: ordinal });
}
