/**
 * De-identification of EHR-derived text under HIPAA Safe Harbor (45 CFR 164.514(b)(2)): detection of
 * the 18 identifier kinds, known identifiers from structured data, consistent surrogates or typed tags,
 * per-subject date shifting, and a residual scan that refuses what is still identifying.
 */
export { Deidentifier, type DeidInput, type DeidOutput, subjectEvidence } from './deidentifier';
export { createDeidStage, ERROR_RULE, RESIDUAL_RULE } from './stage';
export { defaultSettings, type DeidSettings, loadSecret, type ReplacementMode, RESTRICTED_ZIP3_2000, settingsFrom, settingsVersion } from './settings';
export { SPAN_TYPES, type Span, type SpanType } from './types';
export { withinOneEdit } from './known';
export type { Finding } from './residual';
export { evaluate, type Evaluation, type GoldDocument, type GoldSpan, type Miss, type FalsePositive, type TypeFigures } from './evaluate';
export { parseGoldJsonl, parseMarked, readGold, type GoldRecord } from './gold';
