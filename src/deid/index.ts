/**
 * De-identification of EHR-derived text under HIPAA Safe Harbor (45 CFR 164.514(b)(2)): detection of
 * the 18 identifier kinds, known identifiers from structured data, consistent surrogates or typed tags,
 * per-subject date shifting, and a residual scan that refuses what is still identifying.
 */
export { Deidentifier, type DeidInput, type DeidOutput, type DeidRecord, type EvidenceInForce, type EvidenceScope, type PackedDetections, type ReadRecord } from './deidentifier';
export { EvidenceCollector, HashedEvidence, PlainEvidence, type RecordSurvey, type SealedEvidence } from './evidence';
export { createDeidStage, ERROR_RULE, RESIDUAL_RULE } from './stage';
export { defaultSettings, type DeidSettings, loadSecret, type ReplacementMode, RESTRICTED_ZIP3_2000, settingsFrom, settingsVersion } from './settings';
export { type DatasetEvidence, SPAN_TYPES, type Span, type SpanType } from './types';
export { withinOneEdit } from './known';
export type { Finding } from './residual';
export { evaluate, type Evaluation, type GoldDocument, type GoldSpan, type Miss, type FalsePositive, type TypeFigures } from './evaluate';
export { parseGoldJsonl, parseMarked, readGold, type GoldRecord } from './gold';
export { listFile, propose, type Proposal, type ProposalManifest, subjectHash } from './proposal';
export { SITE_LEXICON_KINDS, type SiteLexiconFiles, type SiteLexiconKind } from './site-lexicons';
