/**
 * Refused identities, rate-limited and aggregated before they reach the audit trail. A caller whose
 * certificate is refused never becomes a principal, so the per-principal limiter never sees it; this
 * one does. Each refusal counts against its client address and against the certificate presented; past
 * `max` refusals of either in a window it is answered 429 instead of 403.
 *
 * The trail gets one event per window, not one per request: per (rule, address, certificate) the first
 * refusal of a window is audited at once (detail.count 1), the further ones are counted and written as
 * one event with detail.count (and detail.rateLimited, how many of them were answered 429) when the
 * window closes (swept every second), at the next refusal after it, or when the daemon stops. The
 * counts of a key's events add up to its refusals. A window starts at a key's first refusal.
 *
 * Accepted requests are never counted here, so a flood of refusals from a shared address (NAT, a
 * jump host) does not lock out the people behind it who hold a valid certificate.
 */
import type { AuditEventInput } from '../audit';
import { type Actor, serviceActor } from '../identity';
import type { RuleId } from '../policy';

export interface Refusal {
  rule: RuleId;
  /** ehrbench's own short reason (no request data). */
  reason: string;
  /** The client's address, as the audit trail may hold it. */
  address: string;
  /** The presented certificate, when there was one. */
  certificate?: { fingerprint: string; serial: string; issuerFingerprint: string };
  /** Whose certificate it is, when it maps to a principal (revoked, unrecorded): the event's actor. */
  holder?: Actor;
}

export interface DenialLimiterOptions {
  /** Refusals per address and per certificate in a window before 429. */
  max: number;
  windowMs: number;
  /** Writes an event (the audit trail); a failure is the trail's to report, the request is refused anyway. */
  record: (event: AuditEventInput) => Promise<void>;
  now?: () => number;
}

interface Counter {
  startedAt: number;
  count: number;
}

interface Pending {
  startedAt: number;
  refusal: Refusal;
  further: number;
  rateLimited: number;
}

/** Keys kept per map at most; beyond, refusals share one key (and so one limit: fail closed). */
const MAX_KEYS = 10_000;
const OVERFLOW = '(overflow)';

export class DenialLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly pending = new Map<string, Pending>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly now: () => number;

  constructor(private readonly opts: DenialLimiterOptions) {
    this.now = opts.now ?? Date.now;
    this.sweeper = setInterval(() => void this.sweep(), Math.min(1000, opts.windowMs));
    this.sweeper.unref();
  }

  /** Counts a refusal and audits it (or its window's count); true when it is over the limit: answer 429. */
  async refused(refusal: Refusal): Promise<boolean> {
    const now = this.now();
    const byAddress = this.hit(`address ${refusal.address}`, now);
    const byCertificate = refusal.certificate ? this.hit(`certificate ${refusal.certificate.fingerprint}`, now) : 0;
    const limited = Math.max(byAddress, byCertificate) > this.opts.max;
    await this.aggregate(refusal, limited, now);
    return limited;
  }

  /** Writes every pending count and stops the sweeper (the daemon stops). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.pending.values()];
    this.pending.clear();
    this.counters.clear();
    for (const p of all) await this.writeCount(p);
  }

  private hit(key: string, now: number): number {
    const slot = this.slot(this.counters, key);
    let counter = this.counters.get(slot);
    if (!counter || this.expired(counter.startedAt, now)) {
      counter = { startedAt: now, count: 0 };
      this.counters.set(slot, counter);
    }
    return ++counter.count;
  }

  private async aggregate(refusal: Refusal, limited: boolean, now: number): Promise<void> {
    const key = this.slot(this.pending, `${refusal.rule} ${refusal.address} ${refusal.certificate?.fingerprint ?? '-'}`);
    const open = this.pending.get(key);
    if (open && !this.expired(open.startedAt, now)) {
      open.further += 1;
      if (limited) open.rateLimited += 1;
      return;
    }
    // The map changes before any await, so concurrent refusals of one key open one window only.
    const own = key === OVERFLOW ? { rule: refusal.rule, reason: 'refusals from more addresses and certificates than are tracked', address: '' } : refusal;
    this.pending.set(key, { startedAt: now, refusal: own, further: 0, rateLimited: 0 });
    if (open) await this.writeCount(open);
    await this.write(own, 1, limited ? 1 : 0, own.reason);
  }

  /** Writes the counts of closed windows and forgets closed counters. */
  private async sweep(): Promise<void> {
    const now = this.now();
    for (const [key, c] of this.counters) if (this.expired(c.startedAt, now)) this.counters.delete(key);
    const closed: Pending[] = [];
    for (const [key, p] of this.pending) {
      if (!this.expired(p.startedAt, now)) continue;
      this.pending.delete(key);
      closed.push(p);
    }
    for (const p of closed) await this.writeCount(p);
  }

  private async writeCount(p: Pending): Promise<void> {
    if (p.further === 0) return;
    const seconds = Math.round(this.opts.windowMs / 1000);
    await this.write(p.refusal, p.further, p.rateLimited, `${p.further} further refusal(s) within ${seconds} s of the first (${p.rateLimited} answered 429)`);
  }

  private async write(refusal: Refusal, count: number, rateLimited: number, reason: string): Promise<void> {
    const cert = refusal.certificate;
    await this.opts
      .record({
        type: 'access.denied',
        action: 'E',
        outcome: 'denied',
        rule: refusal.rule,
        reason: reason.slice(0, 200),
        actor: refusal.holder ?? serviceActor('daemon'),
        ...(refusal.address ? { subject: { address: refusal.address } } : {}),
        detail: {
          count,
          rateLimited,
          windowSeconds: Math.round(this.opts.windowMs / 1000),
          ...(cert ? { certificate: cert.fingerprint, serial: cert.serial, issuer: cert.issuerFingerprint } : {}),
        },
      })
      .catch(() => undefined);
  }

  private expired(startedAt: number, now: number): boolean {
    return now - startedAt >= this.opts.windowMs;
  }

  private slot(map: Map<string, unknown>, key: string): string {
    return map.has(key) || map.size < MAX_KEYS ? key : OVERFLOW;
  }
}
