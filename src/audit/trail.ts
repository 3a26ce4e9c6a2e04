/**
 * The audit trail writer. Events are appended in batches (group commit): one short transaction locks
 * the chain head, gives each event the next seq, chains its hash to the previous one, MACs it, inserts
 * the batch and moves the head. Every caller's promise resolves only after that commit, so "record
 * first, then act" holds; if the write fails the promise rejects and the action must not happen.
 * Every `checkpointEvery` events, at the end of every run and at shutdown a signed checkpoint is sealed
 * and appended to the witness histories. Before the first event and before every seal the chain must
 * still hold each witness's newest checkpoint; when it does not (a tail cut, an older backup restored)
 * the trail stops for good in this process: it refuses every event and seal, so nothing more is done.
 * Nor is anything signed over, or chained onto, a row ehrbench did not write: before a checkpoint is
 * signed, every row since the last one is checked (link, hash, MAC), and so are the rows another
 * writer appended whenever the head moved under this process. The database's grants let whoever holds
 * its URL append a well-chained row; only the MAC key, which the database never sees, tells it apart.
 */
import { type KeyObject, randomUUID } from 'node:crypto';
import { validateOrThrow } from '../schema';
import type { Database, Queryable } from '../db';
import { GroupCommit } from '../db';
import { describeError, UserError } from '../errors';
import type { Logger } from '../log';
import { observeAuditBatch, observeAuditEvent, observeAuditFailure } from '../observability';
import type { RuleId } from '../policy';
import { type SignedCheckpoint, signCheckpoint } from './checkpoint';
import type { SigningKey } from './keys';
import { type AuditRecord, GENESIS_HASH, type Provenance, type RecordBody, recordBody, rowHash, rowMac } from './record';
import { recordsBetween, streamChain } from './store';
import type { AuditEventInput, AuditTrail } from './types';
import { appendWitness, type WitnessEntry, witnessedHeads, writeLegacyWitness } from './witness';
import { type WitnessedLoss, witnessedLosses } from './loss';

export class AuditUnavailable extends UserError {
  /** Set when the trail stopped itself (a rollback, a witness it cannot check). */
  readonly rule?: RuleId;

  /** `err` is kept as the cause (never printed) so callers can tell a lost database, which is transient. */
  constructor(what: string, err?: unknown, stop?: { rule: RuleId }) {
    super('audit.unavailable', `the audit trail cannot record events (${what}); the action was not performed`);
    if (err !== undefined) this.cause = err;
    if (stop) this.rule = stop.rule;
  }
}

/** Which signed checkpoint covers an event: enough to find it and check it against the trail. */
export interface CheckpointRef {
  checkpointId: number;
  seq: number;
  headHash: string;
  keyFingerprint: string;
}

/** The keys that let this process record and seal: the current MAC key and the checkpoint signing key. */
export interface RecordingKeys {
  signingKey: SigningKey;
  macKey: { id: string; key: Buffer };
}

export interface AuditLogOptions {
  provenance: Provenance;
  /**
   * The keys to record and seal with; or, for a process that only reads, why they cannot be loaded
   * (a lost keys folder): the trail then refuses every event and seal (audit.keys-missing), and what
   * needs no record (listing runs, verifying the chain) still works.
   */
  keys: RecordingKeys | { missing: string };
  /** Earlier MAC keys by id (after a rotation), for the rows they MACed; the current key is always known. */
  macKeys?: Map<string, Buffer>;
  /** Seal a checkpoint whenever the chain crosses a multiple of this many events. */
  checkpointEvery: number;
  witnessDirs: string[];
  /** Also write the single-checkpoint witness older releases read (config audit.legacyWitness). */
  legacyWitness?: boolean;
  /** Earlier public keys a witnessed checkpoint may be signed with (after a rotation). */
  trustedKeys?: Map<string, KeyObject>;
  logger: Logger;
  clock?: () => Date;
}

/** Rows read at a time when the rows since the last checkpoint are checked. */
const CHECK_PAGE = 2000;

/** The records from seq `from` to `to` in pages, inside the caller's transaction. */
async function* pagesBetween(q: Queryable, from: number, to: number): AsyncGenerator<AuditRecord[]> {
  for (let lo = from; lo <= to; lo += CHECK_PAGE) yield await recordsBetween(q, lo, Math.min(to, lo + CHECK_PAGE - 1));
}

/** The seq the newest checkpoint covers (0 before the first). */
async function lastCheckpointSeq(q: Queryable): Promise<number> {
  const rows = await q.query<{ seq: number | string | null }>('SELECT max(seq) AS seq FROM audit_checkpoints');
  return Number(rows[0]?.seq ?? 0);
}

/** The columns of an audit row, for jsonb_to_recordset (the trail's appends and `audit import`). */
export const RECORD_COLUMNS = `seq bigint, event_id uuid, schema_version smallint, recorded_at text, event_type text, action text, outcome text,
  rule text, reason text, actor_principal text, actor_role text, actor_auth text, purpose text, irb_protocol text, run_id text,
  benchmark_id text, tier text, endpoint_id text, export_id text, approval_id text, address text, detail jsonb, site_id text,
  host text, daemon_version text, prev_hash text, row_hash text, mac_key_id text, row_mac text`;

export class AuditLog implements AuditTrail {
  private readonly writer: GroupCommit<RecordBody, void>;
  private readonly clock: () => Date;
  /** Why the trail stopped itself; once set, every event and seal is refused until a restart. */
  private stopped: AuditUnavailable | undefined;
  /** The chain was checked against the witnesses once in this process (before its first event). */
  private headChecked = false;
  /** The highest seq this process saw committed: the head never moves below it, unless rolled back. */
  private committedSeq = 0;
  /**
   * Rows up to this seq are this process's own (committed) or were checked by it (checkWrittenRows);
   * 0 until its first append, which checks the rows since the last checkpoint.
   */
  private checkedSeq = 0;
  /** The head as this process's last append left it. */
  private lastHead: { seq: number; hash: string } | undefined;
  /**
   * The last locked append found the head where this process had left it: no other writer is
   * appending, so the next batch is chained onto `lastHead` in one statement that moves the head only
   * from exactly there (appendAlone). Cleared as soon as another writer is seen.
   */
  private alone = false;
  /** Keys a witnessed checkpoint may carry: the given ones and always the current signing key. */
  private readonly trusted: Map<string, KeyObject>;
  /** MAC keys a row of this site may carry: the given ones and always the current one. */
  private readonly macKeys: Map<string, Buffer>;

  constructor(
    private readonly db: Database,
    private readonly opts: AuditLogOptions,
  ) {
    this.writer = new GroupCommit((bodies) => this.append(bodies), 500);
    this.clock = opts.clock ?? (() => new Date());
    const keys = opts.keys;
    if ('missing' in keys) {
      this.stopped = new AuditUnavailable(keys.missing, undefined, { rule: 'audit.keys-missing' });
      this.trusted = new Map(opts.trustedKeys ?? []);
      this.macKeys = new Map(opts.macKeys ?? []);
    } else {
      this.trusted = new Map([...(opts.trustedKeys ?? []), [keys.signingKey.fingerprint, keys.signingKey.publicKey]]);
      this.macKeys = new Map([...(opts.macKeys ?? []), [keys.macKey.id, keys.macKey.key]]);
    }
  }

  /** The keys to record and seal with; a trail opened without them was stopped when it was made. */
  private recordingKeys(): RecordingKeys {
    const keys = this.opts.keys;
    if ('missing' in keys) throw this.stopped ?? new AuditUnavailable(keys.missing, undefined, { rule: 'audit.keys-missing' });
    return keys;
  }

  async record(event: AuditEventInput): Promise<void> {
    if (this.stopped) throw this.failed(this.stopped);
    const body = this.bodyOf(event);
    try {
      await this.writer.submit(body);
    } catch (err) {
      throw this.failed(err);
    }
  }

  /**
   * Appends one event inside the caller's transaction, so that the event and the caller's change
   * commit together or not at all (a process killed in between can leave neither half). No
   * checkpoint is sealed here: its witness copy may only be written after a commit; the next
   * checkpoint, or the seal that follows, covers the event.
   */
  async recordIn(tx: Queryable, event: AuditEventInput): Promise<void> {
    if (this.stopped) throw this.failed(this.stopped);
    const body = this.bodyOf(event);
    try {
      await this.appendIn(tx, [body]);
    } catch (err) {
      throw this.failed(err);
    }
  }

  private bodyOf(event: AuditEventInput): RecordBody {
    // A malformed event is a programming error; it must not be recorded half-way or silently.
    validateOrThrow('audit-event.schema.json', event, 'audit event', 'audit.invalid-event');
    observeAuditEvent(event);
    return recordBody(event, randomUUID(), this.clock().toISOString(), this.opts.provenance);
  }

  private failed(err: unknown): AuditUnavailable {
    observeAuditFailure();
    this.opts.logger.error('audit.append-failed', { err });
    return err instanceof AuditUnavailable ? err : new AuditUnavailable(describeError(err).code === 'internal' ? (err as Error).name : describeError(err).code, err);
  }

  async seal(): Promise<void> {
    await this.sealCovering();
  }

  /** Why the trail stopped itself (for health and readiness), or undefined while it records. */
  unavailable(): AuditUnavailable | undefined {
    return this.stopped;
  }

  /**
   * Checks the chain against the witnesses now (the daemon does at start-up, before it records or
   * serves anything) and returns why the trail cannot record, or undefined when it can.
   */
  async checkWitnessedHead(): Promise<AuditUnavailable | undefined> {
    if (this.stopped) return this.stopped;
    try {
      await this.checkWitnessedHeads(this.db);
    } catch (err) {
      // A check that could not be made (the store is away) throws, as any first write would.
      if (!this.stopped) throw err;
    }
    return this.stopped;
  }

  /**
   * The witnessed checkpoints the chain no longer holds (a tail cut or an older backup restored),
   * without stopping the trail: what `audit accept-loss` shows and records before the witness
   * histories are moved aside. Throws when a witness cannot be read or does not verify.
   */
  async witnessedLosses(): Promise<WitnessedLoss[]> {
    return witnessedLosses(this.db, this.opts.witnessDirs, this.trusted);
  }

  /**
   * The chain must still hold each witness's newest checkpoint, row for row. When it does not, it was
   * cut or restored from an older backup after that checkpoint was witnessed, and sealing or adding to
   * it would make the rolled-back chain look whole again: the trail stops instead (fail closed).
   */
  private async checkWitnessedHeads(q: Queryable): Promise<void> {
    let heads: WitnessEntry[];
    try {
      heads = witnessedHeads(this.opts.witnessDirs, this.trusted);
    } catch (err) {
      const what = `witness not checked: ${describeError(err).message}`;
      throw this.stop(new AuditUnavailable(what, err, { rule: 'audit.witness-unchecked' }), {});
    }
    for (const head of heads) {
      const s = head.checkpoint.statement;
      const rows = await q.query<{ row_hash: string }>('SELECT row_hash FROM audit_events WHERE seq = $1', [s.seq]);
      if (rows[0]?.row_hash === s.headHash) continue;
      const what = `rollback detected: ${head.file} witnessed checkpoint ${s.checkpointId} at seq ${s.seq}, which the chain ${rows[0] ? 'holds with another row' : 'no longer holds'}`;
      throw this.stop(new AuditUnavailable(what, undefined, { rule: 'audit.rollback-detected' }), { seq: s.seq, file: head.file });
    }
    this.headChecked = true;
  }

  /**
   * Every row after seq `after` up to `upTo` must be one this site's ehrbench wrote: the next seq,
   * linked to the row before, its hash its own, its MAC made with one of the site's MAC keys. A row
   * that is not stops the trail (as a rollback does): nothing is signed over it or chained onto it.
   */
  private async checkWrittenRows(q: Queryable, after: number, upTo: number, pages?: AsyncIterable<AuditRecord[]>): Promise<void> {
    if (upTo <= after) return;
    const before = after === 0 ? [{ row_hash: GENESIS_HASH }] : await q.query<{ row_hash: string }>('SELECT row_hash FROM audit_events WHERE seq = $1', [after]);
    let prev = before[0]?.row_hash;
    let expected = after + 1;
    for await (const page of pages ?? pagesBetween(q, after + 1, upTo)) {
      for (const r of page) {
        const problem = this.rowProblem(r, expected, prev);
        if (problem) {
          const what = `row at seq ${Number(r.seq)} was not written by ehrbench (${problem}); nothing is sealed over it: run "ehrbench audit verify" and restore the trail`;
          throw this.stop(new AuditUnavailable(what, undefined, { rule: 'audit.unverified-row' }), { seq: Number(r.seq) });
        }
        prev = r.row_hash;
        expected = Number(r.seq) + 1;
      }
    }
    if (expected !== upTo + 1) {
      throw this.stop(new AuditUnavailable(`rows ${expected}..${upTo} are missing below the head; nothing is sealed over them`, undefined, { rule: 'audit.unverified-row' }), { seq: expected });
    }
  }

  /**
   * Before the head is locked, the rows other writers appended since this process last looked are
   * checked without holding it (several workers on one store): under the lock only the few appended
   * in between are left to check.
   */
  private async checkOthersRows(): Promise<void> {
    if (!this.headChecked || this.checkedSeq === 0 || this.stopped) return;
    const rows = await this.db.query<{ seq: number | string }>('SELECT seq FROM audit_head WHERE singleton');
    const head = Number(rows[0]?.seq ?? 0);
    if (head <= this.checkedSeq) return;
    // Read as arrays, a page at a time (streamChain): several writers each read all the others' rows.
    await this.checkWrittenRows(this.db, this.checkedSeq, head, streamChain(this.db, this.checkedSeq + 1, head + 1, CHECK_PAGE));
    this.checkedSeq = head;
  }

  private rowProblem(r: AuditRecord, expected: number, prev: string | undefined): string | undefined {
    if (Number(r.seq) !== expected) return `seq ${expected} expected`;
    if (r.prev_hash !== prev) return 'its prev_hash is not the row before it';
    if (rowHash(r) !== r.row_hash) return 'its hash does not match its fields';
    const key = this.macKeys.get(r.mac_key_id);
    if (!key) return `MAC key ${r.mac_key_id} is not one of this site's`;
    if (rowMac(key, r.row_hash) !== r.row_mac) return 'its MAC is invalid';
    return undefined;
  }

  /** Stops the trail for the rest of this process, and says so once in the log. */
  private stop(reason: AuditUnavailable, fields: { seq?: number; file?: string }): AuditUnavailable {
    if (!this.stopped) {
      this.stopped = reason;
      this.opts.logger.error(reason.rule ?? 'audit.unavailable', { rule: reason.rule, ...fields });
    }
    return this.stopped;
  }

  /**
   * Seals like `seal` and returns the checkpoint that covers every event recorded so far: the new one,
   * or the newest existing one when it already reaches the head. An export names it, so a verifier can
   * tell the release event was in the trail before the bundle was written. Undefined for an empty trail.
   */
  async sealCovering(): Promise<CheckpointRef | undefined> {
    if (this.stopped) throw this.stopped;
    let sealed: { checkpoint?: SignedCheckpoint; ref?: CheckpointRef; seq?: number };
    try {
      sealed = await this.db.transaction(async (tx) => {
        const head = await this.lockHead(tx);
        if (head.seq === 0) return {};
        await this.checkWitnessedHeads(tx);
        const last = await tx.query<{ checkpoint_id: number; seq: number; head_hash: string; key_fingerprint: string }>(
          'SELECT checkpoint_id, seq, head_hash, key_fingerprint FROM audit_checkpoints ORDER BY checkpoint_id DESC LIMIT 1',
        );
        const newest = last[0];
        if (newest && Number(newest.seq) >= Number(head.seq)) {
          // Another writer (a worker on another host) already sealed past our events: that checkpoint
          // is the one covering them, and our witnesses must hold it, or they lag behind our events.
          const checkpoint = await this.storedCheckpoint(tx, Number(newest.checkpoint_id));
          return {
            checkpoint,
            ref: { checkpointId: Number(newest.checkpoint_id), seq: Number(newest.seq), headHash: newest.head_hash, keyFingerprint: newest.key_fingerprint },
            seq: Number(head.seq),
          };
        }
        const checkpoint = await this.insertCheckpoint(tx, head.seq, head.row_hash);
        const s = checkpoint.statement;
        return { checkpoint, ref: { checkpointId: s.checkpointId, seq: s.seq, headHash: s.headHash, keyFingerprint: s.keyFingerprint }, seq: Number(head.seq) };
      });
    } catch (err) {
      if (err instanceof AuditUnavailable) throw err;
      throw new AuditUnavailable(`checkpoint: ${describeError(err).code === 'internal' ? (err as Error).name : describeError(err).code}`, err);
    }
    this.committed(sealed.seq ?? 0);
    if (sealed.checkpoint) this.witness(sealed.checkpoint);
    return sealed.ref;
  }

  /** A checkpoint as stored (statement text and signature), to copy it to this process's witnesses. */
  private async storedCheckpoint(tx: Queryable, checkpointId: number): Promise<SignedCheckpoint> {
    const rows = await tx.query<{ statement: string; signature: string }>('SELECT statement, signature FROM audit_checkpoints WHERE checkpoint_id = $1', [checkpointId]);
    const row = rows[0];
    if (!row) throw new Error('audit checkpoint vanished while locked');
    return { statement: JSON.parse(row.statement) as SignedCheckpoint['statement'], statementText: row.statement, signature: row.signature };
  }

  private async lockHead(tx: Queryable): Promise<{ seq: number; row_hash: string }> {
    const rows = await tx.query<{ seq: number; row_hash: string }>('SELECT seq, row_hash FROM audit_head WHERE singleton FOR UPDATE');
    const head = rows[0];
    if (!head) throw new Error('audit_head row is missing');
    const seen = Math.max(this.committedSeq, this.checkedSeq);
    if (Number(head.seq) < seen) {
      // Between two checkpoints no witness knows the newest events; this process does, while it runs.
      const what = `rollback detected: the chain head is at seq ${head.seq}, but this process saw it committed up to seq ${seen}`;
      throw this.stop(new AuditUnavailable(what, undefined, { rule: 'audit.rollback-detected' }), { seq: seen });
    }
    return head;
  }

  private committed(seq: number): void {
    this.committedSeq = Math.max(this.committedSeq, seq);
  }

  private async append(bodies: RecordBody[]): Promise<void[]> {
    const { checkpointEvery } = this.opts;
    if (await this.appendAlone(bodies)) {
      observeAuditBatch(bodies.length, bodies[0]?.recorded_at, this.clock());
      return bodies.map(() => undefined);
    }
    const before = this.lastHead;
    await this.checkOthersRows();
    const { checkpoint, to, headHash, found } = await this.db.transaction(async (tx) => {
      const { from, to, headHash } = await this.appendIn(tx, bodies);
      const found = before !== undefined && from === before.seq;
      const crossed = Math.floor(to / checkpointEvery) > Math.floor(from / checkpointEvery);
      if (!crossed) return { to, headHash, found };
      await this.checkWitnessedHeads(tx);
      return { checkpoint: await this.insertCheckpoint(tx, to, headHash), to, headHash, found };
    });
    this.committed(to);
    this.checkedSeq = Math.max(this.checkedSeq, to);
    // The head was where this process had left it: no other writer is appending, so the next batch
    // may take the one-statement way. Otherwise (several daemons or workers on one store) it keeps
    // locking the head first, and no batch pays for an attempt that would fail.
    this.lastHead = { seq: to, hash: headHash };
    this.alone = found;
    observeAuditBatch(bodies.length, bodies[0]?.recorded_at, this.clock());
    if (checkpoint) this.witness(checkpoint);
    return bodies.map(() => undefined);
  }

  /**
   * The batch chained onto the head this process last committed, in one statement: the head moves
   * (and the rows are inserted) only if it is still exactly there, seq and hash, which the UPDATE
   * checks under the head's row lock; otherwise nothing is written and the batch takes the locked
   * way (append). The same rows as appendIn would write from that head, the same atomicity: one
   * statement commits or fails whole. Not taken before this process checked the witnesses, when
   * another writer moved the head, or when the batch crosses a checkpoint (sealed in the locked way).
   */
  private async appendAlone(bodies: RecordBody[]): Promise<boolean> {
    const head = this.lastHead;
    if (!this.alone || !head || !this.headChecked || this.stopped) return false;
    const every = this.opts.checkpointEvery;
    if (Math.floor((head.seq + bodies.length) / every) > Math.floor(head.seq / every)) return false;
    const { rows, seq, hash } = this.chain(bodies, head.seq, head.hash);
    // A statement that fails leaves the head unknown here: the next batch locks it and looks.
    this.alone = false;
    const moved = await this.db.query<{ n: number }>(
      `WITH moved AS (UPDATE audit_head SET seq = $2, row_hash = $3 WHERE singleton AND seq = $4 AND row_hash = $5 RETURNING 1),
            written AS (INSERT INTO audit_events SELECT x.* FROM jsonb_to_recordset($1::jsonb) AS x(${RECORD_COLUMNS}) WHERE EXISTS (SELECT 1 FROM moved) RETURNING 1)
       SELECT count(*)::integer AS n FROM written`,
      [JSON.stringify(rows), seq, hash, head.seq, head.hash],
    );
    // Another writer moved the head (nothing was written): the locked way, which also checks it.
    if (moved[0]?.n !== bodies.length) return false;
    this.committed(seq);
    this.checkedSeq = Math.max(this.checkedSeq, seq);
    this.lastHead = { seq, hash };
    this.alone = true;
    return true;
  }

  /** The records of `bodies` chained after (seq, hash), hashed and MACed; and the new head. */
  private chain(bodies: RecordBody[], fromSeq: number, fromHash: string): { rows: AuditRecord[]; seq: number; hash: string } {
    const { macKey } = this.recordingKeys();
    let seq = fromSeq;
    let prev = fromHash;
    const rows: AuditRecord[] = bodies.map((body) => {
      seq += 1;
      const unsigned = { ...body, seq, prev_hash: prev };
      const hash = rowHash(unsigned);
      prev = hash;
      return { ...unsigned, row_hash: hash, mac_key_id: macKey.id, row_mac: rowMac(macKey.key, hash) };
    });
    return { rows, seq, hash: prev };
  }

  /** Chains `bodies` onto the locked head in `tx`; returns the head's seq before and after. */
  private async appendIn(tx: Queryable, bodies: RecordBody[]): Promise<{ from: number; to: number; headHash: string }> {
    const head = await this.lockHead(tx);
    if (!this.headChecked) await this.checkWitnessedHeads(tx);
    // The head moved under this process (or this is its first append): the rows since are checked
    // before anything is chained onto them.
    const known = this.checkedSeq > 0 ? this.checkedSeq : await lastCheckpointSeq(tx);
    await this.checkWrittenRows(tx, known, Number(head.seq));
    // Committed by others before this lock: checked whether this transaction commits or not.
    this.checkedSeq = Math.max(this.checkedSeq, Number(head.seq));
    const { rows, seq, hash: prev } = this.chain(bodies, head.seq, head.row_hash);
    await tx.query(`INSERT INTO audit_events SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(${RECORD_COLUMNS})`, [JSON.stringify(rows)]);
    await tx.query('UPDATE audit_head SET seq = $1, row_hash = $2 WHERE singleton', [seq, prev]);
    return { from: head.seq, to: seq, headHash: prev };
  }

  private async insertCheckpoint(tx: Queryable, seq: number, headHash: string): Promise<SignedCheckpoint> {
    // A signature says "ehrbench wrote every row up to here": checked, not assumed, since the last one
    // (rows this process wrote and committed, or checked already, are not read again).
    await this.checkWrittenRows(tx, Math.max(await lastCheckpointSeq(tx), this.checkedSeq), Number(seq));
    const ids = await tx.query<{ next: number }>('SELECT COALESCE(max(checkpoint_id), 0) + 1 AS next FROM audit_checkpoints');
    const cp = signCheckpoint(this.recordingKeys().signingKey, {
      siteId: this.opts.provenance.siteId,
      checkpointId: Number(ids[0]?.next ?? 1),
      seq,
      headHash,
      signedAt: this.clock().toISOString(),
    });
    await tx.query('INSERT INTO audit_checkpoints (checkpoint_id, seq, head_hash, signed_at, key_fingerprint, statement, signature) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      cp.statement.checkpointId,
      seq,
      headHash,
      cp.statement.signedAt,
      cp.statement.keyFingerprint,
      cp.statementText,
      cp.signature,
    ]);
    return cp;
  }

  /** The copy outside the database. Failing to write it is failing to record: fail closed. */
  private witness(cp: SignedCheckpoint): void {
    try {
      appendWitness(this.opts.witnessDirs, cp);
      if (this.opts.legacyWitness) writeLegacyWitness(this.opts.witnessDirs, cp);
    } catch (err) {
      throw new AuditUnavailable(`witness file: ${(err as NodeJS.ErrnoException).code ?? describeError(err).code}`, err);
    }
  }
}
