/**
 * The de-identification stage of the run pipeline. Prompts of runs that must be de-identified
 * (approval-required and private tiers, or a benchmark that asks for it) are de-identified after the
 * prompt is built; the result is scanned once more and refused if anything identifying remains. A
 * refusal names its rule; the engine records the instance as blocked and goes on with the run. The
 * records of one subject share evidence: while a run is planned, `harvest` collects the names found in
 * each record, and every record of the subject is then de-identified knowing all of them.
 */
import { deidentifiedPrompt, plainPrompt } from '../prompt';
import type { RuleId } from '../policy';
import type { DeidStage } from '../runs';
import { Deidentifier } from './deidentifier';
import { type DeidSettings, loadSecret, settingsVersion } from './settings';
import type { Detector } from './detect';

export const RESIDUAL_RULE = 'deid.residual-identifier' satisfies RuleId;
export const ERROR_RULE = 'deid.failed' satisfies RuleId;

export function createDeidStage(settings: DeidSettings, opts: { detectors?: Detector[]; secret?: () => Buffer } = {}): DeidStage {
  let secret: Buffer | undefined;
  const deid = new Deidentifier(settings, opts.secret ?? (() => (secret ??= loadSecret(settings.secretFile))), opts.detectors);
  return {
    version: settingsVersion(settings),
    harvest(ctx, instance, prompt) {
      if (!ctx.deidentify || !instance.subjectId) return [];
      return deid.harvest(prompt, instance.known);
    },
    apply(ctx, instance, prompt) {
      if (!ctx.deidentify) return { ok: true, prompt: plainPrompt(ctx.benchmark.definition.tier, prompt), spans: 0 };
      try {
        const out = deid.run({
          text: prompt,
          ...(instance.known ? { known: instance.known } : {}),
          ...(instance.evidence?.length ? { evidence: new Set(instance.evidence) } : {}),
          subject: instance.subjectId ?? `instance\u0000${ctx.benchmark.definition.id}\u0000${instance.key}`,
        });
        if (out.residual.length > 0) return { ok: false, rule: RESIDUAL_RULE };
        return { ok: true, prompt: deidentifiedPrompt(out.text), spans: out.spans.length };
      } catch {
        // Fail closed, and say nothing about the text: the error could quote it.
        return { ok: false, rule: ERROR_RULE };
      }
    },
  };
}
