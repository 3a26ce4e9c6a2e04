/**
 * The outbound gateway: every call that leaves the process (the model under test, every judge, an
 * endpoint probe) goes through `complete` or `probe`, which always, in this order:
 *   1. decides the endpoint for the run's tier and the run's approval (its endpoint list), by rule;
 *   2. reserves the call's worst case against the approval's budget;
 *   3. waits for a slot of the endpoint's capacity (its `limits.concurrency`, shared by all workers);
 *   4. records the audit event before every attempt (no event, no attempt);
 *   5. makes the call on the endpoint's egress-guarded client;
 *   6. charges the tokens the endpoint reported, or the call's worst case when it did not report them
 *      truthfully (chargedUsage: missing, negative, beyond the request, implausibly low);
 *   7. releases what it took (slot after each attempt; budget hold when the spend is stored).
 * A call of a run that was stopped (cancelled, halted) is not started: the run's gate is asked before
 * the call, before each attempt's audit event and again once a slot is held (see RunGate).
 * A refusal at 1 or 2 is audited as a call not made and throws PolicyDenied. Only a SendablePrompt is
 * accepted, and one that skipped de-identification only for a tier that needs none. A conversation
 * (its turns) goes the same way: measured, hashed and bounded over all of its turns.
 */
import type { AuditEventInput, AuditTrail } from '../audit';
import { sha256Hex } from '../canonical';
import type { AccessStage, Endpoint, ReasoningEffort, RunContext } from '../contracts';
import type { EgressEvent, EndpointPolicy } from '../egress';
import { PolicyDenied, UserError } from '../errors';
import type { Actor } from '../identity';
import type { Completion } from '../models';
import { type Decision, isRule, type RuleId } from '../policy';
import { auditBase, ENGINE_ACTOR } from '../audit';
import type { BudgetHold, BudgetStage } from './budget';
import { chargedUsage, promptTokenBound } from './cost';
import { observeUsageUnderReported } from '../observability';
import type { EndpointCapacities, EndpointCapacity } from './capacity';
import type { EndpointClients } from './clients';
import type { SharedSlots } from './slots';
import type { FingerprintStore } from './fingerprints';
import { SendablePrompt } from '../prompt';

export type CallPurpose = 'model' | 'judge';

export interface OutboundCall {
  purpose: CallPurpose;
  endpointId: string;
  prompt: SendablePrompt;
  maxTokens: number;
  temperature: number;
  /** reasoning_effort for a reasoning model (default: the endpoint's `reasoning.effort`). */
  reasoningEffort?: ReasoningEffort;
  /** Audit detail of the call (instance ordinal, judge number...): numbers and ids, never text. */
  detail: Record<string, number | string | boolean>;
  signal?: AbortSignal;
}

export interface Answer {
  completion: Completion;
  /**
   * Gives back the call's budget hold once its tokens count as spent: a model call's when its result
   * is stored (the caller calls this after the write); a judge's spend is stored here, so a no-op.
   */
  settle(): Promise<void>;
}

/** What the gateway reads from the composition root when it acts (tests may replace these). */
export interface GatewayPorts {
  /** The allowlist in force (re-read when endpoints.json changes). */
  endpoints(): EndpointPolicy;
  audit: Pick<AuditTrail, 'record'>;
  access: Pick<AccessStage, 'checkEndpoint'>;
  budget: BudgetStage;
}

export interface GatewayOptions {
  clients: EndpointClients;
  capacities: EndpointCapacities;
  ports: () => GatewayPorts;
  /** Calls in flight per endpoint in this process, and the default limit where a policy sets none. */
  concurrency: () => number;
  /** Where what each call was served by is counted (absent: not recorded, as in unit tests of the gateway). */
  fingerprints?: FingerprintStore;
}

/** Told when a call of `run` saw a fingerprint new to an endpoint that had answered with another before. */
export type FingerprintListener = (run: RunContext, endpointId: string) => void;

/** A run's use of its endpoints' capacities, from `join` to `leave`. */
export interface CapacityLease {
  leave(): Promise<void>;
  /** Worker processes sharing the run's model endpoint (this one included), as its slots last counted them. */
  workers(): number;
}

/**
 * Whether a run may still start calls: `stop` (a cancel in this process) takes effect at once,
 * `active` may also look at the store (a cancel in another process). The gateway reads `stopped`
 * synchronously right before it records an attempt, in the same turn of the event loop: a cancel
 * that stopped the gate before recording run.cancel is therefore always seen by an attempt that
 * would be recorded after it.
 */
export interface RunGate {
  readonly stopped: boolean;
  stop(): void;
  active(): Promise<boolean>;
}

/** A call of a stopped run that was not started (not a failure: the instance goes back unspent). */
export class RunStopped extends UserError {
  constructor(runId: string) {
    super('run.stopped', `run ${runId} was stopped (cancelled or halted): no new call of it starts`);
  }
}

/** A gate that only this process stops (runs joined without one of their own). */
function localGate(): RunGate {
  let stopped = false;
  return {
    get stopped() {
      return stopped;
    },
    stop: () => void (stopped = true),
    active: () => Promise.resolve(!stopped),
  };
}

/** A run as it calls out from this process: its capacities, its gate, its calls in flight. */
interface JoinedRun {
  capacities: Map<string, EndpointCapacity>;
  gate: RunGate;
  inFlight: number;
  /** sha256 of GET /models of the run's endpoints that ask for it (fingerprintModels), taken when the run joined. */
  models: Map<string, string | null>;
}

export class Gateway {
  /** The runs of this process that joined their endpoints' capacities, by run id. */
  private readonly joined = new Map<string, JoinedRun>();
  private readonly fingerprintListeners: FingerprintListener[] = [];

  constructor(private readonly opts: GatewayOptions) {}

  /**
   * A run starts calling out: it takes its share of the capacity of its model endpoint and of every
   * judge its benchmark names. Calls of the run wait for these slots.
   */
  async join(run: RunContext, gate: RunGate = localGate()): Promise<CapacityLease> {
    // A judge missing from the allowlist joins nothing: its first call is refused by `decide`.
    const ids = [...new Set([run.endpoint.id, ...(run.benchmark.judges ?? [])])].filter((id) =>
      this.opts
        .ports()
        .endpoints()
        .endpoints.some((e) => e.id === id),
    );
    const mine = new Map<string, EndpointCapacity>();
    const slots: SharedSlots[] = [];
    let modelSlots: SharedSlots | undefined;
    for (const id of ids) {
      const endpoint = this.opts.ports().endpoints().get(id);
      const total = Math.max(1, endpoint.limits?.concurrency ?? this.opts.concurrency());
      const perWorker = Math.max(1, Math.min(total, this.opts.concurrency()));
      const entry = this.opts.capacities.for(id, total, perWorker);
      await entry.slots.join();
      slots.push(entry.slots);
      if (id === run.endpoint.id) modelSlots = entry.slots;
      mine.set(id, entry.capacity);
    }
    this.joined.set(run.runId, { capacities: mine, gate, inFlight: 0, models: await this.modelsDigests(run, ids) });
    return {
      leave: async () => {
        this.joined.delete(run.runId);
        await Promise.all(slots.map((s) => s.leave().catch(() => undefined)));
      },
      workers: () => modelSlots?.workers ?? 1,
    };
  }

  /** Listens for changed fingerprints (the canaries of src/runs/canary.ts). */
  onFingerprintChanged(listener: FingerprintListener): void {
    this.fingerprintListeners.push(listener);
  }

  /**
   * For each endpoint of the run that asks for it (fingerprintModels: a self-hosted server), the
   * sha256 of what GET /models lists: once per run and process, decided and audited like any call of
   * the run (no data is sent). null when the endpoint would not say: the calls are still fingerprinted
   * by what they answer.
   */
  private async modelsDigests(run: RunContext, ids: string[]): Promise<Map<string, string | null>> {
    const digests = new Map<string, string | null>();
    for (const id of ids) {
      const endpoint = this.opts.ports().endpoints().get(id);
      if (!endpoint.fingerprintModels) continue;
      const decision = await this.decide(run, { purpose: id === run.endpoint.id ? 'model' : 'judge', endpointId: id });
      if (!decision.allowed) continue; // its first call is refused, audited, by `check`
      await this.opts.ports().audit.record(callEvent(run, id, 'success', 'egress.allowlisted-endpoint', undefined, { purposeOfCall: 'fingerprint', attempt: 1 }));
      digests.set(id, await this.opts.clients.modelsDigest(endpoint).catch(() => null));
    }
    return digests;
  }

  /** Counts what the call was served by; a change of the model behind the endpoint is told to the listeners. */
  private async recordServed(run: RunContext, joined: JoinedRun, endpointId: string, completion: Completion): Promise<void> {
    const store = this.opts.fingerprints;
    if (!store || !completion.served) return;
    const served = joined.models.has(endpointId) ? { ...completion.served, modelsSha256: joined.models.get(endpointId) ?? null } : completion.served;
    const { changed } = await store.record(run.runId, endpointId, served);
    if (changed) for (const listener of this.fingerprintListeners) listener(run, endpointId);
  }

  /**
   * The run's cancel in this process: no new call of it starts from now on (its calls in flight
   * finish). Called before run.cancel is recorded. Returns the calls in flight at that moment, which
   * are exactly those still to finish (read later, the run may have drained and left); undefined for
   * a run not executed here, which has nothing to stop.
   */
  stopRun(runId: string): number | undefined {
    const joined = this.joined.get(runId);
    joined?.gate.stop();
    return joined?.inFlight;
  }

  /** Calls of the run in flight from this process (sent, not yet answered); undefined when it does not execute the run. */
  callsInFlight(runId: string): number | undefined {
    return this.joined.get(runId)?.inFlight;
  }

  /** The decision for a call of the run to `endpointId` (tier, approval, endpoint list), without calling. */
  async decide(run: RunContext, call: Pick<OutboundCall, 'purpose' | 'endpointId'>): Promise<Decision> {
    // get() throws endpoint.unknown for an id the allowlist does not hold.
    const { access, endpoints } = this.opts.ports();
    const allowlist = endpoints();
    const d = await access.checkEndpoint(run, allowlist.get(call.endpointId));
    if (d.allowed || call.purpose === 'model') return d;
    // A judge refused for the run's data: named as the jury's refusal (every refusal has its jury form).
    const rule = `jury.${d.rule}`;
    return { allowed: false, rule: isRule(rule) ? rule : d.rule, reason: `judge ${d.reason}` };
  }

  /** `decide`, and a refusal audited as a call not made and thrown as PolicyDenied. */
  async check(run: RunContext, call: Pick<OutboundCall, 'purpose' | 'endpointId' | 'detail'>): Promise<void> {
    const decision = await this.decide(run, call);
    if (decision.allowed) return;
    await this.opts.ports().audit.record(callEvent(run, call.endpointId, 'denied', decision.rule, decision.reason, call.detail));
    throw new PolicyDenied(decision.rule, decision.reason);
  }

  async complete(run: RunContext, call: OutboundCall): Promise<Answer> {
    const { audit, budget } = this.opts.ports();
    const prompt = sendable(run, call.prompt);
    const messages = call.prompt.messages;
    const joined = this.joined.get(run.runId);
    if (joined) await whileActive(run, joined.gate);
    await this.check(run, call);
    const endpoint = this.opts.ports().endpoints().get(call.endpointId);
    const capacity = joined?.capacities.get(endpoint.id);
    if (!joined || !capacity) throw new Error(`run ${run.runId} calls endpoint ${endpoint.id} without having joined its capacity`);

    const reserved = await budget.reserve(run, { endpoint, prompt, maxTokens: call.maxTokens });
    if (!reserved.allowed) {
      await audit.record(callEvent(run, endpoint.id, 'denied', reserved.rule, reserved.reason.slice(0, 300), { ...call.detail, ...reserved.detail }));
      throw new PolicyDenied(reserved.rule, reserved.reason);
    }
    const hold = reserved.hold;
    const requestBytes = Buffer.byteLength(prompt);
    const requestSha256 = sha256Hex(prompt);
    let completion: Completion;
    try {
      completion = await this.opts.clients.complete(
        endpoint,
        { prompt, ...(messages ? { messages } : {}), maxTokens: call.maxTokens, temperature: call.temperature, ...effortOf(call, endpoint) },
        {
          ...(call.signal ? { signal: call.signal } : {}),
          acquire: () => this.sendSlot(run, joined, capacity, call.signal),
          beforeAttempt: async (attempt) => {
            await whileActive(run, joined.gate);
            // Checked and recorded in one turn of the event loop: nothing can stop the gate in between.
            if (joined.gate.stopped) throw new RunStopped(run.runId);
            return audit.record(callEvent(run, endpoint.id, 'success', 'egress.allowlisted-endpoint', undefined, { ...call.detail, attempt, requestBytes, requestSha256 }));
          },
        },
      );
      // Recorded before the answer is used: a result is never stored without what served it.
      await this.recordServed(run, joined, endpoint.id, completion);
    } catch (err) {
      if (hold) await budget.release(hold);
      throw err;
    }
    completion = charged(completion, endpoint.id, call.purpose, { prompt, maxTokens: call.maxTokens });
    if (call.purpose === 'judge') {
      await budget.charge(run, endpoint, completion, hold);
      return { completion, settle: async () => undefined };
    }
    return { completion, settle: () => release(budget, hold) };
  }

  /**
   * A slot of the endpoint's capacity for one attempt, and the attempt counted in flight while it is
   * held. An attempt recorded before a cancel may have waited for its slot past it: it is not sent.
   */
  private async sendSlot(run: RunContext, joined: JoinedRun, capacity: EndpointCapacity, signal: AbortSignal | undefined): Promise<() => void> {
    const release = await capacity.acquire(signal);
    try {
      await whileActive(run, joined.gate);
    } catch (err) {
      release();
      throw err;
    }
    joined.inFlight += 1;
    let held = true;
    return () => {
      if (held) joined.inFlight -= 1;
      held = false;
      release();
    };
  }

  /**
   * `endpoints probe`: lists the endpoint's models through the guard, audited before the request
   * leaves. Outside any run: the endpoint must be allowlisted, and no prompt is sent.
   */
  async probe(endpoint: Endpoint, actor: Actor, onEvent: (e: EgressEvent) => void): Promise<string[]> {
    const { audit } = this.opts.ports();
    await audit.record({
      type: 'endpoint.call',
      action: 'E',
      outcome: 'success',
      rule: 'egress.allowlisted-endpoint',
      actor,
      subject: { endpointId: endpoint.id },
      detail: { purposeOfCall: 'probe', attempt: 1 },
    });
    return this.opts.clients.listModels(endpoint, onEvent);
  }

  close(): Promise<void> {
    return this.opts.clients.close();
  }
}

/** Throws RunStopped when the run may start no more calls. */
async function whileActive(run: RunContext, gate: RunGate): Promise<void> {
  if (gate.stopped || !(await gate.active()) || gate.stopped) throw new RunStopped(run.runId);
}

function effortOf(call: OutboundCall, endpoint: Endpoint): { reasoningEffort?: ReasoningEffort } {
  const effort = call.reasoningEffort ?? endpoint.reasoning?.effort;
  return effort ? { reasoningEffort: effort } : {};
}

/**
 * The completion with the tokens it is charged: the endpoint's figures, or the call's worst case
 * when they cannot be taken (counted per endpoint; the run shows how many calls were so charged).
 */
function charged(completion: Completion, endpointId: string, purpose: CallPurpose, req: { prompt: string; maxTokens: number }): Completion {
  const usage = chargedUsage(completion, {
    promptTokens: promptTokenBound(req.prompt),
    completionTokens: req.maxTokens,
    promptBytes: Buffer.byteLength(req.prompt),
    answerBytes: Buffer.byteLength(completion.text),
  });
  const { problem, ...tokens } = usage;
  if (!problem) return completion;
  observeUsageUnderReported(endpointId, purpose, problem);
  return { ...completion, ...tokens, usageUnderReported: true };
}

function release(budget: BudgetStage, hold: BudgetHold | undefined): Promise<void> {
  return hold ? budget.release(hold) : Promise.resolve();
}

/**
 * The prompt's text, if this run may send it: de-identified whenever the run de-identifies. For a
 * conversation, the turns as JSON (promptPayload): what the request's size, hash and budget are taken over.
 */
function sendable(run: RunContext, prompt: SendablePrompt): string {
  if (!(prompt instanceof SendablePrompt)) throw new PolicyDenied('deid.not-applied', 'only a prompt from the de-identification stage may be sent');
  if (run.deidentify && !prompt.deidentified) throw new PolicyDenied('deid.not-applied', `run ${run.runId} de-identifies its prompts; this one was not`);
  return prompt.text;
}

/** The audit event of one outbound call of a run, written before each attempt or for a refusal. */
function callEvent(run: RunContext, endpointId: string, outcome: 'success' | 'denied', rule: RuleId, reason: string | undefined, detail: Record<string, number | string | boolean>): AuditEventInput {
  const base = auditBase(run);
  return {
    type: 'endpoint.call',
    action: 'E',
    outcome,
    rule,
    ...(reason ? { reason } : {}),
    actor: ENGINE_ACTOR,
    ...base,
    subject: { ...base.subject, endpointId },
    detail,
  };
}
