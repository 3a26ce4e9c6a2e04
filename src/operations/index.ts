/**
 * What people can do with ehrbench, in one place: the daemon's routes and the CLI's local mode both
 * call these operations, so a rule holds whichever way a request arrives. Every operation first
 * establishes the role it needs (deny by default; a refusal is audited as access.denied and names its
 * rule), then acts; every side effect is audited before it happens.
 */
import { randomUUID } from 'node:crypto';
import type { App } from '../app';
import { actAs, appendApprovalChange, type Approval, coverageOf, type ApprovalChange, type ApprovalInput, type Principal, type PrincipalRole } from '../access';
import { PolicyDenied, UserError } from '../errors';
import { compactList, tailRecords } from '../audit';
import { type Actor, IssuedCertificates, Revocations } from '../identity';
import { type Action, decide, type GateDecision, mayAttempt, type Resource, type RuleId, type RunFiguresRule, runFiguresVisibility } from '../policy';
import type { AuditEventInput } from '../audit';
import { approveRun, benchmarkNamed, cancelRun, endpointNamed, pinsOf, requestRun, summarize } from '../runs';
import type { DriftCheckView, RunOutcome, RunPreset, RunRepeat, RunRow, RunSpec } from '../runs';
import { repeatCount, stabilityView, type StabilityView } from './stability';
import type { DataRevision } from '../catalog';
import type { RunPins } from '../contracts';
import type { ScoringMode } from '../metrics';
import { ExportService, type ExportFiles, type ExportFormat, type ExportRequestOptions, type ExportRow, wilson } from '../export';
import { costUsd, priceFor, type SeenFingerprint, unpricedUnderBudget } from '../calls';
import { type ReturnedCertificate, signForCaller } from '../certificates';
import { type InstancesQuery, readInstances, type RunInstances } from './instances';
import { readMetaEvaluation, type RunMetaEvaluation } from './meta-eval';
import { StudyOperations } from './studies';

export interface Caller {
  principal: Principal;
  authMethod: 'mtls' | 'local-os-user';
}

/** A run with every figure, as its requester and compliance officers see it; never instance data. */
export interface RunDetail {
  runId: string;
  benchmarkId: string;
  benchmarkVersion: string;
  tier: string;
  endpointId: string;
  /** The run went to a test endpoint (the loopback stand-in of init --test-endpoints): never real results. */
  testEndpoint: boolean;
  status: string;
  requestedBy: string;
  approvedBy: string | null;
  approvalId: string | null;
  irbProtocol: string | null;
  /** Why the run's approval covers it: it names the benchmark, or only its whole tier, or no longer covers it; null without an approval. */
  approvalCoverage: 'benchmark' | 'tier' | 'none' | null;
  /** What the researcher said the run is for (audited with the request). */
  purpose: string | null;
  /** The endpoint's model or deployment, as the run recorded it. */
  model: string | null;
  /** The cap the researcher asked for (instances), or null for the whole dataset. */
  maxInstances: number | null;
  scoring: string;
  /** A jury benchmark's jury as the run recorded it (judges asked and left out, same-family rule, floor); null otherwise or for a run from before it was recorded. */
  jury: NonNullable<RunSpec['jury']> | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  errorCode: string | null;
  instanceCount: number | null;
  /** How a capped run picked its instances (HELM's seeded sample or the first N); null without a cap. */
  sample: { method: 'helm'; seed: number; maxInstances: number } | { method: 'first'; maxInstances: number } | null;
  /** The data revision the run read (sha256 of each file, or what identifies an OMOP source); null: a run from before it was recorded (unknown). */
  data: DataRevision | null;
  /** The preset the run was requested with, or null. */
  preset: RunPreset | null;
  /** The hashes of its data, definition, template, scorer and judge set ("unknown" where a run from before them did not record one). */
  pins: RunPins;
  /** Its repeat group (`--repeat K`): which of K, and the group's runs in order; null for a run requested alone. */
  repeat: (RunRepeat & { runIds: string[] }) | null;
  /** Records the dataset left out when the run was planned, by rule. */
  skipped: Record<string, number>;
  counts: { pending: number; claimed: number; done: number; blocked: number; failed: number };
  mainMetric: string;
  mainScore: number | null;
  /** ci95 only in a single run's view (showRun), for metrics whose every score lies in [0, 1]. */
  aggregates: { metric: string; value: number | null; n: number; ci95?: { low: number; high: number } | null }[];
  promptTokens: number;
  completionTokens: number;
  /** Of the completion tokens, those a reasoning model spent reasoning (counted in the cost too). */
  reasoningTokens: number;
  /** Calls charged their worst case because the endpoint did not report usage truthfully. */
  usageUnderReported: number;
  /** From the price table in the config; null when the endpoint has no price. */
  estimatedCostUsd: number | null;
  /** What happened, in the words every place uses, with the causes by code (a figure: withheld with the others). */
  outcome: RunOutcome;
  /** The run's IRB approval has a detected drift not yet reviewed by compliance: its results may be out of date. */
  stale: boolean;
  /** What the endpoints of its calls said they served (ids; days, not times). */
  fingerprints: SeenFingerprint[];
}

/**
 * A run's metadata: what everyone who may see the run sees of it. Every other field of RunDetail is a
 * figure (a count, score, aggregate or usage of its instances), null unless policy/visibility shows it;
 * so a field added to RunDetail is withheld until it is listed here.
 */
const RUN_METADATA = [
  'runId',
  'benchmarkId',
  'benchmarkVersion',
  'tier',
  'endpointId',
  'testEndpoint',
  'status',
  'requestedBy',
  'approvedBy',
  'approvalId',
  'irbProtocol',
  'approvalCoverage',
  'purpose',
  'model',
  'maxInstances',
  'scoring',
  'jury',
  'createdAt',
  'startedAt',
  'finishedAt',
  'errorCode',
  'sample',
  'data',
  'preset',
  'pins',
  'repeat',
  'stale',
  'mainMetric',
] as const satisfies readonly (keyof RunDetail)[];

/** A run as a caller sees it: its figures are null when `withheld` names the rule that withheld them. */
export type RunView = { [K in keyof RunDetail]: K extends (typeof RUN_METADATA)[number] ? RunDetail[K] : RunDetail[K] | null } & { withheld: RunFiguresRule | null };

/** A run just cancelled or halted; `callsInFlight` when this process executes it (those calls finish, no new one starts). */
export type StoppedRunView = RunView & { callsInFlight?: number };

/** An export as people see it; `preview` is the canonical JSON of exactly what a release would sign. */
export interface ExportView {
  exportId: string;
  state: 'requested' | 'released' | 'withdrawn';
  requestedBy: string;
  requestedAt: string;
  runIds: string[];
  releasedBy: string | null;
  releasedAt: string | null;
  format: ExportFormat | null;
  contentSha256: string;
  bundleSha256: string | null;
  preview: string;
}

/** A released export's files as text, exactly as signed and written. */
export interface ExportDownload extends ExportFiles {
  /** Where the daemon wrote its copy (release only). */
  path?: string;
}

export interface RunRequestInput {
  benchmarkId: string;
  endpointId: string;
  maxInstances?: number;
  scoring?: ScoringMode;
  purpose?: string;
  approvalId?: string;
  /** Output tokens per model call instead of the benchmark's max_tokens (reasoning models). */
  maxOutputTokens?: number;
  reasoningEffort?: 'low' | 'medium' | 'high';
  /** How maxInstances picks the instances: HELM's seeded sample (default) or the first N. */
  sample?: 'helm' | 'first';
  /** Settings in one word: medhelm-leaderboard = HELM's leaderboard (1,000 instances, HELM's sample, HELM's scoring). */
  preset?: RunPreset;
  /** K runs of the same sample on the same endpoint, for output stability (2..10). */
  repeat?: number;
}

/** The figures of a de-identification sign-off as the audit trail keeps them: numbers and ids only. */
export interface DeidSignOff {
  deidVersion: string;
  goldSha256: string;
  documents: number;
  goldSpans: number;
  recall: number | null;
  precision: number | null;
  withKnown: boolean;
  heldOut: boolean;
}

export { localCaller } from './local';
export { INSTANCE_PAGE, INSTANCE_TEXT_MAX, type InstancesQuery, type InstanceView, type RunInstances } from './instances';
export type { RunMetaEvaluation } from './meta-eval';
export { StudyOperations, type RatingInput, type StudyDetail, type StudyView } from './studies';
export { MAX_REPEATS, type StabilityView } from './stability';

/** How a refusal is recorded when the act has an event of its own (approval.create denied, say); by default access.denied. */
export type RefusalEvent = Partial<Pick<AuditEventInput, 'type' | 'action' | 'subject' | 'irbProtocol'>>;

export class Operations {
  readonly exports: ExportService;
  readonly studies: StudyOperations;

  constructor(readonly app: App) {
    this.exports = new ExportService(app);
    this.studies = new StudyOperations(this, app.ratings);
  }

  /**
   * The policy gate's decision (src/policy/gate.ts) for `caller` doing `action` on `resource`: the
   * actor in the role the gate allowed, or a refusal audited before it is thrown, naming its rule.
   * Every operation asks here first; so do the routes and commands that act outside an operation.
   */
  async require(caller: Caller, action: Action, resource: Resource = {}, refusal: RefusalEvent = {}): Promise<Actor> {
    const decision = this.decide(caller, action, resource);
    if (decision.allowed && decision.role) return { principal: caller.principal.id, role: decision.role, authMethod: caller.authMethod };
    // A missing role is a refused request; a refusal of the act itself (separation of duties) is the act's own event.
    await this.app.audit.record({
      type: 'access.denied',
      action: 'E',
      ...(decision.rule.startsWith('rbac.') ? {} : refusal),
      outcome: 'denied',
      rule: decision.rule,
      reason: decision.reason.slice(0, 300),
      actor: { principal: caller.principal.id, role: caller.principal.roles[0] ?? 'researcher', authMethod: caller.authMethod },
    });
    throw new PolicyDenied(decision.rule, decision.reason);
  }

  /** The gate's decision without acting on it (what to show, which list to read). */
  decide(caller: Caller, action: Action, resource: Resource = {}): GateDecision {
    return decide({ id: caller.principal.id, roles: caller.principal.roles }, action, resource);
  }

  /** Who the caller is, and what the gate lets them attempt (the console offers only these; each is decided again when done). */
  whoami(caller: Caller): { principal: string; displayName: string | null; roles: PrincipalRole[]; authMethod: string; may: Action[] } {
    const may = mayAttempt({ id: caller.principal.id, roles: caller.principal.roles });
    return { principal: caller.principal.id, displayName: caller.principal.displayName ?? null, roles: caller.principal.roles, authMethod: caller.authMethod, may };
  }

  async requestRun(caller: Caller, input: RunRequestInput): Promise<RunView> {
    const actor = await this.require(caller, 'run.request');
    if (input.repeat !== undefined) return this.requestRepeated(caller, actor, input, repeatCount(input.repeat));
    return this.view(caller, await this.requestOne(actor, input));
  }

  /**
   * K runs of one sample on one endpoint (`--repeat K`), each requested, checked and audited like any
   * run; the view is the first run's, whose `repeat` lists the group. If one is refused, the runs of the
   * group requested before it are cancelled (audited), so no partial group is left to run.
   */
  private async requestRepeated(caller: Caller, actor: Actor, input: RunRequestInput, k: number): Promise<RunView> {
    const groupId = randomUUID();
    const made: RunRow[] = [];
    for (let index = 1; index <= k; index++) {
      try {
        made.push(await this.requestOne(actor, input, { groupId, index, of: k }));
      } catch (err) {
        for (const run of made) await cancelRun(this.app.engine, run.run_id, actor, `repeat group ${groupId}: run ${index} of ${k} was refused`).catch(() => undefined);
        throw err;
      }
    }
    return this.view(caller, made[0] as RunRow);
  }

  private async requestOne(actor: Actor, input: RunRequestInput, repeat?: RunRepeat): Promise<RunRow> {
    return requestRun(this.app.engine, {
      benchmarkId: input.benchmarkId,
      endpointId: input.endpointId,
      requester: actor,
      ...(input.maxInstances ? { maxInstances: input.maxInstances } : {}),
      ...(input.scoring ? { scoring: input.scoring } : {}),
      ...(input.purpose ? { purpose: input.purpose } : {}),
      ...(input.approvalId ? { approvalId: input.approvalId } : {}),
      ...(input.maxOutputTokens !== undefined ? { maxOutputTokens: input.maxOutputTokens } : {}),
      ...(input.reasoningEffort ? { reasoningEffort: input.reasoningEffort } : {}),
      ...(input.sample ? { sample: input.sample } : {}),
      ...(input.preset ? { preset: input.preset } : {}),
      ...(repeat ? { repeat } : {}),
    });
  }

  /** The output stability of a run's repeat group, if the caller may see the figures of every run of it (operations/stability.ts). */
  async stability(caller: Caller, runId: string): Promise<StabilityView> {
    const run = await this.visibleRun(caller, runId);
    const repeat = run.spec.repeat;
    if (!repeat) throw new UserError('run.not-repeated', `run ${runId} was not requested with --repeat: it has no repeat group; request one with --repeat K`);
    const runs: RunRow[] = [];
    for (const id of await this.app.engine.store.repeatGroup(repeat.groupId)) {
      const member = await this.visibleRun(caller, id);
      const view = await this.view(caller, member);
      if (view.withheld) throw new PolicyDenied(view.withheld, `run ${id} of the repeat group: its figures are withheld from you, so the group's stability is too`);
      runs.push(member);
    }
    const figures = await this.app.engine.store.repeatStability(
      runs.map((r) => r.run_id),
      run.spec.benchmark.mainMetric,
    );
    return stabilityView(runs, figures);
  }

  async approveRun(caller: Caller, runId: string): Promise<RunView> {
    // Not the visibility check first: whoever is not a compliance officer is told the role is missing, as before any run is read.
    const run = await this.app.engine.store.getRun(runId);
    if (!run) {
      await this.require(caller, 'run.approve');
      throw new UserError('run.not-found', `run ${runId} does not exist`);
    }
    const actor = await this.require(caller, 'run.approve', { requestedBy: run.requested_by, tier: run.tier }, { type: 'run.approve', action: 'U', subject: { runId } });
    return this.view(caller, await approveRun(this.app.engine, runId, actor));
  }

  async cancelRun(caller: Caller, runId: string, reason: string): Promise<StoppedRunView> {
    const run = await this.visibleRun(caller, runId);
    const actor = await this.require(caller, 'run.cancel', { requestedBy: run.requested_by, tier: run.tier });
    // Known only to the process that executes the run (the daemon's workers), counted as the run
    // stopped: those calls finish.
    const { run: stopped, callsInFlight } = await cancelRun(this.app.engine, runId, actor, reason);
    return { ...(await this.view(caller, stopped)), ...(callsInFlight !== undefined ? { callsInFlight } : {}) };
  }

  async listRuns(caller: Caller, limit = 50): Promise<RunView[]> {
    const privileged = (await this.require(caller, 'run.list')) && this.decide(caller, 'run.list').rule === 'visibility.run.staff';
    const runs = privileged ? await this.app.engine.store.listRuns(limit) : await this.app.engine.store.listRunsBy(caller.principal.id, limit);
    // One read of the approvals for the whole list, not one per run.
    const approvals = new Map((await this.app.approvals.list()).map((a) => [a.approvalId, a]));
    const stale = await this.app.canary.staleApprovals();
    return Promise.all(runs.map((r) => this.view(caller, r, approvals, stale)));
  }

  async showRun(caller: Caller, runId: string): Promise<RunView> {
    const run = await this.visibleRun(caller, runId);
    const view = await this.view(caller, run);
    if (!view.aggregates) return view;
    // One run's page shows intervals; a list of runs does not pay the query for each.
    const unit = await this.app.engine.store.unitMetrics(run.run_id);
    const ci95 = (a: { metric: string; value: number | null; n: number }) => (unit.has(a.metric) && a.value !== null && a.n > 0 ? wilson(a.value * a.n, a.n) : null);
    return { ...view, aggregates: view.aggregates.map((a) => ({ ...a, ci95: ci95(a) })) };
  }

  /**
   * A page of a run's instances, as policy/visibility lets the caller see them (operations/instances.ts):
   * first who may read the run at all (others: not found, as for showRun), then what of its instances.
   */
  async listInstances(caller: Caller, runId: string, query: InstancesQuery = {}): Promise<RunInstances> {
    return readInstances(this.app, caller, await this.visibleRun(caller, runId), query);
  }

  /**
   * HealthBench's meta-evaluation of a completed run (operations/meta-eval.ts): figures only, to whoever
   * may see the run's figures (policy/visibility), as for runs show.
   */
  /**
   * Records the privacy office's de-identification sign-off (`deid eval --record`): the figures of an
   * evaluation on the site's annotated notes, as an audit event of ids and numbers only, which evidence
   * packets cite by its sequence number. Compliance only.
   */
  async recordDeidSignOff(caller: Caller, figures: DeidSignOff): Promise<{ seq: number }> {
    const actor = await this.require(caller, 'deid.sign-off');
    // A figure the gold could not give (no spans, no predictions) is left out: the trail holds no nulls.
    const detail = Object.fromEntries(Object.entries(figures).filter(([, v]) => v !== null)) as Record<string, string | number | boolean>;
    await this.app.audit.record({ type: 'deid.signoff', action: 'C', outcome: 'success', rule: 'rbac.role-held', actor, detail });
    const [latest] = await tailRecords(this.app.db, 1, { type: 'deid.signoff', actor: actor.principal });
    return { seq: latest?.seq ?? 0 };
  }

  async metaEvaluation(caller: Caller, runId: string): Promise<RunMetaEvaluation> {
    const run = await this.visibleRun(caller, runId);
    const shown = runFiguresVisibility(caller.principal, { requestedBy: run.requested_by, tier: run.tier });
    if (!shown.allowed) throw new PolicyDenied(shown.rule, `run ${runId}: its figures are withheld from you; its requester or a compliance officer can read them`);
    return readMetaEvaluation(this.app, run);
  }

  /** Researchers see their own runs; compliance, auditors and admins see all (the gate's run.read). Others: not found. */
  async visibleRun(caller: Caller, runId: string): Promise<RunRow> {
    const run = await this.app.engine.store.getRun(runId);
    if (!run || !this.decide(caller, 'run.read', { requestedBy: run.requested_by, tier: run.tier }).allowed) {
      throw new UserError('run.not-found', `run ${runId} does not exist or is not yours`);
    }
    return run;
  }

  /**
   * The run as `caller` sees it: every figure, or (policy/visibility) the metadata only. The detail is
   * computed either way, so both views come from one list of fields; withheld figures go no further.
   */
  async view(caller: Caller, run: RunRow, approvals?: ReadonlyMap<string, Approval>, stale?: ReadonlySet<string>): Promise<RunView> {
    const shown = runFiguresVisibility(caller.principal, { requestedBy: run.requested_by, tier: run.tier });
    const detail = await this.detail(run, approvals, stale);
    return shown.allowed ? { ...detail, withheld: null } : withheldView(detail, shown.rule);
  }

  private async detail(run: RunRow, approvals?: ReadonlyMap<string, Approval>, stale?: ReadonlySet<string>): Promise<RunDetail> {
    const s = await summarize(this.app.engine, run);
    const staleApprovals = stale ?? (run.approval_id ? await this.app.canary.staleApprovals() : new Set<string>());
    const approval = run.approval_id ? (approvals ? approvals.get(run.approval_id) : await this.app.approvals.get(run.approval_id)) : undefined;
    return {
      runId: run.run_id,
      benchmarkId: run.benchmark_id,
      benchmarkVersion: run.benchmark_version,
      tier: run.tier,
      endpointId: run.endpoint_id,
      testEndpoint: run.spec.endpoint.test === true,
      status: run.status,
      requestedBy: run.requested_by,
      approvedBy: run.approved_by,
      approvalId: run.approval_id,
      irbProtocol: run.spec.irbProtocol ?? null,
      approvalCoverage: approval ? coverageOf(approval, run.benchmark_id, run.tier) : null,
      purpose: run.spec.purpose ?? null,
      model: run.spec.endpoint.model ?? run.spec.endpoint.deployment ?? null,
      maxInstances: run.max_instances,
      scoring: run.spec.scoring,
      jury: run.spec.jury ?? null,
      createdAt: run.created_at.toISOString(),
      startedAt: run.started_at?.toISOString() ?? null,
      finishedAt: run.finished_at?.toISOString() ?? null,
      errorCode: run.error_code,
      instanceCount: run.instance_count,
      sample: run.spec.sample ?? null,
      data: run.spec.data ?? null,
      preset: run.spec.preset ?? null,
      pins: pinsOf(run.spec),
      repeat: run.spec.repeat ? { ...run.spec.repeat, runIds: await this.app.engine.store.repeatGroup(run.spec.repeat.groupId) } : null,
      skipped: s.skipped,
      counts: s.counts,
      mainMetric: s.mainMetric,
      mainScore: s.mainScore,
      aggregates: s.aggregates,
      promptTokens: s.promptTokens,
      completionTokens: s.completionTokens,
      reasoningTokens: s.reasoningTokens,
      usageUnderReported: s.usageUnderReported,
      estimatedCostUsd: estimatedCost(this.app, run, s.promptTokens, s.completionTokens),
      outcome: s.outcome,
      stale: run.approval_id !== null && staleApprovals.has(run.approval_id),
      fingerprints: await this.app.fingerprints.ofRun(run.run_id),
    };
  }

  /**
   * The approvals' drift checks (src/runs/canary.ts) for the console's notice and `approvals drift`:
   * compliance and auditors see every approval's, others those of the approvals that name them.
   */
  async driftChecks(caller: Caller, approvalId?: string): Promise<DriftCheckView[]> {
    const visible = (await this.listApprovals(caller)).map((a) => a.approvalId);
    return this.app.canary.checks(approvalId ? visible.filter((id) => id === approvalId) : visible);
  }

  /**
   * A compliance officer reviews an approval's detected drift: its results are no longer stale. The
   * review and its audit record commit together; an approval without unreviewed drift is refused.
   */
  async reviewDrift(caller: Caller, approvalId: string, note?: string): Promise<{ approvalId: string; reviewed: number }> {
    const approval = await this.app.approvals.get(approvalId);
    const refusal: RefusalEvent = { type: 'drift.review', action: 'U', subject: { approvalId } };
    const actor = await this.require(caller, 'approval.review-drift', approval ? { approval } : {}, refusal);
    if (!approval) throw new UserError('approval.not-found', `approval ${approvalId} does not exist`);
    const reviewed = await this.app.canary.review(approval, actor, note);
    if (reviewed === 0) {
      await this.app.audit.record({ ...refusal, type: 'drift.review', action: 'U', outcome: 'denied', rule: 'drift.nothing-to-review', reason: 'no unreviewed drift', actor });
      throw new PolicyDenied('drift.nothing-to-review', `approval ${approval.protocolNumber} has no unreviewed drift; "approvals drift" lists its checks`);
    }
    return { approvalId, reviewed };
  }

  /** A researcher asks to release aggregates of their own completed runs; the preview is stored. */
  async requestExport(caller: Caller, runIds: string[], opts: ExportRequestOptions = {}): Promise<ExportView> {
    const actor = await this.require(caller, 'export.request');
    return exportView(await this.exports.request(actor, runIds, opts));
  }

  /** The requester sees their own exports; compliance and auditors see every one. Others: not found. */
  async showExport(caller: Caller, exportId: string): Promise<ExportView> {
    return exportView(await this.visibleExport(caller, exportId, 'export.read'));
  }

  async listExports(caller: Caller, limit = 50): Promise<ExportView[]> {
    await this.require(caller, 'export.list');
    const privileged = this.decide(caller, 'export.list').rule === 'visibility.export.reviewer';
    const rows = await this.exports.store.list(privileged ? { limit } : { requestedBy: caller.principal.id, limit });
    return rows.map(exportView);
  }

  /** A compliance officer who did not request it releases an export: audited, sealed, signed, written once. */
  async releaseExport(caller: Caller, exportId: string, format: ExportFormat): Promise<{ export: ExportView; files: ExportDownload }> {
    const row = await this.exports.store.get(exportId);
    if (!row) throw new UserError('export.not-found', `export ${exportId} does not exist or is not yours`);
    const actor = await this.require(caller, 'export.release', { requestedBy: row.requested_by }, { type: 'export.deny', action: 'U', subject: { exportId } });
    const released = await this.exports.release(actor, exportId, format);
    return { export: exportView(released.row), files: { ...released.files, path: released.path } };
  }

  /**
   * The requester or a compliance officer withdraws an export that waits for release: one whose
   * preview went stale (runs, disclosure settings or the preview's format changed) could otherwise
   * never be closed. Final; a new export is requested instead.
   */
  async withdrawExport(caller: Caller, exportId: string, reason: string): Promise<ExportView> {
    const row = await this.visibleExport(caller, exportId, 'export.withdraw');
    const actor = await this.require(caller, 'export.withdraw', { requestedBy: row.requested_by });
    return exportView(await this.exports.withdraw(actor, row, reason));
  }

  /** The requester or a compliance officer fetches a released bundle again. */
  async downloadExport(caller: Caller, exportId: string): Promise<ExportDownload> {
    const row = await this.visibleExport(caller, exportId, 'export.download');
    const actor = await this.require(caller, 'export.download', { requestedBy: row.requested_by });
    return this.exports.download(actor, row);
  }

  /** The export, when the gate lets the caller do `action` on it; otherwise not found, so that its existence is not told. */
  private async visibleExport(caller: Caller, exportId: string, action: Action): Promise<ExportRow> {
    const row = await this.exports.store.get(exportId);
    if (!row || !this.decide(caller, action, { requestedBy: row.requested_by }).allowed) throw new UserError('export.not-found', `export ${exportId} does not exist or is not yours`);
    return row;
  }

  /**
   * A compliance officer records an IRB approval: the gate first (role and separation of duties), then
   * the input (a bad one is a 400 naming the field, and nothing is recorded), then the approval and its
   * audit record are written in one transaction.
   */
  async createApproval(caller: Caller, input: ApprovalInput): Promise<Approval> {
    const refusal: RefusalEvent = { type: 'approval.create', action: 'C', irbProtocol: safeId(input.protocolNumber) };
    const named = { approval: { principalInvestigator: input.principalInvestigator, personnel: input.personnel, raters: input.raters ?? [] } };
    const actor = await this.require(caller, 'approval.record', { ...named, stoppedBy: await this.app.approvals.stoppedBy(input.protocolNumber) }, refusal);
    const refuse = async (rule: RuleId, why: string): Promise<never> => {
      await this.app.audit.record({ ...refusal, type: 'approval.create', action: 'C', outcome: 'denied', rule, reason: why, actor });
      throw new PolicyDenied(rule, why);
    };
    const checked = this.checkedApproval(input);
    const doubled = (input.raters ?? []).find((r) => r === input.principalInvestigator || input.personnel.includes(r));
    if (doubled) await refuse('sod.rater-holds-other-role', `${doubled} is named as a clinician rater and as PI or personnel; a rater holds no other role on the approval`);
    // A budget on an endpoint the gateway cannot price could never be enforced: refused before any run.
    const unpriced =
      input.budgetUsd != null
        ? unpricedUnderBudget(
            this.app.config.export.prices,
            (input.endpoints ?? []).map((e) => endpointNamed(this.app.endpoints, e)),
            input.protocolNumber,
          )
        : undefined;
    if (unpriced) await refuse(unpriced.rule, unpriced.reason);
    return this.app.approvals.create(checked, actor.principal, (tx, approval) =>
      this.app.audit.recordIn(tx, {
        type: 'approval.create',
        action: 'C',
        outcome: 'success',
        rule: 'approval.recorded-by-compliance',
        reason: `protocol ${input.protocolNumber}`.slice(0, 200),
        actor,
        irbProtocol: safeId(input.protocolNumber),
        subject: { approvalId: approval.approvalId },
        detail: {
          personnel: input.personnel.length,
          benchmarks: (input.benchmarks ?? []).length,
          tiers: (input.tiers ?? []).length,
          // The canary is part of the policy the officer recorded: its settings are ids and numbers.
          ...(approval.canary
            ? {
                canaryBenchmark: approval.canary.benchmarkId,
                canaryInstances: approval.canary.instances,
                canaryEveryDays: approval.canary.everyDays,
                canaryThreshold: approval.canary.threshold,
                canaryMinDifference: approval.canary.minDifference,
              }
            : {}),
        },
      }),
    );
  }

  /** The approval as it will be stored, or a UserError naming the field that is wrong. */
  private checkedApproval(input: ApprovalInput): ApprovalInput {
    for (const b of input.benchmarks ?? []) benchmarkNamed(this.app.catalog, b);
    for (const e of input.endpoints ?? []) endpointNamed(this.app.endpoints, e);
    if (!input.benchmarks?.length && !input.tiers?.length) {
      throw new UserError('approval.invalid', 'an approval must cover at least one benchmark or tier');
    }
    if (input.canary) checkedCanary(this.app, input);
    return { ...input, ...approvalDates(input, new Date()) };
  }

  async listApprovals(caller: Caller): Promise<Approval[]> {
    await this.require(caller, 'approval.list');
    if (this.decide(caller, 'approval.list').rule === 'visibility.approval.reviewer') return this.app.approvals.list();
    return this.app.approvals.list({ personnel: caller.principal.id });
  }

  async showApproval(caller: Caller, id: string): Promise<{ approval: Approval; history: Awaited<ReturnType<App['approvals']['history']>> }> {
    const approval = await this.app.approvals.get(id);
    if (!approval || !this.decide(caller, 'approval.read', { approval }).allowed) throw new UserError('approval.not-found', `approval ${id} does not exist or does not name you`);
    return { approval, history: await this.app.approvals.history(id) };
  }

  /**
   * Suspend, reinstate or close an approval. Break-glass is this and run halts: it can only narrow
   * access. Reinstating needs a different compliance officer from the one who suspended, and one the
   * approval does not name. The change and its audit record commit together.
   */
  async changeApproval(caller: Caller, id: string, change: ApprovalChange, reason: string): Promise<Approval> {
    const current = await this.app.approvals.get(id);
    if (!current) {
      await this.require(caller, `approval.${change}`);
      throw new UserError('approval.not-found', `approval ${id} does not exist`);
    }
    // Reinstating grants the approval again: as for recording it, not by someone it names, and not by the officer who suspended it.
    const lastSuspendedBy = change === 'reinstate' ? ((await this.app.approvals.lastChangedBy(id, 'suspend')) ?? null) : undefined;
    const refusal: RefusalEvent = { type: auditType(change), action: 'U', subject: { approvalId: id } };
    const actor = await this.require(caller, `approval.${change}`, { approval: current, ...(lastSuspendedBy !== undefined ? { lastSuspendedBy } : {}) }, refusal);
    const refuse = async (rule: RuleId, why: string): Promise<never> => {
      await this.app.audit.record({ ...refusal, type: auditType(change), action: 'U', outcome: 'denied', rule, reason: why, actor });
      throw new PolicyDenied(rule, why);
    };
    if (current.status === 'closed') await refuse('approval.closed-is-final', 'a closed approval cannot change');
    if (change === 'reinstate' && current.status !== 'suspended') await refuse('approval.not-suspended', 'only a suspended approval can be reinstated');
    if (change === 'suspend' && current.status === 'suspended') await refuse('approval.already-suspended', 'approval is already suspended');
    // The change and its audit record commit together: no success in the trail for a change that failed.
    // And it is written outside the store before it commits, so that a restore cannot undo it (src/access/approval-ledger.ts).
    const changed = await this.app.approvals.change(id, change, actor.principal, current.version, async (tx, approval) => {
      await this.app.audit.recordIn(tx, {
        type: auditType(change),
        action: 'U',
        outcome: 'success',
        rule: `approval.${change}`,
        reason: reason.slice(0, 200),
        actor,
        irbProtocol: safeId(current.protocolNumber),
        subject: { approvalId: id },
      });
      appendApprovalChange(this.app.config.audit.witnessDirs, { approvalId: id, version: approval.version, change, changedBy: actor.principal, changedAt: new Date().toISOString() });
    });
    // The checks above were made on version `current.version`; another change in between voids them.
    if (!changed) throw new UserError('approval.changed', `approval ${id} changed while being changed; nothing was done, show it and try again`);
    return changed;
  }

  /** Admins see who may use ehrbench, in which roles, and every certificate ehrbench issued them. */
  async listPrincipals(caller: Caller): Promise<PrincipalView[]> {
    await this.require(caller, 'principal.list');
    const issued = await new IssuedCertificates(this.app.db).list();
    const revocations = new Revocations(this.app.db);
    const views: PrincipalView[] = [];
    for (const p of this.app.principals().principals) {
      const certificates = [];
      for (const c of issued.filter((i) => i.principal === p.id)) {
        const revoked = await revocations.isRevoked({ issuerFingerprint: c.issuerFingerprint, serial: c.serial, issuedAt: c.issuedAt }, p.id);
        certificates.push({ serial: c.serial, fingerprint: c.fingerprint, issuedAt: c.issuedAt.toISOString(), notAfter: c.notAfter.toISOString(), revoked });
      }
      views.push({ id: p.id, displayName: p.displayName ?? null, roles: p.roles, active: p.status === 'active', certificates });
    }
    return views;
  }

  /**
   * Break-glass revocation: every certificate of a principal issued until now stops working at once
   * (a new certificate must be issued to restore access), and so do the runs they requested: the
   * revocation's event names them, each is halted here, and a worker elsewhere that has one in hand
   * is refused at its next instance (principal.revoked). Compliance or admin; narrows access only.
   */
  async revokePrincipal(caller: Caller, principalId: string, reason: string): Promise<RevokeResult> {
    const actor = await this.require(caller, 'principal.revoke');
    const target = this.app.principals().principals.find((p) => p.id === principalId);
    if (!target) throw new UserError('principal.not-found', `principal ${principalId} does not exist`);
    const issuers = [...new Set((target.certificates ?? []).map((c) => c.issuerFingerprint))];
    const runs = await this.app.engine.store.activeRunsBy(principalId);
    await this.app.audit.record({
      type: auditTypeRevoke(),
      action: 'D',
      outcome: 'success',
      rule: 'pki.revoke.principal',
      reason: reason.slice(0, 200),
      actor,
      detail: { principal: principalId, issuers: issuers.length, stoppedRunCount: runs.length, ...(runs.length ? { stoppedRuns: compactList(runs) } : {}) },
    });
    const revocations = new Revocations(this.app.db);
    for (const issuer of issuers) await revocations.revokeAll(issuer, principalId, reason.slice(0, 200), actor.principal, this.app.config.audit.witnessDirs);
    const stopped: string[] = [];
    for (const runId of runs) {
      // Each halt is its own event (run.halt, naming the revocation); one already over is left as it is.
      const halted = await cancelRun(this.app.engine, runId, actor, `requester ${principalId} revoked: ${reason}`).catch((err: unknown) => {
        if (err instanceof UserError && err.code === 'run.not-active') return undefined;
        throw err;
      });
      if (halted) stopped.push(runId);
    }
    return { principal: principalId, revoked: issuers.length, stoppedRuns: stopped };
  }

  /**
   * A client certificate for a certification request made on its holder's machine (the key never
   * reaches the daemon), returned to the admin for the holder: issued, audited and mapped in
   * principals.json as `ehrbench pki sign` does, and in force for the next request.
   */
  async signCertificate(caller: Caller, input: CertificateRequestInput): Promise<ReturnedCertificate> {
    const actor = await this.require(caller, 'certificate.sign');
    // The route's schema says the same; checked here too for any other caller of the operation.
    if (!PRINCIPAL_ID.test(input.principal)) throw new UserError('request.invalid', 'principal: must be a principal id (lower case letters, digits, . _ -; at most 63)');
    if (!Number.isInteger(input.days) || input.days < 1 || input.days > MAX_CERTIFICATE_DAYS)
      throw new UserError('request.invalid', `days: must be a whole number of days from 1 to ${MAX_CERTIFICATE_DAYS}`);
    const signed = await signForCaller(this.app, { principal: input.principal, ...(input.role ? { role: input.role } : {}), days: input.days, request: { file: 'csr', pem: input.csr } }, actor);
    // principals.json changed under this process: the mapping holds from the next request, not within the second.
    await this.app.refreshPrincipals();
    return signed;
  }
}

function estimatedCost(app: App, run: RunRow, promptTokens: number, completionTokens: number): number | null {
  const price = priceFor(app.config.export.prices, run.spec.endpoint);
  return price ? Math.round(costUsd(Number(promptTokens), Number(completionTokens), price) * 1e6) / 1e6 : null;
}

/** The metadata of a run and null for each of its figures (any field not in RUN_METADATA). */
function withheldView(detail: RunDetail, rule: RunFiguresRule): RunView {
  const metadata: readonly string[] = RUN_METADATA;
  const fields = Object.entries(detail).map(([key, value]) => [key, metadata.includes(key) ? value : null]);
  return { ...(Object.fromEntries(fields) as RunView), withheld: rule };
}

function exportView(row: ExportRow): ExportView {
  return {
    exportId: row.export_id,
    state: row.state,
    requestedBy: row.requested_by,
    requestedAt: row.requested_at.toISOString(),
    runIds: row.run_ids,
    releasedBy: row.released_by,
    releasedAt: row.released_at?.toISOString() ?? null,
    format: row.format,
    contentSha256: row.content_sha256,
    bundleSha256: row.bundle_sha256,
    preview: row.content,
  };
}

export interface PrincipalView {
  id: string;
  displayName: string | null;
  roles: PrincipalRole[];
  active: boolean;
  certificates: { serial: string; fingerprint: string; issuedAt: string; notAfter: string; revoked: boolean }[];
}

export interface CertificateRequestInput {
  principal: string;
  role?: PrincipalRole;
  days: number;
  /** The PKCS#10 request, PEM. */
  csr: string;
}

const PRINCIPAL_ID = /^[a-z0-9][a-z0-9._-]{0,62}$/;
/** The longest validity the API signs (the CA/Browser Forum's old ceiling; the host may choose longer). */
const MAX_CERTIFICATE_DAYS = 825;

export interface RevokeResult {
  principal: string;
  revoked: number;
  /** The runs the principal had requested that the revocation halted. */
  stoppedRuns: string[];
}

function auditTypeRevoke(): 'pki.revoke' {
  return 'pki.revoke';
}

/**
 * A canary is re-run on each endpoint the approval lists, of a benchmark it covers: both are checked
 * now, so that an officer learns at once what the canary cannot do, not at its first run.
 */
function checkedCanary(app: App, input: ApprovalInput): void {
  const canary = input.canary;
  if (!canary) return;
  const benchmark = benchmarkNamed(app.catalog, canary.benchmarkId);
  if (!input.endpoints?.length) {
    throw new UserError('approval.invalid', 'canary: the approval lists no endpoints, and a canary re-runs on each endpoint it lists; add --endpoints or leave the canary out');
  }
  if (!(input.benchmarks ?? []).includes(canary.benchmarkId) && !(input.tiers ?? []).includes(benchmark.tier as 'approval-required' | 'private')) {
    throw new UserError('approval.invalid', `canary/benchmarkId: the approval does not cover benchmark ${canary.benchmarkId}; add it to --benchmarks or name a covered one`);
  }
}

function auditType(change: ApprovalChange): 'approval.suspend' | 'approval.grant' | 'approval.close' {
  return change === 'suspend' ? 'approval.suspend' : change === 'close' ? 'approval.close' : 'approval.grant';
}

/**
 * The validity of an approval, checked here so that a bad date is a 400 naming the field rather than
 * a constraint violation of the store. The start defaults to now on this clock (the one the access
 * rules compare with), and is stored as such, so the check and the store agree.
 */
function approvalDates(input: ApprovalInput, now: Date): { startsAt: string; expiresAt?: string } {
  const startsAt = input.startsAt ?? now.toISOString();
  if (!Number.isFinite(Date.parse(startsAt))) throw new UserError('approval.invalid', 'startsAt is not a date-time; give one such as 2026-01-31T00:00:00Z');
  if (input.expiresAt === undefined) return { startsAt };
  if (!Number.isFinite(Date.parse(input.expiresAt))) throw new UserError('approval.invalid', 'expiresAt is not a date-time; give one such as 2027-01-31T00:00:00Z');
  if (Date.parse(input.expiresAt) <= Date.parse(startsAt)) {
    const start = input.startsAt ? startsAt : `now, ${startsAt}, as none was given`;
    throw new UserError('approval.invalid', `expiresAt must be after startsAt (${start}); give a later expiresAt or an earlier startsAt`);
  }
  return { startsAt, expiresAt: input.expiresAt };
}

/** "compliance", "compliance or admin", "compliance, auditor or admin". */
function oneOf(roles: readonly string[]): string {
  return roles.length <= 1 ? (roles[0] ?? '') : `${roles.slice(0, -1).join(', ')} or ${roles.at(-1)}`;
}

/** Protocol numbers are ids; anything else in them is dropped before it reaches the audit trail. */
function safeId(value: string): string {
  return value.replace(/[^A-Za-z0-9._:/+=@-]/g, '_').slice(0, 160);
}
