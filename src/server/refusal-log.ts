/**
 * Log lines for refusals that come before any request (a failed TLS handshake, a connection over a
 * cap): a flood of them must not flood the log. At most LOG_LIMIT lines per reason and minute, then
 * one line with how many were not logged; the metrics that count them stay exact.
 */
import type { Logger, LogFields } from '../log';

const LOG_LIMIT = 100;
const LOG_WINDOW_MS = 60_000;

/** A logger of `event` lines, limited per reason; `<event>.not-logged` says how many were dropped. */
export function refusalLogger(logger: Logger, event: string, now: () => number = Date.now): (reasonCode: string, fields: LogFields, level: 'warn' | 'info') => void {
  const windows = new Map<string, { startedAt: number; logged: number; suppressed: number }>();
  return (reasonCode, fields, level) => {
    const t = now();
    let w = windows.get(reasonCode);
    if (!w || t - w.startedAt >= LOG_WINDOW_MS) {
      if (w?.suppressed) logger.warn(`${event}.not-logged`, { reasonCode, count: w.suppressed });
      w = { startedAt: t, logged: 0, suppressed: 0 };
      windows.set(reasonCode, w);
    }
    if (w.logged >= LOG_LIMIT) {
      w.suppressed += 1;
      return;
    }
    w.logged += 1;
    logger[level](event, { ...fields, reasonCode });
  };
}
