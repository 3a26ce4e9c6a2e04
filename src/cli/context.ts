import { openApp, type App } from '../app';
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
