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

/** The longest wait between polls while the store cannot be reached. */
const MAX_BACKOFF_S = 10;

export interface SchedulerOptions {
  workers: number;
  pollSeconds: number;
  /** Stable id of this process, for leases and logs. */
  workerId?: string;
  /** Other work looked at on each poll, before runs are picked (the approvals' canaries: CanaryService.tick). */
  tick?: () => Promise<void>;
}

export class RunScheduler {
  private readonly controller = new AbortController();
  private readonly active = new Map<string, Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = false;
  /** Polls failed in a row (database unreachable): the next poll waits longer, up to MAX_BACKOFF_S. */
  private failures = 0;
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
        if (!this.stopped) this.timer = setTimeout(tick, this.delaySeconds() * 1000);
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
      // The canaries first: a canary run they request is picked up by this very poll.
      await this.opts.tick?.().catch((err: unknown) => this.engine.logger.warn('scheduler.tick-failed', { errorCode: describeError(err).code, workerId: this.workerId }));
      const free = this.opts.workers - this.active.size;
      if (free <= 0) return;
      const runnable = (await this.engine.store.runnable(this.opts.workers * 2)).filter((id) => !this.active.has(id));
      this.failures = 0;
      for (const runId of runnable.slice(0, free)) this.launch(runId);
    } catch (err) {
      this.failures += 1;
      this.engine.logger.warn('scheduler.poll-failed', { err, workerId: this.workerId, retryInMs: Math.round(this.delaySeconds() * 1000) });
    } finally {
      this.polling = false;
    }
  }

  /** The wait before the next poll: the configured interval, doubled per failed poll in a row. */
  private delaySeconds(): number {
    const backoff = this.opts.pollSeconds * 2 ** Math.min(this.failures, 8);
    return this.failures === 0 ? this.opts.pollSeconds : Math.min(Math.max(this.opts.pollSeconds, MAX_BACKOFF_S), backoff);
  }

  private launch(runId: string): void {
    let failed = false;
    const done = executeRun(this.engine, runId, { workerId: `${this.workerId}:${runId.slice(0, 8)}`, signal: this.controller.signal })
      .catch((err: unknown) => {
        failed = true;
        this.engine.logger.warn('scheduler.run-stopped', { runId, errorCode: describeError(err).code, workerId: this.workerId });
      })
      .finally(() => {
        this.active.delete(runId);
        // After a failure (the database lost) the regular poll resumes the run, with its backoff;
        // looking again at once would spin while the database is still away.
        if (!this.stopped && !failed) this.nudge();
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
