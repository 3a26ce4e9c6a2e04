/**
 * The run engine. A run is (benchmark, endpoint). Requesting one checks access and records it;
 * executing one plans it (streams the dataset into the run store as a work queue) and then works
 * through it with bounded concurrency, each instance passing the stages in order:
 *   access check -> prompt build -> de-identification -> guarded model call -> scoring -> persistence
 * Results are keyed (run, instance), so a restarted run claims only unfinished instances and never
 * counts one twice; aggregates are computed from the store once every instance is finished.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { AuditEventInput, AuditTrail } from '../audit/types';
import { type Catalog, instancesOf, verifyDataset } from '../catalog';
import { sha256Hex } from '../canonical';
import type { EndpointPolicy } from '../egress';
import { PolicyDenied, UserError, describeError } from '../errors';
import { type Actor, serviceActor } from '../identity/actor';
import type { Logger } from '../log';
import type { ScoringMode } from '../metrics';
import { ModelCallError } from '../models';
import { requiresDeidentification } from '../tiers';
import type { AccessStage, DeidStage, ModelStage, PromptStage, RunContext, ScoringStage } from './stages';
import { type ClaimedItem, type MetricAggregate, type RunRow, type RunSpec, RunStore, type StateCounts } from './store';

export interface EngineSettings {
  concurrency: number;
  maxAttempts: number;
  leaseSeconds: number;
  claimBatch: number;
}

export interface Engine {
  store: RunStore;
  catalog: Catalog;
  endpoints: EndpointPolicy;
  audit: AuditTrail;
  access: AccessStage;
  prompt: PromptStage;
  deid: DeidStage;
  models: ModelStage;
  scoring: ScoringStage;
  logger: Logger;
  settings: EngineSettings;
}

export interface RunRequest {
  benchmarkId: string;
  endpointId: string;
  requester: Actor;
  maxInstances?: number;
  scoring?: ScoringMode;
  purpose?: string;
  irbProtocol?: string;
  approvalId?: string;
}

export interface RunSummary {
  runId: string;
  benchmarkId: string;
  tier: string;
  endpointId: string;
  status: string;
  counts: StateCounts;
  mainMetric: string;
  mainScore: number | null;
  aggregates: MetricAggregate[];
  promptTokens: number;
  completionTokens: number;
}

export interface ExecuteOptions {
  workerId?: string;
  signal?: AbortSignal;
  onProgress?: (counts: StateCounts) => void;
}

const PLAN_BATCH = 500;
const ENGINE_ACTOR = serviceActor('engine');

function contextOf(engine: Engine, run: Pick<RunRow, 'run_id' | 'benchmark_id' | 'endpoint_id' | 'tier' | 'spec'>, requester: Actor): RunContext {
  const benchmark = engine.catalog.get(run.benchmark_id);
  return {
    runId: run.run_id,
    benchmark,
    endpoint: engine.endpoints.get(run.endpoint_id),
    tier: run.tier,
    requester,
    scoring: run.spec.scoring,
    deidentify: run.spec.deidentify,
    ...(run.spec.purpose ? { purpose: run.spec.purpose } : {}),
    ...(run.spec.irbProtocol ? { irbProtocol: run.spec.irbProtocol } : {}),
    ...(run.spec.approvalId ? { approvalId: run.spec.approvalId } : {}),
  };
}

function auditBase(ctx: Pick<RunContext, 'benchmark' | 'endpoint' | 'tier' | 'purpose' | 'irbProtocol' | 'approvalId'> & { runId?: string }) {
  return {
    ...(ctx.purpose ? { purpose: ctx.purpose } : {}),
    ...(ctx.irbProtocol ? { irbProtocol: ctx.irbProtocol } : {}),
    subject: {
      ...(ctx.runId ? { runId: ctx.runId } : {}),
      benchmarkId: ctx.benchmark.definition.id,
      tier: ctx.tier,
      endpointId: ctx.endpoint.id,
      ...(ctx.approvalId ? { approvalId: ctx.approvalId } : {}),
    },
  };
}

/** Whether a benchmark's prompts are de-identified: always for EHR tiers, by definition otherwise. */
function deidentifies(tier: RunRow['tier'], setting: 'required' | 'optional' | 'never' | undefined): boolean {
  return requiresDeidentification(tier) || setting === 'required';
}

/** Checks access and records a run. Throws PolicyDenied (after auditing the refusal) when denied. */
export async function requestRun(engine: Engine, req: RunRequest): Promise<RunRow> {
  const benchmark = engine.catalog.get(req.benchmarkId);
  const endpoint = engine.endpoints.get(req.endpointId);
  const d = benchmark.definition;
  const runId = randomUUID();
  const ctx = {
    runId,
    benchmark,
    endpoint,
    tier: d.tier,
    requester: req.requester,
    scoring: req.scoring ?? 'corrected',
    deidentify: deidentifies(d.tier, d.deidentification),
    ...(req.purpose ? { purpose: req.purpose } : {}),
    ...(req.irbProtocol ? { irbProtocol: req.irbProtocol } : {}),
    ...(req.approvalId ? { approvalId: req.approvalId } : {}),
  };
  const decision = await engine.access.checkRun(ctx);
  await engine.audit.record({
    type: 'run.request',
    action: 'C',
    outcome: decision.allowed ? 'success' : 'denied',
    rule: decision.rule,
    reason: decision.reason,
    actor: req.requester,
    ...auditBase(ctx),
  });
  if (!decision.allowed) throw new PolicyDenied(decision.rule, decision.reason);
  const spec: RunSpec = {
    benchmark: {
      id: d.id,
      version: d.version,
      definitionHash: benchmark.definitionHash,
      templateHash: benchmark.templateHash,
      mainMetric: d.metrics.main,
      metrics: [d.metrics.main, ...(d.metrics.secondary ?? [])],
      lowerIsBetter: d.lowerIsBetter,
    },
    endpoint: { id: endpoint.id, provider: endpoint.provider, deployment: endpoint.deployment ?? null, model: endpoint.model ?? null },
    scoring: ctx.scoring,
    maxTokens: d.prompt.maxTokens,
    temperature: d.prompt.temperature ?? 0,
    deidentify: ctx.deidentify,
    ...(req.purpose ? { purpose: req.purpose } : {}),
    ...(req.irbProtocol ? { irbProtocol: req.irbProtocol } : {}),
    ...(req.approvalId ? { approvalId: req.approvalId } : {}),
  };
  const row = {
    run_id: runId,
    benchmark_id: d.id,
    benchmark_version: d.version,
    benchmark_hash: benchmark.definitionHash,
    template_hash: benchmark.templateHash,
    tier: d.tier,
    endpoint_id: endpoint.id,
    status: 'approved' as const,
    requested_by: req.requester.principal,
    max_instances: req.maxInstances ?? null,
    deid_version: ctx.deidentify ? engine.deid.version : null,
    spec,
  };
  await engine.store.insertRun(row);
  engine.logger.info('run.requested', { runId, benchmarkId: d.id, endpointId: endpoint.id, tier: d.tier });
  const stored = await engine.store.getRun(runId);
  if (!stored) throw new Error('run vanished after insert');
  return stored;
}

/** Streams the dataset into the run's work queue (idempotent: a resumed plan adds only what is missing). */
async function plan(engine: Engine, run: RunRow, ctx: RunContext): Promise<void> {
  await verifyDataset(ctx.benchmark);
  let batch: { itemKey: string; ordinal: number; instance: ClaimedItem['instance'] }[] = [];
  let ordinal = 0;
  for await (const instance of instancesOf(ctx.benchmark, run.max_instances ?? undefined)) {
    batch.push({ itemKey: instance.key, ordinal, instance });
    ordinal += 1;
    if (batch.length >= PLAN_BATCH) {
      await engine.store.enqueue(run.run_id, batch);
      batch = [];
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

/** Errors that stop the whole run rather than one instance: refusals and an unavailable audit trail. */
function isFatal(err: unknown): boolean {
  return !(err instanceof ModelCallError);
}

export async function executeRun(engine: Engine, runId: string, opts: ExecuteOptions = {}): Promise<RunSummary> {
  const { store, logger, settings } = engine;
  const run = await store.getRun(runId);
  if (!run) throw new UserError('run.not-found', `run ${runId} does not exist; see "ehrbench runs list"`);
  if (run.status === 'completed') return summarize(engine, run);
  if (run.status !== 'approved' && run.status !== 'running') {
    throw new UserError('run.not-runnable', `run ${runId} is ${run.status}; only approved or interrupted runs can be executed`);
  }
  const requester: Actor = { principal: run.requested_by, role: 'researcher', authMethod: 'service' };
  const ctx = contextOf(engine, run, requester);
  if (ctx.benchmark.definitionHash !== run.benchmark_hash || ctx.benchmark.templateHash !== run.template_hash) {
    throw new UserError('run.definition-changed', `benchmark ${run.benchmark_id} changed since run ${runId} was requested; request a new run`);
  }
  const workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

  const decision = await engine.access.checkRun(ctx);
  const startEvent: AuditEventInput = {
    type: 'run.start',
    action: 'E',
    outcome: decision.allowed ? 'success' : 'denied',
    rule: decision.rule,
    reason: decision.reason,
    actor: ENGINE_ACTOR,
    ...auditBase(ctx),
    detail: { resumed: run.status === 'running' },
  };
  await engine.audit.record(startEvent);
  if (!decision.allowed) {
    await store.transition(runId, ['approved', 'running'], 'halted', decision.rule);
    throw new PolicyDenied(decision.rule, decision.reason);
  }
  await store.transition(runId, ['approved', 'running'], 'running');

  try {
    if (run.instance_count === null) await plan(engine, run, ctx);
  } catch (err) {
    await failRun(engine, ctx, err);
    throw err;
  }

  const fatal = await work(engine, ctx, workerId, opts);
  await store.releaseAll(runId, workerId);
  if (fatal) {
    await failRun(engine, ctx, fatal);
    throw fatal;
  }
  if (await store.completeIfFinished(runId)) {
    const aggregates = await store.computeAggregates(runId);
    await store.saveAggregates(runId, aggregates);
    const counts = await store.counts(runId);
    await engine.audit.record({
      type: 'run.complete',
      action: 'E',
      outcome: 'success',
      rule: 'run.all-instances-finished',
      actor: ENGINE_ACTOR,
      ...auditBase(ctx),
      detail: { done: counts.done, blocked: counts.blocked, failed: counts.failed },
    });
    logger.info('run.completed', { runId, done: counts.done, blocked: counts.blocked, failed: counts.failed });
  }
  const latest = await store.getRun(runId);
  return summarize(engine, latest ?? run);
}

async function failRun(engine: Engine, ctx: RunContext, err: unknown): Promise<void> {
  const rule = err instanceof PolicyDenied ? err.rule : describeError(err).code;
  const status = err instanceof PolicyDenied ? 'halted' : 'failed';
  await engine.store.transition(ctx.runId, ['running', 'approved'], status, rule);
  engine.logger.error('run.stopped', { runId: ctx.runId, status, rule, err });
  // Best effort: when the audit trail itself is what failed, this record cannot be written either.
  await engine.audit
    .record({ type: 'run.fail', action: 'E', outcome: 'failed', rule, reason: `run ${status}`, actor: ENGINE_ACTOR, ...auditBase(ctx) })
    .catch(() => undefined);
}

/** Runs `concurrency` loops over the claimed instances. Returns the error that stopped the run, if any. */
async function work(engine: Engine, ctx: RunContext, workerId: string, opts: ExecuteOptions): Promise<unknown> {
  const { store, settings } = engine;
  const concurrency = Math.max(1, Math.min(settings.concurrency, ctx.endpoint.limits?.concurrency ?? Number.MAX_SAFE_INTEGER));
  const queue: ClaimedItem[] = [];
  let exhausted = false;
  let claiming: Promise<void> | undefined;
  let fatal: unknown;
  let sinceProgress = 0;
  // Instances being processed by this worker's loops; one that fails transiently goes back to the
  // queue, so the run is only drained when nothing is queued, claimable or in flight.
  let inFlight = 0;
  let wakeWaiters: (() => void)[] = [];
  const oneFinished = () => new Promise<void>((resolve) => wakeWaiters.push(resolve));

  const claim = async () => {
    const status = (await store.getRun(ctx.runId))?.status;
    if (status !== 'running') {
      exhausted = true;
      inFlight = 0;
      return;
    }
    const items = await store.claim(ctx.runId, workerId, Math.max(settings.claimBatch, concurrency), settings.leaseSeconds, settings.maxAttempts);
    if (items.length === 0) exhausted = true;
    queue.push(...items);
  };

  const next = async (): Promise<ClaimedItem | undefined> => {
    for (;;) {
      if (fatal !== undefined || opts.signal?.aborted) return undefined;
      const item = queue.shift();
      if (item) return item;
      if (exhausted) {
        if (inFlight === 0) return undefined;
        await oneFinished();
        exhausted = false;
        continue;
      }
      claiming ??= claim().finally(() => {
        claiming = undefined;
      });
      await claiming;
    }
  };

  const loop = async () => {
    for (let item = await next(); item; item = await next()) {
      inFlight += 1;
      try {
        await processItem(engine, ctx, workerId, item, opts.signal);
      } catch (err) {
        fatal ??= err;
      } finally {
        inFlight -= 1;
        const waiters = wakeWaiters;
        wakeWaiters = [];
        for (const wake of waiters) wake();
      }
      if (opts.onProgress && ++sinceProgress >= 25) {
        sinceProgress = 0;
        opts.onProgress(await store.counts(ctx.runId));
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, loop));
  } catch (err) {
    fatal ??= err;
  }
  if (opts.onProgress) opts.onProgress(await store.counts(ctx.runId));
  return fatal;
}

/** One instance through every stage. Throws only for errors that must stop the run. */
async function processItem(engine: Engine, ctx: RunContext, workerId: string, item: ClaimedItem, signal?: AbortSignal): Promise<void> {
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
    await store.finishWithout(ctx.runId, item.itemKey, workerId, 'blocked', deid.rule);
    return;
  }

  const requestBytes = Buffer.byteLength(deid.prompt);
  const requestSha256 = sha256Hex(deid.prompt);
  try {
    const completion = await engine.models.complete(ctx, deid.prompt, {
      ...(signal ? { signal } : {}),
      // No audit record, no call: this runs before every attempt and its failure stops the call.
      beforeAttempt: (attempt) =>
        engine.audit.record({
          type: 'endpoint.call',
          action: 'E',
          outcome: 'success',
          rule: 'egress.allowlisted-endpoint',
          actor: ENGINE_ACTOR,
          ...auditBase(ctx),
          detail: { ordinal: item.ordinal, attempt, requestBytes, requestSha256 },
        }),
    });
    const scores = engine.scoring.score(ctx, item.instance, completion.text);
    await store.complete(ctx.runId, item.itemKey, workerId, {
      prediction: completion.text,
      scores,
      promptTokens: completion.promptTokens,
      completionTokens: completion.completionTokens,
      latencyMs: completion.latencyMs,
    });
  } catch (err) {
    if (isFatal(err)) throw err;
    const e = err as ModelCallError;
    logger.warn('run.item.call-failed', { runId: ctx.runId, ordinal: item.ordinal, errorCode: e.code, httpStatus: e.httpStatus, attempt: item.attempts });
    await store.release(ctx.runId, item.itemKey, workerId, settings.maxAttempts, e.code);
  }
}

export async function summarize(engine: Engine, run: RunRow): Promise<RunSummary> {
  const counts = await engine.store.counts(run.run_id);
  const aggregates = run.status === 'completed' ? await engine.store.results(run.run_id) : await engine.store.computeAggregates(run.run_id);
  const mainMetric = run.spec.benchmark.mainMetric;
  const tokens = await engine.store.tokenTotals(run.run_id);
  return {
    runId: run.run_id,
    benchmarkId: run.benchmark_id,
    tier: run.tier,
    endpointId: run.endpoint_id,
    status: run.status,
    counts,
    mainMetric,
    mainScore: aggregates.find((a) => a.metric === mainMetric)?.value ?? null,
    aggregates,
    ...tokens,
  };
}
