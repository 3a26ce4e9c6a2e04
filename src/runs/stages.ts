/**
 * The stages of one instance's way through a run, each a small interface the engine composes:
 *   access check -> prompt build -> de-identification -> budget check -> guarded model call -> scoring -> persistence
 * and, once every instance is finished, aggregation. The engine knows nothing of their insides.
 */
import type { Benchmark, Instance } from '../catalog';
import type { Endpoint } from '../egress';
import type { Actor } from '../identity/actor';
import type { ScoringMode } from '../metrics';
import type { CallHooks, Completion } from '../models';
import type { Tier } from '../tiers';

/** Everything stages may know about the run an instance belongs to. No instance data. */
export interface RunContext {
  runId: string;
  benchmark: Benchmark;
  endpoint: Endpoint;
  tier: Tier;
  /** Who asked for the run. Model calls are made by the daemon on their behalf. */
  requester: Actor;
  scoring: ScoringMode;
  deidentify: boolean;
  purpose?: string;
  irbProtocol?: string;
  /** The IRB approval the run is bound to (approval-required and private tiers). */
  approvalId?: string;
  /** The compliance officer who approved a private run. */
  approvedBy?: string;
}

/** A decision always names the rule that made it. */
export interface Decision {
  allowed: boolean;
  rule: string;
  reason: string;
}

/** A run-level decision may bind the run to an approval and may require a compliance approval first. */
export interface RunDecision extends Decision {
  approval?: { approvalId: string; protocolNumber: string };
  needsRunApproval?: boolean;
}

export interface AccessStage {
  /** Before a run is requested and again when it starts. */
  checkRun(ctx: Omit<RunContext, 'runId'> & { runId?: string }): Promise<RunDecision>;
  /** Before each instance: approvals can be suspended, expire or narrow while a run is in progress. */
  checkInstance(ctx: RunContext): Promise<Decision>;
}

export interface PromptStage {
  build(ctx: RunContext, instance: Instance): string;
}

export type DeidOutcome = { ok: true; prompt: string; spans: number } | { ok: false; rule: string };

export interface DeidStage {
  /** Hash of the de-identification configuration, recorded with each run it applies to. */
  readonly version: string | null;
  apply(ctx: RunContext, instance: Instance, prompt: string): DeidOutcome | Promise<DeidOutcome>;
  /**
   * The name words found in one record's prompt, for the subject's other records (planning gathers
   * them before any prompt of the run is sent). Empty when the run is not de-identified.
   */
  harvest?(ctx: RunContext, instance: Instance, prompt: string): string[];
}

/** A hold on an approval's budget for one call's worst-case cost, released once the call's tokens are stored. */
export interface BudgetHold {
  holdId: string;
}

export interface BudgetDecision extends Decision {
  hold?: BudgetHold;
  /** Dollar figures behind the decision (rounded), for the audit event. */
  detail?: Record<string, number>;
}

export interface BudgetStage {
  /**
   * Before each model call of a run bound to an approval with a budget: the estimated spend of every
   * run under that approval, plus calls in flight, plus this call's worst case must stay within it.
   */
  reserve(ctx: RunContext, prompt: string): Promise<BudgetDecision>;
  release(hold: BudgetHold): Promise<void>;
}

export interface ModelStage {
  complete(ctx: RunContext, prompt: string, hooks: CallHooks): Promise<Completion>;
}

/** Scores of one instance by metric name; null where a metric does not apply. */
export type Scores = Record<string, number | null>;

export interface ScoringStage {
  /**
   * Scores one prediction. Asynchronous because some metrics call out (an LLM jury calls judge
   * endpoints, EHRSQL runs queries); such calls get `hooks` so each is audited before it is made.
   */
  score(ctx: RunContext, instance: Instance, prediction: string, hooks: ScoringHooks): Promise<Scores>;
}

export interface ScoringHooks {
  /** Must be awaited before any outbound call a metric makes (writes its audit event). */
  beforeCall(endpointId: string, detail: Record<string, number | string | boolean>): Promise<void>;
  signal?: AbortSignal;
}
