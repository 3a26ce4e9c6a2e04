/**
 * The audit event a caller hands to the trail. Only ids, rule names, hashes and byte counts: never a
 * prompt, a completion, a note or an instance key (which may itself be an identifier).
 */
import { AUDIT_EVENT_TYPES, type AuditEventType, type AuditOutcome } from '../contracts';
import type { Queryable } from '../db';
import type { Actor } from '../identity';
import type { ErrorCode } from '../errors';
import type { RuleId } from '../policy';
import type { Tier } from '../tiers';

// The event types are read by the metrics too (observability, below the audit trail): src/contracts.
export { AUDIT_EVENT_TYPES, type AuditEventType, type AuditOutcome };

/** C/R/U/D/E as in DICOM / FHIR AuditEvent.action. */
export type AuditAction = 'C' | 'R' | 'U' | 'D' | 'E';

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
