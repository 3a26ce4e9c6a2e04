/**
 * The work loop of one worker on one run: loops take claimed instances and pass each through the
 * stages. There are more loops than model-call slots (PIPELINE_DEPTH per slot), so that audit writes,
 * prompt building and result writes of some instances overlap the calls of others, while the endpoint
 * never has more than `concurrency` calls in flight (EndpointCapacity). The next batch is claimed
 * before the local queue runs dry; a worker stops when nothing is queued, claimable, in flight or
 * still being planned, and after every result it handed off has been written.
 */
import type { AuditEventInput } from '../audit/types';
import { sha256Hex } from '../canonical';
import { PolicyDenied } from '../errors';
import { ModelCallError } from '../models';
import { observeInstance, observeModelCall, observeModelCallFailure } from '../observability';
import { auditBase, ENGINE_ACTOR } from './audit-events';
import type { Engine, ExecuteOptions } from './engine';
import type { Planning } from './planner';
import type { EndpointCapacity } from './capacity';
import type { RunContext } from './stages';
import type { ClaimedItem } from './store';

/** Instance loops per model-call slot. */
export const PIPELINE_DEPTH = 2;

/** Runs the loops; returns the error that must stop the run (refusal, audit failure), if any. */
export async function work(engine: Engine, ctx: RunContext, workerId: string, planning: Planning | undefined, opts: ExecuteOptions): Promise<unknown> {
  const { store, settings } = engine;
  // The endpoint's capacity across all workers (its policy limit, or the configured default), and
  // what this worker's loops are sized for; calls in flight here are bounded by this worker's share.
  const total = Math.max(1, ctx.endpoint.limits?.concurrency ?? settings.concurrency);
  const perWorker = Math.max(1, Math.min(total, settings.concurrency));
  const { capacity, slots } = engine.capacities.for(ctx.endpoint.id, total, perWorker);
  const loops = perWorker * PIPELINE_DEPTH;
  const batchSize = Math.max(settings.claimBatch, loops);
  // Result writes handed off by the loops; awaited before the worker returns (and bounded).
  const writes = new Set<Promise<void>>();
  const queue: ClaimedItem[] = [];
  let exhausted = false;
  let claiming: Promise<void> | undefined;
  let fatal: unknown;
  let sinceProgress = 0;
  // Instances being processed here; one that fails transiently goes back to the store, so the run
  // is drained only when nothing is queued, claimable or in flight.
  let inFlight = 0;
  let waiters: (() => void)[] = [];
  const somethingChanged = () => new Promise<void>((resolve) => waiters.push(resolve));
  const wake = () => {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };

  const claim = async () => {
    if ((await store.getRun(ctx.runId))?.status !== 'running') {
      exhausted = true;
      fatal ??= planning?.error;
      return;
    }
    const items = await store.claim(ctx.runId, workerId, batchSize, settings.leaseSeconds, settings.maxAttempts, { plannedOnly: ctx.deidentify });
    if (items.length === 0) exhausted = true;
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
      if (fatal !== undefined || opts.signal?.aborted) return undefined;
      const item = queue.shift();
      if (item) {
        if (queue.length < loops && !exhausted) void startClaim();
        return item;
      }
      if (exhausted) {
        const planningDone = !planning || planning.done;
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
        const handed = await processItem(engine, ctx, workerId, item, capacity, opts.signal);
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
      if (opts.onProgress && ++sinceProgress >= 25) {
        sinceProgress = 0;
        // Progress is informative: a failed count must not end the loop (its instances would be orphaned).
        await store.counts(ctx.runId).then(opts.onProgress, () => undefined);
      }
    }
  };
  await slots.join();
  // Heartbeat: this worker's claimed instances keep their leases while it is alive; a worker that
  // dies stops renewing, and its instances are claimed again once their leases expire.
  // Each beat is independent: a failed renewal (the database restarting) is retried at the next one.
  // A beat still waiting for the database is not joined by more, which would pile up in the pool.
  let beating = false;
  const heartbeat = setInterval(() => {
    if (beating) return;
    beating = true;
    void store
      .extendLeases(ctx.runId, workerId, settings.leaseSeconds)
      .catch(() => undefined)
      .finally(() => (beating = false));
  }, Math.max(200, (settings.leaseSeconds * 1000) / 3));
  heartbeat.unref();
  try {
    await Promise.all(Array.from({ length: loops }, loop));
    await Promise.all(writes);
  } finally {
    clearInterval(heartbeat);
    await slots.leave().catch(() => undefined);
  }
  // A prefetch may still be claiming: let it land so the caller's releaseAll returns those leases.
  await claiming;
  await planning?.finished;
  if (opts.onProgress && fatal === undefined) opts.onProgress(await store.counts(ctx.runId));
  return fatal ?? (opts.signal?.aborted ? undefined : planning?.error);
}

/** The audit event written before every outbound call of a run: to the model, or to a judge. */
function callEvent(ctx: RunContext, endpointId: string, detail: Record<string, number | string | boolean>): AuditEventInput {
  const base = auditBase(ctx);
  return {
    type: 'endpoint.call',
    action: 'E',
    outcome: 'success',
    rule: 'egress.allowlisted-endpoint',
    actor: ENGINE_ACTOR,
    ...base,
    subject: { ...base.subject, endpointId },
    detail,
  };
}

/** Errors that stop the whole run rather than one instance: refusals and an unavailable audit trail. */
function isFatal(err: unknown): boolean {
  return !(err instanceof ModelCallError);
}

/**
 * One instance through every stage. Throws only for errors that must stop the run. When the model
 * answered, the result write is returned unawaited: the loop moves on to its next instance while the
 * write (group-committed with others) lands; the worker awaits every such write before it finishes.
 */
async function processItem(
  engine: Engine,
  ctx: RunContext,
  workerId: string,
  item: ClaimedItem,
  capacity: EndpointCapacity,
  signal?: AbortSignal,
): Promise<{ write: Promise<void> } | undefined> {
  const { store, settings, logger } = engine;
  // A refusal or any other fatal error leaves the instance claimed: releaseAll gives it back unspent.
  const access = await engine.access.checkInstance(ctx);
  if (!access.allowed) throw new PolicyDenied(access.rule, access.reason);

  const prompt = engine.prompt.build(ctx, item.instance);
  const deid = await engine.deid.apply(ctx, item.instance, prompt);
  if (!deid.ok) {
    await engine.audit.record({
      type: 'instance.blocked',
      action: 'E',
      outcome: 'denied',
      rule: deid.rule,
      reason: 'prompt still carries an identifier after de-identification; not sent',
      actor: ENGINE_ACTOR,
      ...auditBase(ctx),
      detail: { ordinal: item.ordinal },
    });
    if (await store.finishWithout(ctx.runId, item.itemKey, workerId, 'blocked', deid.rule)) observeInstance(ctx, 'blocked', deid.rule);
    return undefined;
  }

  const requestBytes = Buffer.byteLength(deid.prompt);
  const requestSha256 = sha256Hex(deid.prompt);
  // The budget check: a refusal is audited as a call not made, then stops the run (halted, its rule).
  const budget = await engine.budget.reserve(ctx, deid.prompt);
  if (!budget.allowed) {
    await engine.audit.record({
      type: 'endpoint.call',
      action: 'E',
      outcome: 'denied',
      rule: budget.rule,
      reason: budget.reason.slice(0, 300),
      actor: ENGINE_ACTOR,
      ...auditBase(ctx),
      detail: { ordinal: item.ordinal, ...budget.detail },
    });
    throw new PolicyDenied(budget.rule, budget.reason);
  }
  let handedOff = false;
  try {
    const completion = await engine.models.complete(ctx, deid.prompt, {
      ...(signal ? { signal } : {}),
      acquire: () => capacity.acquire(signal),
      // No audit record, no call: this runs before every attempt and its failure stops the call.
      beforeAttempt: (attempt) => engine.audit.record(callEvent(ctx, ctx.endpoint.id, { ordinal: item.ordinal, attempt, requestBytes, requestSha256 })),
    });
    observeModelCall(ctx.endpoint.id, completion.latencyMs);
    const scores = await engine.scoring.score(ctx, item.instance, completion.text, {
      ...(signal ? { signal } : {}),
      beforeCall: (endpointId, detail) => engine.audit.record(callEvent(ctx, endpointId, { ordinal: item.ordinal, purposeOfCall: 'scoring', ...detail })),
    });
    const write = store
      .complete(ctx.runId, item.itemKey, workerId, {
        prediction: completion.text,
        scores,
        promptTokens: completion.promptTokens,
        completionTokens: completion.completionTokens,
        latencyMs: completion.latencyMs,
      })
      .then((stored) => {
        if (stored) observeInstance(ctx, 'done');
      })
      // After the result is stored its tokens count as spent; the worst-case hold is no longer needed.
      .finally(() => (budget.hold ? engine.budget.release(budget.hold) : undefined));
    handedOff = true;
    // Wrapped: an async function returning a promise would wait for it.
    return { write };
  } catch (err) {
    // An interrupted call (cancel, shutdown) costs no attempt: releaseAll returns the instance.
    if (signal?.aborted) return undefined;
    if (isFatal(err)) throw err;
    const e = err as ModelCallError;
    logger.warn('run.item.call-failed', { runId: ctx.runId, ordinal: item.ordinal, errorCode: e.code, httpStatus: e.httpStatus, attempt: item.attempts });
    observeModelCallFailure(ctx, e.code, item.attempts >= settings.maxAttempts);
    await store.release(ctx.runId, item.itemKey, workerId, settings.maxAttempts, e.code);
    return undefined;
  } finally {
    if (budget.hold && !handedOff) await engine.budget.release(budget.hold);
  }
}
