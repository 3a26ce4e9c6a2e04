/**
 * De-identification stage. Until the detector lands, EHR-derived prompts are refused rather than sent:
 * no de-identification, no prompt. Public benchmarks pass through unchanged.
 */
import type { DeidStage } from '../runs/stages';

export const deidUnavailable: DeidStage = {
  version: null,
  apply(ctx, _instance, prompt) {
    if (!ctx.deidentify) return { ok: true, prompt, spans: 0 };
    return { ok: false, rule: 'deid.unavailable' };
  },
};
