/**
 * The process's metric registry and the guarded metric types. A guarded metric declares its label
 * names and each label's kind (labels.ts); every observation is checked before prom-client sees it:
 * a label name that was not declared drops the observation, a value that does not pass its kind is
 * replaced. prom-client's own metrics are never exposed directly with caller-supplied labels.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { INVALID_VALUE, type LabelKind, MAX_DISTINCT_VALUES, OVERFLOW_VALUE, closed, validLabelValue } from './labels';

export const registry = new Registry();
export const METRIC_PREFIX = 'ehrbench_';

/** Names of every guarded metric, so the rejection counter's own label is a closed set too. */
const guardedNames: string[] = [];

const REJECTION_REASONS = ['undeclared-label', 'missing-label', 'invalid-value', 'too-many-values'] as const;
type RejectionReason = (typeof REJECTION_REASONS)[number];

const rejections = new Counter({
  name: `${METRIC_PREFIX}metric_label_rejections_total`,
  help: 'Metric observations whose labels were refused or replaced (label allowlist, id patterns, cardinality cap).',
  labelNames: ['metric', 'reason'],
  registers: [registry],
});

function reject(metric: string, reason: RejectionReason): void {
  // Both values come from code (the metric's own name, a fixed reason), never from the caller.
  rejections.inc({ metric: guardedNames.includes(metric) ? metric : INVALID_VALUE, reason });
}

export type LabelValues<L extends string> = Record<L, string | boolean>;

class LabelGuard<L extends string> {
  private readonly names: L[];
  private readonly seen = new Map<L, Set<string>>();

  constructor(
    private readonly metric: string,
    private readonly kinds: Record<L, LabelKind>,
  ) {
    this.names = Object.keys(kinds) as L[];
    guardedNames.push(metric);
  }

  get labelNames(): L[] {
    return [...this.names];
  }

  /** The values to record, or undefined when the observation must be dropped. */
  check(values: LabelValues<L>): Record<L, string> | undefined {
    const given = Object.keys(values);
    if (given.some((k) => !(this.names as string[]).includes(k))) {
      reject(this.metric, 'undeclared-label');
      return undefined;
    }
    const out = {} as Record<L, string>;
    for (const name of this.names) {
      const raw = values[name];
      if (raw === undefined) {
        reject(this.metric, 'missing-label');
        return undefined;
      }
      out[name] = this.admit(name, String(raw));
    }
    return out;
  }

  private admit(name: L, value: string): string {
    if (!validLabelValue(this.kinds[name], value)) {
      reject(this.metric, 'invalid-value');
      return INVALID_VALUE;
    }
    let seen = this.seen.get(name);
    if (!seen) this.seen.set(name, (seen = new Set()));
    if (!seen.has(value)) {
      if (seen.size >= MAX_DISTINCT_VALUES) {
        reject(this.metric, 'too-many-values');
        return OVERFLOW_VALUE;
      }
      seen.add(value);
    }
    return value;
  }

  reset(): void {
    this.seen.clear();
  }
}

const guards: LabelGuard<string>[] = [];

export class GuardedCounter<L extends string> {
  private readonly guard: LabelGuard<L>;
  private readonly counter: Counter<L>;

  constructor(name: string, help: string, labels: Record<L, LabelKind>) {
    this.guard = new LabelGuard(name, labels);
    guards.push(this.guard as LabelGuard<string>);
    this.counter = new Counter({ name, help, labelNames: this.guard.labelNames, registers: [registry] });
  }

  inc(values: LabelValues<L>, by = 1): void {
    const checked = this.guard.check(values);
    if (checked) this.counter.inc(checked as never, by);
  }
}

export class GuardedHistogram<L extends string> {
  private readonly guard: LabelGuard<L>;
  private readonly histogram: Histogram<L>;

  constructor(name: string, help: string, labels: Record<L, LabelKind>, buckets: number[]) {
    this.guard = new LabelGuard(name, labels);
    guards.push(this.guard as LabelGuard<string>);
    this.histogram = new Histogram({ name, help, labelNames: this.guard.labelNames, buckets, registers: [registry] });
  }

  observe(values: LabelValues<L>, value: number): void {
    if (!Number.isFinite(value)) return;
    const checked = this.guard.check(values);
    if (checked) this.histogram.observe(checked as never, value);
  }
}

/** A gauge whose value is computed at scrape time; its only labels are closed sets. */
export function scrapeGauge<L extends string>(
  name: string,
  help: string,
  labels: Record<L, readonly string[]>,
  collect: (set: (values: Record<L, string>, value: number) => void, reset: () => void) => Promise<void>,
): Gauge<L> {
  const kinds = Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, closed(v as readonly string[])])) as Record<L, LabelKind>;
  const guard = new LabelGuard(name, kinds);
  const gauge: Gauge<L> = new Gauge({
    name,
    help,
    labelNames: guard.labelNames,
    registers: [registry],
    async collect() {
      await collect(
        (values, value) => {
          const checked = guard.check(values);
          if (checked && Number.isFinite(value)) gauge.set(checked as never, value);
        },
        () => gauge.reset(),
      );
    },
  });
  return gauge;
}

let processMetrics = false;

/** Node process metrics (CPU, memory, event loop, GC): fixed label sets from prom-client. */
export function enableProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
}

/** The exposition text and its content type. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/** Zeroes every metric and forgets seen label values (tests). */
export function resetMetrics(): void {
  registry.resetMetrics();
  for (const g of guards) g.reset();
}
