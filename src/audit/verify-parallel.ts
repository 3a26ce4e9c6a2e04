/**
 * The chain of a PostgreSQL store verified in segments by worker threads (verify-worker.ts), for
 * `verifyAudit({ parallel })`. The seq range of the chain (read once, at the start) is cut into
 * segments; each worker reads its segments over its own connection and checks every row of them
 * exactly as the sequential walk does (checkRow: hash, MAC, checkpoints, and the link to the row
 * before within the segment). The caller stitches the segments in seq order and checks the link
 * between each segment and the one before it, so that every link of the chain is still checked once;
 * the findings come out the same, in the same order, as a sequential walk over the same rows. It
 * stitches them as they come, and the workers run only a few segments ahead of it: memory stays flat
 * in the chain's length (it held every segment's result until the last was done).
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Database, Queryable } from '../db';
import { UserError } from '../errors';
import { PACKAGE_ROOT } from '../paths';
import type { AuditRecord } from './record';
import { streamChain } from './store';
import type { Finding, RowChecks, UnheldMacRows } from './verify';

export interface ParallelChain {
  /** The store: its first and last seq are read here. */
  db: Queryable;
  /** Its PostgreSQL URL, for the workers' own connections (never logged or reported). */
  url: string;
  /** Worker threads (default: the cores, at most 4). */
  workers?: number;
  /**
   * Seqs per segment (default 2,000). Small, so that no thread is left with a long last segment while
   * the others idle: on 2 cores, segments of 2,000 verified 100,000 events at 43-46k/s, of 20,000 at 35k/s.
   */
  segmentSize?: number;
}

/** What a worker found in one segment [lo, hi) of seqs. */
export interface SegmentResult {
  /** The segment's first row (its link to the segment before is checked by the caller), if any. */
  first: { seq: number; prev_hash: string } | null;
  last: { seq: number; row_hash: string } | null;
  /** In seq order, at most the report's maximum; `dropped` counts the rest. */
  findings: Finding[];
  dropped: number;
  /** Checkpointed seqs found in the segment. */
  found: number[];
  /** Every row's seq and recorded_at, in order, for the clock check (which spans segments). */
  seqs: number[];
  stamps: string[];
  /** Rows under a signed checkpoint whose MAC key is not held here. */
  unheld: UnheldMacRows;
}

export interface SegmentRequest {
  index: number;
  lo: number;
  hi: number;
}

export type SegmentReply = { index: number; result: SegmentResult } | { index: number; error: string };

export interface WorkerSetup {
  url: string;
  checks: RowChecks;
  max: number;
  pageSize: number;
}

/** Compiled: beside this file. Under jest (src/*.ts): the built copy in dist/. */
function workerScript(): string {
  const here = join(__dirname, 'verify-worker.js');
  if (existsSync(here)) return here;
  const built = join(PACKAGE_ROOT, 'dist', 'audit', 'verify-worker.js');
  if (existsSync(built)) return built;
  throw new UserError('audit.unavailable', `${built} is missing; run "npm run build"`);
}

/**
 * Cores from which segments are worth their threads: on 2 cores, with the server on the same host,
 * two threads verified 100,000 events at 43-46k/s where one streaming did 34-35k/s (one thread in
 * segments: 30k/s).
 */
export const PARALLEL_MIN_CORES = 2;

/**
 * The chain of a store for verifyAudit: a PostgreSQL store's in parallel segments on a host with
 * PARALLEL_MIN_CORES cores or more; otherwise, and for the embedded store (one process's database),
 * streamed by this thread. `threads` (audit verify --threads) overrides the choice for PostgreSQL: 1
 * streams, more read in that many worker threads (a host whose PostgreSQL is elsewhere has cores for
 * more than the default 4).
 */
export function chainOf(db: Database, cores = availableParallelism(), threads?: number): { records: AsyncIterable<AuditRecord[]> } | { parallel: ParallelChain } {
  const parallel = threads === undefined ? cores >= PARALLEL_MIN_CORES : threads > 1;
  if (db.backend === 'postgres' && db.connectionUrl && parallel) return { parallel: { db, url: db.connectionUrl, ...(threads !== undefined ? { workers: threads } : {}) } };
  return { records: streamChain(db) };
}

/**
 * The segments' results in seq order, as the workers finish them. A worker is given a new segment
 * only while it is at most a window of segments ahead of the one the caller is at, so the results
 * waiting here stay a few segments whatever the chain's length (memory flat, as when streaming).
 */
export async function* verifySegments(p: ParallelChain, checks: RowChecks, max: number): AsyncGenerator<SegmentResult> {
  const [bounds] = await p.db.query<{ lo: number | null; hi: number | null }>('SELECT min(seq) AS lo, max(seq) AS hi FROM audit_events');
  if (!bounds || bounds.lo === null || bounds.hi === null) return;
  const first = Number(bounds.lo);
  const end = Number(bounds.hi) + 1;
  const size = Math.max(1, p.segmentSize ?? 2_000);
  const total = Math.ceil((end - first) / size);
  const count = Math.max(1, Math.min(p.workers ?? Math.min(4, availableParallelism()), total));
  const window = 2 * count;
  const setup: WorkerSetup = { url: p.url, checks, max, pageSize: 5000 };

  const finished = new Map<number, SegmentResult>();
  const idle: Worker[] = [];
  let given = 0; // segments handed out
  let taken = 0; // segments passed on to the caller
  let failure: unknown;
  let stopping = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const give = (w: Worker) => {
    if (given >= total || given >= taken + window) return void idle.push(w);
    const index = given++;
    const lo = first + index * size;
    w.postMessage({ index, lo, hi: Math.min(lo + size, end) } satisfies SegmentRequest);
  };
  const workers = Array.from({ length: count }, () => new Worker(workerScript(), { workerData: setup, execArgv: [] }));
  for (const w of workers) {
    w.on('message', (m: SegmentReply) => {
      if ('error' in m) failure ??= new UserError('audit.unavailable', `the audit trail could not be read for verification (${m.error})`);
      else {
        finished.set(m.index, m.result);
        give(w);
      }
      notify();
    });
    w.once('error', (err) => {
      failure ??= err;
      notify();
    });
    w.once('exit', (code) => {
      if (!stopping) failure ??= new UserError('audit.unavailable', `an audit verification worker stopped (exit ${code})`);
      notify();
    });
  }
  try {
    for (const w of workers) give(w);
    while (taken < total) {
      if (failure) throw failure;
      const result = finished.get(taken);
      if (!result) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      finished.delete(taken);
      taken += 1;
      while (idle.length > 0 && given < total && given < taken + window) give(idle.pop() as Worker);
      yield result;
    }
  } finally {
    stopping = true;
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
