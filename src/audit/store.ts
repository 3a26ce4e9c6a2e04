/** Reading the audit trail from the database: streamed in seq order, searched, tailed. */
import type { Database, Queryable } from '../db';
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
  /** Only records before this seq (a page further back, newest first). */
  beforeSeq?: number;
  /** Only records after this seq (the next page, oldest first). */
  afterSeq?: number;
  /** Leave out these event types (the model calls that outnumber everything else, say). */
  excludeTypes?: string[];
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
  if (f.beforeSeq !== undefined) add('seq < ?', f.beforeSeq);
  if (f.afterSeq !== undefined) add('seq > ?', f.afterSeq);
  // One text parameter (event types hold no comma): the same on PostgreSQL and PGlite.
  if (f.excludeTypes?.length) add("event_type <> ALL(string_to_array(?::text, ','))", f.excludeTypes.join(','));
  return clauses.length ? clauses.join(' AND ') : 'true';
}

/**
 * Pages of `pageSize` records in seq order from `page(from)` (the rows from seq `from` on; undefined:
 * from the first), starting at `first`: memory stays flat, and the next page is requested while the
 * caller works on the current one.
 */
async function* prefetched(page: (from: number | undefined) => Promise<AuditRecord[]>, first: number | undefined, pageSize: number): AsyncGenerator<AuditRecord[]> {
  let pending = page(first);
  for (;;) {
    const rows = await pending;
    const full = rows.length === pageSize;
    if (full) pending = page((rows.at(-1) as AuditRecord).seq + 1);
    if (rows.length) yield rows;
    if (!full) return;
  }
}

/** Every record matching the filter, in seq order, a page at a time. */
export function streamRecordPages(db: Queryable, filter: RecordFilter = {}, pageSize = 5000): AsyncGenerator<AuditRecord[]> {
  const page = (from: number | undefined) => {
    const params: unknown[] = [from];
    const cond = where(filter, params);
    params.push(pageSize);
    return db.query<AuditRecord>(`SELECT ${COLUMNS} FROM audit_events WHERE seq >= $1 AND ${cond} ORDER BY seq LIMIT $${params.length}`, params);
  };
  return prefetched(page, 1, pageSize);
}

/** One row of audit_events as `queryArrays` returns it, in the order of COLUMNS. */
type RecordColumns = [
  number,
  string,
  number,
  string,
  string,
  AuditRecord['action'],
  AuditRecord['outcome'],
  string | null,
  string | null,
  string,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
  AuditRecord['detail'],
  string,
  string,
  string,
  string,
  string,
  string,
  string,
];

/** A record from its columns: one object of a fixed shape, built once (not key by key, as the driver does). */
function recordOf(c: RecordColumns): AuditRecord {
  return {
    seq: c[0],
    event_id: c[1],
    schema_version: c[2],
    recorded_at: c[3],
    event_type: c[4],
    action: c[5],
    outcome: c[6],
    rule: c[7],
    reason: c[8],
    actor_principal: c[9],
    actor_role: c[10],
    actor_auth: c[11],
    purpose: c[12],
    irb_protocol: c[13],
    run_id: c[14],
    benchmark_id: c[15],
    tier: c[16],
    endpoint_id: c[17],
    export_id: c[18],
    approval_id: c[19],
    address: c[20],
    detail: c[21],
    site_id: c[22],
    host: c[23],
    daemon_version: c[24],
    prev_hash: c[25],
    row_hash: c[26],
    mac_key_id: c[27],
    row_mac: c[28],
  };
}

/**
 * The chain for verification: every record with lo <= seq < hi (without bounds: every record there
 * is), in seq order, a page at a time. Rows are read as arrays (queryArrays): a verification reads
 * every column of every row.
 */
export function streamChain(db: Database, lo?: number, hi?: number, pageSize = 5000): AsyncGenerator<AuditRecord[]> {
  const page = async (from: number | undefined) => {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (from !== undefined) clauses.push(`seq >= $${params.push(from)}`);
    if (hi !== undefined) clauses.push(`seq < $${params.push(hi)}`);
    const cond = clauses.length ? clauses.join(' AND ') : 'true';
    const rows = await db.queryArrays<RecordColumns>(`SELECT ${COLUMNS} FROM audit_events WHERE ${cond} ORDER BY seq LIMIT $${params.push(pageSize)}`, params);
    return rows.map(recordOf);
  };
  return prefetched(page, lo, pageSize);
}

/** The records with `from` <= seq <= `to`, in seq order (inside the caller's transaction). */
export function recordsBetween(q: Queryable, from: number, to: number): Promise<AuditRecord[]> {
  return q.query<AuditRecord>(`SELECT ${COLUMNS} FROM audit_events WHERE seq >= $1 AND seq <= $2 ORDER BY seq`, [from, to]);
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

/**
 * The seq of the latest successful event of a type whose detail holds `key` = `value` (the rating
 * study an event closed, say), or undefined: what an evidence packet cites a figure by.
 */
export async function latestSeqWithDetail(db: Queryable, type: string, key: string, value: string): Promise<number | undefined> {
  const [row] = await db.query<{ seq: number }>(`SELECT seq FROM audit_events WHERE event_type = $1 AND outcome = 'success' AND detail->>$2 = $3 ORDER BY seq DESC LIMIT 1`, [type, key, value]);
  return row ? Number(row.seq) : undefined;
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
