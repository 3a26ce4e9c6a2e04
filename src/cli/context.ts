import { userInfo } from 'node:os';
import { openApp, type App } from '../app';
import type { Actor } from '../identity/actor';
import type { Io } from './output';

/** Options every command accepts. */
export interface GlobalArgs {
  config?: string;
  verbose?: boolean;
  json?: boolean;
}

/** Opens the app for one command and always closes it. */
export async function withApp<T>(args: GlobalArgs, io: Io, fn: (app: App) => Promise<T>): Promise<T> {
  const app = await openApp({
    ...(args.config ? { file: args.config } : {}),
    env: io.env,
    consoleLog: !args.json,
    logLevel: args.verbose ? 'debug' : 'warn',
  });
  try {
    return await fn(app);
  } finally {
    await app.close();
  }
}

/**
 * The person at the terminal, in local mode (no daemon): identified by the OS account, acting in the
 * role the command needs. Local mode is for the single-user embedded setup; a site with several people
 * runs the daemon, where roles come from client certificates.
 */
export function localActor(role: Actor['role'] = 'researcher'): Actor {
  return { principal: `local:${userInfo().username}`, role, authMethod: 'local-os-user' };
}
