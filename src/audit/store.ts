/** Reading the audit trail from the database: streamed in seq order, searched, tailed. */
import type { Queryable } from '../db';
import type { SignedCheckpoint, CheckpointStatement } from './checkpoint';
import type { AuditRecord } from './record';
import type { StoredCheckpoint } from './verify';

const COLUMNS = `seq, event_id::text AS event_id, schema_version, recorded_at, event_type, action, outcome, rule, reason, actor_principal,
  actor_role, actor_auth, purpose, irb_protocol, run_id, benchmark_id, tier, endpoint_id, export_id, approval_id, address, detail,
  site_id, host, daemon_version, prev_hash, row_hash, mac_key_id, row_mac`;

export interface RecordFilter {
  since?: string;
  until?: string;
  actor?: string;
  type?: string;
  runId?: string;
  outcome?: string;
  rule?: string;
  endpointId?: string;
  exportId?: string;
}

function where(f: RecordFilter, params: unknown[]): string {
  const clauses: string[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    clauses.push(sql.replace('?', `$${params.length}`));
  };
  if (f.since) add('recorded_at >= ?', f.since);
  if (f.until) add('recorded_at < ?', f.until);
  if (f.actor) add('actor_principal = ?', f.actor);
  if (f.type) add('event_type = ?', f.type);
  if (f.runId) add('run_id = ?', f.runId);
  if (f.outcome) add('outcome = ?', f.outcome);
  if (f.rule) add('rule = ?', f.rule);
  if (f.endpointId) add('endpoint_id = ?', f.endpointId);
  if (f.exportId) add('export_id = ?', f.exportId);
  return clauses.length ? clauses.join(' AND ') : 'true';
}

/**
 * Every record matching the filter, in seq order, a page at a time so memory stays flat. The next
 * page is requested while the caller works on the current one.
 */
export async function* streamRecordPages(db: Queryable, filter: RecordFilter = {}, pageSize = 5000): AsyncGenerator<AuditRecord[]> {
  const page = (after: number) => {
    const params: unknown[] = [after];
    const cond = where(filter, params);
    params.push(pageSize);
    return db.query<AuditRecord>(`SELECT ${COLUMNS} FROM audit_events WHERE seq > $1 AND ${cond} ORDER BY seq LIMIT $${params.length}`, params);
  };
  let pending = page(0);
  for (;;) {
    const rows = await pending;
    const full = rows.length === pageSize;
    if (full) pending = page((rows.at(-1) as AuditRecord).seq);
    if (rows.length) yield rows;
    if (!full) return;
  }
}

/**
 * The records with lo <= seq < hi, in seq order, a page at a time (the next page requested while the
 * caller works on the current one): one segment of the parallel verification.
 */
export async function* streamSeqRange(db: Queryable, lo: number, hi: number, pageSize = 5000): AsyncGenerator<AuditRecord[]> {
  const page = (from: number) => db.query<AuditRecord>(`SELECT ${COLUMNS} FROM audit_events WHERE seq >= $1 AND seq < $2 ORDER BY seq LIMIT $3`, [from, hi, pageSize]);
  let pending = page(lo);
  for (;;) {
    const rows = await pending;
    const full = rows.length === pageSize;
    if (full) pending = page((rows.at(-1) as AuditRecord).seq + 1);
    if (rows.length) yield rows;
    if (!full) return;
  }
}

export async function* streamRecords(db: Queryable, filter: RecordFilter = {}, pageSize = 5000): AsyncGenerator<AuditRecord> {
  for await (const rows of streamRecordPages(db, filter, pageSize)) yield* rows;
}

export async function tailRecords(db: Queryable, n: number, filter: RecordFilter = {}): Promise<AuditRecord[]> {
  const params: unknown[] = [];
  const cond = where(filter, params);
  params.push(n);
  const rows = await db.query<AuditRecord>(`SELECT ${COLUMNS} FROM audit_events WHERE ${cond} ORDER BY seq DESC LIMIT $${params.length}`, params);
  return rows.reverse();
}

export async function loadCheckpoints(db: Queryable): Promise<StoredCheckpoint[]> {
  const rows = await db.query<{ checkpoint_id: number; seq: number; head_hash: string; statement: string; signature: string }>(
    'SELECT checkpoint_id, seq, head_hash, statement, signature FROM audit_checkpoints ORDER BY checkpoint_id',
  );
  return rows.map((r) => {
    let statement: CheckpointStatement;
    try {
      statement = JSON.parse(r.statement) as CheckpointStatement;
    } catch {
      statement = { type: 'ehrbench.audit.checkpoint', version: 1, siteId: '', checkpointId: -1, seq: -1, headHash: '', signedAt: '', keyFingerprint: '' };
    }
    return { statement, statementText: r.statement, signature: r.signature, columns: { checkpointId: r.checkpoint_id, seq: r.seq, headHash: r.head_hash } };
  });
}

export function toSignedCheckpoint(c: StoredCheckpoint): SignedCheckpoint {
  return { statement: c.statement, statementText: c.statementText, signature: c.signature };
}
