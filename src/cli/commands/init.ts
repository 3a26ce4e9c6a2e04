import type { CommandModule } from 'yargs';
import { dataHome } from '../../paths';
import { initHome } from '../../setup';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

interface InitArgs extends GlobalArgs {
  home?: string;
  'site-id'?: string;
  'demo-port'?: number;
}

export function initCommand(io: Io): CommandModule<GlobalArgs, InitArgs> {
  return {
    command: 'init',
    describe: 'Create a working data directory: config, endpoint allowlist, development CA and signing keys (keeps what exists)',
    builder: (y) =>
      y
        .option('home', { type: 'string', describe: 'Data directory (default: $EHRBENCH_HOME or ./.ehrbench)' })
        .option('site-id', { type: 'string', describe: 'Short id of this site, recorded in audit events and exports' })
        .option('demo-port', { type: 'number', describe: 'Port of the loopback demo model server (default 18443)' }),
    handler: async (args) => {
      const report = initHome({
        home: args.home ?? dataHome(io.env),
        ...(args['site-id'] ? { siteId: args['site-id'] } : {}),
        ...(args['demo-port'] ? { demoPort: args['demo-port'] } : {}),
      });
      if (args.json) return printJson(io, report);
      io.stdout(`ehrbench data directory: ${report.home}\n`);
      for (const f of report.created) io.stdout(`  created ${f}\n`);
      if (report.kept.length) io.stdout(`  kept ${report.kept.length} existing file(s)\n`);
    },
  };
}
