/**
 * The `ehrbench` command line (yargs). Commands are thin: parse, call a service, print a table or
 * --json. Any error is one line on stderr and a non-zero exit; a stack trace only with --verbose.
 */
import yargs from 'yargs';
import { UserError, describeError } from '../errors';
import { DAEMON_VERSION } from '../version';
import { auditCommand } from './commands/audit';
import { benchmarksCommand } from './commands/benchmarks';
import { dbCommand } from './commands/db';
import { deidCommand } from './commands/deid';
import { demoCommand } from './commands/demo';
import { endpointsCommand } from './commands/endpoints';
import { exportCommand } from './commands/export';
import { initCommand } from './commands/init';
import { leaderboardCommand } from './commands/leaderboard';
import { approvalsCommand } from './commands/approvals';
import { pkiCommand } from './commands/pki';
import { serveCommand } from './commands/serve';
import { whoamiCommand } from './commands/whoami';
import { workerCommand } from './commands/worker';
import { runCommand, runsCommand } from './commands/runs';
import type { GlobalArgs } from './context';
import { type Io, processIo } from './output';

export function buildCli(argv: string[], io: Io) {
  return yargs(argv)
    .scriptName('ehrbench')
    .version(DAEMON_VERSION)
    .usage('$0 <command> [options]\n\nSecure on-premise runner for private EHR benchmarks (MedHELM style).')
    .option('config', { type: 'string', global: true, describe: 'Config file (default: $EHRBENCH_HOME/config.json)' })
    .option('json', { type: 'boolean', global: true, describe: 'Print data as JSON' })
    .option('verbose', { type: 'boolean', global: true, describe: 'Debug logging and stack traces on errors' })
    .command(initCommand(io))
    .command(demoCommand(io))
    .command(runCommand(io))
    .command(runsCommand(io))
    .command(benchmarksCommand(io))
    .command(endpointsCommand(io))
    .command(dbCommand(io))
    .command(auditCommand(io))
    .command(approvalsCommand(io))
    .command(whoamiCommand(io))
    .command(serveCommand(io))
    .command(workerCommand(io))
    .command(pkiCommand(io))
    .command(leaderboardCommand(io))
    .command(deidCommand(io))
    .command(exportCommand(io))
    .demandCommand(1, 'name a command; see --help')
    .strict()
    .recommendCommands()
    .exitProcess(false)
    .fail((msg, err) => {
      throw err ?? new UserError('cli.usage', `${msg}; see --help`, 2);
    })
    .wrap(Math.min(120, process.stdout.columns || 100));
}

/** Runs the CLI; returns the exit code instead of exiting, so tests can call it in-process. */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  const verbose = argv.includes('--verbose');
  try {
    await buildCli(argv, io).parseAsync();
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    const { message } = describeError(err);
    io.stderr(`ehrbench: ${message}\n`);
    if (verbose && err instanceof Error && err.stack) {
      // Frames only: the first line of a foreign error's stack repeats its message, which may quote data.
      io.stderr(err.stack.split('\n').slice(1).join('\n') + '\n');
    }
    return err instanceof UserError ? err.exitCode : 70;
  }
}

export type { GlobalArgs };
