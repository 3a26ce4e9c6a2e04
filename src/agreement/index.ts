/**
 * Agreement between clinicians and an LLM jury (MedHELM's validation of its jury), and the planning of
 * a rating study. Pure functions; the only I/O is reading a MedHELM ratings CSV.
 */
export {
  agreement,
  composite,
  rankStability,
  type AgreementInput,
  type AgreementOptions,
  type AgreementReport,
  type ClinicianRating,
  type Comparison,
  type JudgeScore,
  type JuryScore,
  type ModelScore,
  type RankStability,
  type Ranking,
  type RougeScore,
  type SelectionAgreement,
} from './agreement';
export { fQuantile, fSurvival, normalCdf, normalQuantile, tTwoSided } from './distributions';
export { MEDHELM_COLUMNS, MEDHELM_CRITERIA, parseMedhelmRatings, readMedhelmRatings } from './medhelm-csv';
export { planInstances, type Plan, type PlanRequest } from './plan';
export { averageRanks, type Correlation, type Icc, icc3k, kendallTau, LIKERT_LABELS, type Maybe, quadraticKappa, roundHalfEven, spearman, zScore } from './statistics';
export { binaryScores, mcnemarExact, pairedComparison, type PairedResult, type PairedTestName, wilcoxonSignedRank } from './paired';
