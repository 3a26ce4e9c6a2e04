/**
 * Rating studies as people use them: open one on completed runs of a jury benchmark, rate its blinded
 * items, read its progress and agreement, close it. Each asks the policy gate first (study.*), and a
 * study is held to the tier and approval rules of its runs: an approval-required or private study is
 * rated only while the runs' IRB approval is in force, by clinicians it names as raters. Every change
 * commits with its audit event (ids, counts and criterion names; never text). What leaves a study is
 * aggregates: progress counts and agreement statistics, never one clinician's ratings.
 */
import { approvalStatusAt } from '../access';
import type { Approval } from '../access';
import { PolicyDenied, UserError } from '../errors';
import type { Actor } from '../identity';
import type { Resource, RuleId } from '../policy';
import { type FlagReason, type RatingRecorder, type RatingStudies, type Study, type StudyRecorder, type StudySpec } from '../ratings';
import { type StudyAgreement, studyAgreement } from '../ratings';
import { type Plan, planInstances, type PlanRequest } from '../agreement';
import type { Caller, Operations } from './index';

/** A study as a caller sees it: its runs, benchmark and tier only to those who may read it (a clinician rates blinded). */
export interface StudyView {
  studyId: string;
  title: string;
  status: Study['status'];
  criteria: Study['criteria'];
  items: number;
  ratersPerItem: number;
  openedBy: string;
  openedAt: string;
  closedAt: string | null;
  benchmarkId: string | null;
  runIds: string[] | null;
  tier: string | null;
}

export interface StudyDetail {
  study: StudyView;
  progress: { items: number; itemsCovered: number; raters: number; rated: number; skipped: number; flagged: number };
  agreement: StudyAgreement | null;
}

export type RatingInput = { state: 'rated'; scores: Record<string, number> } | { state: 'skipped' } | { state: 'flagged'; flagReason: FlagReason };

/** The approval statuses that stop a study's ratings, as the access rules name them. */
const STOPPED: Record<string, RuleId> = { suspended: 'approval.suspended', closed: 'approval.closed', expired: 'approval.expired', 'not started': 'approval.not-started' };

export class StudyOperations {
  constructor(
    private readonly ops: Operations,
    private readonly studies: RatingStudies,
  ) {}

  async list(caller: Caller): Promise<StudyView[]> {
    await this.ops.require(caller, 'study.list');
    const all = await this.studies.list();
    if (this.ops.decide(caller, 'study.list').rule === 'visibility.study.reviewer') return all.map((s) => this.view(caller, s));
    const mine: StudyView[] = [];
    for (const s of all) {
      const opened = s.openedBy === caller.principal.id;
      if (opened || (s.status === 'open' && this.ops.decide(caller, 'study.rate', (await this.rateResource(s)).resource).allowed)) mine.push(this.view(caller, s));
    }
    return mine;
  }

  /** Opens a study: every run visible to the caller and theirs (a researcher) or any (compliance), its approval in force. */
  async open(caller: Caller, spec: StudySpec): Promise<StudyDetail> {
    if (!Array.isArray(spec.runIds) || spec.runIds.length === 0) throw new UserError('rating.invalid', 'runIds: name at least one completed run of a jury benchmark');
    let actor: Actor | undefined;
    for (const runId of spec.runIds) {
      const run = await this.ops.visibleRun(caller, runId);
      actor = await this.ops.require(caller, 'study.open', { requestedBy: run.requested_by, tier: run.tier });
      if (run.approval_id && run.tier !== 'public') await this.inForce(actor, await this.ops.app.approvals.get(run.approval_id), 'study.open');
    }
    const by = actor as Actor;
    const study = await this.studies.open(spec, by.principal, this.studyEvent(by, 'study.open', 'C', 'opened'));
    return this.detail(caller, study.studyId);
  }

  async detail(caller: Caller, studyId: string): Promise<StudyDetail> {
    const study = await this.readable(caller, studyId);
    const p = await this.studies.progress(studyId);
    const sum = (k: 'rated' | 'skipped' | 'flagged') => p.raters.reduce((n, r) => n + r[k], 0);
    const progress = { items: p.items, itemsCovered: p.itemsCovered, raters: p.raters.filter((r) => r.rated > 0).length, rated: sum('rated'), skipped: sum('skipped'), flagged: sum('flagged') };
    const agreement = progress.rated > 0 ? await studyAgreement(this.studies, this.ops.app.engine.store, study) : null;
    return { study: this.view(caller, study), progress, agreement };
  }

  async close(caller: Caller, studyId: string): Promise<StudyView> {
    const study = await this.found(studyId);
    const actor = await this.ops.require(caller, 'study.close', { requestedBy: study.openedBy, tier: study.tier });
    if (study.status === 'closed') throw new UserError('rating.study-closed', `rating study ${studyId} is already closed`);
    return this.view(caller, await this.studies.close(studyId, actor.principal, this.studyEvent(actor, 'study.close', 'U', 'closed')));
  }

  /** The caller's next blinded item, or nothing left (with their progress). */
  async next(caller: Caller, studyId: string): Promise<Awaited<ReturnType<RatingStudies['next']>>> {
    const study = await this.found(studyId);
    await this.rater(caller, study);
    return this.studies.next(studyId, caller.principal.id);
  }

  async rate(caller: Caller, studyId: string, itemId: string, input: RatingInput): Promise<{ state: string; changed: boolean }> {
    const study = await this.found(studyId);
    const actor = await this.rater(caller, study);
    const record: RatingRecorder = (tx, d) =>
      this.ops.app.audit.recordIn(tx, {
        type: 'study.rate',
        action: 'C',
        outcome: 'success',
        rule: 'study.recorded',
        reason: `item ${d.state}`,
        actor,
        subject: { benchmarkId: study.benchmarkId, tier: study.tier },
        detail: { studyId: d.studyId, itemId: d.itemId, state: d.state, criteria: d.criteria.join('+'), ...(d.flagReason ? { flagReason: d.flagReason } : {}), changed: d.changed },
      });
    const done =
      input.state === 'rated'
        ? await this.studies.rate(studyId, itemId, caller.principal.id, input.scores, record)
        : input.state === 'skipped'
          ? await this.studies.skip(studyId, itemId, caller.principal.id, record)
          : await this.studies.flag(studyId, itemId, caller.principal.id, input.flagReason, record);
    return { state: done.state, changed: done.changed };
  }

  /** Zou's sample size for the planner: arithmetic on the request, offered to whoever may open a study. */
  async plan(caller: Caller, input: PlanRequest): Promise<Plan> {
    if (!this.ops.decide(caller, 'study.open', { requestedBy: caller.principal.id }).allowed) await this.ops.require(caller, 'study.open', { requestedBy: caller.principal.id });
    return planInstances(input);
  }

  /** A clinician allowed to rate the study (gate: study.rate on every run's requester), its approval in force. */
  private async rater(caller: Caller, study: Study): Promise<Actor> {
    if (study.status !== 'open') throw new UserError('rating.study-closed', `rating study ${study.studyId} is closed; its items can no longer be rated`);
    const { resource, approval } = await this.rateResource(study);
    let actor: Actor | undefined;
    for (const requestedBy of await this.requesters(study)) actor = await this.ops.require(caller, 'study.rate', { ...resource, requestedBy });
    if (study.tier !== 'public') await this.inForce(actor as Actor, approval, 'study.rate');
    return actor as Actor;
  }

  /** What the gate needs of a study to decide a rating (the approval that names the raters), and the approval itself. */
  private async rateResource(study: Study): Promise<{ resource: Resource; approval: Approval | undefined }> {
    const approval = study.approvalId ? await this.ops.app.approvals.get(study.approvalId) : undefined;
    const named = study.approvalId ? (approval ?? undefined) : null;
    return { resource: { tier: study.tier, approval: named, requestedBy: (await this.requesters(study))[0] }, approval };
  }

  private async requesters(study: Study): Promise<string[]> {
    const out = new Set<string>();
    for (const id of study.runIds) {
      const run = await this.ops.app.engine.store.getRun(id);
      if (run) out.add(run.requested_by);
    }
    return [...out];
  }

  /** An approval-required or private study acts only while its approval is in force; a refusal is audited under the access rule. */
  private async inForce(actor: Actor, approval: Approval | undefined, type: 'study.open' | 'study.rate'): Promise<void> {
    const status = approval ? approvalStatusAt(approval, new Date()) : 'unknown';
    if (status === 'active') return;
    const rule: RuleId = STOPPED[status] ?? 'approval.unknown';
    const reason = `the IRB approval of the study's runs is ${status}; nothing is shown or rated until it is in force`;
    await this.ops.app.audit.record({ type, action: type === 'study.open' ? 'C' : 'R', outcome: 'denied', rule, reason, actor, ...(approval ? { subject: { approvalId: approval.approvalId } } : {}) });
    throw new PolicyDenied(rule, reason);
  }

  private async readable(caller: Caller, studyId: string): Promise<Study> {
    const study = await this.studies.get(studyId);
    if (!study || !this.ops.decide(caller, 'study.read', { requestedBy: study.openedBy, tier: study.tier }).allowed) {
      throw new UserError('rating.study-not-found', `rating study ${studyId} does not exist or is not yours`);
    }
    return study;
  }

  private async found(studyId: string): Promise<Study> {
    const study = await this.studies.get(studyId);
    if (!study) throw new UserError('rating.study-not-found', `rating study ${studyId} does not exist or is not yours`);
    return study;
  }

  private studyEvent(actor: Actor, type: 'study.open' | 'study.close', action: 'C' | 'U', what: string): StudyRecorder {
    return (tx, study, d) =>
      this.ops.app.audit.recordIn(tx, {
        type,
        action,
        outcome: 'success',
        rule: 'study.recorded',
        reason: `rating study ${what}: ${d.runs} runs, ${d.items} items`,
        actor,
        subject: { benchmarkId: d.benchmarkId, tier: d.tier, ...(d.approvalId ? { approvalId: d.approvalId } : {}) },
        detail: { studyId: d.studyId, runs: d.runs, items: d.items, ratersPerItem: study.ratersPerItem, criteria: study.criteria.map((c) => c.name).join('+') },
      });
  }

  /** The study as `caller` sees it: a clinician who may not read it sees it blinded (no benchmark, runs, tier). */
  private view(caller: Caller, s: Study): StudyView {
    const reads = this.ops.decide(caller, 'study.read', { requestedBy: s.openedBy, tier: s.tier }).allowed;
    return {
      studyId: s.studyId,
      title: s.title,
      status: s.status,
      criteria: s.criteria,
      items: s.items,
      ratersPerItem: s.ratersPerItem,
      openedBy: s.openedBy,
      openedAt: s.openedAt,
      closedAt: s.closedAt,
      benchmarkId: reads ? s.benchmarkId : null,
      runIds: reads ? s.runIds : null,
      tier: reads ? s.tier : null,
    };
  }
}
