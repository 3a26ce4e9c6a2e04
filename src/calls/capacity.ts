import type { Database } from '../db';
import { SharedSlots } from './slots';

/**
 * How many model calls may be in flight per endpoint, in this process. The worker's instance loops
 * run deeper than this (audit writes, prompt building and result writes of some instances overlap the
 * calls of others), while the endpoint never sees more than its limit. A small counting semaphore per
 * endpoint whose limit can change (several workers share an endpoint's capacity).
 */
export class EndpointCapacity {
  private used = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private limit: number) {}

  /** 0 is allowed: no calls until slots are granted. */
  setLimit(limit: number): void {
    this.limit = Math.max(0, limit);
    this.drain();
  }

  get size(): number {
    return this.limit;
  }

  get inUse(): number {
    return this.used;
  }

  /**
   * Resolves with a release function once a slot is free. A caller that is interrupted while it waits
   * (cancel, shutdown) stops waiting: otherwise a worker told to stop while it holds no slots (the
   * database that grants them is away) would wait for the database before it could exit.
   */
  async acquire(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.used >= this.limit) await this.wait(signal);
    else this.used += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= 1;
      this.drain();
    };
  }

  /** Queues for a slot (drain counts it as used when it hands it over); leaves the queue on abort. */
  private wait(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const at = this.waiting.indexOf(granted);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal?.reason);
      };
      const granted = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiting.push(granted);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private drain(): void {
    while (this.used < this.limit && this.waiting.length > 0) {
      this.used += 1;
      (this.waiting.shift() as () => void)();
    }
  }
}

/**
 * The capacities of this process, one per endpoint, each fed by its share of the endpoint's slots in
 * the database (SharedSlots), so that all worker processes together respect the endpoint's limit.
 */
export class EndpointCapacities {
  private readonly byEndpoint = new Map<string, { capacity: EndpointCapacity; slots: SharedSlots }>();

  constructor(
    private readonly db: Database,
    private readonly workerId: string,
    private readonly leaseSeconds: () => number,
  ) {}

  /**
   * The endpoint's capacity in this process: `total` is the endpoint's limit across all workers,
   * `perWorker` the most this worker keeps in flight.
   */
  for(endpointId: string, total: number, perWorker: number): { capacity: EndpointCapacity; slots: SharedSlots } {
    let entry = this.byEndpoint.get(endpointId);
    if (!entry) {
      const capacity = new EndpointCapacity(0);
      const slots = new SharedSlots(this.db, capacity, { endpointId, total, perWorker, workerId: this.workerId, leaseSeconds: this.leaseSeconds() });
      entry = { capacity, slots };
      this.byEndpoint.set(endpointId, entry);
    }
    return entry;
  }
}
