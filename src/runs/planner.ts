/**
 * Planning: the dataset streamed into the run's work queue in batches. Idempotent, so a plan that was
 * interrupted is completed by the next execution, which inserts only what is missing. Runs beside the
 * workers: each batch wakes them, so the first instances are sent while the rest are still read, except
 * in a de-identified run: there a record's prompt may go only once every record was surveyed (the names
 * found in its subject's other records, what the whole dataset teaches: src/deid/evidence.ts), so the
 * instances are claimed after planning attached that evidence.
 */
import { type Instance, pinnedToRevision, type SkipCounts, streamInstances, verifyDataset } from '../catalog';
import { UserError } from '../errors';
import type { Engine } from './engine';
import type { RunContext } from '../contracts';
import type { RunRow } from './store';

/**
 * Small first batch so work starts quickly; larger ones after that for fewer statements. Not much
 * larger: each batch's payloads exist several times over while it is enqueued (the rows, their JSON,
 * the statement's copy in the store), and with 500 that was a 10-15 MB peak of a 10,000-instance
 * run on the embedded store; 200 measured 10 MB lower at no measured cost.
 */
const FIRST_BATCH = 64;
const BATCH = 200;

export interface Planning {
  done: boolean;
  /** Set when planning failed; the run stops with it. */
  error?: unknown;
  /** Resolves at the next batch enqueued or when planning ends. */
  progressed(): Promise<void>;
  finished: Promise<void>;
}

/**
 * The planning of a run as this worker sees it: none (the run is planned), its own (it took the
 * planner lease), or another worker's (it waits, and takes over if that worker's lease expires).
 */
export async function planningFor(engine: Engine, run: RunRow, ctx: RunContext, workerId: string): Promise<Planning | undefined> {
  if (run.instance_count !== null) return undefined;
  if (await engine.store.takePlanner(run.run_id, workerId, engine.settings.leaseSeconds)) return startPlanning(engine, run, ctx, workerId);
  return watchPlanning(engine, run, ctx, workerId);
}

/** How often a worker that does not plan looks again while the run's queue is still filling. */
const WATCH_MS = 100;

/** Another worker plans: poll until the run is planned (or stops), and take over a dead planner. */
function watchPlanning(engine: Engine, run: RunRow, ctx: RunContext, workerId: string): Planning {
  const planning: Planning = {
    done: false,
    // Nothing runs in the background here (a takeover plans inside progressed(), which the loops
    // await), so there is nothing to wait for: a promise settled only by progressed() would hang a
    // worker whose loops stopped early (database lost) and no longer call it.
    finished: Promise.resolve(),
    async progressed() {
      await new Promise((r) => setTimeout(r, WATCH_MS));
      const now = await engine.store.getRun(run.run_id);
      if (!now || now.instance_count !== null || now.status !== 'running') {
        planning.done = true;
      } else if (await engine.store.takePlanner(run.run_id, workerId, engine.settings.leaseSeconds)) {
        try {
          await plan(engine, run, ctx, workerId, () => undefined);
        } catch (err) {
          planning.error = err;
        }
        planning.done = true;
      }
    },
  };
  return planning;
}

export function startPlanning(engine: Engine, run: RunRow, ctx: RunContext, workerId: string): Planning {
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
  planning.finished = plan(engine, run, ctx, workerId, wake).then(
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

async function plan(engine: Engine, run: RunRow, ctx: RunContext, workerId: string, onBatch: () => void): Promise<void> {
  // The data is held to the revision the run recorded when it was requested (a file changed since is refused).
  const benchmark = pinnedToRevision(ctx.benchmark, run.spec.data);
  await verifyDataset(benchmark);
  let batch: { itemKey: string; ordinal: number; instance: Instance }[] = [];
  let ordinal = 0;
  let limit = FIRST_BATCH;
  const evidence = ctx.deidentify ? engine.deid.plan?.(ctx) : undefined;
  const skipped: SkipCounts = {};
  // A capped run takes HELM's seeded sample or the first N, as its spec records (runs from before it
  // recorded one took the first N).
  const stream = streamInstances(benchmark, {
    ...(run.max_instances ? { limit: run.max_instances, sample: run.spec.sample?.method ?? 'first' } : {}),
    skipped,
  });
  for await (const instance of stream) {
    evidence?.add(instance, engine.prompt.build(ctx, instance));
    batch.push({ itemKey: instance.key, ordinal, instance });
    ordinal += 1;
    if (batch.length >= limit) {
      await engine.store.enqueue(run.run_id, batch);
      // Still the planner: renew the lease; if another worker took over (this one stalled past its
      // lease), stop quietly: that worker finishes the plan, and inserting twice is harmless.
      if (!(await engine.store.takePlanner(run.run_id, workerId, engine.settings.leaseSeconds))) {
        engine.logger.warn('run.planner-lost', { runId: run.run_id, workerId });
        return;
      }
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
  // Before the run counts as planned (and a de-identified run's instances can be claimed), every record
  // of a subject learns the names found in the subject's other records, and the run keeps what the whole
  // dataset taught (sealed: keyed hashes), its version appended to the run's de-identification version.
  if (evidence) {
    const { subjects, evidence: sealed } = evidence.finish();
    if (subjects.length > 0) await engine.store.attachEvidence(run.run_id, subjects);
    if (sealed) await engine.store.saveEvidence(run.run_id, sealed);
  }
  await engine.store.markPlanned(run.run_id, ordinal, skipped);
  // What the dataset left out is counted, never dropped silently: one line per rule.
  for (const [rule, count] of Object.entries(skipped)) engine.logger.info('run.records-skipped', { runId: run.run_id, rule, count });
  engine.logger.info('run.planned', { runId: run.run_id, total: ordinal });
}
