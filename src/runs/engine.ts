/**
 * The run engine. A run is (benchmark, endpoint). Requesting one checks access and records it;
 * executing one plans it (streams the dataset into the run store as a work queue) and then works
 * through it with bounded concurrency, each instance passing the stages of pipeline.ts in order:
 *   access check -> prompt build -> de-identification -> outbound gateway -> annotation -> scoring -> persistence
 * Results are keyed (run, instance), so a restarted run claims only unfinished instances and never
 * counts one twice; aggregates are computed from the store once every instance is finished.
 */
import { commandPrefix } from '../command-prefix';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { AuditEventInput, AuditTrail } from '../audit';
import { type Benchmark, type Catalog, type CheckResult, checkBenchmark, dataRevision, dataStatus, HELM_SAMPLE_SEED, type SampleMethod, strataRecord } from '../catalog';
import type { ReasoningEffort } from '../contracts';
import type { EndpointPolicy } from '../egress';
import { isStoreUnavailable } from '../db';
import { PolicyDenied, UserError, describeError } from '../errors';
import { decide, type GateCaller, type RuleId } from '../policy';
import type { Actor } from '../identity';
import type { Logger } from '../log';
import type { ScoringMode } from '../metrics';
import { observeRunFinished, observeRunStarted } from '../observability';
import { requiresDeidentification } from '../tiers';
import { type AnnotationStage, juryPolicy, sameFamily } from '../annotate';
import type { BudgetStage, Gateway } from '../calls';
import type { AccessStage, DeidStage, PromptStage, RunContext } from '../contracts';
import { auditBase, ENGINE_ACTOR } from '../audit';
import { annotateDeferred } from './deferred';
import { runOutcome, type RunOutcome } from './outcome';
import { benchmarkNamed, benchmarkUnavailable, endpointNamed } from './named';
import { planningFor } from './planner';
import { type PinnedJudge, pinsForRequest } from './pins';
import { applyPreset, type RunPreset } from './preset';
import { type MetricAggregate, type RunRepeat, type RunRow, type RunSpec, RunStore, type StateCounts } from './store';
import { work } from './worker';

export interface EngineSettings {
  concurrency: number;
  maxAttempts: number;
  leaseSeconds: number;
  claimBatch: number;
}

export interface Engine {
  store: RunStore;
  /** The catalog in force (site data re-read live); throws while the site data file has no valid version. */
  catalog(): Catalog;
  /** The endpoint allowlist in force (re-read live); throws while endpoints.json has no valid version. */
  endpoints(): EndpointPolicy;
  audit: AuditTrail;
  access: AccessStage;
  prompt: PromptStage;
  deid: DeidStage;
  /** The approval budgets the gateway reserves against (read by the gateway when it acts). */
  budget: BudgetStage;
  /** The only way out: every model and judge call of a run (src/calls). */
  calls: Gateway;
  /** EHRSQL execution and the LLM jury, between the model call and scoring (src/annotate). */
  annotate: AnnotationStage;
  logger: Logger;
  settings: EngineSettings;
  /** This process as a worker: the default lease holder of the runs it executes. */
  workerId: string;
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
  /** Output tokens per model call instead of the benchmark's max_tokens (reasoning models). */
  maxOutputTokens?: number;
  reasoningEffort?: ReasoningEffort;
  /**
   * How `maxInstances` picks the instances: HELM's seeded sample (default, so a capped run scores the
   * instances HELM's leaderboard scored) or the first N in dataset order.
   */
  sample?: SampleMethod;
  /** Settings in one word (`medhelm-leaderboard`); a setting above that contradicts it is refused. */
  preset?: RunPreset;
  /** One of K runs of the same sample on the same endpoint, for output stability (`--repeat K`). */
  repeat?: RunRepeat;
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
  /** Of the completion tokens, those spent reasoning (reasoning models that report them). */
  reasoningTokens: number;
  /** Calls (model and judges) charged their worst case: the endpoint's usage was missing, negative, beyond the request or implausibly low. */
  usageUnderReported: number;
  /** Records the dataset's adapter left out when the run was planned, by rule (HELM leaves them out too). */
  skipped: Record<string, number>;
  /** What happened, in the words every place shows (src/runs/outcome.ts), with the causes of instances without a result. */
  outcome: RunOutcome;
}

export interface ExecuteOptions {
  workerId?: string;
  signal?: AbortSignal;
}

/** A run's context as its worker builds it (also for rebuilding what one of its instances sent: sent-prompt.ts). */
export function contextOf(engine: Engine, run: Pick<RunRow, 'run_id' | 'benchmark_id' | 'endpoint_id' | 'tier' | 'spec' | 'approved_by' | 'created_at'>, requester: Actor): RunContext {
  const benchmark = benchmarkNamed(engine.catalog, run.benchmark_id);
  return {
    runId: run.run_id,
    benchmark,
    endpoint: endpointNamed(engine.endpoints, run.endpoint_id),
    tier: run.tier,
    requester,
    scoring: run.spec.scoring,
    ...(run.spec.jury ? { jury: run.spec.jury } : {}),
    deidentify: run.spec.deidentify,
    maxOutputTokens: run.spec.maxTokens,
    ...(run.spec.reasoningEffort ? { reasoningEffort: run.spec.reasoningEffort } : {}),
    ...(run.spec.purpose ? { purpose: run.spec.purpose } : {}),
    ...(run.spec.irbProtocol ? { irbProtocol: run.spec.irbProtocol } : {}),
    ...(run.spec.approvalId ? { approvalId: run.spec.approvalId } : {}),
    ...(run.approved_by ? { approvedBy: run.approved_by } : {}),
    requestedAt: new Date(run.created_at),
  };
}

/** Whether a benchmark's prompts are de-identified: always for EHR tiers, by definition otherwise. */
function deidentifies(tier: RunRow['tier'], setting: 'required' | 'optional' | 'never' | undefined): boolean {
  return requiresDeidentification(tier) || setting === 'required';
}

/** How a capped run picks its instances, as recorded with it: enough to pick the same ones again. */
function sampleSpec(method: SampleMethod, maxInstances: number): NonNullable<RunSpec['sample']> {
  return method === 'helm' ? { method, seed: HELM_SAMPLE_SEED, maxInstances } : { method, maxInstances };
}

/**
 * The first problem of a site-bound benchmark's binding, found by the pre-flight `ehrbench benchmarks
 * check` runs (file, pin, encoding, sizes, columns, records, database, judges), or undefined. Shipped
 * data is pinned by its definition and verified when the run is planned. A pinned site file is hashed
 * here and again when the run is planned (it may change while a private run awaits its approval).
 */
async function bindingProblem(engine: Engine, benchmark: Benchmark): Promise<CheckResult | undefined> {
  if (benchmark.definition.dataset.origin !== 'site' && dataStatus(benchmark) !== 'site') return undefined;
  const report = await checkBenchmark(benchmark, {
    env: process.env,
    endpoints: () => ({ file: engine.endpoints().file, ids: engine.endpoints().endpoints.map((e) => e.id) }),
  });
  return report.checks.find((c) => c.status === 'problem');
}

/**
 * budget.no-price when the run is bound to an approval with a budget and its endpoint, or a judge of
 * its benchmark, has no price: the gateway could not charge its calls (src/calls/budget.ts).
 */
async function unenforceableBudget(engine: Engine, approvalId: string | undefined, benchmark: Benchmark, endpoint: EndpointPolicy['endpoints'][number]) {
  const judges = (benchmark.judges ?? []).flatMap((id) => engine.endpoints().endpoints.filter((e) => e.id === id));
  return engine.budget.unenforceable(approvalId, [endpoint, ...judges]);
}

/** The jury's policy for this run (whom it asks, what it floors), recorded in its spec; an unknown judge is refused later, by rule. */
function juryPolicyOf(engine: Engine, benchmark: Benchmark, endpoint: EndpointPolicy['endpoints'][number], mode: ScoringMode): RunSpec['jury'] {
  const judge = (id: string) => engine.endpoints().endpoints.find((e) => e.id === id);
  return juryPolicy(mode, benchmark, (id) => {
    const j = judge(id);
    return j !== undefined && sameFamily(endpoint, j);
  });
}

/** The judges a run asks, as the judge-set pin records them (an unknown judge pins its id alone; it is refused later, by rule). */
function judgesOf(engine: Engine, jury: RunSpec['jury']): PinnedJudge[] {
  return (jury?.judgesAsked ?? []).map((id) => {
    const e = engine.endpoints().endpoints.find((x) => x.id === id);
    return { id, model: e?.model ?? null, deployment: e?.deployment ?? null };
  });
}

/** Checks access and records a run. Throws PolicyDenied (after auditing the refusal) when denied. */
export async function requestRun(engine: Engine, asked: RunRequest): Promise<RunRow> {
  const req = applyPreset(asked.preset, asked);
  if (req.maxOutputTokens !== undefined && !(Number.isInteger(req.maxOutputTokens) && req.maxOutputTokens >= 1 && req.maxOutputTokens <= 100_000)) {
    throw new UserError('run.invalid', `maxOutputTokens must be a whole number from 1 to 100000, not ${String(req.maxOutputTokens).slice(0, 20)}`);
  }
  if (req.sample !== undefined && req.sample !== 'helm' && req.sample !== 'first') {
    throw new UserError('run.invalid', `sample must be helm or first, not ${String(req.sample).slice(0, 20)}`);
  }
  if (req.sample !== undefined && !req.maxInstances) {
    throw new UserError('run.invalid', 'sample picks among the instances only under a cap; add maxInstances (--max-instances N) or leave sample out');
  }
  const benchmark = benchmarkNamed(engine.catalog, req.benchmarkId);
  const endpoint = endpointNamed(engine.endpoints, req.endpointId);
  const d = benchmark.definition;
  const runId = randomUUID();
  const ctx = {
    runId,
    benchmark,
    endpoint,
    tier: benchmark.tier,
    requester: req.requester,
    scoring: req.scoring ?? 'corrected',
    deidentify: deidentifies(benchmark.dataTier, d.deidentification),
    // The run's output length and effort: asked for, else the endpoint's (a reasoning model), else the benchmark's.
    maxOutputTokens: req.maxOutputTokens ?? endpoint.reasoning?.maxOutputTokens ?? d.prompt.maxTokens,
    ...(req.reasoningEffort || endpoint.reasoning?.effort ? { reasoningEffort: req.reasoningEffort ?? endpoint.reasoning?.effort } : {}),
    ...(req.purpose ? { purpose: req.purpose } : {}),
    ...(req.irbProtocol ? { irbProtocol: req.irbProtocol } : {}),
    ...(req.approvalId ? { approvalId: req.approvalId } : {}),
  };
  const decision = await engine.access.checkRun(ctx);
  // Only for a caller the rules allow (the checks name the site's files): a bad binding is refused here,
  // before a run row exists, instead of failing the run when it is planned.
  const binding = decision.allowed ? await bindingProblem(engine, benchmark) : undefined;
  // A budget the run's endpoints cannot be charged against is refused now, not at the first call.
  const budget = decision.allowed && !binding ? await unenforceableBudget(engine, decision.approval?.approvalId ?? req.approvalId, benchmark, endpoint) : undefined;
  await engine.audit.record({
    type: 'run.request',
    action: 'C',
    outcome: decision.allowed && !binding && !budget ? 'success' : 'denied',
    rule: binding ? 'run.binding-invalid' : (budget?.rule ?? decision.rule),
    reason: binding ? `the ${binding.check} check of the benchmark's data binding failed (${binding.code ?? 'internal'})` : (budget?.reason ?? decision.reason),
    actor: req.requester,
    ...auditBase(ctx),
  });
  if (!decision.allowed) throw new PolicyDenied(decision.rule, decision.reason);
  if (budget) throw new PolicyDenied(budget.rule, budget.reason);
  if (binding) {
    throw new UserError(
      binding.code ?? 'internal',
      `benchmark ${d.id}: no run requested (rule run.binding-invalid): ${binding.detail} [${binding.code ?? 'internal'}]; "${commandPrefix()} benchmarks check ${d.id}" shows every check`,
      // The detail names the site's files: the daemon's requester learns the benchmark and the check.
      { forRequester: benchmarkUnavailable(d.id, `its data at this site did not pass the ${binding.check} check (${binding.code ?? 'internal'}, rule run.binding-invalid)`) },
    );
  }
  // The approval that allowed the run is bound to it and re-checked when it starts and per instance.
  const approvalId = decision.approval?.approvalId ?? req.approvalId;
  const irbProtocol = decision.approval?.protocolNumber ?? req.irbProtocol;
  // Which bytes the run reads: recorded now, held to them when it is planned (planner.ts).
  const data = await dataRevision(benchmark);
  // Which strata label its instances: an export uses the binding's strata only for runs of the same ones.
  const strata = strataRecord(benchmark.site?.strata);
  const unpinned: Omit<RunSpec, 'pins'> = {
    benchmark: {
      id: d.id,
      version: d.version,
      definitionHash: benchmark.definitionHash,
      templateHash: benchmark.templateHash,
      mainMetric: d.metrics.main,
      metrics: [d.metrics.main, ...(d.metrics.secondary ?? [])],
      lowerIsBetter: d.lowerIsBetter,
    },
    endpoint: { id: endpoint.id, provider: endpoint.provider, deployment: endpoint.deployment ?? null, model: endpoint.model ?? null, ...(endpoint.test ? { test: true as const } : {}) },
    scoring: ctx.scoring,
    ...(d.jury ? { jury: juryPolicyOf(engine, benchmark, endpoint, ctx.scoring) } : {}),
    maxTokens: ctx.maxOutputTokens,
    temperature: d.prompt.temperature ?? 0,
    ...(ctx.reasoningEffort ? { reasoningEffort: ctx.reasoningEffort } : {}),
    deidentify: ctx.deidentify,
    ...(req.maxInstances ? { sample: sampleSpec(req.sample ?? 'helm', req.maxInstances) } : {}),
    ...(req.purpose ? { purpose: req.purpose } : {}),
    ...(irbProtocol ? { irbProtocol } : {}),
    ...(approvalId ? { approvalId } : {}),
    ...(data ? { data } : {}),
    ...(req.preset ? { preset: req.preset } : {}),
    ...(req.repeat ? { repeat: req.repeat } : {}),
    ...(strata ? { strata } : {}),
  };
  const spec: RunSpec = { ...unpinned, pins: pinsForRequest(unpinned, judgesOf(engine, unpinned.jury)) };
  const row = {
    run_id: runId,
    benchmark_id: d.id,
    benchmark_version: d.version,
    benchmark_hash: benchmark.definitionHash,
    template_hash: benchmark.templateHash,
    tier: benchmark.tier,
    endpoint_id: endpoint.id,
    status: decision.needsRunApproval ? ('requested' as const) : ('approved' as const),
    approval_id: approvalId ?? null,
    requested_by: req.requester.principal,
    max_instances: req.maxInstances ?? null,
    deid_version: ctx.deidentify ? engine.deid.version : null,
    spec,
  };
  await engine.store.insertRun(row);
  engine.logger.info('run.requested', { runId, benchmarkId: d.id, endpointId: endpoint.id, tier: benchmark.tier });
  const stored = await engine.store.getRun(runId);
  if (!stored) throw new Error('run vanished after insert');
  return stored;
}

export async function executeRun(engine: Engine, runId: string, opts: ExecuteOptions = {}): Promise<RunSummary> {
  const { store, logger, settings } = engine;
  const run = await store.getRun(runId);
  if (!run) throw new UserError('run.not-found', `run ${runId} does not exist; see "${commandPrefix()} runs list"`);
  if (run.status === 'completed') return summarize(engine, run);
  if (run.status !== 'approved' && run.status !== 'running') {
    throw new UserError('run.not-runnable', `run ${runId} is ${run.status}; only approved or interrupted runs can be executed`);
  }
  const requester: Actor = { principal: run.requested_by, role: 'researcher', authMethod: 'service' };
  const ctx = contextOf(engine, run, requester);
  if (ctx.benchmark.definitionHash !== run.benchmark_hash || ctx.benchmark.templateHash !== run.template_hash) {
    throw new UserError('run.definition-changed', `benchmark ${run.benchmark_id} changed since run ${runId} was requested; request a new run`);
  }
  // The strata are outside the definition's hash: instances labelled under other strata than the run records would mislabel its subgroups.
  if (strataRecord(ctx.benchmark.site?.strata)?.sha256 !== run.spec.strata?.sha256) {
    throw new UserError('run.definition-changed', `the strata of benchmark ${run.benchmark_id} in the site data file changed since run ${runId} was requested; request a new run`);
  }
  // One holder per run and process, as the scheduler names it: an execution that the database
  // interrupted left leases under this id, and the next execution of the run here gives them back
  // (releaseAll below) instead of waiting for them to expire.
  const workerId = opts.workerId ?? `${engine.workerId}:${runId.slice(0, 8)}`;
  // Every call in flight listens on the run's signal.
  if (opts.signal) setMaxListeners(Math.max(10, settings.concurrency * 4), opts.signal);

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
    const halted = await store.transition(runId, ['approved', 'running'], 'halted', decision.rule);
    observeRunFinished(ctx, 'halted', halted);
    throw new PolicyDenied(decision.rule, decision.reason);
  }
  await store.transition(runId, ['approved', 'running'], 'running');
  observeRunStarted(ctx, run.status === 'running');

  // Leases this process still holds from an execution of the run that the database interrupted
  // (same worker id): given back, so they are claimed now and not only once they expire.
  await store.releaseAll(runId, workerId);
  // A new run is planned while it is worked on: instances are claimable as soon as the first batch
  // of the dataset is in the queue.
  const planning = await planningFor(engine, run, ctx, workerId);
  const fatal = await work(engine, ctx, workerId, planning, opts);
  if (fatal && isStoreUnavailable(fatal)) {
    // The database went away (restart, failover): not the run's fault. Stop this execution, give the
    // leases back if it is already back (else they expire) and let the scheduler resume the run later.
    await store.releaseAll(runId, workerId).catch(() => undefined);
    logger.warn('run.interrupted', { runId, workerId, err: fatal });
    throw fatal;
  }
  await store.releaseAll(runId, workerId);
  if (fatal) {
    await failRun(engine, ctx, fatal);
    throw fatal;
  }
  // Annotators that must not be timed by the endpoint run now that no call of the run is left.
  if (!opts.signal?.aborted) {
    const deferred = await annotateDeferred(engine, ctx, opts.signal).catch((err: unknown) => err);
    if (deferred instanceof Error) {
      if (isStoreUnavailable(deferred)) throw deferred;
      await failRun(engine, ctx, deferred);
      throw deferred;
    }
  }
  // The completion and its audit record commit together: a kill between them cannot leave one alone.
  // A run none of whose instances is done ends failed (the store decides in the same statement).
  const counts = await store.completeIfFinished(runId, (tx, finished) =>
    engine.audit.recordIn(tx, {
      type: finished.done > 0 ? 'run.complete' : 'run.fail',
      action: 'E',
      outcome: finished.done > 0 ? 'success' : 'failed',
      rule: finished.done > 0 ? 'run.all-instances-finished' : 'run.no-instance-finished',
      actor: ENGINE_ACTOR,
      ...auditBase(ctx),
      detail: { done: finished.done, blocked: finished.blocked, failed: finished.failed },
    }),
  );
  if (counts) {
    const status = counts.done > 0 ? 'completed' : 'failed';
    logger.info(status === 'completed' ? 'run.completed' : 'run.failed', { runId, done: counts.done, blocked: counts.blocked, failed: counts.failed });
    observeRunFinished(ctx, status);
    await engine.audit.seal();
  }
  const latest = await store.getRun(runId);
  return summarize(engine, latest ?? run);
}

/**
 * A compliance officer approves a requested (private-tier) run. Separation of duties: never the
 * requester. Access is checked again, the approval is audited first, then recorded.
 */
export async function approveRun(engine: Engine, runId: string, approver: Actor): Promise<RunRow> {
  const run = await engine.store.getRun(runId);
  if (!run) throw new UserError('run.not-found', `run ${runId} does not exist`);
  const ctx = contextOf(engine, run, { principal: run.requested_by, role: 'researcher', authMethod: 'service' });
  const refuse = async (rule: RuleId, reason: string): Promise<never> => {
    await engine.audit.record({ type: 'run.approve', action: 'U', outcome: 'denied', rule, reason, actor: approver, ...auditBase(ctx) });
    throw new PolicyDenied(rule, reason);
  };
  // The gate again (operations asked it already), on the actor as it reaches the engine.
  const gate = decide(asCaller(approver), 'run.approve', { requestedBy: run.requested_by, tier: run.tier });
  if (!gate.allowed) await refuse(gate.rule, gate.reason);
  if (run.status !== 'requested') await refuse('run.not-awaiting-approval', `run is ${run.status}, not awaiting approval`);
  const decision = await engine.access.checkRun(ctx);
  if (!decision.allowed) await refuse(decision.rule, decision.reason);
  const budget = await unenforceableBudget(engine, run.approval_id ?? undefined, ctx.benchmark, ctx.endpoint);
  if (budget) await refuse(budget.rule, budget.reason);
  await engine.audit.record({
    type: 'run.approve',
    action: 'U',
    outcome: 'success',
    rule: 'sod.compliance-approval',
    reason: `approved by ${approver.principal} for requester ${run.requested_by}`,
    actor: approver,
    ...auditBase(ctx),
  });
  if (!(await engine.store.approve(runId, approver.principal))) await refuse('run.not-awaiting-approval', 'run changed while being approved');
  return (await engine.store.getRun(runId)) as RunRow;
}

/**
 * A canary's run (src/runs/canary.ts) approved by the compliance officer who named the canary on the
 * approval: naming it approved its runs in advance. Access is checked again, the approval audited first.
 */
export async function approveRunAsCanary(engine: Engine, runId: string, officer: Actor): Promise<void> {
  const run = await engine.store.getRun(runId);
  if (!run) throw new UserError('run.not-found', `run ${runId} does not exist`);
  const ctx = contextOf(engine, run, { principal: run.requested_by, role: 'researcher', authMethod: 'service' });
  const decision = await engine.access.checkRun(ctx);
  await engine.audit.record({
    type: 'run.approve',
    action: 'U',
    outcome: decision.allowed ? 'success' : 'denied',
    rule: decision.allowed ? 'drift.canary-preapproved' : decision.rule,
    reason: decision.allowed ? `canary run approved by ${officer.principal}, who named the canary` : decision.reason,
    actor: officer,
    ...auditBase(ctx),
  });
  if (!decision.allowed) throw new PolicyDenied(decision.rule, decision.reason);
  if (!(await engine.store.approve(runId, officer.principal))) throw new PolicyDenied('run.not-awaiting-approval', 'run changed while being approved');
}

/**
 * Stops a run: its requester, a compliance officer or an admin (break-glass halt). No new call of it
 * starts after the cancel is recorded (at once in this process, within RunWatch's MAX_AGE_MS in other
 * workers); calls already in flight finish.
 */
/** A stopped run, and its calls that were in flight in this process when it stopped (undefined: not executed here). */
export interface StoppedRun {
  run: RunRow;
  callsInFlight: number | undefined;
}

export async function cancelRun(engine: Engine, runId: string, actor: Actor, reason: string): Promise<StoppedRun> {
  const run = await engine.store.getRun(runId);
  if (!run) throw new UserError('run.not-found', `run ${runId} does not exist`);
  const ctx = contextOf(engine, run, { principal: run.requested_by, role: 'researcher', authMethod: 'service' });
  const gate = decide(asCaller(actor), 'run.cancel', { requestedBy: run.requested_by, tier: run.tier });
  const rule = gate.rule;
  const allowed = gate.allowed;
  // An officer's stop of another person's run is a halt; the requester's own is a cancel.
  const halt = rule === 'run.halt.by-officer';
  const active = ['requested', 'approved', 'running'].includes(run.status);
  // No call of the run starts here once the cancel is in the trail: the gate is stopped first, in the
  // same turn as the record is queued (gateway.ts, RunGate). Workers elsewhere see it in the store.
  const callsInFlight = allowed && active ? engine.calls.stopRun(runId) : undefined;
  await engine.audit.record({
    type: halt ? 'run.halt' : 'run.cancel',
    action: 'U',
    outcome: allowed && active ? 'success' : 'denied',
    rule: active ? rule : 'run.not-active',
    reason: reason.slice(0, 200),
    actor,
    ...auditBase(ctx),
  });
  if (!allowed) throw new PolicyDenied(rule, 'only the requester, a compliance officer or an admin may stop a run');
  if (!active) throw new UserError('run.not-active', `run ${runId} is already ${run.status}`);
  const stopped = await engine.store.transition(runId, ['requested', 'approved', 'running'], halt ? 'halted' : 'cancelled', rule);
  observeRunFinished(ctx, halt ? 'halted' : 'cancelled', stopped);
  return { run: (await engine.store.getRun(runId)) as RunRow, callsInFlight };
}

/** The actor as the gate sees a caller: the daemon's own service actor holds no person's role. */
function asCaller(actor: Actor): GateCaller {
  return { id: actor.principal, roles: actor.role === 'service' ? [] : [actor.role] };
}

export async function failRun(engine: Engine, ctx: RunContext, err: unknown): Promise<void> {
  const rule = err instanceof PolicyDenied ? err.rule : describeError(err).code;
  const status = err instanceof PolicyDenied ? 'halted' : 'failed';
  const stopped = await engine.store.transition(ctx.runId, ['running', 'approved'], status, rule);
  observeRunFinished(ctx, status, stopped);
  engine.logger.error('run.stopped', { runId: ctx.runId, status, rule, err });
  // Best effort: when the audit trail itself is what failed, this record cannot be written either.
  await engine.audit
    .record({ type: 'run.fail', action: 'E', outcome: 'failed', rule, reason: `run ${status}`, actor: ENGINE_ACTOR, ...auditBase(ctx) })
    .then(() => engine.audit.seal())
    .catch(() => undefined);
}

export async function summarize(engine: Engine, run: RunRow): Promise<RunSummary> {
  const counts = await engine.store.counts(run.run_id);
  const aggregates = run.status === 'completed' ? await engine.store.results(run.run_id) : await engine.store.computeAggregates(run.run_id);
  const mainMetric = run.spec.benchmark.mainMetric;
  const tokens = await engine.store.tokenTotals(run.run_id);
  const causes = counts.failed + counts.blocked > 0 ? await engine.store.causes(run.run_id) : [];
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
    skipped: run.skipped ?? {},
    outcome: runOutcome({ status: run.status, errorCode: run.error_code, counts, causes }),
  };
}
