/** The public types of rating studies (src/ratings). */
import type { Queryable } from '../db';
import type { Tier } from '../tiers';
import type { Criterion } from './criteria';

/** What a researcher asks for (schemas/rating-study.schema.json). */
export interface StudySpec {
  title: string;
  benchmarkId?: string;
  runIds: string[];
  instancesPerRun: number;
  ratersPerItem: number;
  seed?: number;
}

export type StudyStatus = 'open' | 'closed';

export interface Study {
  studyId: string;
  title: string;
  benchmarkId: string;
  runIds: string[];
  criteria: Criterion[];
  instancesPerRun: number;
  ratersPerItem: number;
  seed: number;
  tier: Tier;
  /** The approval every run is bound to; null for public runs. */
  approvalId: string | null;
  status: StudyStatus;
  openedBy: string;
  openedAt: string;
  closedBy: string | null;
  closedAt: string | null;
  /** How many items the study holds. */
  items: number;
}

/** A flag's reason: a code from this list, never free text. */
export const FLAG_REASONS = ['phi-visible', 'unreadable', 'off-topic', 'not-qualified', 'other'] as const;
export type FlagReason = (typeof FLAG_REASONS)[number];

export type RatingState = 'rated' | 'skipped' | 'flagged';

/**
 * What a clinician is shown: the item, blinded. No run id, model, endpoint or benchmark version:
 * only the opaque item id, the prompt the model received, its answer, and the criteria.
 */
export interface ItemToRate {
  studyId: string;
  itemId: string;
  prompt: string;
  answer: string;
  criteria: Criterion[];
  progress: RaterProgress;
}

/** A rater's progress: items they rated, skipped or flagged, and those still offered to them. */
export interface RaterProgress {
  done: number;
  remaining: number;
  total: number;
}

/** What `next` answers: an item, or nothing left for this rater (with their progress). */
export type NextItem = { item: ItemToRate } | { item: null; progress: RaterProgress };

/** An audit event's material for a rating study: ids, counts and criterion names, never text. */
export interface StudyEventDetail {
  studyId: string;
  benchmarkId: string;
  tier: Tier;
  approvalId: string | null;
  runs: number;
  items: number;
}

export interface RatingEventDetail {
  studyId: string;
  itemId: string;
  state: RatingState;
  /** The criteria scored (names only), for `rated`. */
  criteria: string[];
  flagReason: FlagReason | null;
  /** A rating this rater had given before was replaced. */
  changed: boolean;
}

/** The caller's audit event, recorded in the same transaction as the change (app.audit.recordIn). */
export type StudyRecorder = (tx: Queryable, study: Study, detail: StudyEventDetail) => Promise<void>;
export type RatingRecorder = (tx: Queryable, detail: RatingEventDetail) => Promise<void>;

export interface StudyProgress {
  studyId: string;
  ratersPerItem: number;
  items: number;
  /** Items rated by at least ratersPerItem clinicians. */
  itemsCovered: number;
  raters: { rater: string; rated: number; skipped: number; flagged: number }[];
  perItem: { itemId: string; rated: number; skipped: number; flagged: number }[];
}

/** The inputs of the agreement statistics (src/agreement), dataset = the benchmark id. */
export interface ClinicianRating {
  rater: string;
  dataset: string;
  item: string;
  scores: Record<string, number | null>;
}
export interface JuryItemScores {
  dataset: string;
  item: string;
  scores: Record<string, number>;
}
export interface JudgeItemScores extends JuryItemScores {
  judge: string;
}
export interface RougeItemScore {
  dataset: string;
  item: string;
  value: number;
}

/** One rating joined with its item's run and instance (unblinded: for the analysis, never for a rater). */
export interface RatingRow {
  rater: string;
  itemId: string;
  state: RatingState;
  scores: Record<string, number> | null;
  flagReason: FlagReason | null;
  ratedAt: string;
  updatedAt: string;
  runId: string;
  endpointId: string;
  model: string | null;
  ordinal: number;
  /** The jury's composite (jury_score, on the criteria's scale) and each judge's mean over the criteria. */
  jury: { composite: number | null; perJudge: Record<string, number | null> };
  rougeL: number | null;
}

export interface StudyRatings {
  study: Study;
  rows: RatingRow[];
  criteria: string[];
  /**
   * `composite-only`: the run store keeps the jury's composite and each judge's mean over the criteria,
   * not each criterion's score, so every criterion of `jury` and `judges` carries that mean. The
   * composite (mean of the criteria) is exact; per-criterion agreement with the jury is not possible.
   */
  juryCriteria: 'composite-only';
  clinicians: ClinicianRating[];
  jury: JuryItemScores[];
  judges: JudgeItemScores[];
  rouge: RougeItemScore[];
}
