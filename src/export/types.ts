/**
 * The shapes of an export (schemas/export-bundle.schema.json). Everything here is an aggregate over at
 * least k instances, a marker saying it was suppressed, or provenance (ids, hashes, versions).
 */
import type { Tier } from '../tiers';
import type { PinKind, RunPins } from '../contracts';
import type { StudyValidationFigures } from '../ratings';
import type { CommitteeField } from './packet';

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
  /** A field from the site binding's strata (site demographics), not declared by the benchmark. */
  stratum?: true;
  /** Per metric with a direction that some cell releases: the worst and best groups and each group's ratio to the best (disparity.ts). */
  disparity?: MetricDisparity[];
}

/**
 * A metric's disparity over the released cells of one field (seismometer's fairness audit): the worst
 * and best groups by the metric's direction, and per cell its value over the best's, to 2 decimals
 * (null when the cell's value is hidden or the best is 0), flagged outside 0.8-1.25.
 */
export interface MetricDisparity {
  metric: string;
  lowerIsBetter: boolean;
  worst: string;
  best: string;
  ratios: { label: string; ratio: number | null; flagged: boolean }[];
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
  /** The hashes of the run's data, definition, template, scorer and judge set (absent in bundles from before they were recorded). */
  pins?: RunPins;
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
  /** Present only when the requester allowed runs of one benchmark whose pins differ: which pins differ, per benchmark. */
  mixedPins?: { benchmarkId: string; differs: PinKind[] }[];
  /** The evidence packet for an AI committee (`export request --packet`): one model under one approval. */
  packet?: EvidencePacket;
}

/**
 * What an AI committee asks about one model under one approval that the results do not say
 * (schemas/evidence-packet.schema.json; packet.ts checks the rest). Scores, subgroups, jury validation,
 * cost and tiers stay in the bundle's results and totals: the packet points to them (`evidence`).
 * Counts are ranges or suppressed, values at the resolution of their range, days not times; the only
 * free text is `approval.intendedUse`, the approval's purpose as compliance wrote it.
 */
export interface EvidencePacket {
  kind: 'ehrbench.evidence-packet.v1';
  model: { endpointId: string; provider: string; deployment: string | null; model: string | null };
  approval: {
    approvalId: string;
    /** The approval's IRB protocol id (the bundle's irbProtocol when it has one). */
    protocol: string;
    intendedUse: string;
    startsOn: string;
    expiresOn: string | null;
    tiers: Tier[];
    benchmarks: string[];
  };
  stability: PacketStability[];
  deid: { gold: PacketDeidGold | null; residualBlocked: Count } | null;
  fingerprints: PacketFingerprint[];
  drift: PacketDriftCheck[];
  evidence: { figure: string; auditSeq: number }[];
  committeeFields: CommitteeField[];
}

/** `--repeat K` on one benchmark: how often the K answers agreed exactly, and how far the K run means spread. */
export interface PacketStability {
  benchmarkId: string;
  /** The metric whose run means spread (the main metric). */
  metric: string;
  repeats: number;
  instances: Count;
  exactAgreement: { value: number; ci95: { low: number; high: number } } | Suppressed;
  scoreSpread: { sd: number; min: number; max: number } | Suppressed;
}

export interface PacketDeidGold {
  evaluatedOn: string;
  recall: number;
  precision: number;
  phiInstances: CountRange;
}

export interface PacketFingerprint {
  endpointId: string;
  model: string | null;
  systemFingerprint: string | null;
  firstSeenOn: string;
  lastSeenOn: string;
}

/** One canary comparison under the approval; figures are null when its count is suppressed. */
export interface PacketDriftCheck {
  on: string;
  benchmarkId: string;
  metric: string;
  test: 'exact-mcnemar' | 'wilcoxon-signed-rank' | 'paired-t';
  instances: Count;
  baseline: number | null;
  canary: number | null;
  /** Rounded to 3 decimals (packet.ts P_VALUE_DECIMALS). */
  pValue: number | null;
  threshold: number;
  minDifference: number | null;
  outcome: 'no-change' | 'changed';
  reviewedOn: string | null;
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
