/**
 * The chain of a PostgreSQL store verified in segments by worker threads (verify-worker.ts), for
 * `verifyAudit({ parallel })`. The seq range of the chain (read once, at the start) is cut into
 * segments; each worker reads its segments over its own connection and checks every row of them
 * exactly as the sequential walk does (checkRow: hash, MAC, checkpoints, and the link to the row
 * before within the segment). The caller stitches the segments in seq order and checks the link
 * between each segment and the one before it, so that every link of the chain is still checked once;
 * the findings come out the same, in the same order, as a sequential walk over the same rows.
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
import type { Finding, RowChecks } from './verify';

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
 * streamed by this thread.
 */
export function chainOf(db: Database, cores = availableParallelism()): { records: AsyncIterable<AuditRecord[]> } | { parallel: ParallelChain } {
  if (db.backend === 'postgres' && db.connectionUrl && cores >= PARALLEL_MIN_CORES) return { parallel: { db, url: db.connectionUrl } };
  return { records: streamChain(db) };
}

export async function verifySegments(p: ParallelChain, checks: RowChecks, max: number): Promise<SegmentResult[]> {
  const [bounds] = await p.db.query<{ lo: number | null; hi: number | null }>('SELECT min(seq) AS lo, max(seq) AS hi FROM audit_events');
  if (!bounds || bounds.lo === null || bounds.hi === null) return [];
  const size = Math.max(1, p.segmentSize ?? 2_000);
  const segments: { lo: number; hi: number }[] = [];
  for (let lo = Number(bounds.lo); lo <= Number(bounds.hi); lo += size) segments.push({ lo, hi: Math.min(lo + size, Number(bounds.hi) + 1) });
  const count = Math.max(1, Math.min(p.workers ?? Math.min(4, availableParallelism()), segments.length));
  const setup: WorkerSetup = { url: p.url, checks, max, pageSize: 5000 };
  const results: SegmentResult[] = new Array(segments.length);
  let next = 0;
  const workers = Array.from({ length: count }, () => new Worker(workerScript(), { workerData: setup, execArgv: [] }));
  try {
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve, reject) => {
            let done = false;
            const give = () => {
              if (next >= segments.length) {
                done = true;
                return resolve();
              }
              const index = next++;
              w.postMessage({ index, ...(segments[index] as { lo: number; hi: number }) } satisfies SegmentRequest);
            };
            w.on('message', (m: SegmentReply) => {
              if ('error' in m) return reject(new UserError('audit.unavailable', `the audit trail could not be read for verification (${m.error})`));
              results[m.index] = m.result;
              give();
            });
            w.once('error', reject);
            w.once('exit', (code) => {
              if (!done) reject(new UserError('audit.unavailable', `an audit verification worker stopped (exit ${code})`));
            });
            give();
          }),
      ),
    );
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return results;
}
