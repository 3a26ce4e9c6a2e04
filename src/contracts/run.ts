/**
 * The stages of one instance's way through a run (runs/pipeline.ts composes them):
 *   access check -> prompt build -> de-identification -> outbound gateway (src/calls) -> annotation
 *   (src/annotate) -> scoring (src/metrics, pure) -> one store call
 * and, once every instance is finished, aggregation. The pipeline knows nothing of their insides.
 */
import type { PromptContent, SendablePrompt } from '../prompt';
import type { Benchmark, Instance } from '../catalog';
import type { Endpoint, ReasoningEffort } from './endpoint';
import type { Actor } from '../identity';
import type { ScoringMode } from '../metrics';
import type { Decision, RuleId } from '../policy';
import type { Tier } from '../tiers';

/**
 * Whom the jury asks and what it floors, for a run's scoring mode: recorded in the run's spec, and
 * the one rule annotateWithJury follows. `helm` mode is HELM's jury: every judge of the benchmark
 * whatever its family or the site's `jury.sameFamily`, and no floor but the empty answer. `corrected`
 * mode leaves out judges of the evaluated model's own family (unless the site allows them) and floors
 * an answer that is a refusal and nothing else.
 */
export interface JuryPolicy {
  /** Endpoint ids asked, in the benchmark's order. */
  judgesAsked: string[];
  /** Endpoint ids left out as of the evaluated model's family. */
  judgesLeftOut: string[];
  /** exclude: same-family judges left out; allow: the site lets them judge; helm-asks-all: helm mode asks every judge. */
  sameFamily: 'exclude' | 'allow' | 'helm-asks-all';
  /** What scores the floor without a judge being asked. */
  floor: 'empty-answer' | 'empty-answer-or-refusal';
}

/** Everything stages may know about the run an instance belongs to. No instance data. */
export interface RunContext {
  runId: string;
  benchmark: Benchmark;
  endpoint: Endpoint;
  tier: Tier;
  /** Who asked for the run. Model calls are made by the daemon on their behalf. */
  requester: Actor;
  scoring: ScoringMode;
  /** The jury's policy as the run recorded it (RunSpec.jury): the judges it asks and what it floors. */
  jury?: JuryPolicy;
  deidentify: boolean;
  /** Output tokens per model call (the benchmark's max_tokens unless the run or endpoint overrides it). */
  maxOutputTokens: number;
  reasoningEffort?: ReasoningEffort;
  purpose?: string;
  irbProtocol?: string;
  /** The IRB approval the run is bound to (approval-required and private tiers). */
  approvalId?: string;
  /** The compliance officer who approved a private run. */
  approvedBy?: string;
  /** When the run was requested (absent while it is being requested): a revocation after it stops the run. */
  requestedAt?: Date;
}

/** A decision always names the rule that made it, a key of the registry (src/policy). */
export type { Decision };

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
  /**
   * Before each outbound call of the run (src/calls): whether `endpoint` (the model's, or a judge's)
   * may receive this run's data, by the same rules (tier, approval, the approval's endpoint list).
   */
  checkEndpoint(ctx: RunContext, endpoint: Endpoint): Promise<Decision>;
}

export interface PromptStage {
  /** The benchmark's template filled from the instance, or the instance's conversation (its `messages`). */
  build(ctx: RunContext, instance: Instance): PromptContent;
}

/** A prompt the gateway may send (de-identified, or plain for a tier that needs none), or the rule that blocked it. */
export type DeidOutcome = { ok: true; prompt: SendablePrompt; spans: number } | { ok: false; rule: RuleId };

export interface DeidStage {
  /** Hash of the de-identification configuration, recorded with each run it applies to. */
  readonly version: string | null;
  /** One text, or every turn of a conversation under the instance's subject (one surrogate map, one date shift). */
  apply(ctx: RunContext, instance: Instance, prompt: PromptContent): DeidOutcome | Promise<DeidOutcome>;
  /**
   * Planning of a de-identified run: what its records teach each other, gathered from every record
   * before any prompt of the run is sent (the subjects' name words, the dataset's evidence).
   */
  plan?(ctx: RunContext): DeidPlanning;
}

/** One run's planning: each record's prompt in, then what to keep in the run store. */
export interface DeidPlanning {
  add(instance: Instance, prompt: PromptContent): void;
  finish(): {
    /** The name words of each subject with more than one record, attached to its records. */
    subjects: { subject: string; words: string[] }[];
    /** The dataset's evidence as keyed hashes and its version (none when nothing spreads). */
    evidence?: { version: string; hashes: string[] };
  };
}

/** Scores of one instance by metric name; null where a metric does not apply. */
export type Scores = Record<string, number | null>;
