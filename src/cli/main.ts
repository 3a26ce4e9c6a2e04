/**
 * The `ehrbench` command line (yargs). Commands are thin: parse, call a service, print a table or
 * --json. Any error is one line on stderr and a non-zero exit; a stack trace only with --verbose.
 */
import yargs from 'yargs';
import { PolicyDenied, UserError, describeError, errorEntry, safeErrorDetails } from '../errors';
import { DAEMON_VERSION } from '../version';
import type { CommandModule } from 'yargs';
import type { GlobalArgs } from './context';
import { type Io, processIo } from './output';

type CommandFactory = (io: Io) => CommandModule<GlobalArgs, never>;

/**
 * The commands, by the name a user types, each loaded only when used: `ehrbench deid` must not pay for
 * loading the daemon, the database drivers and the model SDK. Without a known command (help, a typo)
 * every command is loaded, so help lists them all and a typo gets a suggestion.
 */
const COMMANDS: Record<string, () => CommandFactory[]> = {
  init: () => [require('./commands/init').initCommand],
  demo: () => [require('./commands/demo').demoCommand],
  'demo-server': () => [require('./commands/demo-server').demoServerCommand],
  run: () => [require('./commands/runs').runCommand],
  runs: () => [require('./commands/runs').runsCommand],
  benchmarks: () => [require('./commands/benchmarks').benchmarksCommand],
  endpoints: () => [require('./commands/endpoints').endpointsCommand],
  db: () => [require('./commands/db').dbCommand],
  audit: () => [require('./commands/audit').auditCommand],
  approvals: () => [require('./commands/approvals').approvalsCommand],
  whoami: () => [require('./commands/whoami').whoamiCommand],
  serve: () => [require('./commands/serve').serveCommand],
  worker: () => [require('./commands/worker').workerCommand],
  pki: () => [require('./commands/pki').pkiCommand],
  leaderboard: () => [require('./commands/leaderboard').leaderboardCommand],
  deid: () => [require('./commands/deid').deidCommand],
  export: () => [require('./commands/export').exportCommand],
  report: () => [require('./commands/report').reportCommand],
  ratings: () => [require('./commands/ratings').ratingsCommand],
};

/** The first word that is not an option: the command asked for. */
function commandName(argv: string[]): string | undefined {
  const values = new Set(['--config']);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (values.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

export function buildCli(argv: string[], io: Io) {
  const name = commandName(argv);
  const factories = name && COMMANDS[name] ? (COMMANDS[name] as () => CommandFactory[])() : Object.values(COMMANDS).flatMap((load) => load());
  let cli = yargs(argv)
    .scriptName('ehrbench')
    .version(DAEMON_VERSION)
    .usage('$0 <command> [options]\n\nSecure on-premise runner for private EHR benchmarks (MedHELM style).')
    .option('config', { type: 'string', global: true, describe: 'Config file (default: $EHRBENCH_HOME/config.json)' })
    .option('json', { type: 'boolean', global: true, describe: 'Print data as JSON' })
    .option('verbose', { type: 'boolean', global: true, describe: 'Debug logging and stack traces on errors' });
  for (const factory of factories) cli = cli.command(factory(io));
  return (
    cli
      // `ehrbench completion >> ~/.bashrc` (or ~/.zshrc): completes commands and options from this help.
      .completion('completion', 'Print a bash/zsh completion script (append it to ~/.bashrc or ~/.zshrc)')
      .demandCommand(1, 'name a command')
      .strict()
      .recommendCommands()
      .exitProcess(false)
      .fail((msg, err) => {
        throw err ?? new UserError('cli.usage', `${msg}; see --help`);
      })
      .wrap(Math.min(120, process.stdout.columns || 100))
  );
}

/** Runs the CLI; returns the exit code instead of exiting, so tests can call it in-process. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const verbose = argv.includes('--verbose');
  const json = argv.includes('--json');
  try {
    await buildCli(argv, io).parseAsync();
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    const { code, message } = describeError(err);
    const rule = err instanceof PolicyDenied ? err.rule : undefined;
    // --json: one JSON object on stderr that scripts can read; otherwise one line.
    if (json) io.stderr(JSON.stringify({ error: code, message, ...(rule ? { rule } : {}) }) + '\n');
    else io.stderr(`ehrbench: ${message}\n`);
    if (verbose && !(err instanceof UserError)) {
      for (const line of safeErrorDetails(err)) io.stderr(`  ${line}\n`);
    }
    if (verbose && err instanceof Error && err.stack) {
      // Frames only: the first line of a foreign error's stack repeats its message, which may quote data.
      io.stderr(err.stack.split('\n').slice(1).join('\n') + '\n');
    }
    // From the catalogue: 2 usage, 3 policy refusal, 4 audit unavailable, 70 internal, else 1.
    return errorEntry(code).exit;
  }
}

export type { GlobalArgs };
