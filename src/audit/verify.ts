/**
 * Verification of the audit trail, for a compliance officer. Works on any source of records and
 * checkpoints (the database, or an export read offline) and reports every finding with the seq it
 * concerns. What it proves, and with which key:
 *   - every row's hash matches its fields, and chains to the previous row (modified, swapped, inserted
 *     or deleted rows, seq gaps)                                             no key needed
 *   - every row's MAC matches (a row forged after the last checkpoint)      the MAC key (on the host)
 *   - every checkpoint is signed by a trusted key, checkpoints only move forward, and each matches
 *     the chain at its seq                                                  the public key
 *   - every checkpoint of the witness histories outside the database agrees with the chain and with
 *     the database's checkpoint of the same id (tail cut off, an older backup restored and sealed
 *     again, older checkpoint replayed as the newest)                       the public key
 *   - every configured witness could be read (a missing one hides a rollback)
 */
import type { KeyObject } from 'node:crypto';
import { checkSignature, type SignedCheckpoint } from './checkpoint';
import { type AuditRecord, GENESIS_HASH, rowHash, rowMac } from './record';
import { type ParallelChain, verifySegments } from './verify-parallel';

export interface Finding {
  seq: number | null;
  problem: string;
}

export interface VerifyReport {
  ok: boolean;
  events: number;
  firstSeq: number | null;
  headSeq: number | null;
  checkpoints: number;
  lastCheckpointSeq: number | null;
  macChecked: boolean;
  witnesses: number;
  findings: Finding[];
  warnings: Finding[];
}

/** A checkpoint as found in the database: the signed statement and the columns stored beside it. */
export interface StoredCheckpoint extends SignedCheckpoint {
  columns?: { checkpointId: number; seq: number; headHash: string };
}

/** How far out of order two processes' rows may be before the verifier calls it a clock set back. */
const CLOCK_TOLERANCE_MS = 1000;

export interface VerifyInput {
  /** The chain in seq order, a page of records at a time. */
  records?: AsyncIterable<AuditRecord[]>;
  /**
   * Instead of `records`: the chain of a PostgreSQL store, read and verified in segments by worker
   * threads (each row's hash, MAC and link within its segment there; the links between segments and
   * everything else here). The same findings, in the same order, as `records` over the same rows.
   */
  parallel?: ParallelChain;
  checkpoints: StoredCheckpoint[];
  /** Every checkpoint of every witness history; `file` groups them (default: `source`). */
  witnesses: { source: string; file?: string; checkpoint: SignedCheckpoint }[];
  /** Witnesses that could not be used: findings, except unreadable ones when `allowMissingWitness`. */
  witnessProblems?: { problem: string; unreadable: boolean }[];
  /** What the witnesses' reading noticed that is not a problem (a folder with only the older format): warnings. */
  witnessNotes?: string[];
  /** The operator said to verify without the witnesses that cannot be read (--allow-missing-witness). */
  allowMissingWitness?: boolean;
  trustedKeys: Map<string, KeyObject>;
  macKeys?: Map<string, Buffer>;
  /** A partial export starts mid-chain: its first prev_hash cannot be checked. */
  partial?: boolean;
  /**
   * The chain is an export (a copy taken at one moment), not the store: a witness copied later holds
   * checkpoints newer than the copy. Those are said as such (a warning), not as checkpoints removed.
   */
  snapshot?: boolean;
  /** Stop listing findings after this many (the count is still reported). */
  maxFindings?: number;
}

export async function verifyAudit(input: VerifyInput): Promise<VerifyReport> {
  const findings: Finding[] = [];
  const warnings: Finding[] = [];
  const max = input.maxFindings ?? 1000;
  let dropped = 0;
  const find = (seq: number | null, problem: string) => {
    if (findings.length < max) findings.push({ seq, problem });
    else dropped += 1;
  };

  // Checkpoints: signed by a trusted key, strictly increasing, and (below) consistent with the chain.
  const wanted = new Map<number, SignedCheckpoint[]>();
  const expect = (cp: SignedCheckpoint) => wanted.set(cp.statement.seq, [...(wanted.get(cp.statement.seq) ?? []), cp]);
  let previous: SignedCheckpoint | undefined;
  let signedUpTo = 0;
  for (const cp of input.checkpoints) {
    const s = cp.statement;
    const bad = checkSignature(cp, input.trustedKeys);
    if (bad) find(s.seq, `checkpoint ${s.checkpointId}: ${bad}`);
    else signedUpTo = Math.max(signedUpTo, s.seq);
    const c = cp.columns;
    if (c && (c.checkpointId !== s.checkpointId || c.seq !== s.seq || c.headHash !== s.headHash)) {
      find(c.seq, `checkpoint row ${c.checkpointId} differs from the statement it carries (signed checkpoint ${s.checkpointId}, seq ${s.seq}): copied or edited`);
    }
    if (previous) {
      const p = previous.statement;
      if (s.checkpointId <= p.checkpointId || s.seq < p.seq || s.signedAt < p.signedAt) {
        find(s.seq, `checkpoint ${s.checkpointId} (seq ${s.seq}, ${s.signedAt}) does not move forward from checkpoint ${p.checkpointId} (seq ${p.seq}, ${p.signedAt}): replayed or reordered`);
      }
    }
    previous = cp;
    expect(cp);
  }
  const signed: VerifyInput['witnesses'] = [];
  const lastDb = input.checkpoints.at(-1)?.statement;
  // In a snapshot, the witness checkpoints sealed after its newest one (they may still cover its rows).
  const later = new Set<SignedCheckpoint>();
  for (const w of input.witnesses) {
    const bad = checkSignature(w.checkpoint, input.trustedKeys);
    if (bad) find(w.checkpoint.statement.seq, `witness ${w.source}: ${bad}`);
    else {
      expect(w.checkpoint);
      signed.push(w);
      signedUpTo = Math.max(signedUpTo, w.checkpoint.statement.seq);
      if (input.snapshot && (!lastDb || w.checkpoint.statement.checkpointId > lastDb.checkpointId)) later.add(w.checkpoint);
    }
  }
  for (const f of witnessConflicts(signed, input.checkpoints)) find(f.seq, f.problem);
  for (const problem of input.witnessNotes ?? []) warnings.push({ seq: null, problem });
  for (const f of witnessProblems(input)) {
    if (f.warning) warnings.push({ seq: null, problem: f.problem });
    else find(null, f.problem);
  }

  // The chain itself, in seq order: streamed here, or in segments verified by worker threads.
  const chain: ChainState = { expectedSeq: null, prevHash: null };
  const checks: RowChecks = { wanted, signedUpTo, ...(input.macKeys ? { macKeys: input.macKeys } : {}) };
  const unheld = noUnheldMacRows();
  let events = 0;
  let firstSeq: number | null = null;
  // The latest time stamped so far; processes sharing the trail stamp with their own clocks before the
  // store orders their rows, so only a step back of CLOCK_TOLERANCE_MS or more is a clock set back.
  let latestMs = -Infinity;
  const stamped = (seq: number, recordedAt: string) => {
    const at = Date.parse(recordedAt);
    if (latestMs - at >= CLOCK_TOLERANCE_MS) {
      warnings.push({ seq, problem: `recorded_at ${recordedAt} is ${((latestMs - at) / 1000).toFixed(1)} s earlier than a row before (clock moved back)` });
      // Said once per step back, not again for every row after it.
      latestMs = at;
    } else if (at > latestMs) latestMs = at;
  };
  /** The first row of the whole chain: where it starts, and what its prev_hash must be. */
  const start = (seq: number, prev: string) => {
    firstSeq = seq;
    chain.expectedSeq = seq;
    if (!input.partial && seq > 1) find(seq, `chain starts at seq ${seq}: seq 1..${seq - 1} missing`);
    // seq is positive in the table (a CHECK): a row before seq 1 was put there by someone who removed the check.
    if (seq < 1) find(seq, `chain starts at seq ${seq}, before seq 1: row inserted`);
    chain.prevHash = input.partial && seq !== 1 ? prev : GENESIS_HASH;
  };
  // Seqs a checkpoint or witness points at that were found in the chain (not every seq: memory stays flat).
  const found = new Set<number>();
  if (input.parallel) {
    for await (const segment of verifySegments(input.parallel, checks, max)) {
      if (!segment.first || !segment.last) continue;
      if (firstSeq === null) start(segment.first.seq, segment.first.prev_hash);
      // The link between this segment and the one before: the checks its first row missed in the worker.
      checkLink(segment.first, chain, find);
      for (const f of segment.findings) find(f.seq, f.problem);
      dropped += segment.dropped;
      addUnheld(unheld, segment.unheld);
      for (const seq of segment.found) found.add(seq);
      segment.seqs.forEach((seq, i) => stamped(seq, segment.stamps[i] as string));
      events += segment.seqs.length;
      chain.expectedSeq = segment.last.seq + 1;
      chain.prevHash = segment.last.row_hash;
    }
  } else {
    for await (const page of input.records ?? [])
      for (const r of page) {
        events += 1;
        if (firstSeq === null) start(r.seq, r.prev_hash);
        checkRow(r, chain, checks, find, found, unheld);
        stamped(r.seq, r.recorded_at);
      }
  }
  const expectedSeq = chain.expectedSeq;
  const headSeq = expectedSeq === null ? null : expectedSeq - 1;

  // Checkpoints and witnesses pointing beyond the chain, or at rows that are gone.
  for (const [seq, cps] of wanted) {
    if (found.has(seq)) continue;
    if (firstSeq !== null && seq < firstSeq && input.partial) continue;
    const what = cps.map((c) => `checkpoint ${c.statement.checkpointId}`).join(', ');
    const beyond = headSeq === null || seq > headSeq;
    if (beyond && cps.every((c) => later.has(c))) continue; // said below, as a witness newer than the export
    if (beyond) find(seq, `${what} covers seq ${seq} but the chain ends at seq ${headSeq ?? 0}: tail truncated`);
    else find(seq, `${what} covers seq ${seq}, which is missing from the chain`);
  }
  // A witness newer than every checkpoint in the database means newer checkpoints were removed; newer
  // than an export, that the witness was copied after the export was taken (or the export's tail cut).
  for (const w of input.witnesses) {
    const s = w.checkpoint.statement;
    if (later.has(w.checkpoint)) {
      const newest = lastDb ? `checkpoint ${lastDb.checkpointId} (seq ${lastDb.seq})` : 'no checkpoint';
      warnings.push({
        seq: s.seq,
        problem: `witness ${w.source} holds checkpoint ${s.checkpointId} (seq ${s.seq}), newer than this export (its newest is ${newest}, its chain ends at seq ${headSeq ?? 0}): the witness was copied after the export was taken, or the export's tail was cut; verify the site's store for what came after`,
      });
    } else if (!lastDb || s.checkpointId > lastDb.checkpointId) {
      find(
        s.seq,
        `witness ${w.source} holds checkpoint ${s.checkpointId} (seq ${s.seq}) but the database's newest is ${lastDb ? `${lastDb.checkpointId} (seq ${lastDb.seq})` : 'none'}: checkpoints removed or an older one replayed`,
      );
    }
  }
  if (!input.macKeys && headSeq !== null && (lastDb?.seq ?? 0) < headSeq) {
    warnings.push({ seq: headSeq, problem: `seq ${(lastDb?.seq ?? 0) + 1}..${headSeq} are not yet covered by a checkpoint and no MAC key is available here to check them` });
  }
  if (unheld.rows > 0) {
    warnings.push({
      seq: null,
      problem: `${unheld.rows} rows (seq ${unheld.first}..${unheld.last}) carry MAC key${unheld.keys.length === 1 ? '' : 's'} ${unheld.keys.join(', ')}, not held here (lost, or kept on another host): their MACs are not checked; signed checkpoints prove them through the hash chain`,
    });
  }
  if (dropped > 0) findings.push({ seq: null, problem: `${dropped} further findings not listed` });

  return {
    ok: findings.length === 0,
    events,
    firstSeq,
    headSeq,
    checkpoints: input.checkpoints.length,
    lastCheckpointSeq: lastDb?.seq ?? null,
    macChecked: Boolean(input.macKeys),
    witnesses: new Set(input.witnesses.map((w) => w.file ?? w.source)).size,
    findings,
    warnings,
  };
}

/** Where the chain walk stands: the seq and prev_hash the next row must have (null: not known yet). */
export interface ChainState {
  expectedSeq: number | null;
  prevHash: string | null;
}

/** What every row is checked against: the MAC keys, and the checkpoints (and witnesses) by the seq they cover. */
export interface RowChecks {
  macKeys?: Map<string, Buffer>;
  /**
   * The highest seq a checkpoint with a valid signature covers (0: none). A row up to it whose MAC key
   * is not held here (lost with a keys folder, or kept by another host) is proven by that signature
   * through the hash chain, which the checks below still make: it is counted, not a finding.
   */
  signedUpTo: number;
  wanted: Map<number, { statement: { checkpointId: number; headHash: string } }[]>;
}

/** A row's place in the chain: its seq follows the one before, and its prev_hash is that row's hash. */
export function checkLink(r: Pick<AuditRecord, 'seq' | 'prev_hash'>, chain: ChainState, find: (seq: number | null, problem: string) => void): void {
  const expectedSeq = chain.expectedSeq;
  if (expectedSeq !== null && r.seq !== expectedSeq) {
    if (r.seq > expectedSeq) find(r.seq, `seq ${expectedSeq}..${r.seq - 1} missing (rows deleted)`);
    else find(r.seq, `seq ${r.seq} out of order or duplicated after seq ${expectedSeq - 1}`);
  }
  if (chain.prevHash !== null && r.prev_hash !== chain.prevHash) find(r.seq, `prev_hash does not match the row before it (row deleted, inserted or moved)`);
}

/** Rows under a signed checkpoint whose MAC key is not held here: how many, where, which keys. */
export interface UnheldMacRows {
  rows: number;
  first: number | null;
  last: number | null;
  keys: string[];
}

export function noUnheldMacRows(): UnheldMacRows {
  return { rows: 0, first: null, last: null, keys: [] };
}

function countUnheld(u: UnheldMacRows, seq: number, keyId: string): void {
  u.rows += 1;
  u.first ??= seq;
  u.last = seq;
  if (!u.keys.includes(keyId)) u.keys.push(keyId);
}

/** Adds a later segment's count (segments arrive in seq order). */
function addUnheld(into: UnheldMacRows, later: UnheldMacRows): void {
  if (later.rows === 0) return;
  into.rows += later.rows;
  into.first ??= later.first;
  into.last = later.last;
  for (const k of later.keys) if (!into.keys.includes(k)) into.keys.push(k);
}

/**
 * Every check of one row, in this order: its link to the row before (unless that row is not known
 * here: the first row of a segment), its hash, its MAC, the checkpoints at its seq. Moves `chain` on.
 */
export function checkRow(r: AuditRecord, chain: ChainState, checks: RowChecks, find: (seq: number | null, problem: string) => void, found: Set<number>, unheld: UnheldMacRows): void {
  checkLink(r, chain, find);
  const hash = rowHash(r);
  if (hash !== r.row_hash) find(r.seq, `row_hash mismatch: a field of this row was changed`);
  if (checks.macKeys) {
    const key = checks.macKeys.get(r.mac_key_id);
    if (!key && r.seq <= checks.signedUpTo) countUnheld(unheld, r.seq, r.mac_key_id);
    else if (!key) find(r.seq, `MAC key ${r.mac_key_id} unknown`);
    else if (rowMac(key, r.row_hash) !== r.row_mac) find(r.seq, `row MAC invalid: row forged or altered by someone without the MAC key`);
  }
  const covering = checks.wanted.get(r.seq);
  if (covering) {
    found.add(r.seq);
    for (const cp of covering) {
      if (cp.statement.headHash !== r.row_hash) find(r.seq, `checkpoint ${cp.statement.checkpointId} signed head hash differs from the chain at seq ${r.seq}`);
    }
  }
  chain.prevHash = r.row_hash;
  chain.expectedSeq = r.seq + 1;
}

/**
 * A checkpoint id names one statement. A signed witnessed checkpoint that differs from the database's of the
 * same id, or from another witness's, means checkpoints were signed again over a rolled-back chain.
 */
function witnessConflicts(witnesses: VerifyInput['witnesses'], checkpoints: StoredCheckpoint[]): Finding[] {
  const findings: Finding[] = [];
  const inDb = new Map(checkpoints.map((c) => [c.statement.checkpointId, c]));
  const seen = new Map<number, { source: string; checkpoint: SignedCheckpoint }>();
  for (const w of witnesses) {
    const s = w.checkpoint.statement;
    const db = inDb.get(s.checkpointId);
    if (db && db.statementText !== w.checkpoint.statementText) {
      findings.push({
        seq: s.seq,
        problem: `witness ${w.source} holds checkpoint ${s.checkpointId} (seq ${s.seq}), but the database's checkpoint ${s.checkpointId} is another statement (seq ${db.statement.seq}): the chain was rolled back and sealed again`,
      });
    }
    const other = seen.get(s.checkpointId);
    if (other && other.checkpoint.statementText !== w.checkpoint.statementText) {
      findings.push({ seq: s.seq, problem: `witnesses ${other.source} and ${w.source} hold different statements for checkpoint ${s.checkpointId}: signed twice, after a rollback` });
    }
    seen.set(s.checkpointId, w);
  }
  return findings;
}

/**
 * A witness that cannot be read hides a rollback: a finding, unless the operator allowed it, or
 * nothing was sealed yet (a new site: no checkpoint could have been witnessed). Invalid content is
 * always a finding.
 */
function witnessProblems(input: VerifyInput): { problem: string; warning: boolean }[] {
  const nothingSealed = input.checkpoints.length === 0;
  return (input.witnessProblems ?? []).map((p) => ({ problem: p.problem, warning: p.unreadable && (input.allowMissingWitness === true || nothingSealed) }));
}
