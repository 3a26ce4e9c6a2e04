/**
 * `ehrbench report --run ID | --export ID --html FILE [--model-card FILE]`: one self-contained HTML file
 * (no script, no external reference) for a committee; for an export with an evidence packet, also (or
 * only) its CHAI Applied Model Card XML, written only once it validates against CHAI's schema. A run's report comes through the same operation as `runs show`
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
import { exportReportHtml, modelCard, reportExists, runReportHtml, verifiedBundle, writeReportFile } from '../../report';
import { TEST_ENDPOINT_DESCRIPTION } from '../../setup';
import { CLIENT_OPTIONS, type ClientArgs, isRemote, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

interface ReportArgs extends ClientArgs {
  run?: string;
  export?: string;
  html?: string;
  'model-card'?: string;
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
        .option('html', { type: 'string', describe: 'The HTML file to write (never replaced without --force)' })
        .option('model-card', { type: 'string', describe: "With --export of a bundle with an evidence packet: CHAI's Applied Model Card XML to write (validated against CHAI's schema first)" })
        .option('force', { type: 'boolean', default: false, describe: 'Replace an existing file' })
        .option('public-key', { type: 'string', describe: "With --export: the site's export-signing.pub.pem (default in local mode: the data directory's)" }),
    handler: async (args) => {
      if ((args.run === undefined) === (args.export === undefined)) throw new UserError('cli.usage', 'give either --run ID or --export ID; see --help');
      const card = args['model-card'];
      if (args.html === undefined && card === undefined) throw new UserError('cli.usage', 'give --html FILE (or, with --export, --model-card FILE); see --help');
      if (card !== undefined && args.export === undefined) throw new UserError('cli.usage', '--model-card needs --export ID: a model card comes from an export with an evidence packet; see --help');
      // Refused before anything is read, so an existing file costs no work (and no audited download).
      for (const file of [args.html, card]) if (file !== undefined && !args.force && existsSync(file)) throw reportExists(file);
      let html: string | undefined;
      let xml: string | undefined;
      if (args.run !== undefined) {
        const id = args.run;
        const run = await withClient(args, io, (c) => c.showRun(id), { writes: false });
        html = runReportHtml(run, { writtenOn: new Date().toISOString().slice(0, 10), testEndpointNotice: TEST_ENDPOINT_DESCRIPTION });
      } else {
        const id = args.export as string;
        const key = loadExportPublicKey(publicKeyFile(args, io));
        const files = await withClient(args, io, (c) => c.downloadExport(id), { writes: false });
        const bundle = verifiedBundle(files.bundle, key, id);
        if (args.html !== undefined) html = exportReportHtml(bundle);
        // Made and validated before either file is written: a card that does not validate leaves no file at all.
        if (card !== undefined) xml = await modelCard(bundle);
      }
      if (args.html !== undefined && html !== undefined) writeReportFile(args.html, html, { force: args.force === true });
      if (card !== undefined && xml !== undefined) writeReportFile(card, xml, { force: args.force === true });
      const written = { ...(args.html !== undefined ? { path: args.html } : {}), ...(card !== undefined ? { modelCard: card } : {}) };
      if (args.json) return printJson(io, { ...written, ...(args.run !== undefined ? { runId: args.run } : { exportId: args.export }) });
      if (args.html !== undefined) io.stdout(`wrote report to ${args.html}\n`);
      if (card !== undefined) io.stdout(`wrote model card to ${card} (valid against CHAI's Applied Model Card v0.2 schema)\n`);
    },
  };
}
