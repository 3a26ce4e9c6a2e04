/**
 * Errors that reach a user. Their messages are written by ehrbench itself and never quote dataset
 * text, a prompt or a completion: they name a file, a field, a rule or an id, and what to do next.
 * Each carries a code of the catalogue (./error-codes.ts), which gives its HTTP status and exit code.
 */
import { type ErrorCode, errorEntry } from './error-codes';
import type { RuleId } from './policy';

export { ERRORS, errorEntry, isErrorCode, SITE_FAULTS } from './error-codes';
export type { ErrorCode, ErrorEntry } from './error-codes';

export class UserError extends Error {
  override readonly name = 'UserError';
  /**
   * Stable, grep-able code of the catalogue, such as `config.invalid` or `run.not-found`. A code
   * computed at run time is not checked by tsc; errorEntry() answers an unregistered one as internal.
   */
  readonly code: ErrorCode;
  /**
   * For a site fault (SITE_FAULTS) met while serving a request about one object: what the daemon may
   * tell the requester instead of its generic 503 line. The object's id and what to expect, never a
   * server path or field (those are in `message`, for the operators' log and the host's CLI).
   */
  readonly forRequester: string | undefined;

  constructor(code: ErrorCode, message: string, opts: { forRequester?: string } = {}) {
    super(message);
    this.code = code;
    this.forRequester = opts.forRequester;
  }

  /** The CLI's exit code, from the catalogue (the daemon's HTTP status is `errorEntry(code).status`). */
  get exitCode(): number {
    return errorEntry(this.code).exit;
  }
}

/**
 * The file and JSON field an ehrbench error message starts with ("FILE: /a/b: problem"): what the
 * operators' log says of a broken file, without the rest of the message.
 */
export function faultLocation(message: string): { file?: string; field?: string } {
  const m = /^(\/[^\s:;]+): (?:(\/[^\s:;]*):)?/.exec(message);
  if (!m) return {};
  return { file: m[1] as string, ...(m[2] ? { field: m[2] } : {}) };
}

/**
 * The same site fault, telling the requester `forRequester` (which names the object they asked for)
 * rather than the generic 503 line. A new error: the one thrown may be shared (a broken file's).
 */
export function siteFaultFor(err: UserError, forRequester: string): UserError {
  const named = new UserError(err.code, err.message, { forRequester });
  named.stack = err.stack;
  return named;
}

/** A refusal by a policy: carries the rule of the registry that decided, so callers can report and audit it. */
export class PolicyDenied extends UserError {
  /** The rule that refused (a rule computed at run time is checked by the tests, not by tsc). */
  readonly rule: RuleId;

  constructor(rule: RuleId, reason: string) {
    super('policy.denied', `denied by rule ${rule}: ${reason}`);
    this.rule = rule;
  }
}

/**
 * Describes any error without its message when the error did not come from ehrbench: messages of
 * drivers and SDKs can echo SQL parameters or response bodies, which may carry patient text.
 */
export function describeError(err: unknown): { code: ErrorCode; message: string } {
  if (err instanceof UserError) return { code: err.code, message: err.message };
  const e = err as { name?: unknown; code?: unknown; status?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const code = typeof e?.code === 'string' || typeof e?.code === 'number' ? String(e.code) : undefined;
  const status = typeof e?.status === 'number' ? `status ${e.status}` : undefined;
  const parts = [name, code, status].filter(Boolean).join(' ');
  return { code: 'internal', message: `unexpected ${parts} (details withheld: they may quote data; see --verbose)` };
}

/**
 * What may be said of a foreign error beyond its class and code: the system call, port and address
 * of a network or file error, the SQLSTATE, constraint, table and column of a database error. Names
 * and numbers only; never a message, a detail text or a parameter (they may quote data).
 */
export function safeErrorDetails(err: unknown): string[] {
  const out: string[] = [];
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as Record<string, unknown>;
    const fields: [string, unknown][] = [
      ['syscall', x.syscall],
      ['errno', typeof x.errno === 'number' ? x.errno : undefined],
      ['code', x.code],
      ['port', x.port],
      ['address', typeof x.address === 'string' && /^[0-9a-fA-F:.]+$/.test(x.address) ? x.address : undefined],
      ['constraint', x.constraint],
      ['table', x.table],
      ['column', x.column],
      ['routine', x.routine],
    ];
    const line = fields
      .filter(([, v]) => (typeof v === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(v)) || typeof v === 'number')
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(' ');
    if (line) out.push(`${depth === 0 ? '' : 'cause: '}${typeof x.name === 'string' ? x.name : 'Error'} ${line}`);
  }
  return out;
}
