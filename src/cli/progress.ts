/**
 * The one progress display of a run, for `ehrbench run`, `runs resume`, `demo` and `runs watch`: a
 * bar on a terminal (cli-progress), and outside one (a pipe, a log file, CI) a line now and then, so
 * that a log shows the run moving. Both say what the run is doing before there is anything to count
 * (`awaiting approval`, `starting`, `planning`), then the counts and an ETA. Counts only, never data.
 */
import { Format, type Options, type Params, SingleBar } from 'cli-progress';
import { runPhase } from '../contracts';
import type { RunProgress } from '../runs';
import { type Io, processIo } from './output';

/** Outside a terminal, a line at most this often while the run moves (EHRBENCH_PROGRESS_SECONDS). */
export const DEFAULT_LINE_SECONDS = 10;

function finished(p: RunProgress): number {
  const c = p.counts;
  return c ? c.done + c.blocked + c.failed : 0;
}

/** 75 -> "1m15s"; undefined while the rate is not known yet. */
export function formatEta(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return '-';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** The counts part of a line: done of planned, blocked, failed, left and the ETA. */
export function countsText(p: RunProgress, eta: string): string {
  const c = p.counts;
  // Nothing is counted before the run starts.
  if (p.status === 'requested' || p.status === 'approved') return '';
  if (!c) return ' (counts withheld)';
  const base = `done ${c.done}${p.instanceCount !== null ? ` of ${p.instanceCount}` : ''}, blocked ${c.blocked}, failed ${c.failed}`;
  if (p.status !== 'running') return `: ${base}`;
  if (p.instanceCount === null) return `: ${base} (${c.pending + c.claimed + finished(p)} queued so far)`;
  return `: ${base}, left ${c.pending + c.claimed}, ETA ${eta}`;
}

export interface ProgressOptions {
  /** What the display is about: the benchmark id. */
  label: string;
  /** A bar (a terminal) or lines. Default: a bar when stderr is the process's terminal. */
  tty?: boolean;
  /** Outside a terminal, the shortest time between two lines while only the counts change. */
  lineMs?: number;
  clock?: () => number;
}

/** The line period from the environment (EHRBENCH_PROGRESS_SECONDS), else DEFAULT_LINE_SECONDS. */
export function lineMsFrom(env: NodeJS.ProcessEnv): number {
  const s = Number(env.EHRBENCH_PROGRESS_SECONDS);
  return (Number.isFinite(s) && s >= 0 ? s : DEFAULT_LINE_SECONDS) * 1000;
}

export class ProgressDisplay {
  private readonly tty: boolean;
  private readonly lineMs: number;
  private readonly clock: () => number;
  private bar: SingleBar | undefined;
  private last: { phase: string; text: string; at: number } | undefined;
  private latest: RunProgress | undefined;
  /** When counting began (the first update with a planned count) and how many were finished then. */
  private from: { at: number; finished: number } | undefined;

  constructor(
    private readonly io: Io,
    private readonly opts: ProgressOptions,
  ) {
    this.tty = opts.tty ?? (io.stderr === processIo.stderr && Boolean(process.stderr.isTTY));
    this.lineMs = opts.lineMs ?? lineMsFrom(io.env);
    this.clock = opts.clock ?? Date.now;
  }

  update(p: RunProgress): void {
    this.latest = p;
    const now = this.clock();
    if (p.instanceCount !== null && p.status === 'running') this.from ??= { at: now, finished: finished(p) };
    const phase = runPhase(p);
    const text = `${this.opts.label}: ${phase}${countsText(p, formatEta(this.eta(p, now)))}`;
    if (this.tty) return this.draw(p, phase, text);
    const changed = this.last?.phase !== phase;
    const moved = this.last !== undefined && this.last.text !== text && now - this.last.at >= this.lineMs;
    if (changed || moved) this.line(phase, text, now);
  }

  /** Ends the display: the bar is closed, or a last line says where the run stopped. */
  stop(): void {
    if (this.bar) {
      this.bar.stop();
      this.bar = undefined;
      return;
    }
    const p = this.latest;
    if (!p || this.tty) return;
    const phase = runPhase(p);
    const text = `${this.opts.label}: ${phase}${countsText(p, '-')}`;
    if (this.last?.text !== text) this.line(phase, text, this.clock());
  }

  /** Seconds left at the rate instances were finished since counting began. */
  private eta(p: RunProgress, now: number): number | undefined {
    const c = p.counts;
    if (!this.from || !c || p.instanceCount === null) return undefined;
    const rate = (finished(p) - this.from.finished) / ((now - this.from.at) / 1000);
    return rate > 0 ? (c.pending + c.claimed) / rate : undefined;
  }

  private line(phase: string, text: string, at: number): void {
    this.last = { phase, text, at };
    this.io.stderr(`${text}\n`);
  }

  /** The bar while instances are counted against a planned total; the phase alone before that. */
  private draw(p: RunProgress, phase: string, text: string): void {
    const counting = phase === 'running' && p.counts !== null && p.instanceCount !== null;
    const payload = { text, counting };
    if (!this.bar) {
      this.bar = new SingleBar({ format: barLine, stream: process.stderr, hideCursor: true, clearOnComplete: false, etaBuffer: 50 });
      this.bar.start(1, 0, payload);
    }
    if (counting) {
      this.bar.setTotal(Math.max(1, p.instanceCount as number));
      this.bar.update(finished(p), payload);
    } else this.bar.update(0, payload);
  }
}

/** cli-progress format: `[bar] 40% | pubmed_qa: running: done 80 of 200, ...`, or the text alone. */
function barLine(options: Options, params: Params, payload: { text: string; counting: boolean }): string {
  if (!payload.counting) return ` ${payload.text}`;
  return ` ${Format.BarFormat(params.progress, options)} ${Math.floor(params.progress * 100)}% | ${payload.text}`;
}

/**
 * Shows a run's progress until stopped, reading it every `pollMs` (reads that fail are skipped: the
 * display is informative, the run does not depend on it). `stop` shows the last state and ends it.
 */
export function followRun(read: () => Promise<RunProgress>, display: ProgressDisplay, pollMs: number): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let reading: Promise<void> = Promise.resolve();
  const tick = () => {
    reading = read()
      .then((p) => {
        if (!stopped) display.update(p);
      })
      .catch(() => undefined)
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, pollMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await reading;
      const last = await read().catch(() => undefined);
      if (last) display.update(last);
      display.stop();
    },
  };
}

/** How often a run executed in this process is read for its display (two small queries). */
export const LOCAL_POLL_MS = 250;

/** The display of a run this process executes (`run`, `runs resume`, `demo`), until `stop`. */
export function followLocal(io: Io, label: string, read: () => Promise<RunProgress>): { stop(): Promise<void> } {
  return followRun(read, new ProgressDisplay(io, { label }), LOCAL_POLL_MS);
}
