/**
 * Calls over time for one endpoint: the audit trail's endpoint.call events (one before every attempt
 * of a model, judge or probe call, and one for each call refused by a rule; src/calls/gateway.ts),
 * counted per time bucket by outcome, and a stacked bar chart of the counts. The bucketing is pure:
 * the time range and bucket size are arguments, never the clock.
 */
import { UserError } from '../errors';
import { GRID, INK, niceStep, noDataSvg, num, svgDocument, text, textWidth, xmlEscape } from './svg';

/** What the bucketing reads of an audit record: src/audit's AuditRecord (streamRecords) fits. */
export interface CallRecord {
  event_type: string;
  endpoint_id: string | null;
  outcome: string;
  recorded_at: string;
}

export interface CallBucketOptions {
  endpointId: string;
  /** ISO 8601 instants: records at or after `from` and before `to` count. */
  from: string;
  to: string;
  bucketSeconds: number;
}

/** Calls in one bucket by outcome: success (an attempt was made), denied (refused by a rule), failed. */
export interface CallBucket {
  /** ISO 8601, UTC. */
  start: string;
  success: number;
  denied: number;
  failed: number;
}

export interface CallBuckets {
  endpointId: string;
  from: string;
  to: string;
  bucketSeconds: number;
  buckets: CallBucket[];
}

/** At most this many buckets in one picture. */
export const MAX_BUCKETS = 1000;
const OUTCOMES = ['success', 'denied', 'failed'] as const;

function instant(iso: string, what: string): number {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) throw new UserError('picture.range-invalid', `${what} ${JSON.stringify(iso.slice(0, 40))} is not an ISO 8601 time; give e.g. 2025-05-01T00:00:00Z`);
  return t;
}

/** Counts per bucket, fed one record at a time (so a stream of any length needs no array). */
export class CallBucketer {
  private readonly start: number;
  private readonly end: number;
  private readonly step: number;
  private readonly counts: CallBucket[];

  constructor(private readonly opts: CallBucketOptions) {
    this.start = instant(opts.from, 'from');
    this.end = instant(opts.to, 'to');
    if (!(Number.isFinite(opts.bucketSeconds) && opts.bucketSeconds >= 1))
      throw new UserError('picture.range-invalid', `the bucket size ${opts.bucketSeconds} is not a whole number of seconds, at least 1`);
    this.step = Math.floor(opts.bucketSeconds) * 1000;
    if (this.end <= this.start) throw new UserError('picture.range-invalid', `the time range ends (${opts.to}) before it starts (${opts.from}); give a later end`);
    const n = Math.ceil((this.end - this.start) / this.step);
    if (n > MAX_BUCKETS)
      throw new UserError('picture.range-invalid', `${n} buckets of ${opts.bucketSeconds} s from ${opts.from} to ${opts.to}; at most ${MAX_BUCKETS}: give larger buckets or a shorter range`);
    this.counts = Array.from({ length: n }, (_, i) => ({ start: new Date(this.start + i * this.step).toISOString(), success: 0, denied: 0, failed: 0 }));
  }

  add(r: CallRecord): void {
    if (r.event_type !== 'endpoint.call' || r.endpoint_id !== this.opts.endpointId) return;
    const outcome = OUTCOMES.find((o) => o === r.outcome);
    if (!outcome) return;
    const t = Date.parse(r.recorded_at);
    if (!(t >= this.start && t < this.end)) return;
    const bucket = this.counts[Math.floor((t - this.start) / this.step)];
    if (bucket) bucket[outcome] += 1;
  }

  result(): CallBuckets {
    return {
      endpointId: this.opts.endpointId,
      from: new Date(this.start).toISOString(),
      to: new Date(this.end).toISOString(),
      bucketSeconds: this.step / 1000,
      buckets: this.counts.map((b) => ({ ...b })),
    };
  }
}

/** The endpoint's calls per bucket, from audit records (any order; other events and endpoints are skipped). */
export function bucketCalls(records: Iterable<CallRecord>, opts: CallBucketOptions): CallBuckets {
  const b = new CallBucketer(opts);
  for (const r of records) b.add(r);
  return b.result();
}

/** The same from an async stream, e.g. src/audit's streamRecords(db, { type: 'endpoint.call', ... }). */
export async function bucketCallsAsync(records: AsyncIterable<CallRecord>, opts: CallBucketOptions): Promise<CallBuckets> {
  const b = new CallBucketer(opts);
  for await (const r of records) b.add(r);
  return b.result();
}

const SERIES: { outcome: (typeof OUTCOMES)[number]; label: string; fill: string }[] = [
  { outcome: 'success', label: 'sent', fill: '#0b5fa5' },
  { outcome: 'denied', label: 'refused by a rule', fill: '#b35806' },
  { outcome: 'failed', label: 'failed', fill: '#b2182b' },
];

const LEFT = 56;
const TOP = 64;
const PLOT_H = 220;

/** 2025-05-01T10:00:00.000Z -> 2025-05-01 10:00 (seconds only when they are not 0). */
function minute(iso: string): string {
  const s = iso.slice(17, 19);
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}${s && s !== '00' ? `:${s}` : ''}`;
}

/** A bucket's start as a tick label: the day for day-sized buckets, else the day and the minute (UTC). */
function tickLabel(iso: string, bucketSeconds: number): string {
  return bucketSeconds >= 86_400 ? iso.slice(0, 10) : `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
}

export function callsOverTimeSvg(data: CallBuckets, opts: { title?: string } = {}): string {
  const title = opts.title ?? `Calls to ${data.endpointId} over time`;
  const totals = data.buckets.map((b) => b.success + b.denied + b.failed);
  const all = totals.reduce((a, n) => a + n, 0);
  const range = `${minute(data.from)} to ${minute(data.to)} UTC`;
  if (all === 0) return noDataSvg(title, `no call of ${data.endpointId} from ${range}`, 'calls appear here once a run uses the endpoint or someone probes it (ehrbench endpoints probe)');
  const n = data.buckets.length;
  const plotW = Math.max(360, Math.min(880, n * 14));
  const slot = plotW / n;
  const barW = Math.max(1, slot * 0.8);
  const step = niceStep(Math.max(...totals), 4);
  const max = Math.max(step, Math.ceil(Math.max(...totals) / step) * step);
  const bottom = TOP + PLOT_H;
  const subtitle = `${all} call event(s) from ${range}, in buckets of ${data.bucketSeconds} s`;
  const body: string[] = [text(12, 40, subtitle)];
  for (let v = 0; v <= max + step / 2; v += step) {
    const y = bottom - (PLOT_H * v) / max;
    body.push(`<line x1="${LEFT}" y1="${num(y)}" x2="${num(LEFT + plotW)}" y2="${num(y)}" stroke="${GRID}" stroke-width="1"/>`);
    body.push(text(LEFT - 6, y + 4, String(Math.round(v * 1000) / 1000), 'text-anchor="end"'));
  }
  data.buckets.forEach((b, i) => {
    const x = LEFT + i * slot + (slot - barW) / 2;
    let y = bottom;
    const parts: string[] = [];
    for (const s of SERIES) {
      const c = b[s.outcome];
      if (c <= 0) continue;
      const h = (PLOT_H * c) / max;
      y -= h;
      parts.push(`<rect data-series="${s.outcome}" x="${num(x)}" y="${num(y)}" width="${num(barW)}" height="${num(h)}" fill="${s.fill}"/>`);
    }
    if (parts.length) {
      const tip = `${b.start}: ${SERIES.map((s) => `${b[s.outcome]} ${s.label}`).join(', ')}`;
      body.push(`<g><title>${xmlEscape(tip)}</title>${parts.join('')}</g>`);
    }
  });
  body.push(`<line x1="${LEFT}" y1="${bottom}" x2="${num(LEFT + plotW)}" y2="${bottom}" stroke="${INK}" stroke-width="1"/>`);
  // As many tick labels on bucket starts as fit side by side.
  const labelW = textWidth(tickLabel(data.buckets[0]!.start, data.bucketSeconds)) + 12;
  const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(plotW / labelW))));
  for (let i = 0; i < n; i += every) {
    const x = LEFT + i * slot;
    body.push(`<line x1="${num(x)}" y1="${bottom}" x2="${num(x)}" y2="${bottom + 4}" stroke="${INK}" stroke-width="1"/>`);
    body.push(text(x, bottom + 16, tickLabel(data.buckets[i]!.start, data.bucketSeconds), 'text-anchor="middle"'));
  }
  body.push(`<text transform="translate(16,${num(TOP + PLOT_H / 2)}) rotate(-90)" text-anchor="middle">Calls per bucket</text>`);
  let lx = LEFT;
  const ly = bottom + 40;
  const sums = Object.fromEntries(SERIES.map((s) => [s.outcome, data.buckets.reduce((a, b) => a + b[s.outcome], 0)]));
  for (const s of SERIES) {
    const label = `${s.label} ${sums[s.outcome]}`;
    body.push(`<rect x="${num(lx)}" y="${num(ly - 10)}" width="12" height="12" fill="${s.fill}"/>`);
    body.push(text(lx + 18, ly, label));
    lx += 36 + textWidth(label);
  }
  const width = Math.max(LEFT + plotW + 40, textWidth(title, 14) + 24, textWidth(subtitle) + 24);
  const desc = `Calls to ${data.endpointId} from ${range}: ${SERIES.map((s) => `${sums[s.outcome]} ${s.label}`).join(', ')}.`;
  return svgDocument({ width, height: ly + 16, title, desc }, body);
}
