/**
 * Whether a run is still to be worked on, asked by the gateway before each outbound call of the run
 * (RunGate). A cancel in this process stops the gate at once (Gateway.stopRun, before run.cancel is
 * recorded); a cancel in another process (`ehrbench runs cancel` on the host while a worker runs the
 * run) is seen in the store: the status is read at most once per MAX_AGE_MS per run and worker, one
 * read shared by all its loops, so asking costs a model call nothing measurable.
 */
import type { RunGate } from '../calls';
import type { RunStore } from './store';

/** The oldest status read a call may start on. */
export const MAX_AGE_MS = 250;

export class RunWatch implements RunGate {
  private halted = false;
  private readAt = -Infinity;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<RunStore, 'getRun'>,
    private readonly runId: string,
    private readonly clock: () => number = Date.now,
  ) {}

  get stopped(): boolean {
    return this.halted;
  }

  stop(): void {
    this.halted = true;
  }

  /** False once the run is stopped; reads its status when the last read is older than MAX_AGE_MS. */
  async active(): Promise<boolean> {
    if (this.halted) return false;
    if (this.clock() - this.readAt >= MAX_AGE_MS) {
      this.reading ??= this.read().finally(() => (this.reading = undefined));
      await this.reading;
    }
    return !this.halted;
  }

  /** A store that cannot be read starts no call either: the error reaches the worker. */
  private async read(): Promise<void> {
    const run = await this.store.getRun(this.runId);
    this.readAt = this.clock();
    if (run?.status !== 'running') this.halted = true;
  }
}
