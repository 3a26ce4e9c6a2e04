/**
 * De-identification of EHR-derived text under HIPAA Safe Harbor (45 CFR 164.514(b)(2)): detection of
 * the 18 identifier kinds, known identifiers from structured data, consistent surrogates or typed tags,
 * per-subject date shifting, and a residual scan that refuses what is still identifying.
 */
import type { DeidStage } from '../runs/stages';

export { Deidentifier, type DeidInput, type DeidOutput } from './deidentifier';
export { createDeidStage, ERROR_RULE, RESIDUAL_RULE } from './stage';
export { defaultSettings, type DeidSettings, loadSecret, type ReplacementMode, RESTRICTED_ZIP3_2000, settingsFrom, settingsVersion } from './settings';
export { SPAN_TYPES, type Span, type SpanType } from './types';
export { withinOneEdit } from './known';

/** Refuses every prompt that must be de-identified: for a daemon started without de-identification. */
export const deidUnavailable: DeidStage = {
  version: null,
  apply(ctx, _instance, prompt) {
    if (!ctx.deidentify) return { ok: true, prompt, spans: 0 };
    return { ok: false, rule: 'deid.unavailable' };
  },
};
