/**
 * The audit event a caller hands to the trail. Only ids, rule names, hashes and byte counts: never a
 * prompt, a completion, a note or an instance key (which may itself be an identifier).
 */
import type { Queryable } from '../db';
import type { Actor } from '../identity';
import type { ErrorCode } from '../errors';
import type { RuleId } from '../policy';
import type { Tier } from '../tiers';

export const AUDIT_EVENT_TYPES = [
  'daemon.start',
  'daemon.stop',
  'config.load',
  'policy.change',
  'run.request',
  'run.approve',
  'run.start',
  'run.complete',
  'run.fail',
  'run.cancel',
  'run.halt',
  'instance.blocked',
  'instance.read',
  'endpoint.call',
  'approval.create',
  'approval.grant',
  'approval.suspend',
  'approval.close',
  'export.request',
  'export.release',
  'export.deny',
  'audit.read',
  'audit.verify',
  'audit.checkpoint',
  'audit.loss-accepted',
  'audit.import',
  'pki.issue',
  'pki.revoke',
  'access.denied',
  'breakglass.start',
  'breakglass.end',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** C/R/U/D/E as in DICOM / FHIR AuditEvent.action. */
export type AuditAction = 'C' | 'R' | 'U' | 'D' | 'E';
export type AuditOutcome = 'success' | 'denied' | 'failed';

export interface AuditSubject {
  runId?: string;
  benchmarkId?: string;
  tier?: Tier;
  endpointId?: string;
  exportId?: string;
  approvalId?: string;
  /** Resolved address:port of an endpoint call. */
  address?: string;
}

export interface AuditEventInput {
  type: AuditEventType;
  action: AuditAction;
  outcome: AuditOutcome;
  /** The rule that decided (always set for denied and failed). */
  rule?: RuleId | ErrorCode;
  /** Short, PHI-free reason. */
  reason?: string;
  actor: Actor;
  purpose?: string;
  irbProtocol?: string;
  subject?: AuditSubject;
  /** Numbers and hashes only: byte counts, sha256 of a request, attempt number, instance ordinal. */
  detail?: Record<string, number | string | boolean>;
}

/**
 * The audit trail as the rest of ehrbench sees it. `record` resolves once the event is durable and
 * rejects (AuditUnavailable) when it is not: the caller then must not perform the action.
 */
export interface AuditTrail {
  record(event: AuditEventInput): Promise<void>;
  /** Records within the caller's transaction: the event commits or rolls back with the caller's change. */
  recordIn(tx: Queryable, event: AuditEventInput): Promise<void>;
  /** Signs a checkpoint over everything recorded so far (end of a run, shutdown). */
  seal(): Promise<void>;
}
