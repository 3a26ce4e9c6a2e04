/**
 * Errors that reach a user. Their messages are written by ehrbench itself and never quote dataset
 * text, a prompt or a completion: they name a file, a field, a rule or an id, and what to do next.
 */
export class UserError extends Error {
  override readonly name = 'UserError';
  constructor(
    /** Stable, grep-able code such as `config.invalid` or `run.not-found`. */
    readonly code: string,
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** A refusal by a policy: carries the rule that decided, so callers can report and audit it. */
export class PolicyDenied extends UserError {
  constructor(
    readonly rule: string,
    reason: string,
  ) {
    super('policy.denied', `denied by rule ${rule}: ${reason}`, 3);
  }
}

/**
 * Describes any error without its message when the error did not come from ehrbench: messages of
 * drivers and SDKs can echo SQL parameters or response bodies, which may carry patient text.
 */
export function describeError(err: unknown): { code: string; message: string } {
  if (err instanceof UserError) return { code: err.code, message: err.message };
  const e = err as { name?: unknown; code?: unknown; status?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const code = typeof e?.code === 'string' || typeof e?.code === 'number' ? String(e.code) : undefined;
  const status = typeof e?.status === 'number' ? `status ${e.status}` : undefined;
  const parts = [name, code, status].filter(Boolean).join(' ');
  return { code: 'internal', message: `unexpected ${parts} (details withheld: they may quote data; see --verbose)` };
}
