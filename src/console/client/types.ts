/** The API's answers as the console reads them (schemas/api/*.schema.json are the truth). */

export type Counts = { pending: number; claimed: number; done: number; blocked: number; failed: number };

export interface Run {
  runId: string;
  benchmarkId: string;
  benchmarkVersion: string;
  tier: string;
  endpointId: string;
  testEndpoint: boolean;
  status: string;
  requestedBy: string;
  approvedBy: string | null;
  approvalId: string | null;
  irbProtocol: string | null;
  scoring: string;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  errorCode: string | null;
  instanceCount: number | null;
  counts: Counts | null;
  mainMetric: string;
  mainScore: number | null;
  aggregates: { metric: string; value: number | null; n: number; ci95?: { low: number; high: number } | null }[] | null;
  promptTokens: number | null;
  completionTokens: number | null;
  reasoningTokens: number | null;
  estimatedCostUsd: number | null;
  withheld: string | null;
  skipped: Record<string, number> | null;
}

export interface Approval {
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
  status: string;
  startsAt: string;
  expiresAt: string | null;
  version: number;
  createdBy: string;
  updatedBy: string;
  updatedAt: string;
}

export interface ApprovalDetail {
  approval: Approval;
  history: { version: number; change: string; changedBy: string; changedAt: string }[];
}

export interface Benchmark {
  id: string;
  displayName: string;
  category: string;
  subcategory: string;
  tier: string;
  mainMetric: string;
}

export interface Endpoint {
  id: string;
  provider: string;
  url: string;
  deployment: string | null;
  model: string | null;
  classification: { inVpc: boolean; baa: boolean; maxTier: string; development: boolean };
  lastProbe?: { at: string; outcome: string; rule: string | null } | null;
}

export interface ExportView {
  exportId: string;
  state: 'requested' | 'released';
  requestedBy: string;
  requestedAt: string;
  runIds: string[];
  releasedBy: string | null;
  releasedAt: string | null;
  format: string | null;
  contentSha256: string;
  bundleSha256: string | null;
  preview: string;
}

export interface AuditEvent {
  seq: number;
  event_id: string;
  recorded_at: string;
  event_type: string;
  action: string;
  outcome: string;
  rule: string | null;
  reason: string | null;
  actor_principal: string;
  actor_role: string;
  run_id: string | null;
  benchmark_id: string | null;
  endpoint_id: string | null;
  export_id: string | null;
  approval_id: string | null;
  row_hash: string;
}

export interface VerifyReport {
  ok: boolean;
  events: number;
  firstSeq: number | null;
  headSeq: number | null;
  checkpoints: number;
  lastCheckpointSeq: number | null;
  macChecked: boolean;
  witnesses: number;
  findings: { seq: number | null; problem: string }[];
  warnings: { seq: number | null; problem: string }[];
}

export interface AuditHealth {
  headSeq: number | null;
  events: number;
  checkpoints: number;
  lastCheckpoint: { seq: number; at: string | null } | null;
  lastVerify: { at: string; actor: string; rule: string | null } | null;
  witnesses: { dir: string; seq: number | null; problem: string | null }[];
  stopped: string | null;
}

/** POST /v1/certificates: the certificate issued for a request, for its holder. */
export interface SignedCertificate {
  principal: string;
  certificatePem: string;
  serial: string;
  issuerFingerprint: string;
  publicKeySha256: string;
}

export interface PrincipalView {
  id: string;
  displayName: string | null;
  roles: string[];
  active: boolean;
  certificates: { serial: string; fingerprint: string; issuedAt: string; notAfter: string | null; revoked: boolean }[];
}
