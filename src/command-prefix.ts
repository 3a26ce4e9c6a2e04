/**
 * How a hint names the command, in the form that works for the person reading it: `ehrbench` when
 * this process was started through an `ehrbench` on their PATH (a global install, `npm link`), else
 * `npx ehrbench` (a clone after `npm ci`, `node bin/ehrbench.js`, `npm run demo`). Every hint the CLI,
 * an error or the daemon's log prints goes through `command()`.
 *
 * Decided once per process, without a shell: the PATH is walked as the shell would walk it, and the
 * first `ehrbench` found must be the script this process runs (both resolved through their symlinks).
 * The `node_modules/.bin` folders npm and npx put on the PATH of what they start are not the user's.
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import { delimiter, join, resolve, sep } from 'node:path';

const NAME = 'ehrbench';

let prefix: string | undefined;

function realpath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** The first executable `ehrbench` on the PATH, as the shell finds it; npm's own bin folders are skipped. */
function onPath(env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir || resolve(dir).endsWith(`${sep}node_modules${sep}.bin`)) continue;
    const file = join(dir, NAME);
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      continue;
    }
  }
  return undefined;
}

/** `ehrbench` or `npx ehrbench`, for this process (or for the given script and environment, for tests). */
export function commandPrefix(script: string | undefined = process.argv[1], env: NodeJS.ProcessEnv = process.env): string {
  const own = script === process.argv[1] && env === process.env;
  if (own && prefix !== undefined) return prefix;
  const running = script ? realpath(script) : undefined;
  const found = onPath(env);
  const result = running !== undefined && found !== undefined && realpath(found) === running ? NAME : `npx ${NAME}`;
  if (own) prefix = result;
  return result;
}

/** A command line to type, e.g. `command('runs resume ' + id)` -> "npx ehrbench runs resume <id>". */
export function command(rest: string): string {
  return `${commandPrefix()} ${rest}`;
}
