/**
 * One instance's way through a run, in one place:
 *   access -> prompt -> de-identification -> outbound gateway call -> annotation -> scoring
 * It returns an outcome that the worker turns into one store call; it throws only for errors that
 * must stop the run (a refusal, an unavailable audit trail). Every call out of the process, to the
 * model or to a judge, goes through the gateway (src/calls), which decides, budgets, bounds and
 * audits it; nothing here builds a client.
 */
import { JUDGE_MAX_TOKENS, type JudgePort, sameFamily } from '../annotate';
import { type Answer, ModelCallError, RunStopped } from '../calls';
import type { Instance } from '../catalog';
import { PolicyDenied } from '../errors';
import { metricsToStore, scoreInstance } from '../metrics';
import { observeModelCall } from '../observability';
import { auditBase, ENGINE_ACTOR } from '../audit';
import type { Engine } from './engine';
import type { RunContext } from '../contracts';
import type { ClaimedItem, ItemResult } from './store';

export type InstanceOutcome =
  /** De-identification refused the prompt (audited): stored as blocked, never sent. */
  | { kind: 'blocked'; rule: string }
  /** The model answered and the answer is scored: store it, then `settle` the call's budget hold. */
  | { kind: 'answered'; result: ItemResult; settle: () => Promise<void> }
  /** A call failed (HTTP error, timeout): the instance goes back to the queue, or fails for good. */
  | { kind: 'call-failed'; error: ModelCallError }
  /** The run was told to stop (shutdown, cancel) while the instance was in flight: it costs no attempt. */
  | { kind: 'interrupted' };

export async function processInstance(engine: Engine, ctx: RunContext, item: ClaimedItem, signal?: AbortSignal): Promise<InstanceOutcome> {
  // A refusal leaves the instance claimed: the engine's releaseAll gives it back unspent.
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
    return { kind: 'blocked', rule: deid.rule };
  }

  let answer: Answer | undefined;
  try {
    const d = ctx.benchmark.definition.prompt;
    answer = await engine.calls.complete(ctx, {
      purpose: 'model',
      endpointId: ctx.endpoint.id,
      prompt: deid.prompt,
      maxTokens: ctx.maxOutputTokens,
      temperature: d.temperature ?? 0,
      ...(ctx.reasoningEffort ? { reasoningEffort: ctx.reasoningEffort } : {}),
      detail: { ordinal: item.ordinal },
      ...(signal ? { signal } : {}),
    });
    const { completion } = answer;
    observeModelCall(ctx.endpoint.id, completion.latencyMs);
    const annotations = await engine.annotate.annotate(ctx, item.instance, completion.text, judgesFor(engine, ctx, item, signal), 'inline');
    const m = ctx.benchmark.definition.metrics;
    // Metrics of deferred annotators (EHRSQL) are null until the deferred pass (runs/deferred.ts).
    const scores = scoreInstance(metricsToStore([m.main, ...(m.secondary ?? [])], annotations), item.instance, completion.text, annotations, ctx.scoring);
    const pending = engine.annotate.needed(ctx, 'deferred');
    const result: ItemResult = {
      prediction: completion.text,
      scores,
      ...(pending.length ? { pendingAnnotators: pending } : {}),
      promptTokens: completion.promptTokens,
      completionTokens: completion.completionTokens,
      reasoningTokens: completion.reasoningTokens,
      ...(completion.usageUnderReported ? { usageUnderReported: true } : {}),
      latencyMs: completion.latencyMs,
    };
    const settle = answer.settle;
    answer = undefined;
    return { kind: 'answered', result, settle };
  } catch (err) {
    // Shutdown, Ctrl-C, or the run cancelled: the call was not made or its answer is not needed.
    if (signal?.aborted || err instanceof RunStopped) return { kind: 'interrupted' };
    if (err instanceof ModelCallError) return { kind: 'call-failed', error: err };
    throw err;
  } finally {
    // Answered but not handed on (annotation failed, interrupted): the hold goes now.
    if (answer) await answer.settle();
  }
}

/** The jury's way to its judges for this instance: the gateway, with the instance's audit detail. */
export function judgesFor(engine: Engine, ctx: RunContext, item: ClaimedItem, signal: AbortSignal | undefined): JudgePort {
  return {
    async check(endpointIds) {
      for (const endpointId of endpointIds) await engine.calls.check(ctx, { purpose: 'judge', endpointId, detail: { ordinal: item.ordinal, purposeOfCall: 'scoring' } });
    },
    sameFamily(endpointId) {
      return sameFamily(ctx.endpoint, engine.endpoints().get(endpointId));
    },
    async sendable(prompt) {
      const out = await engine.deid.apply(ctx, item.instance as Instance, prompt);
      return out.ok ? out.prompt : undefined;
    },
    async complete(endpointId, prompt, detail) {
      const answer = await engine.calls.complete(ctx, {
        purpose: 'judge',
        endpointId,
        prompt,
        maxTokens: JUDGE_MAX_TOKENS,
        temperature: 0,
        detail: { ordinal: item.ordinal, purposeOfCall: 'scoring', ...detail },
        ...(signal ? { signal } : {}),
      });
      return answer.completion;
    },
  };
}
