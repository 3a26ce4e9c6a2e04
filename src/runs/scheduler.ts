/**
 * The daemon's workers: poll the store for runnable runs (approved, or running with unfinished
 * instances whose worker may have died) and execute up to `workers` of them at a time. Several
 * daemons can share one PostgreSQL: each claims instances with SKIP LOCKED, so they share runs
 * without doing any instance twice. Stopping aborts in-flight calls; leases go back to the queue.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { describeError } from '../errors';
import { type Engine, executeRun } from './engine';

export interface SchedulerOptions {
  workers: number;
  pollSeconds: number;
  /** Stable id of this process, for leases and logs. */
  workerId?: string;
}

export class RunScheduler {
  private readonly controller = new AbortController();
  private readonly active = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = false;
  readonly workerId: string;

  constructor(
    private readonly engine: Engine,
    private readonly opts: SchedulerOptions,
  ) {
    this.workerId = opts.workerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  start(): void {
    if (this.opts.workers <= 0) return;
    const tick = () => {
      if (this.stopped) return;
      void this.poll().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.opts.pollSeconds * 1000);
      });
    };
    tick();
  }

  /** Looks for work now (after a run was requested or approved through the API). */
  nudge(): void {
    if (!this.stopped) void this.poll();
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const free = this.opts.workers - this.active.size;
      if (free <= 0) return;
      const runnable = (await this.engine.store.runnable(this.opts.workers * 2)).filter((id) => !this.active.has(id));
      for (const runId of runnable.slice(0, free)) this.launch(runId);
    } catch (err) {
      this.engine.logger.warn('scheduler.poll-failed', { err, workerId: this.workerId });
    } finally {
      this.polling = false;
    }
  }

  private launch(runId: string): void {
    const done = executeRun(this.engine, runId, { workerId: `${this.workerId}:${runId.slice(0, 8)}`, signal: this.controller.signal })
      .catch((err: unknown) => this.engine.logger.warn('scheduler.run-stopped', { runId, errorCode: describeError(err).code }))
      .finally(() => {
        this.active.delete(runId);
        if (!this.stopped) this.nudge();
      });
    this.active.set(runId, done);
  }

  /** Stops taking work, aborts in-flight calls and waits until every run has released its leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.controller.abort();
    await Promise.allSettled([...this.active.values()]);
  }
}
