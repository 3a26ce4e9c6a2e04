export type { AuditTrail, AuditEventInput, AuditEventType, AuditAction, AuditOutcome, AuditSubject } from './types';
export { AUDIT_EVENT_TYPES } from './types';
import type { AuditTrail } from './types';

/** Records nothing. Stands in only until the tamper-evident trail is wired in. */
export const passThroughAudit: AuditTrail = { record: async () => undefined };
