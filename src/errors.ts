/**
 * Errors that reach a user. Their messages are written by ehrbench itself and never quote dataset
 * text, a prompt or a completion: they name a file, a field, a rule or an id, and what to do next.
 * Each carries a code of the catalogue (./error-codes.ts), which gives its HTTP status and exit code.
 */
import { type ErrorCode, errorEntry } from './error-codes';
import type { RuleId } from './policy';

export { ERRORS, errorEntry, isErrorCode } from './error-codes';
export type { ErrorCode, ErrorEntry } from './error-codes';

export class UserError extends Error {
  override readonly name = 'UserError';
  /**
   * Stable, grep-able code of the catalogue, such as `config.invalid` or `run.not-found`. A code
   * computed at run time is not checked by tsc; errorEntry() answers an unregistered one as internal.
   */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.code = code;
  }

  /** The CLI's exit code, from the catalogue (the daemon's HTTP status is `errorEntry(code).status`). */
  get exitCode(): number {
    return errorEntry(this.code).exit;
  }
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
