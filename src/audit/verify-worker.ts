/**
 * A worker thread of the parallel audit verification (verify-parallel.ts): reads the segments of
 * seqs it is given over its own connection and checks each row with the verifier's own checkRow.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../db';
import { describeError } from '../errors';
import { streamChain } from './store';
import { checkRow, type ChainState, type Finding, noUnheldMacRows } from './verify';
import type { SegmentReply, SegmentRequest, SegmentResult, WorkerSetup } from './verify-parallel';

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) return;
  const setup = workerData as WorkerSetup;
  const opened = openDatabase({ url: setup.url, embeddedDir: '', migrate: false, poolSize: 1 });
  // The caller terminates the thread when it is done; an open connection must not keep it alive.
  port.on('message', (m: SegmentRequest) => {
    void (async () => {
      try {
        const db = await opened;
        const findings: Finding[] = [];
        let dropped = 0;
        const find = (seq: number | null, problem: string) => {
          if (findings.length < setup.max) findings.push({ seq, problem });
          else dropped += 1;
        };
        // The first row's link is the caller's to check: the row before it is in another segment.
        const chain: ChainState = { expectedSeq: null, prevHash: null };
        const found = new Set<number>();
        const result: SegmentResult = { first: null, last: null, findings, dropped: 0, found: [], seqs: [], stamps: [], unheld: noUnheldMacRows() };
        for await (const page of streamChain(db, m.lo, m.hi, setup.pageSize)) {
          for (const r of page) {
            result.first ??= { seq: r.seq, prev_hash: r.prev_hash };
            checkRow(r, chain, setup.checks, find, found, result.unheld);
            result.seqs.push(r.seq);
            result.stamps.push(r.recorded_at);
            result.last = { seq: r.seq, row_hash: r.row_hash };
          }
        }
        result.dropped = dropped;
        result.found = [...found];
        port.postMessage({ index: m.index, result } satisfies SegmentReply);
      } catch (err) {
        port.postMessage({ index: m.index, error: describeError(err).code } satisfies SegmentReply);
      }
    })();
  });
}

void main();
