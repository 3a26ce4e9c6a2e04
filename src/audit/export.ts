/**
 * Audit exports for compliance officers: JSON lines (every field, including hashes, MACs and the
 * checkpoints, so the export can be verified offline with only the public key), CSV (for a
 * spreadsheet: src/csv.ts writes it, so a purpose or reason that starts with = + - @ is never read as a
 * formula), and FHIR R4 AuditEvent resources in a Bundle (for a SIEM or an IHE ATNA repository).
 */
import { csvRow as csvLine } from '../csv';
import type { SignedCheckpoint } from './checkpoint';
import type { AuditRecord } from './record';

export type ExportFormat = 'jsonl' | 'csv' | 'fhir';

export function jsonlEvent(r: AuditRecord): string {
  return JSON.stringify({ kind: 'event', ...r }) + '\n';
}

export function jsonlCheckpoint(c: SignedCheckpoint): string {
  return JSON.stringify({ kind: 'checkpoint', statement: c.statementText, signature: c.signature }) + '\n';
}

const CSV_COLUMNS: (keyof AuditRecord)[] = [
  'seq',
  'recorded_at',
  'event_type',
  'action',
  'outcome',
  'rule',
  'reason',
  'actor_principal',
  'actor_role',
  'actor_auth',
  'purpose',
  'irb_protocol',
  'run_id',
  'benchmark_id',
  'tier',
  'endpoint_id',
  'export_id',
  'approval_id',
  'address',
  'detail',
  'site_id',
  'host',
  'daemon_version',
  'event_id',
  'prev_hash',
  'row_hash',
];

export function csvHeader(): string {
  return csvLine(CSV_COLUMNS);
}

export function csvRow(r: AuditRecord): string {
  return csvLine(CSV_COLUMNS.map((c) => (c === 'detail' ? JSON.stringify(r.detail) : r[c])));
}

const DCM = 'http://dicom.nema.org/resources/ontology/DCM';
const EHRBENCH_CODES = 'https://ehrbench.local/fhir/CodeSystem/audit-event-type';

/** DICOM event ids (the ATNA vocabulary FHIR AuditEvent.type uses) for our event types. */
function dicomType(eventType: string): { code: string; display: string } {
  if (eventType.startsWith('audit.')) return { code: '110101', display: 'Audit Log Used' };
  if (eventType === 'endpoint.call' || eventType.startsWith('export.')) return { code: '110106', display: 'Export' };
  if (eventType.startsWith('daemon.')) return { code: '110100', display: 'Application Activity' };
  if (eventType.startsWith('pki.') || eventType === 'access.denied') return { code: '110113', display: 'Security Alert' };
  return { code: '110100', display: 'Application Activity' };
}

const OUTCOME = { success: '0', denied: '4', failed: '8' } as const;

/** One audit record as a FHIR R4 AuditEvent. */
export function fhirAuditEvent(r: AuditRecord): Record<string, unknown> {
  const entity = (
    [
      ['run', r.run_id],
      ['benchmark', r.benchmark_id],
      ['endpoint', r.endpoint_id],
      ['export', r.export_id],
      ['approval', r.approval_id],
    ] as const
  )
    .filter(([, v]) => v)
    .map(([kind, value]) => ({
      what: { identifier: { system: `https://ehrbench.local/fhir/${kind}`, value } },
      ...(kind === 'benchmark' && r.tier ? { securityLabel: [{ system: 'https://ehrbench.local/fhir/tier', code: r.tier }] } : {}),
    }));
  return {
    resourceType: 'AuditEvent',
    id: r.event_id,
    type: { system: DCM, ...dicomType(r.event_type) },
    subtype: [{ system: EHRBENCH_CODES, code: r.event_type }],
    action: r.action,
    recorded: r.recorded_at,
    outcome: OUTCOME[r.outcome],
    ...(r.rule || r.reason ? { outcomeDesc: [r.rule, r.reason].filter(Boolean).join(': ') } : {}),
    ...(r.purpose ? { purposeOfEvent: [{ text: r.purpose }] } : {}),
    agent: [
      {
        who: { identifier: { system: 'https://ehrbench.local/fhir/principal', value: r.actor_principal } },
        role: [{ text: r.actor_role }],
        requestor: r.actor_role !== 'service',
        ...(r.irb_protocol ? { policy: [r.irb_protocol] } : {}),
        ...(r.address ? { network: { address: r.address, type: '2' } } : {}),
      },
    ],
    source: {
      site: r.site_id,
      observer: { display: `${r.host} (ehrbench ${r.daemon_version})` },
      type: [{ system: 'http://terminology.hl7.org/CodeSystem/security-source-type', code: '4', display: 'Application Server' }],
    },
    ...(entity.length ? { entity } : {}),
    extension: [
      {
        url: 'https://ehrbench.local/fhir/StructureDefinition/audit-chain',
        extension: [
          { url: 'seq', valueString: String(r.seq) },
          { url: 'prevHash', valueString: r.prev_hash },
          { url: 'rowHash', valueString: r.row_hash },
        ],
      },
    ],
  };
}
