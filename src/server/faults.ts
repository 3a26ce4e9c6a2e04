/**
 * Faults of the site (its configuration, policy files, keys) met while serving a request: the client
 * learns only that the daemon cannot serve it now (service.unavailable, 503); the operators learn
 * the file and the field from the daemon's log. The messages of these errors name server paths and
 * fields, which are none of a researcher's business and tell an attacker how the host is laid out.
 */
import { faultLocation, SITE_FAULTS, UserError } from '../errors';

export { faultLocation } from '../errors';
import type { Logger } from '../log';

export const SERVICE_UNAVAILABLE_MESSAGE = 'the daemon cannot serve requests right now; its operators have been told';

/** A fault is logged again after this long, not on every request it spoils. */
const RELOG_MS = 60_000;

export function isSiteFault(err: unknown): err is UserError {
  return err instanceof UserError && SITE_FAULTS.has(err.code);
}

/** Logs each distinct site fault once a minute while it lasts: enough for the operators, no flood. */
export class SiteFaultLog {
  private readonly logged = new Map<string, number>();

  constructor(
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  report(err: UserError, request: { method: string; route: string }): void {
    const where = faultLocation(err.message);
    const key = `${err.code}\u0000${where.file ?? ''}\u0000${where.field ?? ''}`;
    const now = this.clock();
    const last = this.logged.get(key);
    if (last !== undefined && now - last < RELOG_MS) return;
    this.logged.set(key, now);
    this.logger.error('server.site-fault', { errorCode: err.code, ...where, method: request.method, route: request.route });
  }
}
