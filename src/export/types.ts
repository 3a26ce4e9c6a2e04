/**
 * The shapes of an export (schemas/export-bundle.schema.json). Everything here is an aggregate over at
 * least k instances, a marker saying it was suppressed, or provenance (ids, hashes, versions).
 */
import type { Tier } from '../tiers';
import type { StudyValidationFigures } from '../ratings';

export type { StudyValidationFigures };

/** A released instance count: a range [low, high] with low >= k, or exactly 0 ({0, 0}). */
export interface CountRange {
  low: number;
  high: number;
}

/**
 * "<k": fewer than k instances behind it. "complementary": hidden so a hidden cell (or fewer than k
 * hidden instances) cannot be derived from the total. "differencing": its instances differ from those
 * of another released cell of the run by 1..k-1, so releasing both would give those instances away.
 */
export type SuppressionMarker = '<k' | 'complementary' | 'differencing';

export interface Suppressed {
  suppressed: SuppressionMarker;
}

export type Count = CountRange | Suppressed;

export interface ReleasedMetric {
  name: string;
  /** A multiple of 1/D, D the largest of 1000, 500, ..., 1 not above n.low (disclosure.ts valueDenominator). */
  value: number;
  n: CountRange;
  /** 95% interval from the range and the value alone; only for a [0, 1] metric (none when values lie outside). */
  ci95?: { low: number; high: number };
}

export type MetricCell = ReleasedMetric | ({ name: string } & Suppressed);

export type SubgroupCell = { label: string; n: CountRange; metrics: MetricCell[] } | ({ label: string } & Suppressed);

export interface Subgroup {
  field: string;
  cells: SubgroupCell[];
}

export interface Usage {
  /** Rounded to the nearest thousand. */
  promptTokens: number;
  completionTokens: number;
  /** Rounded to cents; null when the price table has no price for the endpoint. */
  estimatedCostUsd: number | null;
}

export interface ExportResult {
  runId: string;
  benchmark: {
    id: string;
    version: string;
    category: string;
    subcategory: string;
    tier: Tier;
    helmGroup: string | null;
    split: string;
    lowerIsBetter: boolean | null;
    definitionHash: string;
    templateHash: string;
  };
  model: { endpointId: string; provider: string; deployment: string | null; model: string | null; maxTokens: number; temperature: number };
  scoring: 'corrected' | 'helm';
  deidVersion: string | null;
  mainMetric: string;
  n: Count;
  metrics: MetricCell[];
  subgroups: Subgroup[];
  /** Null when the run's cohort is below k (its token totals are aggregates of fewer than k instances). */
  usage: Usage | null;
  /** A jury benchmark's: whether clinicians at the site validated its jury (absent for other benchmarks). */
  juryValidation?: JuryValidation;
  /** What the endpoints of the run's calls said they served: ids and days (absent in older bundles). */
  fingerprints?: ExportFingerprint[];
  /** The run's IRB approval had an unreviewed detected drift when the export was built. */
  stale?: boolean;
}

export interface ExportFingerprint {
  endpointId: string;
  fingerprint: string;
  model: string | null;
  systemFingerprint: string | null;
  deployment: string | null;
  apiVersion: string | null;
  modelsSha256: string | null;
  firstSeenDay: string;
  lastSeenDay: string;
}

/** A statistic of a validation with its 95% interval, rounded outward to two decimals. */
export interface ValidationFigure {
  value: number;
  ci95: { low: number; high: number } | null;
}

/**
 * Whether the jury of a jury benchmark was validated at the site: by the latest closed rating study of
 * the benchmark, its agreement with the site's clinicians (ICC(3,k) of the jury against the clinicians'
 * mean, MedHELM's figure, with its interval; Spearman; weighted kappa; the clinicians' own ICC). Counts
 * are ranges and a study of fewer than k rated items states no figure. Never a rating.
 */
export type JuryValidation =
  | { validated: false; reason: string }
  | {
      validated: true;
      studyId: string;
      closedOn: string;
      items: Count;
      clinicians: number;
      method: string;
      icc: ValidationFigure | null;
      spearman: number | null;
      weightedKappa: number | null;
      clinicianClinicianIcc: ValidationFigure | null;
    };

/** v1: bundles released before values and intervals were made independent of the exact count (still verifiable). */
export type DisclosurePolicy =
  | {
      policyId: 'ehrbench.min-cell-size.v1';
      k: number;
      countRangeWidth: number;
      complementarySuppression: true;
      valueDecimals: number;
      ci: 'wilson-95 (0/1 metrics), normal-95 (others)';
      differencing: 'released cohorts of a benchmark differ by 0 or at least k instances';
    }
  | {
      policyId: 'ehrbench.min-cell-size.v2';
      k: number;
      countRangeWidth: number;
      complementarySuppression: true;
      valueDecimals: number;
      valueResolution: typeof VALUE_RESOLUTION;
      ci: typeof CI_METHOD;
      differencing: typeof DIFFERENCING_RULE;
    };

export const VALUE_RESOLUTION = '1/D, D the largest of 1000, 500, 200, 100, 50, 20, 10, 5, 2, 1 at most the low end of the count range';
export const CI_METHOD = 'widest wilson-95 over the count range and the values that round to the released one ([0, 1] metrics); none (others)';
export const DIFFERENCING_RULE = 'every released cell of a benchmark differs from every other by 0 or at least k instances, whatever its name';

/** What the requester asks to release and the compliance officer reviews: the preview. */
export interface ExportContent {
  exportId: string;
  siteId: string;
  runIds: string[];
  tier: Tier;
  irbProtocol: string | null;
  duaId: string | null;
  requestedBy: string;
  /** UTC day, YYYY-MM-DD: no export date is finer than a day. */
  requestedOn: string;
  disclosure: DisclosurePolicy;
  results: ExportResult[];
  /** Sums over the results whose usage is released. */
  totals: Usage;
  /**
   * Present only when the requester allowed runs of one benchmark that read different data: each such
   * benchmark with its runs' data revisions (sha256, or "unknown" for a run from before they were recorded).
   */
  mixedDataRevisions?: { benchmarkId: string; runs: { runId: string; revision: string }[] }[];
}

export interface AuditCheckpointRef {
  checkpointId: number;
  seq: number;
  headHash: string;
  keyFingerprint: string;
  /** seq of the export.release event; the checkpoint's seq is at least this. */
  releaseEventSeq: number;
}

export interface HelmFileRef {
  runName: string;
  runSpecSha256: string;
  statsSha256: string;
}

export interface BundleSignature {
  algorithm: 'Ed25519';
  keyFingerprint: string;
  /** hex of the signature over the RFC 8785 canonical JSON of the bundle without this field. */
  value: string;
}

export interface UnsignedBundle extends ExportContent {
  format: 'ehrbench.export-bundle';
  schemaVersion: 1;
  createdOn: string;
  releasedBy: string;
  daemonVersion: string;
  auditCheckpoint: AuditCheckpointRef;
  helm: HelmFileRef[];
}

export interface Bundle extends UnsignedBundle {
  signature: BundleSignature;
}
