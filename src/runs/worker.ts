/**
 * The work loop of one worker on one run: the queue, the leases and the loops. Loops take claimed
 * instances and pass each through the pipeline (pipeline.ts). There are more loops than model-call
 * slots (PIPELINE_DEPTH per slot), so that audit writes, prompt building and result writes of some
 * instances overlap the calls of others, while the gateway keeps each endpoint within its capacity.
 * The next batch is claimed before the local queue runs dry; a worker stops when nothing is queued,
 * claimable, in flight or still being planned, and after every result it handed off has been written.
 */
import { observeInstance, observeModelCallFailure } from '../observability';
import type { Engine, ExecuteOptions } from './engine';
import { processInstance } from './pipeline';
import type { Planning } from './planner';
import type { RunContext } from '../contracts';
import type { ClaimedItem } from './store';
import { RunWatch } from './watch';

/** Instance loops per model-call slot. */
export const PIPELINE_DEPTH = 2;

/** Runs the loops; returns the error that must stop the run (refusal, audit failure), if any. */
export async function work(engine: Engine, ctx: RunContext, workerId: string, planning: Planning | undefined, opts: ExecuteOptions): Promise<unknown> {
  const { store, settings } = engine;
  // Loops are sized for this worker's share of the endpoint's capacity (its policy limit, or the
  // configured default); the gateway holds calls in flight to that share.
  const total = Math.max(1, ctx.endpoint.limits?.concurrency ?? settings.concurrency);
  const perWorker = Math.max(1, Math.min(total, settings.concurrency));
  // An instance of an LLM-jury benchmark makes its model call and then one call per judge, one after
  // the other: its loop holds a slot of one endpoint at a time, so there are loops enough for every
  // endpoint's share (each judge endpoint has its own capacity, which the gateway still enforces).
  // A rubric benchmark's instance makes its model call, then its grader calls (several at once).
  const calls = ctx.benchmark.definition.jury ? 1 + (ctx.benchmark.judges?.length ?? 0) : ctx.benchmark.definition.rubric ? 2 : 1;
  const loops = perWorker * PIPELINE_DEPTH * calls;
  const batchSize = Math.max(settings.claimBatch, loops);
  /** One round of calls: what this worker can start at once. */
  const round = perWorker * calls;
  // Set once the worker has joined the endpoint's capacity (below), before any loop claims.
  let sharing = () => false;
  const claimSize = () => (sharing() ? round : batchSize);
  // Result writes handed off by the loops; awaited before the worker returns (and bounded).
  const writes = new Set<Promise<void>>();
  const queue: ClaimedItem[] = [];
  let exhausted = false;
  // Whether the last claim that found nothing began once planning had finished. Only then does it
  // mean the queue is drained: one that began earlier may have looked before the last batch was in.
  let drained = false;
  let claiming: Promise<void> | undefined;
  let fatal: unknown;
  // Instances being processed here; one that fails transiently goes back to the store, so the run
  // is drained only when nothing is queued, claimable or in flight.
  let inFlight = 0;
  // Stopped by a cancel (here, or seen in the store): no new instance is taken, no new call starts.
  const watch = new RunWatch(store, ctx.runId);
  let waiters: (() => void)[] = [];
  const somethingChanged = () => new Promise<void>((resolve) => waiters.push(resolve));
  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };

  const claim = async () => {
    if ((await store.getRun(ctx.runId))?.status !== 'running') {
      watch.stop();
      exhausted = true;
      fatal ??= planning?.error;
      return;
    }
    // Alone on the endpoint, a whole batch: fewer round trips. Sharing it with other worker processes,
    // only a round of calls: a worker holding instances it cannot start yet would leave them waiting at
    // the end of the run while the others sit idle (measured on bench:scale; capping a single process
    // too cost it more round trips than it saved).
    const planned = !planning || planning.done;
    const items = await store.claim(ctx.runId, workerId, claimSize(), settings.leaseSeconds, settings.maxAttempts, { plannedOnly: ctx.deidentify });
    if (items.length === 0) {
      exhausted = true;
      drained = planned;
    }
    queue.push(...items);
  };
  const startClaim = () =>
    (claiming ??= claim()
      .catch((err: unknown) => {
        fatal ??= err;
      })
      .finally(() => {
        claiming = undefined;
      }));

  const next = async (): Promise<ClaimedItem | undefined> => {
    for (;;) {
      if (planning?.error) fatal ??= planning.error;
      if (fatal !== undefined || opts.signal?.aborted || watch.stopped) return undefined;
      const item = queue.shift();
      if (item) {
        if (queue.length < (sharing() ? round : loops) && !exhausted) void startClaim();
        return item;
      }
      if (exhausted) {
        const planningDone = !planning || planning.done;
        if (planningDone && !drained) {
          // Planning finished while that claim was out: claim again before deciding anything.
          exhausted = false;
          continue;
        }
        if (inFlight === 0 && planningDone) return undefined;
        try {
          await Promise.race([somethingChanged(), planningDone ? new Promise<void>(() => undefined) : planning.progressed()]);
        } catch (err) {
          // Watching another worker's planning reads the store; losing it stops this execution.
          fatal ??= err;
        }
        exhausted = false;
        continue;
      }
      await startClaim();
    }
  };

  const loop = async () => {
    for (let item = await next(); item; item = await next()) {
      inFlight += 1;
      try {
        const handed = await processItem(engine, ctx, workerId, item, opts.signal);
        if (handed) {
          const tracked = handed.write.catch((err: unknown) => {
            fatal ??= err;
          });
          writes.add(tracked);
          void tracked.finally(() => writes.delete(tracked));
          if (writes.size > loops) await Promise.race(writes);
        }
      } catch (err) {
        fatal ??= err;
      } finally {
        inFlight -= 1;
        wake();
      }
    }
  };
  const capacity = await engine.calls.join(ctx, watch);
  sharing = () => capacity.workers() > 1;
  // Heartbeat: this worker's claimed instances keep their leases while it is alive; a worker that
  // dies stops renewing, and its instances are claimed again once their leases expire.
  // Each beat is independent: a failed renewal (the database restarting) is retried at the next one.
  // A beat still waiting for the database is not joined by more, which would pile up in the pool.
  let beating = false;
  const heartbeat = setInterval(
    () => {
      if (beating) return;
      beating = true;
      void store
        .extendLeases(ctx.runId, workerId, settings.leaseSeconds)
        .catch(() => undefined)
        .finally(() => (beating = false));
    },
    Math.max(200, (settings.leaseSeconds * 1000) / 3),
  );
  heartbeat.unref();
  try {
    await Promise.all(Array.from({ length: loops }, loop));
    await Promise.all(writes);
  } finally {
    clearInterval(heartbeat);
    await capacity.leave();
  }
  // A prefetch may still be claiming: let it land so the caller's releaseAll returns those leases.
  await claiming;
  await planning?.finished;
  return fatal ?? (opts.signal?.aborted ? undefined : planning?.error);
}

/**
 * One instance through the pipeline, and its outcome turned into one store call. Throws only for
 * errors that must stop the run. When the model answered, the result write is returned unawaited:
 * the loop moves on to its next instance while the write (group-committed with others) lands; the
 * worker awaits every such write before it finishes.
 */
async function processItem(engine: Engine, ctx: RunContext, workerId: string, item: ClaimedItem, signal?: AbortSignal): Promise<{ write: Promise<void> } | undefined> {
  const { store, settings, logger } = engine;
  const outcome = await processInstance(engine, ctx, item, signal);
  switch (outcome.kind) {
    case 'blocked':
      if (await store.finishWithout(ctx.runId, item.itemKey, workerId, 'blocked', outcome.rule)) observeInstance(ctx, 'blocked', outcome.rule);
      return undefined;
    case 'answered': {
      const write = store
        .complete(ctx.runId, item.itemKey, workerId, outcome.result)
        .then((stored) => {
          if (stored) observeInstance(ctx, 'done');
        })
        // After the result is stored its tokens count as spent; the worst-case hold is no longer needed.
        .finally(outcome.settle);
      // Wrapped: an async function returning a promise would wait for it.
      return { write };
    }
    case 'call-failed': {
      const e = outcome.error;
      logger.info('run.item.call-failed', { runId: ctx.runId, ordinal: item.ordinal, errorCode: e.code, httpStatus: e.httpStatus, attempt: item.attempts });
      observeModelCallFailure(ctx, e.code, item.attempts >= settings.maxAttempts);
      await store.release(ctx.runId, item.itemKey, workerId, settings.maxAttempts, e.code);
      return undefined;
    }
    case 'interrupted':
      // An interrupted call (cancel, shutdown) costs no attempt: releaseAll returns the instance.
      return undefined;
  }
}
