/**
 * A run executed here (`ehrbench run`, `runs resume`, `demo`) that Ctrl-C or SIGTERM stops cleanly,
 * as `ehrbench worker` does: no new call starts, calls in flight finish, leases and endpoint slots are
 * given back and the audit trail is sealed when the app closes; then one line says how to resume.
 * A second Ctrl-C ends the process at once (leases then expire on their own).
 */
import { commandPrefix } from '../command-prefix';
import { UserError } from '../errors';
import type { Io } from './output';

export async function interruptibly<T>(io: Io, fn: (signal: AbortSignal) => Promise<T>, resumeHint: () => string | undefined): Promise<T> {
  const controller = new AbortController();
  const onSignal = () => {
    if (controller.signal.aborted) process.exit(130);
    io.stderr('interrupting: calls in flight finish, leases are given back (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const result = await fn(controller.signal);
    if (controller.signal.aborted) throw interrupted(resumeHint());
    return result;
  } catch (err) {
    if (controller.signal.aborted) throw interrupted(resumeHint());
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

function interrupted(runId: string | undefined): UserError {
  return new UserError('cli.interrupted', runId ? `interrupted; resume with: ${commandPrefix()} runs resume ${runId}` : 'interrupted');
}
