import { openApp, type App } from '../app';
import type { Io } from './output';

/** Options every command accepts. */
export interface GlobalArgs {
  config?: string;
  verbose?: boolean;
  json?: boolean;
}

export interface WithAppOptions {
  /**
   * Whether the command writes (requests, approvals, certificates, runs): only then may opening the
   * store apply pending migrations. A command that reads refuses a store with pending migrations
   * (db.migrations-pending). Said by every command, never guessed from its name.
   */
  writes: boolean;
  /** Print "store: ..." on stderr: commands whose effect depends on which store they reached (pki, audit). */
  announceStore?: boolean;
}

/**
 * Says on stderr which store a command opened (never its URL or password), and warns when the
 * configuration does not pin it: a revocation or a verification on the wrong store looks like success.
 */
export function announceStore(app: App, io: Io, store = true): void {
  if (app.config.database.warning) io.stderr(`warning: ${app.config.database.warning}\n`);
  if (store) io.stderr(`store: ${app.store}\n`);
}

/** Opens the app for one command and always closes it. */
export async function withApp<T>(args: GlobalArgs, io: Io, fn: (app: App) => Promise<T>, opts: WithAppOptions): Promise<T> {
  const app = await openApp({
    ...(args.config ? { file: args.config } : {}),
    env: io.env,
    consoleLog: !args.json,
    logLevel: args.verbose ? 'debug' : 'warn',
    migrate: opts.writes,
  });
  announceStore(app, io, opts.announceStore ?? false);
  try {
    return await fn(app);
  } finally {
    await app.close();
  }
}
