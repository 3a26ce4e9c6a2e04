/**
 * The kinds of audit event and their outcomes: written by the audit trail (src/audit), counted by the
 * metrics (src/observability), which the trail itself reports to; here so neither imports the other both ways.
 */
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
  'study.open',
  'study.close',
  'study.rate',
  'deid.signoff',
  'drift.check',
  'drift.review',
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

export type AuditOutcome = 'success' | 'denied' | 'failed';
