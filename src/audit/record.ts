/**
 * An audit record as stored: the caller's event plus ordering and provenance, hash-chained to the
 * previous record and MACed with a key kept outside the database. `canonicalRecord` is the single
 * definition of what a row hash covers; the writer and the verifier both use it.
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../canonical';
import type { AuditAction, AuditEventInput, AuditOutcome } from './types';

export const AUDIT_SCHEMA_VERSION = 1;
export const GENESIS_HASH = '0'.repeat(64);

/** One row of audit_events, with column names as in the table. */
export interface AuditRecord {
  seq: number;
  event_id: string;
  schema_version: number;
  recorded_at: string;
  event_type: string;
  action: AuditAction;
  outcome: AuditOutcome;
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
  detail: Record<string, number | string | boolean>;
  site_id: string;
  host: string;
  daemon_version: string;
  prev_hash: string;
  row_hash: string;
  mac_key_id: string;
  row_mac: string;
}

/** The fields a row hash covers. */
type Hashed = Pick<
  AuditRecord,
  | 'action'
  | 'actor_auth'
  | 'actor_principal'
  | 'actor_role'
  | 'address'
  | 'approval_id'
  | 'benchmark_id'
  | 'daemon_version'
  | 'detail'
  | 'endpoint_id'
  | 'event_id'
  | 'event_type'
  | 'export_id'
  | 'host'
  | 'irb_protocol'
  | 'outcome'
  | 'prev_hash'
  | 'purpose'
  | 'reason'
  | 'recorded_at'
  | 'rule'
  | 'run_id'
  | 'schema_version'
  | 'seq'
  | 'site_id'
  | 'tier'
>;

/** Strings JSON.stringify leaves as they are: printable ASCII without a quote or a backslash. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** RFC 8785 for one scalar: ECMAScript JSON serialisation of strings, finite numbers, booleans, null. */
function j(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  // Most fields (ids, codes, hashes, times) need no escaping: quoted as they are, exactly as JSON.stringify would.
  if (typeof v === 'string' && v.length <= 256 && PLAIN.test(v)) return `"${v}"`;
  if (typeof v === 'number' && !Number.isFinite(v)) throw new Error('non-finite number in an audit record');
  return JSON.stringify(v);
}

function canonicalDetail(detail: AuditRecord['detail']): string {
  const keys = Object.keys(detail ?? {});
  if (keys.length > 1) keys.sort(); // default sort compares UTF-16 code units, as RFC 8785 requires
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    out += `${i ? ',' : ''}${JSON.stringify(k)}:${j(detail[k])}`;
  }
  return out + '}';
}

/**
 * The RFC 8785 canonical JSON of the fields a row hash covers: keys in sorted order, ECMAScript
 * serialisation of values. Spelled out for the record's fixed shape because it runs for every row on
 * every append and every verification (twice as fast as the general implementation); a test checks it
 * equals `canonicalize` on many records, including awkward strings.
 */
export function canonicalRecord(r: Hashed): string {
  return (
    `{"action":${j(r.action)},"actor_auth":${j(r.actor_auth)},"actor_principal":${j(r.actor_principal)},"actor_role":${j(r.actor_role)},` +
    `"address":${j(r.address)},"approval_id":${j(r.approval_id)},"benchmark_id":${j(r.benchmark_id)},"daemon_version":${j(r.daemon_version)},` +
    `"detail":${canonicalDetail(r.detail)},"endpoint_id":${j(r.endpoint_id)},"event_id":${j(r.event_id)},"event_type":${j(r.event_type)},` +
    `"export_id":${j(r.export_id)},"host":${j(r.host)},"irb_protocol":${j(r.irb_protocol)},"outcome":${j(r.outcome)},` +
    `"prev_hash":${j(r.prev_hash)},"purpose":${j(r.purpose)},"reason":${j(r.reason)},"recorded_at":${j(r.recorded_at)},` +
    `"rule":${j(r.rule)},"run_id":${j(r.run_id)},"schema_version":${j(r.schema_version)},"seq":${j(r.seq)},` +
    `"site_id":${j(r.site_id)},"tier":${j(r.tier)}}`
  );
}

export function rowHash(r: Hashed): string {
  return sha256Hex(canonicalRecord(r));
}

/** Each MAC key's KeyObject, made once: an HMAC keyed by a KeyObject skips copying the key into a new one per row. */
const secretKeys = new WeakMap<Buffer, KeyObject>();

export function rowMac(macKey: Buffer, hash: string): string {
  let key = secretKeys.get(macKey);
  if (!key) secretKeys.set(macKey, (key = createSecretKey(macKey)));
  return createHmac('sha256', key).update(hash).digest('hex');
}

/** The event fields of a record, before ordering and chaining. */
export type RecordBody = Omit<AuditRecord, 'seq' | 'prev_hash' | 'row_hash' | 'mac_key_id' | 'row_mac'>;

export interface Provenance {
  siteId: string;
  host: string;
  daemonVersion: string;
}

/** Maps a caller's event to record fields. */
export function recordBody(e: AuditEventInput, eventId: string, recordedAt: string, p: Provenance): RecordBody {
  const s = e.subject ?? {};
  return {
    event_id: eventId,
    schema_version: AUDIT_SCHEMA_VERSION,
    recorded_at: recordedAt,
    event_type: e.type,
    action: e.action,
    outcome: e.outcome,
    rule: e.rule ?? null,
    reason: e.reason ?? null,
    actor_principal: e.actor.principal,
    actor_role: e.actor.role,
    actor_auth: e.actor.authMethod,
    purpose: e.purpose ?? null,
    irb_protocol: e.irbProtocol ?? null,
    run_id: s.runId ?? null,
    benchmark_id: s.benchmarkId ?? null,
    tier: s.tier ?? null,
    endpoint_id: s.endpointId ?? null,
    export_id: s.exportId ?? null,
    approval_id: s.approvalId ?? null,
    address: s.address ?? null,
    detail: e.detail ?? {},
    site_id: p.siteId,
    host: p.host,
    daemon_version: p.daemonVersion,
  };
}
