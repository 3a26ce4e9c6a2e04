/**
 * An endpoint's capacity shared by every worker process on one database. The endpoint may have N
 * calls in flight in total (its `limits.concurrency`, or the configured default); the N slots live in
 * the database as leases. Each worker that wants calls to the endpoint registers itself, takes its
 * fair share (N divided by the workers present, rounded up), renews its leases while it works, gives
 * back slots above its share once its own calls have drained below them, and releases everything
 * when it stops. A worker that dies loses its slots when their leases expire.
 */
import type { Database } from '../db';
import type { EndpointCapacity } from './capacity';

export interface SlotOptions {
  endpointId: string;
  total: number;
  /** The most calls this worker keeps in flight to the endpoint, whatever its share. */
  perWorker: number;
  workerId: string;
  leaseSeconds: number;
}

export class SharedSlots {
  private held = 0;
  /** Workers sharing the endpoint at the last balance (this one included). */
  private present = 1;
  private timer: NodeJS.Timeout | undefined;
  private users = 0;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly capacity: EndpointCapacity,
    private readonly opts: SlotOptions,
  ) {
    capacity.setLimit(0);
  }

  /** A run of this process starts using the endpoint: take a share of its slots. */
  async join(): Promise<void> {
    this.users += 1;
    if (this.users > 1) return;
    // The heartbeat starts first: a first balance that fails (the database restarting) leaves no
    // slots for now, and the next beat takes them; it must not leave the endpoint without heartbeat.
    const every = Math.max(200, Math.min(2000, (this.opts.leaseSeconds * 1000) / 3));
    this.timer = setInterval(() => void this.rebalance().catch(() => undefined), every);
    this.timer.unref();
    await this.rebalance().catch(() => undefined);
  }

  /** A run stopped using the endpoint; the last one gives every slot back. */
  async leave(): Promise<void> {
    this.users -= 1;
    if (this.users > 0) return;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running.catch(() => undefined);
    const { endpointId, workerId } = this.opts;
    this.capacity.setLimit(0);
    this.held = 0;
    await this.db.query('UPDATE endpoint_slots SET holder = NULL, expires_at = NULL WHERE endpoint_id = $1 AND holder = $2', [endpointId, workerId]);
    await this.db.query('DELETE FROM endpoint_workers WHERE endpoint_id = $1 AND worker_id = $2', [endpointId, workerId]);
  }

  /**
   * Serialised: a heartbeat never overlaps another. Each one starts after the previous one settled,
   * failed or not: chained with `then` alone, one failed renewal (the database restarting) would
   * reject every later one, and the worker would lose its slots for good once their leases expire.
   */
  rebalance(): Promise<void> {
    const next = this.running.catch(() => undefined).then(() => this.balance());
    this.running = next;
    return next;
  }

  private async balance(): Promise<void> {
    const { endpointId, workerId, total, leaseSeconds } = this.opts;
    await this.db.query(
      `INSERT INTO endpoint_workers (endpoint_id, worker_id, seen_at) VALUES ($1, $2, now())
       ON CONFLICT (endpoint_id, worker_id) DO UPDATE SET seen_at = now()`,
      [endpointId, workerId],
    );
    const [active] = await this.db.query<{ n: number }>('SELECT count(*)::integer AS n FROM endpoint_workers WHERE endpoint_id = $1 AND seen_at > now() - make_interval(secs => $2)', [
      endpointId,
      leaseSeconds,
    ]);
    this.present = Math.max(1, active?.n ?? 1);
    const share = Math.min(this.opts.perWorker, Math.ceil(total / this.present));
    await this.db.query('INSERT INTO endpoint_slots (endpoint_id, slot_no) SELECT $1, g FROM generate_series(0, $2 - 1) AS g ON CONFLICT DO NOTHING', [endpointId, total]);
    const renewed = await this.db.query<{ slot_no: number }>(
      `UPDATE endpoint_slots SET expires_at = now() + make_interval(secs => $3)
        WHERE endpoint_id = $1 AND holder = $2 AND slot_no < $4 RETURNING slot_no`,
      [endpointId, workerId, leaseSeconds, total],
    );
    let held = renewed.map((r) => r.slot_no).sort((a, b) => a - b);
    // Above the share: stop starting calls now, hand back slots once our own calls are below them.
    const keep = Math.max(share, this.capacity.inUse);
    if (held.length > keep) {
      const extra = held.slice(keep);
      await this.db.query('UPDATE endpoint_slots SET holder = NULL, expires_at = NULL WHERE endpoint_id = $1 AND holder = $2 AND slot_no = ANY($3::integer[])', [endpointId, workerId, extra]);
      held = held.slice(0, keep);
    } else if (held.length < share) {
      const taken = await this.db.query<{ slot_no: number }>(
        `UPDATE endpoint_slots AS s SET holder = $2, expires_at = now() + make_interval(secs => $3)
           FROM (SELECT slot_no FROM endpoint_slots
                  WHERE endpoint_id = $1 AND slot_no < $4 AND (holder IS NULL OR expires_at < now())
                  ORDER BY slot_no LIMIT $5 FOR UPDATE SKIP LOCKED) AS free
          WHERE s.endpoint_id = $1 AND s.slot_no = free.slot_no
         RETURNING s.slot_no`,
        [endpointId, workerId, leaseSeconds, total, share - held.length],
      );
      held = [...held, ...taken.map((r) => r.slot_no)];
    }
    this.held = held.length;
    this.capacity.setLimit(Math.min(this.held, share));
  }

  get slots(): number {
    return this.held;
  }

  /** How many worker processes share the endpoint, as the last balance counted them. */
  get workers(): number {
    return this.present;
  }
}
