/**
 * Group commit: many concurrent writers, one statement. A write is queued and its promise settles only
 * after the statement holding it has committed, so callers keep "durable before done" while the store
 * sees one round trip per batch instead of one per row. Batches form naturally: while one flush is in
 * flight, new writes gather for the next.
 */
export class GroupCommit<T, R> {
  private pending: { item: T; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  private flushing = false;

  constructor(
    /** Writes a batch and returns one result per item, in order. Throwing fails the whole batch. */
    private readonly write: (items: T[]) => Promise<R[]>,
    private readonly maxBatch = 256,
  ) {}

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      // Let I/O callbacks that are already due (other calls finishing) join this batch. On PGlite
      // a statement blocks the event loop, so without this yield every batch would hold one write.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, this.maxBatch);
        try {
          const results = await this.write(batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(results[i] as R));
        } catch (err) {
          for (const b of batch) b.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }
}
