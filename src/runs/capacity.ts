/**
 * How many model calls may be in flight per endpoint, in this process. The worker's instance loops
 * run deeper than this (audit writes, prompt building and result writes of some instances overlap the
 * calls of others), while the endpoint never sees more than its limit. A small counting semaphore per
 * endpoint whose limit can change (several workers share an endpoint's capacity).
 */
export class EndpointCapacity {
  private inUse = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private limit: number) {}

  setLimit(limit: number): void {
    this.limit = Math.max(1, limit);
    this.drain();
  }

  get size(): number {
    return this.limit;
  }

  /** Resolves with a release function once a slot is free. */
  async acquire(): Promise<() => void> {
    if (this.inUse >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.inUse += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inUse -= 1;
      this.drain();
    };
  }

  private drain(): void {
    while (this.inUse < this.limit && this.waiting.length > 0) {
      this.inUse += 1;
      (this.waiting.shift() as () => void)();
    }
  }
}

export class EndpointCapacities {
  private readonly byEndpoint = new Map<string, EndpointCapacity>();

  /** The capacity of an endpoint, created with `limit` and kept (its limit updated) afterwards. */
  for(endpointId: string, limit: number): EndpointCapacity {
    let c = this.byEndpoint.get(endpointId);
    if (!c) {
      c = new EndpointCapacity(limit);
      this.byEndpoint.set(endpointId, c);
    } else if (c.size !== limit) c.setLimit(limit);
    return c;
  }
}
