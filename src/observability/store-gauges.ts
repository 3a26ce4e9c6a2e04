/**
 * Gauges read from the store at scrape time, so they describe the whole deployment rather than one
 * process: every worker process shares the store, while counters only see their own process. The
 * audit gauges are what compliance alerts on: how many events are not yet covered by a signed
 * checkpoint, and for how long. Only counts and ages leave the store; every label is a closed set.
 * Reads are cached briefly, so a scraper polling fast cannot load the database.
 */
import type { Queryable } from '../db';
import { METRIC_PREFIX, scrapeGauge } from './registry';

const RUN_STATUSES = ['requested', 'approved', 'running', 'completed', 'failed', 'cancelled', 'halted'] as const;
const ITEM_STATES = ['pending', 'claimed', 'done', 'blocked', 'failed'] as const;
const CACHE_MS = 5000;

interface StoreSnapshot {
  up: boolean;
  runs: { status: string; n: number }[];
  items: { state: string; n: number }[];
  audit?: { headSeq: number; checkpointSeq: number; checkpointAgeSeconds: number | null };
}

let source: { db: Queryable; clock: () => Date } | undefined;
let cached: { at: number; snapshot: Promise<StoreSnapshot> } | undefined;

/** Makes the store gauges read `db` (the daemon calls this once it has opened the store). */
export function observeStore(db: Queryable, clock: () => Date = () => new Date()): void {
  source = { db, clock };
  cached = undefined;
}

/** Stops reading the store (shutdown, tests). */
export function forgetStore(): void {
  source = undefined;
  cached = undefined;
}

async function read(db: Queryable, now: Date): Promise<StoreSnapshot> {
  try {
    const runs = await db.query<{ status: string; n: number }>('SELECT status, count(*)::integer AS n FROM runs GROUP BY status');
    // Only runs in progress: finished runs' instances are history, and counting them would scan it all.
    const items = await db.query<{ state: string; n: number }>(
      `SELECT i.state, count(*)::integer AS n FROM runs r JOIN run_items i ON i.run_id = r.run_id WHERE r.status = 'running' GROUP BY i.state`,
    );
    const head = await db.query<{ seq: number }>('SELECT seq FROM audit_head');
    const last = await db.query<{ seq: number; signed_at: string }>('SELECT seq, signed_at FROM audit_checkpoints ORDER BY checkpoint_id DESC LIMIT 1');
    const signedAt = last[0] ? Date.parse(last[0].signed_at) : Number.NaN;
    return {
      up: true,
      runs,
      items,
      audit: {
        headSeq: Number(head[0]?.seq ?? 0),
        checkpointSeq: Number(last[0]?.seq ?? 0),
        checkpointAgeSeconds: Number.isFinite(signedAt) ? Math.max(0, (now.getTime() - signedAt) / 1000) : null,
      },
    };
  } catch {
    // The store is unreachable or refuses: report that, never the driver's message.
    return { up: false, runs: [], items: [] };
  }
}

function snapshot(): Promise<StoreSnapshot> | undefined {
  if (!source) return undefined;
  const now = source.clock();
  if (!cached || now.getTime() - cached.at > CACHE_MS || now.getTime() < cached.at) {
    cached = { at: now.getTime(), snapshot: read(source.db, now) };
  }
  return cached.snapshot;
}

scrapeGauge(`${METRIC_PREFIX}store_up`, 'Whether the store answered the last metrics read (1) or not (0).', {}, async (set, reset) => {
  reset();
  const s = await snapshot();
  if (s) set({}, s.up ? 1 : 0);
});

scrapeGauge(`${METRIC_PREFIX}runs`, 'Runs in the store by status (all processes).', { status: RUN_STATUSES }, async (set, reset) => {
  reset();
  const s = await snapshot();
  if (!s?.up) return;
  for (const status of RUN_STATUSES) set({ status }, s.runs.find((r) => r.status === status)?.n ?? 0);
});

scrapeGauge(`${METRIC_PREFIX}running_instances`, 'Instances of runs in progress by state (all processes).', { state: ITEM_STATES }, async (set, reset) => {
  reset();
  const s = await snapshot();
  if (!s?.up) return;
  for (const state of ITEM_STATES) set({ state }, s.items.find((r) => r.state === state)?.n ?? 0);
});

scrapeGauge(`${METRIC_PREFIX}audit_head_seq`, 'Sequence number of the newest audit event.', {}, async (set, reset) => {
  reset();
  const a = (await snapshot())?.audit;
  if (a) set({}, a.headSeq);
});

scrapeGauge(`${METRIC_PREFIX}audit_events_since_checkpoint`, 'Audit events not yet covered by a signed checkpoint.', {}, async (set, reset) => {
  reset();
  const a = (await snapshot())?.audit;
  if (a) set({}, Math.max(0, a.headSeq - a.checkpointSeq));
});

scrapeGauge(`${METRIC_PREFIX}audit_seconds_since_checkpoint`, 'Age of the newest signed audit checkpoint, in seconds (absent before the first checkpoint).', {}, async (set, reset) => {
  reset();
  const a = (await snapshot())?.audit;
  if (a && a.checkpointAgeSeconds !== null) set({}, a.checkpointAgeSeconds);
});
