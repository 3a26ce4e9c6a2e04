/**
 * `ehrbench report --run ID | --export ID --html FILE`: one self-contained HTML file (no script, no
 * external reference) for a committee. A run's report comes through the same operation as `runs show`
 * (locally or with --server), so a reader from whom policy/visibility withholds the figures gets the
 * rule, not the numbers. An export's report comes from its released bundle, fetched as `export
 * download` does (audited as a download) and verified with the site's public key before anything is
 * written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { loadConfig } from '../../config';
import { UserError } from '../../errors';
import { EXPORT_PUBLIC_KEY_FILE, loadExportPublicKey } from '../../export';
import { exportReportHtml, reportExists, runReportHtml, verifiedBundle, writeReportFile } from '../../report';
import { TEST_ENDPOINT_DESCRIPTION } from '../../setup';
import { CLIENT_OPTIONS, type ClientArgs, isRemote, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

interface ReportArgs extends ClientArgs {
  run?: string;
  export?: string;
  html: string;
  force?: boolean;
  'public-key'?: string;
}

/** The export public key: --public-key, or (local mode) the data directory's own. */
function publicKeyFile(args: ReportArgs, io: Io): string {
  if (args['public-key']) return args['public-key'];
  if (isRemote(args, io)) throw new UserError('cli.usage', "report --export with --server needs the site's export-signing.pub.pem: --public-key FILE; see --help");
  return join(loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env }).keysDir, EXPORT_PUBLIC_KEY_FILE);
}

export function reportCommand(io: Io): CommandModule<GlobalArgs, ReportArgs> {
  return {
    command: 'report',
    describe: 'Write one self-contained HTML report (no script, no external reference) of a run or a released export',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .option('run', { type: 'string', describe: 'A run: its summary, figures (if you may see them) and progress picture' })
        .option('export', { type: 'string', describe: 'Or a released export: only what its signed bundle holds, verified first' })
        .option('html', { type: 'string', demandOption: true, describe: 'The HTML file to write (never replaced without --force)' })
        .option('force', { type: 'boolean', default: false, describe: 'Replace an existing file' })
        .option('public-key', { type: 'string', describe: "With --export: the site's export-signing.pub.pem (default in local mode: the data directory's)" }),
    handler: async (args) => {
      if ((args.run === undefined) === (args.export === undefined)) throw new UserError('cli.usage', 'give either --run ID or --export ID; see --help');
      // Refused before anything is read, so an existing file costs no work (and no audited download).
      if (!args.force && existsSync(args.html)) throw reportExists(args.html);
      let html: string;
      if (args.run !== undefined) {
        const id = args.run;
        const run = await withClient(args, io, (c) => c.showRun(id), { writes: false });
        html = runReportHtml(run, { writtenOn: new Date().toISOString().slice(0, 10), testEndpointNotice: TEST_ENDPOINT_DESCRIPTION });
      } else {
        const id = args.export as string;
        const key = loadExportPublicKey(publicKeyFile(args, io));
        const files = await withClient(args, io, (c) => c.downloadExport(id), { writes: false });
        html = exportReportHtml(verifiedBundle(files.bundle, key, id));
      }
      writeReportFile(args.html, html, { force: args.force === true });
      if (args.json) return printJson(io, { path: args.html, ...(args.run !== undefined ? { runId: args.run } : { exportId: args.export }) });
      io.stdout(`wrote report to ${args.html}\n`);
    },
  };
}
