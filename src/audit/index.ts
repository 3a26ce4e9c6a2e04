/** The tamper-evident audit trail: writer, verifier, reader, exports. */
export type { AuditTrail, AuditEventInput, AuditEventType, AuditAction, AuditOutcome, AuditSubject } from './types';
export { AUDIT_EVENT_TYPES } from './types';
export { AuditLog, AuditUnavailable } from './trail';
export type { AuditLogOptions, CheckpointRef } from './trail';
export { verifyAudit } from './verify';
export type { Finding, VerifyReport, StoredCheckpoint } from './verify';
export { streamRecords, streamRecordPages, tailRecords, loadCheckpoints, toSignedCheckpoint } from './store';
export type { RecordFilter } from './store';
export { readWitness, WITNESS_FILE } from './checkpoint';
export type { SignedCheckpoint } from './checkpoint';
export { loadSigningKey, loadMacKeys, loadMacKeysIfPresent, trustedKeys, writeMacKey, MAC_KEY_FILE, PUBLIC_KEY_FILE } from './keys';
export type { AuditRecord } from './record';
export { csvHeader, csvRow, fhirAuditEvent, jsonlCheckpoint, jsonlEvent } from './export';
export type { ExportFormat } from './export';
export { auditBase, ENGINE_ACTOR } from './run-events';
export { newMacKeyHex } from './keys';
