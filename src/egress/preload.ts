/**
 * Foreign code at start-up. The environment check (environment.ts) refuses preload flags in
 * NODE_OPTIONS and process.execArgv, but a preload runs before it and can delete both, then capture
 * prompts in clear text. So ehrbench also refuses to start (rule egress.env.foreign-module) when
 *   - a module in node's module cache lies, by real path, outside the installation: the package root
 *     (its dist/ and node_modules/; under jest, its tests/ and jest itself, all inside it);
 *   - the main module is not a file of the installation (a wrapper script, or code given with -e, -p
 *     or on stdin, none of which enters the module cache); or
 *   - on Linux, the command line or NODE_OPTIONS the process was started with holds a refused node
 *     flag: /proc/self/cmdline and /proc/self/environ are the kernel's copy, which deleting
 *     process.env.NODE_OPTIONS or emptying process.execArgv does not change. This also catches an ES
 *     module preload (--import), which never enters the module cache.
 * What it cannot do: code that runs before ehrbench can also patch fs, or this check. Only the service
 * manager can guarantee a clean start (a fixed command line and environment; SECURITY.md).
 */
import { readFileSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import { UserError } from '../errors';
import { PACKAGE_ROOT } from '../paths';
import type { RuleId } from '../policy';
import { refusedNodeFlag, splitNodeOptions } from './environment';

const FOREIGN_RULE: RuleId = 'egress.env.foreign-module';

export interface ForeignCodeSources {
  /** node's module cache; default this process's (require.cache). */
  cache?: Record<string, unknown>;
  /** The installation; default the package root. */
  root?: string;
  /** The main module's file, null when the code came from the command line (-e, -p, stdin); default require.main. */
  mainModule?: string | null;
  /** The process's argv as the kernel holds it; default /proc/self/cmdline on Linux. */
  startCommandLine?: string[];
  /** NODE_OPTIONS as the process was started with it; default from /proc/self/environ on Linux. */
  startNodeOptions?: string;
}

function realPath(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p; // a file deleted since it was loaded is judged by the name it was loaded under
  }
}

function within(p: string, dir: string): boolean {
  const rel = relative(dir, p);
  return rel === '' || (!isAbsolute(rel) && rel.split(sep)[0] !== '..');
}

/** The modules of `cache` outside `root`, by real path (a cache key that is not a path counts as outside). */
export function foreignModules(cache: Record<string, unknown>, root: string = PACKAGE_ROOT): string[] {
  const installation = realPath(root);
  return Object.keys(cache)
    .map((key) => (isAbsolute(key) ? realPath(key) : key))
    .filter((path) => !isAbsolute(path) || !within(path, installation));
}

/** A NUL-separated /proc file of this process; undefined off Linux. On Linux an unreadable one refuses. */
function procFile(name: 'cmdline' | 'environ'): string[] | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    return readFileSync(`/proc/self/${name}`, 'latin1').split('\0').slice(0, -1);
  } catch (err) {
    throw new UserError(
      'egress.unsafe-environment',
      `/proc/self/${name} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}), so a preload cannot be ruled out; run ehrbench with /proc mounted (rule ${FOREIGN_RULE})`,
    );
  }
}

/** Throws (code egress.unsafe-environment, rule egress.env.foreign-module) when foreign code may be loaded. */
export function assertNoForeignCode(sources: ForeignCodeSources = {}): void {
  const root = sources.root ?? PACKAGE_ROOT;
  const foreign = foreignModules(sources.cache ?? require.cache, root);
  if (foreign.length > 0) {
    const more = foreign.length > 1 ? ` and ${foreign.length - 1} more` : '';
    throw new UserError(
      'egress.unsafe-environment',
      `node loaded ${foreign[0]}${more}, outside the installation ${root}, before ehrbench started; start it without preloads (NODE_OPTIONS, --require, --import) (rule ${FOREIGN_RULE})`,
    );
  }
  const main = sources.mainModule === undefined ? (require.main?.filename ?? null) : sources.mainModule;
  if (main === null || foreignModules({ [main]: true }, root).length > 0) {
    const what = main === null ? 'code from its command line (-e, -p or stdin)' : main;
    throw new UserError('egress.unsafe-environment', `node runs ${what}, not a script of the installation ${root}; start ehrbench as bin/ehrbench.js (rule ${FOREIGN_RULE})`);
  }
  // The whole command line: where node's options end is not marked, and none of ehrbench's options
  // has a refused flag's name (yargs refuses unknown options anyway).
  const argv = sources.startCommandLine ?? procFile('cmdline');
  const fromArgv = argv && refusedNodeFlag(argv.slice(1));
  if (fromArgv) {
    throw new UserError('egress.unsafe-environment', `node was started with ${fromArgv.flag}, which ${fromArgv.why}; start ehrbench without it (rule ${FOREIGN_RULE})`);
  }
  const options =
    sources.startNodeOptions ??
    procFile('environ')
      ?.find((v) => v.startsWith('NODE_OPTIONS='))
      ?.slice('NODE_OPTIONS='.length);
  const fromOptions = options ? refusedNodeFlag(splitNodeOptions(options)) : undefined;
  if (fromOptions) {
    throw new UserError('egress.unsafe-environment', `NODE_OPTIONS held ${fromOptions.flag} when node started, which ${fromOptions.why}; remove it before starting ehrbench (rule ${FOREIGN_RULE})`);
  }
}
