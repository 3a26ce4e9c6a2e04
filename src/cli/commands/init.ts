import { commandPrefix } from '../../command-prefix';
import { join, resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { dataHome } from '../../paths';
import { initHome, type InitReport } from '../../setup';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

interface InitArgs extends GlobalArgs {
  home?: string;
  'site-id'?: string;
  'demo-port'?: number;
  database?: 'embedded' | 'postgres';
  'test-endpoints'?: boolean;
  force?: boolean;
  'new-audit-keys'?: boolean;
}

/**
 * What to type next, in the order a newcomer needs it. Outside the default data directory the commands
 * need it named, so the first line says how.
 */
function nextSteps(report: InitReport, env: NodeJS.ProcessEnv): string[] {
  const home = resolve(report.home);
  return [
    'next steps:',
    ...(home !== dataHome(env) ? [`  export EHRBENCH_HOME=${home}     (or pass --config ${join(home, 'config.json')})`] : []),
    ...[
      ['demo', 'the public benchmarks end to end against a loopback stand-in'],
      ['benchmarks list', 'the catalog, and which benchmarks need your data'],
      ...(report.testEndpoints ? [['demo-server', 'serve the test endpoints (loopback stand-in) in the foreground']] : []),
      ['pki init', `the site CA and the daemon's certificate; then: ${commandPrefix()} pki issue`],
      ['serve', 'the daemon: HTTPS with mutual TLS, and workers'],
    ].map(([command, what]) => `  ${`${commandPrefix()} ${command}`.padEnd(29)} ${what}`),
  ];
}

export function initCommand(io: Io): CommandModule<GlobalArgs, InitArgs> {
  return {
    command: 'init',
    describe: 'Create a working data directory: config, endpoint allowlist, development CA and signing keys (keeps what exists)',
    builder: (y) =>
      y
        .option('home', { type: 'string', describe: 'Data directory (default: $EHRBENCH_HOME or ./.ehrbench)' })
        .option('site-id', { type: 'string', describe: 'Short id of this site, recorded in audit events and exports' })
        .option('demo-port', { type: 'number', describe: 'Port of the loopback demo model server (default 18443)' })
        .option('test-endpoints', {
          type: 'boolean',
          describe: 'Also add test endpoints test-public, test-approval-required, test-private (loopback stand-in of "ehrbench demo-server", never real data) to the endpoint policy',
        })
        .option('new-audit-keys', {
          type: 'boolean',
          describe: 'On a site whose audit keys are lost for good (its witness holds checkpoints): make new ones. Read "A lost keys folder" in deploy/README.md first',
        })
        .option('force', { type: 'boolean', describe: 'With --site-id on an existing directory: rewrite site.id in config.json (nothing else; keys are never replaced)' })
        .option('database', {
          choices: ['embedded', 'postgres'] as const,
          default: 'embedded' as const,
          describe: 'The store config.json pins: embedded (PGlite in the data directory) or postgres (URL from EHRBENCH_DATABASE_URL)',
        }),
    handler: async (args) => {
      const report = initHome({
        home: args.home ?? dataHome(io.env),
        ...(args['site-id'] ? { siteId: args['site-id'] } : {}),
        ...(args['demo-port'] ? { demoPort: args['demo-port'] } : {}),
        ...(args.database ? { database: args.database } : {}),
        ...(args['test-endpoints'] ? { testEndpoints: true } : {}),
        ...(args.force ? { force: true } : {}),
        ...(args['new-audit-keys'] ? { newAuditKeys: true } : {}),
      });
      if (args.json) return printJson(io, report);
      io.stdout(`ehrbench data directory: ${report.home}\n`);
      for (const f of report.created) io.stdout(`  created ${f}\n`);
      for (const f of report.updated) io.stdout(`  updated ${f}\n`);
      if (report.kept.length) io.stdout(`  kept ${report.kept.length} existing file(s)\n`);
      if (report.testEndpoints) io.stdout(`  test endpoints: ${report.testEndpoints.join(', ')} (TEST: loopback stand-in, never real data)\n`);
      io.stdout(`\n${nextSteps(report, io.env).join('\n')}\n`);
    },
  };
}
