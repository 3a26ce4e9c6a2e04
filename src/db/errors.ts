import { UserError } from '../errors';

/**
 * The database cannot be reached right now: the server restarted, the connection was cut, or it does
 * not accept connections yet. Transient by nature: callers that can wait (workers) retry later
 * instead of failing what they were doing. The message names only where and the error code.
 */
export class DatabaseUnavailable extends UserError {
  constructor(
    where: string,
    readonly reason: string,
  ) {
    super('db.unavailable', `${where}: connection lost or refused (${reason}); retrying later is safe`);
  }
}

/** SQLSTATEs of a server going away: class 08 (connection exception), shutdown, not yet accepting. */
const LOST_SQLSTATE = /^(08...|57P0[1-3]|53300)$/;
/** Socket errors of a peer that is gone or not listening. */
const LOST_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);
/** pg's own fixed messages for a dead connection (never data: they are constants of the driver). */
const LOST_MESSAGE = /^(Connection terminated|Client has encountered a connection error|Client was closed|timeout exceeded when trying to connect)/;

/** The code naming why a connection was lost, or undefined when `err` is not a lost connection. */
export function connectionLossCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code && (LOST_SQLSTATE.test(code) || LOST_ERRNO.has(code))) return code;
  if (typeof e?.message === 'string' && LOST_MESSAGE.test(e.message)) return 'connection-terminated';
  return undefined;
}

/** Whether an error (or what it wraps) means the store was unreachable, so a retry may succeed. */
export function isStoreUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof DatabaseUnavailable) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
