/** The folder's public surface: other folders import from here only. */
export { RatingStudies } from './studies';
export { criteriaOf, type Criterion } from './criteria';
export { agreementRows, type AgreementRow, latestValidation, type Stat, type StudyAgreement, studyAgreement, type StudyValidationFigures } from './study-agreement';
export {
  FLAG_REASONS,
  type ClinicianRating,
  type FlagReason,
  type ItemToRate,
  type JudgeItemScores,
  type JuryItemScores,
  type NextItem,
  type RaterProgress,
  type RatingEventDetail,
  type RatingRecorder,
  type RatingRow,
  type RatingState,
  type RougeItemScore,
  type Study,
  type StudyEventDetail,
  type StudyProgress,
  type StudyRatings,
  type StudyRecorder,
  type StudySpec,
  type StudyStatus,
} from './types';
