/**
 * The API's answers as the console reads them. Generated from the response schemas in schemas/api by
 * `npm run docs:console-types` (src/console/write-api-types.ts): do not edit; change the schema.
 */

/** api/run.schema.json */
export interface Run {
  runId: string;
  benchmarkId: string;
  benchmarkVersion: string;
  tier: string;
  endpointId: string;
  /**
   * The run went to a test endpoint (the loopback stand-in of ehrbench init --test-endpoints): its results mean nothing
   */
  testEndpoint: boolean;
  status: string;
  /**
   * In the answer to a cancel or halt by the process that executes the run: its calls in flight then, which finish; no new call of the run starts
   */
  callsInFlight?: number;
  requestedBy: string;
  approvedBy: string | null;
  approvalId: string | null;
  irbProtocol: string | null;
  /**
   * Why the run's approval covers it: it names the benchmark, or only the benchmark's whole tier, or (narrowed since) no longer; null without an approval
   */
  approvalCoverage: 'benchmark' | 'tier' | 'none' | null;
  /**
   * What the researcher said the run is for
   */
  purpose: string | null;
  /**
   * The endpoint's model or deployment as the run recorded it
   */
  model: string | null;
  /**
   * The cap the researcher asked for; null for the whole dataset
   */
  maxInstances: number | null;
  scoring: string;
  /**
   * A jury benchmark's jury as the run uses it: the judge endpoints asked, those left out as of the evaluated model's family, the same-family rule (exclude, allow, or helm-asks-all in helm mode) and what scores the floor without a judge (empty-answer, or empty-answer-or-refusal in corrected mode); null for other benchmarks and runs from before it was recorded
   */
  jury: {
    judgesAsked: string[];
    judgesLeftOut: string[];
    sameFamily: 'exclude' | 'allow' | 'helm-asks-all';
    floor: 'empty-answer' | 'empty-answer-or-refusal';
  } | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  errorCode: string | null;
  instanceCount: number | null;
  /**
   * The data revision the run read: sha256 (one value to compare runs by) over each data file's name and sha256, or what identifies an OMOP source without data; null for a run from before it was recorded (unknown)
   */
  data: {
    sha256: string;
    files?: {
      name: string;
      sha256: string;
    }[];
    omop?: {
      schema: string | null;
      filter: unknown;
      labelsSha256: string | null;
      noteIdsSha256: string | null;
    };
  } | null;
  /**
   * The preset the run was requested with (medhelm-leaderboard), or null
   */
  preset: 'medhelm-leaderboard' | null;
  /**
   * The run's IRB approval has a detected drift that no compliance officer has reviewed yet: its results may no longer describe the model behind the endpoint
   */
  stale: boolean;
  /**
   * Its repeat group (--repeat K): which of K, and the group's runs in order; null for a run requested alone
   */
  repeat: {
    groupId: string;
    index: number;
    of: number;
    runIds: string[];
  } | null;
  /**
   * The hashes of what made the run's scores (schemas/run-pins.schema.json): runs whose pins differ are compared only with --allow-mixed-data; unknown: a run from before the pin was recorded
   */
  pins: {
    dataset: string;
    definition: string;
    template: string;
    scorer: string;
    judges: string | null;
  };
  /**
   * How a capped run picked its instances: HELM's seeded sample (seed recorded) or the first N; null without a cap
   */
  sample: {
    method: 'helm' | 'first';
    seed?: number;
    maxInstances: number;
  } | null;
  /**
   * Records the dataset left out when the run was planned, by rule (dataset.skip.*)
   */
  skipped: {
    [k: string]: number | undefined;
  } | null;
  /**
   * Instances per state; null when policy/visibility withholds the run's figures from the caller (see withheld)
   */
  counts: {
    pending: number;
    claimed: number;
    done: number;
    blocked: number;
    failed: number;
  } | null;
  mainMetric: string;
  mainScore: number | null;
  aggregates:
    | {
        metric: string;
        value: number | null;
        n: number;
        /**
         * 95% Wilson interval, for a metric whose every score lies in [0, 1] (shown by runs show ID); null otherwise
         */
        ci95?: null | {
          low: number;
          high: number;
        };
      }[]
    | null;
  promptTokens: number | null;
  completionTokens: number | null;
  /**
   * Of the completion tokens, those a reasoning model spent reasoning (counted in the cost too; the reasoning text is never stored)
   */
  reasoningTokens: number | null;
  /**
   * Calls of the run (model and judges) whose usage the endpoint did not report truthfully (missing, negative, beyond the request, implausibly low): each was charged its worst case, so the tokens and cost are an upper bound for them
   */
  usageUnderReported: number | null;
  /**
   * From the price table in the config (export.prices); null when the endpoint has no price
   */
  estimatedCostUsd: number | null;
  /**
   * What happened to the run, in the words the CLI, the console and the README use (src/runs/outcome.ts); null when the run's figures are withheld from the caller (then read status)
   */
  outcome: null | {
    kind: 'awaiting-approval' | 'queued' | 'running' | 'completed' | 'completed-with-failures' | 'failed' | 'halted' | 'cancelled';
    /**
     * The short label (completed, completed with failures, failed, ...)
     */
    label: string;
    /**
     * One sentence: what happened and what to do
     */
    summary: string;
    /**
     * The run ended with at least one instance done: it has scores and may be exported
     */
    hasResults: boolean;
    /**
     * Completed with no instance failed (runs watch exits 0 only then)
     */
    success: boolean;
    /**
     * Why instances ended without a result: one entry per error code or rule, most first
     */
    causes: {
      code: string;
      state: 'failed' | 'blocked';
      instances: number;
      meaning: string;
    }[];
  };
  /**
   * What the endpoints of the run's calls said they served (ids only; days, not times); null when withheld
   */
  fingerprints:
    | {
        endpointId: string;
        /**
         * sha256 of what the endpoint said it served
         */
        fingerprint: string;
        model: string | null;
        systemFingerprint: string | null;
        deployment: string | null;
        apiVersion: string | null;
        modelsSha256: string | null;
        headers: {
          [k: string]: string | undefined;
        };
        firstSeenDay: string;
        lastSeenDay: string;
      }[]
    | null;
  /**
   * The rule that withheld the run's exact figures (counts, scores, aggregates, tokens, cost: null) from the caller, or null when they are shown
   */
  withheld: string | null;
}

/** api/run-instances.schema.json */
export interface RunInstances {
  runId: string;
  benchmarkId: string;
  tier: string;
  /**
   * text: public data, each instance whole; codes-only: an approval-required or private run, failed and blocked instances by ordinal, state and code, never text or scores
   */
  view: 'text' | 'codes-only';
  /**
   * the rule that decided what this view shows
   */
  rule: 'visibility.instances.public-tier' | 'visibility.instances.codes-only';
  /**
   * what the view shows and why, in one sentence
   */
  reason: string;
  /**
   * whose score each instance's score is (null in the codes-only view)
   */
  metric: string | null;
  mainMetric: string;
  metrics: string[];
  /**
   * rebuilt: from the run's own template and the instance; template-changed: the benchmark's template is no longer the run's, so no prompt is shown; withheld: the codes-only view
   */
  prompts: 'rebuilt' | 'template-changed' | 'withheld';
  filter: {
    failed: boolean;
    wrong: boolean;
  };
  limit: number;
  /**
   * the ordinal this page starts after; null: from the first instance (ordinals start at 0)
   */
  after: number | null;
  instances: {
    ordinal: number;
    state: 'pending' | 'claimed' | 'done' | 'blocked' | 'failed';
    /**
     * why a failed or blocked instance has no result: a rule or error code
     */
    errorCode: string | null;
    /**
     * the instance's key in its dataset (text view only)
     */
    key?: string;
    /**
     * text view only; null when prompts is template-changed
     */
    prompt?: string | null;
    /**
     * text view only; null until the instance is done
     */
    prediction?: string | null;
    /**
     * text view only
     */
    references?: string[];
    /**
     * the score of `metric` (text view only)
     */
    score?: number | null;
    /**
     * every score of the instance (text view only)
     */
    scores?: {
      [k: string]: number | null | undefined;
    };
    /**
     * a text field was longer than 20,000 characters and was cut
     */
    truncated?: boolean;
  }[];
  /**
   * the after of the next page; null on the last page
   */
  nextAfter: number | null;
}

/** api/approval.schema.json */
export interface Approval {
  approvalId: string;
  protocolNumber: string;
  title: string | null;
  principalInvestigator: string;
  personnel: string[];
  /**
   * Clinician raters of rating studies on this approval's runs (absent in the history of an approval recorded before raters existed)
   */
  raters?: string[];
  benchmarks: string[];
  tiers: string[];
  endpoints: string[];
  purpose: string;
  duaId: string | null;
  budgetUsd: number | null;
  /**
   * The approval's canary, or null
   */
  canary?: {
    benchmarkId: string;
    /**
     * Instances in the pinned sample (at least k = 11: its figures are shown only over k or more)
     */
    instances: number;
    /**
     * Days between scheduled re-runs (default 7)
     */
    everyDays: number;
    /**
     * Drift when the paired test's p-value is below this (default 0.05)...
     */
    threshold: number;
    /**
     * ...and the mean score moved by at least this much either way (default 0.05)
     */
    minDifference: number;
  } | null;
  status: string;
  startsAt: string;
  expiresAt: string | null;
  version: number;
  createdBy: string;
  createdAt: string;
  updatedBy: string;
  updatedAt: string;
}

/** api/approval-detail.schema.json */
export interface ApprovalDetail {
  approval: {
    approvalId: string;
    protocolNumber: string;
    title: string | null;
    principalInvestigator: string;
    personnel: string[];
    benchmarks: string[];
    tiers: string[];
    endpoints: string[];
    purpose: string;
    duaId: string | null;
    budgetUsd: number | null;
    /**
     * The approval's canary, or null
     */
    canary?: {
      benchmarkId: string;
      /**
       * Instances in the pinned sample (at least k = 11: its figures are shown only over k or more)
       */
      instances: number;
      /**
       * Days between scheduled re-runs (default 7)
       */
      everyDays: number;
      /**
       * Drift when the paired test's p-value is below this (default 0.05)...
       */
      threshold: number;
      /**
       * ...and the mean score moved by at least this much either way (default 0.05)
       */
      minDifference: number;
    } | null;
    status: string;
    startsAt: string;
    expiresAt: string | null;
    version: number;
    createdBy: string;
    createdAt: string;
    updatedBy: string;
    updatedAt: string;
  };
  history: {
    version: number;
    change: string;
    changedBy: string;
    changedAt: string;
    snapshot: {
      approvalId?: string;
      protocolNumber?: string;
      title?: string | null;
      principalInvestigator?: string;
      personnel?: string[];
      benchmarks?: string[];
      tiers?: string[];
      endpoints?: string[];
      purpose?: string;
      duaId?: string | null;
      budgetUsd?: number | null;
      /**
       * The approval's canary, or null
       */
      canary?: {
        benchmarkId: string;
        /**
         * Instances in the pinned sample (at least k = 11: its figures are shown only over k or more)
         */
        instances: number;
        /**
         * Days between scheduled re-runs (default 7)
         */
        everyDays: number;
        /**
         * Drift when the paired test's p-value is below this (default 0.05)...
         */
        threshold: number;
        /**
         * ...and the mean score moved by at least this much either way (default 0.05)
         */
        minDifference: number;
      } | null;
      status?: string;
      startsAt?: string;
      expiresAt?: string | null;
      version?: number;
      createdBy?: string;
      createdAt?: string;
      updatedBy?: string;
      updatedAt?: string;
    };
  }[];
}

/** api/drift-check.schema.json */
export interface DriftCheck {
  checkId: string;
  approvalId: string;
  protocolNumber: string;
  endpointId: string;
  benchmarkId: string;
  runId: string;
  baselineRunId: string;
  /**
   * Its date came, or a call under the approval saw a new fingerprint of the endpoint
   */
  trigger: 'schedule' | 'fingerprint';
  state: 'pending' | 'stable' | 'drift' | 'inconclusive' | 'failed';
  test: 'mcnemar-exact' | 'wilcoxon-signed-rank' | null;
  pairs: number | null;
  baselineMean: number | null;
  canaryMean: number | null;
  pValue: number | null;
  createdAt: string;
  decidedAt: string | null;
  reviewedBy: string | null;
  reviewedAt: string | null;
  /**
   * For a drift: what changed and the canary's means and p-value, in one line
   */
  notice: string | null;
}

/** api/benchmark-summary.schema.json */
export interface Benchmark {
  id: string;
  version: string;
  displayName: string;
  category: string;
  subcategory: string;
  tier: string;
  mainMetric: string;
  lowerIsBetter: boolean | null;
  definitionHash: string;
  templateHash: string;
}

/** api/endpoint-summary.schema.json */
export interface Endpoint {
  id: string;
  provider: string;
  url: string;
  deployment: string | null;
  model: string | null;
  classification: {
    inVpc: boolean;
    baa: boolean;
    maxTier: string;
    development?: boolean;
  };
  /**
   * When the endpoint was last probed (ehrbench endpoints probe), from the audit trail; null if never
   */
  lastProbeAt: string | null;
  /**
   * The data tiers this endpoint may never receive, whoever asks, each with the rule that refuses it (src/access endpointDecision): a form offers the endpoint only for the other tiers
   */
  refusedTiers: {
    tier: string;
    rule: string;
    reason: string;
  }[];
}

/** api/export-view.schema.json */
export interface ExportView {
  exportId: string;
  state: 'requested' | 'released' | 'withdrawn';
  requestedBy: string;
  requestedAt: string;
  runIds: string[];
  releasedBy: string | null;
  releasedAt: string | null;
  format: 'bundle' | 'helm' | null;
  contentSha256: string;
  bundleSha256: string | null;
  /**
   * Canonical JSON of the content (schemas/api/export-preview.schema.json): the bundle without its release fields and signature
   */
  preview: string;
}

/** api/audit-event.record.schema.json */
export interface AuditEvent {
  seq: number;
  event_id: string;
  schema_version: number;
  recorded_at: string;
  event_type: string;
  action: string;
  outcome: string;
  rule: string | null;
  reason: string | null;
  actor_principal: string;
  actor_role: string;
  actor_auth: string;
  purpose: string | null;
  irb_protocol: string | null;
  run_id: string | null;
  benchmark_id: string | null;
  tier: string | null;
  endpoint_id: string | null;
  export_id: string | null;
  approval_id: string | null;
  address: string | null;
  detail: {
    [k: string]: string | number | boolean | undefined;
  };
  site_id: string;
  host: string;
  daemon_version: string;
  prev_hash: string;
  row_hash: string;
}

/** api/audit-report.schema.json */
export interface VerifyReport {
  ok: boolean;
  events: number;
  firstSeq: number | null;
  headSeq: number | null;
  checkpoints: number;
  lastCheckpointSeq: number | null;
  macChecked: boolean;
  witnesses: number;
  findings: {
    seq: number | null;
    problem: string;
  }[];
  warnings: {
    seq: number | null;
    problem: string;
  }[];
}

/** api/audit-health.schema.json */
export interface AuditHealth {
  headSeq: number | null;
  events: number;
  checkpoints: number;
  lastCheckpoint: null | {
    seq: number;
    at: string | null;
  };
  lastVerify: null | {
    at: string;
    actor: string;
    rule: string | null;
    /**
     * What the last verification found; null when the trail does not hold its outcome (a verification on the host)
     */
    outcome: 'verified' | 'broken' | null;
  };
  witnesses: {
    dir: string;
    seq: number | null;
    problem: string | null;
  }[];
  /**
   * The rule that stopped the trail (a rollback), or null while it records
   */
  stopped: string | null;
}

/** api/certificate.schema.json */
export interface SignedCertificate {
  certificatePem: string;
  serial: string;
  issuerFingerprint: string;
  publicKeySha256: string;
  principal: string;
}

/** api/principal-view.schema.json */
export interface PrincipalView {
  id: string;
  displayName: string | null;
  roles: string[];
  active: boolean;
  certificates: {
    serial: string;
    fingerprint: string;
    issuedAt: string;
    notAfter: string;
    revoked: boolean;
  }[];
}

/** api/study.schema.json */
export interface StudyView {
  studyId: string;
  title: string;
  status: 'open' | 'closed';
  criteria: {
    name: string;
    description?: string;
    min: number;
    max: number;
  }[];
  items: number;
  ratersPerItem: number;
  openedBy: string;
  openedAt: string;
  closedAt: string | null;
  /**
   * null to a clinician, who rates blinded
   */
  benchmarkId: string | null;
  /**
   * null to a clinician, who rates blinded
   */
  runIds: string[] | null;
  tier: string | null;
}

/** api/study-detail.schema.json */
export interface StudyDetail {
  study: {
    studyId: string;
    title: string;
    status: 'open' | 'closed';
    criteria: {
      name: string;
      description?: string;
      min: number;
      max: number;
    }[];
    items: number;
    ratersPerItem: number;
    openedBy: string;
    openedAt: string;
    closedAt: string | null;
    /**
     * null to a clinician, who rates blinded
     */
    benchmarkId: string | null;
    /**
     * null to a clinician, who rates blinded
     */
    runIds: string[] | null;
    tier: string | null;
  };
  progress: {
    items: number;
    itemsCovered: number;
    raters: number;
    rated: number;
    skipped: number;
    flagged: number;
  };
  agreement: {
    criteria: string[];
    rows: AgreementRow[];
    rankStability: {
      judge: string;
      tau: number | null;
      reason?: string;
    }[];
    note: string;
  } | null;
}
export interface AgreementRow {
  dataset: string;
  items: number;
  clinicians: number;
  icc: AgreementStat;
  spearman: AgreementStat;
  kappa: AgreementStat;
  clinicianClinicianIcc: AgreementStat;
  judges: {
    judge: string;
    icc: AgreementStat;
    spearman: AgreementStat;
  }[];
  rougeL: {
    icc: AgreementStat;
    spearman: AgreementStat;
  } | null;
}
export interface AgreementStat {
  value: number | null;
  ci95?: {
    low: number;
    high: number;
  } | null;
  reason?: string;
}

/** api/study-next.schema.json */
export interface StudyNext {
  item: {
    studyId: string;
    itemId: string;
    prompt: string;
    answer: string;
    criteria: {
      name: string;
      description?: string;
      min: number;
      max: number;
    }[];
    progress: {
      done: number;
      remaining: number;
      total: number;
    };
  } | null;
  progress?: {
    done: number;
    remaining: number;
    total: number;
  };
}

/** api/study-plan.schema.json */
export interface StudyPlan {
  instances: number;
  corrected: number | null;
  exact: number;
}

/** Instances per state of a run (its counts, when not withheld). */
export type Counts = NonNullable<Run['counts']>;
