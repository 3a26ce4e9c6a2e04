/**
 * Putting back rows a restore lost, from an `audit export --format jsonl` taken before (audit/README.md,
 * "On a rollback alarm", step 4). Only what the site's own keys vouch for goes in: the export must
 * verify (chain, row hashes, checkpoint signatures with the site's trusted keys, row MACs when the MAC
 * key is here), it must continue the store's chain exactly at its head, and rows are taken only up to
 * the newest signed checkpoint it holds. Rows and checkpoints go in verbatim, in one transaction that
 * first re-checks the head, so the store is either as before or holds the longer chain.
 */
import type { KeyObject } from 'node:crypto';
import type { Database, Queryable } from '../db';
import { UserError } from '../errors';
import { exportCheckpoints, exportEventPages } from './export-file';
import type { AuditRecord } from './record';
import { RECORD_COLUMNS } from './trail';
import { verifyAudit } from './verify';
import type { SignedCheckpoint } from './checkpoint';

export interface ImportResult {
  /** The first and last seq put back (empty when `rows` is 0). */
  fromSeq: number;
  toSeq: number;
  rows: number;
  checkpoints: number;
}

interface Head {
  seq: number;
  hash: string;
}

async function headOf(q: Queryable, lock: boolean): Promise<Head> {
  const rows = await q.query<{ seq: number | string; row_hash: string }>(`SELECT seq, row_hash FROM audit_head WHERE singleton${lock ? ' FOR UPDATE' : ''}`);
  const row = rows[0];
  if (!row) throw new Error('audit_head row is missing');
  return { seq: Number(row.seq), hash: row.row_hash };
}

/** The export's checkpoints must agree with the store's where both have one; those after the store's newest are taken. */
async function checkpointsToTake(q: Queryable, file: string, exported: SignedCheckpoint[], upTo: number): Promise<SignedCheckpoint[]> {
  const stored = new Map(
    (await q.query<{ checkpoint_id: number | string; statement: string }>('SELECT checkpoint_id, statement FROM audit_checkpoints')).map((r) => [Number(r.checkpoint_id), r.statement]),
  );
  const newest = Math.max(0, ...stored.keys());
  for (const cp of exported) {
    const mine = stored.get(cp.statement.checkpointId);
    if (mine !== undefined && mine !== cp.statementText) {
      throw new UserError('audit.import-conflict', `${file}: checkpoint ${cp.statement.checkpointId} differs from the one the store holds: this export is of another chain; nothing was imported`);
    }
  }
  return exported.filter((cp) => cp.statement.checkpointId > newest && cp.statement.seq <= upTo).sort((a, b) => a.statement.checkpointId - b.statement.checkpointId);
}

/** Verifies the export as `audit verify --export` does; refuses, naming the first finding, unless it is intact. */
async function verifyExport(file: string, checkpoints: SignedCheckpoint[], firstSeq: number | null, keys: { trusted: Map<string, KeyObject>; macKeys?: Map<string, Buffer> }): Promise<void> {
  const report = await verifyAudit({
    records: exportEventPages(file),
    checkpoints,
    witnesses: [],
    trustedKeys: keys.trusted,
    ...(keys.macKeys ? { macKeys: keys.macKeys } : {}),
    partial: (firstSeq ?? 1) !== 1,
    snapshot: true,
  });
  if (report.ok) return;
  const first = report.findings[0];
  throw new UserError(
    'audit.import-invalid',
    `${file}: the export does not verify (${report.findings.length} finding(s)${first ? `, first: ${first.seq === null ? '' : `seq ${first.seq}: `}${first.problem}` : ''}); nothing was imported; "ehrbench audit verify --export ${file} --key ..." lists them`,
  );
}

export async function importExportedRows(db: Database, file: string, keys: { trusted: Map<string, KeyObject>; macKeys?: Map<string, Buffer> }): Promise<ImportResult> {
  const { checkpoints, firstSeq } = await exportCheckpoints(file);
  await verifyExport(file, checkpoints, firstSeq, keys);
  const head = await headOf(db, false);
  const upTo = Math.max(0, ...checkpoints.map((c) => c.statement.seq));
  if (upTo <= head.seq) throw new UserError('audit.import-nothing', `${file}: no signed row after the chain's head (seq ${head.seq}); nothing to import`);
  if (firstSeq === null || firstSeq > head.seq + 1) {
    throw new UserError(
      'audit.import-gap',
      `${file}: the export starts at seq ${firstSeq ?? '-'}, after the chain's head (seq ${head.seq}): export from before that seq (audit export without --since); nothing was imported`,
    );
  }
  const taken = await checkpointsToTake(db, file, checkpoints, upTo);
  return db.transaction(async (tx) => {
    const locked = await headOf(tx, true);
    if (locked.seq !== head.seq || locked.hash !== head.hash)
      throw new UserError('audit.import-conflict', `${file}: the chain's head moved while importing: stop every ehrbench process first; nothing was imported`);
    let rows = 0;
    let last = head;
    for await (const page of exportEventPages(file)) {
      const batch: AuditRecord[] = [];
      for (const r of page) {
        const seq = Number(r.seq);
        if (seq === head.seq && r.row_hash !== head.hash) throw linkBroken(file, seq);
        if (seq <= head.seq || seq > upTo) continue;
        if (seq !== last.seq + 1 || r.prev_hash !== last.hash) throw linkBroken(file, seq);
        batch.push(r);
        last = { seq, hash: r.row_hash };
      }
      if (batch.length) await tx.query(`INSERT INTO audit_events SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${RECORD_COLUMNS})`, [JSON.stringify(batch)]);
      rows += batch.length;
    }
    if (last.seq !== upTo) throw new UserError('audit.import-invalid', `${file}: the export's rows end at seq ${last.seq}, before its checkpoint at seq ${upTo}; nothing was imported`);
    for (const cp of taken) {
      const s = cp.statement;
      await tx.query('INSERT INTO audit_checkpoints (checkpoint_id, seq, head_hash, signed_at, key_fingerprint, statement, signature) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        s.checkpointId,
        s.seq,
        s.headHash,
        s.signedAt,
        s.keyFingerprint,
        cp.statementText,
        cp.signature,
      ]);
    }
    await tx.query('UPDATE audit_head SET seq = $1, row_hash = $2 WHERE singleton', [last.seq, last.hash]);
    return { fromSeq: head.seq + 1, toSeq: last.seq, rows, checkpoints: taken.length };
  });
}

function linkBroken(file: string, seq: number): UserError {
  return new UserError('audit.import-conflict', `${file}: seq ${seq} does not continue the chain the store holds: this export is of another chain; nothing was imported`);
}
