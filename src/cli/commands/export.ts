/**
 * `ehrbench export`: request (researcher) -> show (compliance reviews the preview) -> release
 * (compliance, never the requester) -> download; `verify` checks a bundle anywhere, with only the
 * site's public key (no database, no configuration).
 */
import { commandPrefix } from '../../command-prefix';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { UserError } from '../../errors';
import { formatSchemaErrors, validatorFor } from '../../schema';
import { type ExportContent, type ExportResult, type MetricCell, type MetricDisparity, type Count, helmFileProblems, loadExportPublicKey, verifyBundle, writeExportFiles } from '../../export';
import type { ExportDownload, ExportView } from '../../operations';
import { CLIENT_OPTIONS, type ClientArgs, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';

const list = (v: string[] | undefined) =>
  (v ?? [])
    .flatMap((x) => x.split(','))
    .map((x) => x.trim())
    .filter(Boolean);

/** The preview as stored: canonical JSON that the preview schema accepts (checked, not trusted). */
function previewOf(view: ExportView): ExportContent {
  let parsed: unknown;
  try {
    parsed = JSON.parse(view.preview);
  } catch {
    throw new UserError('export.preview-invalid', `export ${view.exportId}: the preview is not JSON`);
  }
  const validate = validatorFor('api/export-preview.schema.json');
  if (!validate(parsed)) throw new UserError('export.preview-invalid', `export ${view.exportId}: the preview does not match its schema (${formatSchemaErrors(validate.errors).join('; ')})`);
  return parsed as ExportContent;
}

const count = (c: Count): string => ('suppressed' in c ? `suppressed (${c.suppressed})` : c.high === 0 ? '0' : `${c.low}-${c.high}`);
const metric = (m: MetricCell): [string, string, string] =>
  'value' in m ? [m.value.toFixed(3), m.ci95 ? `${m.ci95.low.toFixed(3)}-${m.ci95.high.toFixed(3)}` : '-', count(m.n)] : [`suppressed (${m.suppressed})`, '-', '-'];

/** "exact_match: worst night, best day; ratio to best: day 1.00, night 0.78 (outside 0.8-1.25)". */
export function disparityLine(d: MetricDisparity): string {
  const ratios = d.ratios.filter((x) => x.ratio !== null).map((x) => `${x.label} ${(x.ratio as number).toFixed(2)}${x.flagged ? ' (outside 0.8-1.25)' : ''}`);
  return `${d.metric}: worst ${d.worst}, best ${d.best} (${d.lowerIsBetter ? 'lower' : 'higher'} is better); ratio to best: ${ratios.join(', ') || 'none (best is 0)'}`;
}

function printResult(io: Io, r: ExportResult): void {
  io.stdout(`\n${r.benchmark.id} v${r.benchmark.version} (${r.benchmark.tier}) on ${r.model.endpointId}${r.model.model ? ` / ${r.model.model}` : ''}: n ${count(r.n)}, run ${r.runId}\n`);
  io.stdout(
    formatTable(
      ['metric', 'value', '95% CI', 'n'],
      r.metrics.map((m) => [`${m.name}${m.name === r.mainMetric ? ' (main)' : ''}`, ...metric(m)]),
    ),
  );
  for (const sg of r.subgroups) {
    io.stdout(`  subgroup ${sg.field}${sg.stratum ? ' (site stratum)' : ''}:\n`);
    const rows: string[][] = [];
    for (const c of sg.cells) {
      if ('suppressed' in c) rows.push([c.label, `suppressed (${c.suppressed})`, '', '', '']);
      else if (c.n.high === 0) rows.push([c.label, '0', '', '', '']);
      else for (const m of c.metrics) rows.push([c.label, count(c.n), m.name, ...metric(m).slice(0, 2)]);
    }
    const table = formatTable(['label', 'n', 'metric', 'value', '95% CI'], rows);
    io.stdout(
      table
        .split('\n')
        .map((line) => (line ? `    ${line}` : line))
        .join('\n'),
    );
    for (const d of sg.disparity ?? []) io.stdout(`    ${disparityLine(d)}\n`);
  }
  if (r.usage)
    io.stdout(
      `  tokens ~${r.usage.promptTokens} in, ~${r.usage.completionTokens} out; estimated cost ${r.usage.estimatedCostUsd === null ? 'unknown (no price)' : `$${r.usage.estimatedCostUsd.toFixed(2)}`}\n`,
    );
}

function printExport(io: Io, view: ExportView): void {
  const c = previewOf(view);
  io.stdout(
    [
      `export ${view.exportId}: ${view.state}${view.releasedBy ? ` by ${view.releasedBy} at ${view.releasedAt}` : ` (awaits a compliance officer: "${commandPrefix()} export release ${view.exportId}")`}`,
      `  requested by ${view.requestedBy} on ${c.requestedOn}; ${c.runIds.length} run(s); tier ${c.tier}${c.irbProtocol ? `; IRB protocol ${c.irbProtocol}` : ''}`,
      `  disclosure: k = ${c.disclosure.k}, counts as ranges of ${c.disclosure.countRangeWidth}, complementary suppression, ${'valueResolution' in c.disclosure ? `values to 1/D with D <= the low end of the range (at most ${c.disclosure.valueDecimals} decimals), intervals for the range` : `${c.disclosure.valueDecimals} decimals`}`,
      `  content sha256 ${view.contentSha256}${view.bundleSha256 ? `; bundle sha256 ${view.bundleSha256}` : ''}`,
      ...mixedDataLines(view).map((l) => `  ${l}`),
      `  This is exactly what a release signs and writes:`,
    ].join('\n') + '\n',
  );
  for (const r of c.results) printResult(io, r);
}

function viewJson(view: ExportView): unknown {
  return { ...view, preview: previewOf(view) };
}

/** Writes a copy of released files under DIR/<export id>/, all or nothing. */
function writeCopy(out: string | undefined, files: ExportDownload): string | undefined {
  if (!out) return undefined;
  return writeExportFiles(out, { exportId: files.exportId, bundle: files.bundle, helm: files.helm });
}

/** What an export says of runs of one benchmark that read different data (allowed by its requester). */
function mixedDataLines(view: ExportView): string[] {
  const content = JSON.parse(view.preview) as Partial<ExportContent>;
  const mixed = content.mixedDataRevisions ?? [];
  const pins = (content.mixedPins ?? []).map((b) => `  ${b.benchmarkId}: runs that differ in ${b.differs.join(', ')} (each result carries its pins)`);
  const pinLines = pins.length ? ['compared across different pins (--allow-mixed-data):', ...pins] : [];
  if (mixed.length === 0) return pinLines;
  return [
    ...pinLines,
    'compared across data revisions (--allow-mixed-data): these runs of one benchmark read different data',
    ...mixed.map((b) => `  ${b.benchmarkId}: ${b.runs.map((r) => `run ${r.runId} data ${r.revision === 'unknown' ? 'unknown' : r.revision.slice(0, 12)}`).join(', ')}`),
  ];
}

export function exportCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'export <command>',
    describe: 'Aggregate-only exports: request, show, release, list, download, verify',
    builder: (y) =>
      y
        .options(CLIENT_OPTIONS)
        .command<ClientArgs & { runs: string[]; 'allow-mixed-data'?: boolean; packet?: boolean }>({
          command: 'request',
          describe: 'Ask to release the aggregates of your own completed runs',
          builder: (b) =>
            b
              .option('runs', { type: 'string', array: true, demandOption: true, describe: 'Run ids (comma-separated or repeated)' })
              .option('allow-mixed-data', {
                type: 'boolean',
                describe: 'Allow runs of one benchmark that differ in data, version or another pin (template, scorer, judges); refused without it, and the bundle says what differs with it',
              })
              .option('packet', {
                type: 'boolean',
                describe:
                  "Add the evidence packet for an AI committee: one model under one IRB approval (intended use, stability, de-identification sign-off, fingerprints and drift, the audit event of every figure); report --export renders it, --model-card writes CHAI's model card",
              }),
          handler: async (args) => {
            const opts = { ...(args['allow-mixed-data'] ? { allowMixedData: true } : {}), ...(args.packet ? { packet: true } : {}) };
            const view = await withClient(args, io, (c) => c.requestExport(list(args.runs), opts), { writes: true });
            if (args.json) return printJson(io, viewJson(view));
            io.stdout(`export ${view.exportId} requested; a compliance officer reviews it with "${commandPrefix()} export show ${view.exportId}"\n`);
            for (const line of mixedDataLines(view)) io.stdout(`${line}\n`);
          },
        })
        .command<ClientArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show an export: exactly what a release would sign, after suppression',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const view = await withClient(args, io, (c) => c.showExport(args.id), { writes: false });
            if (args.json) return printJson(io, viewJson(view));
            printExport(io, view);
          },
        })
        .command<ClientArgs & { limit: number }>({
          command: 'list',
          describe: 'List exports (researchers see their own)',
          builder: (b) => b.option('limit', { type: 'number', default: 50 }),
          handler: async (args) => {
            const views = await withClient(args, io, (c) => c.listExports(args.limit), { writes: false });
            if (args.json) return printJson(io, views.map(viewJson));
            io.stdout(
              formatTable(
                ['export id', 'state', 'requested by', 'requested at', 'runs', 'released by'],
                views.map((v) => [v.exportId, v.state, v.requestedBy, v.requestedAt, v.runIds.length, v.releasedBy]),
              ),
            );
          },
        })
        .command<ClientArgs & { id: string; format: 'bundle' | 'helm'; out?: string }>({
          command: 'release <id>',
          describe: 'Release an export (compliance; never your own request): audited, sealed, signed, written once',
          builder: (b) =>
            b
              .positional('id', { type: 'string', demandOption: true })
              .option('format', { choices: ['bundle', 'helm'] as const, default: 'bundle' as const, describe: 'helm also writes run_spec.json and stats.json per run for helm-summarize' })
              .option('out', { type: 'string', describe: 'Also write a copy to DIR/<export id>/' }),
          handler: async (args) => {
            const released = await withClient(args, io, (c) => c.releaseExport(args.id, args.format), { writes: true });
            const copy = writeCopy(args.out, released.files);
            if (args.json) return printJson(io, { export: viewJson(released.export), path: released.files.path ?? null, copy: copy ?? null });
            io.stdout(`export ${released.export.exportId} released by ${released.export.releasedBy}; bundle sha256 ${released.export.bundleSha256}\n`);
            if (released.files.path) io.stdout(`  written to ${released.files.path}\n`);
            if (copy) io.stdout(`  copy written to ${copy}\n`);
          },
        })
        .command<ClientArgs & { id: string; reason: string }>({
          command: 'withdraw <id>',
          describe: 'Withdraw an export that waits for release (its requester or compliance): one whose preview went stale cannot be released; final',
          builder: (b) =>
            b.positional('id', { type: 'string', demandOption: true }).option('reason', { type: 'string', demandOption: true, describe: 'Why, for the audit trail (a short line, no data)' }),
          handler: async (args) => {
            const view = await withClient(args, io, (c) => c.withdrawExport(args.id, args.reason), { writes: true });
            if (args.json) return printJson(io, viewJson(view));
            io.stdout(`export ${view.exportId} withdrawn; request a new export of its runs if they are still to be released\n`);
          },
        })
        .command<ClientArgs & { id: string; out: string }>({
          command: 'download <id>',
          describe: 'Write a released export again (its requester or compliance)',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }).option('out', { type: 'string', demandOption: true, describe: 'Folder; files go to DIR/<export id>/' }),
          handler: async (args) => {
            const files = await withClient(args, io, (c) => c.downloadExport(args.id), { writes: false });
            const path = writeCopy(args.out, files) as string;
            if (args.json) return printJson(io, { exportId: files.exportId, path });
            io.stdout(`export ${files.exportId} written to ${path}\n`);
          },
        })
        .command<GlobalArgs & { bundle: string; key: string; helm?: string }>({
          command: 'verify <bundle>',
          describe: 'Verify a bundle anywhere, with no database: form, schema, signature, disclosure',
          builder: (b) =>
            b
              .positional('bundle', { type: 'string', demandOption: true, describe: "bundle.json, or the export's folder as download wrote it (DIR/<export id>)" })
              .option('key', { type: 'string', demandOption: true, describe: "The site's export-signing.pub.pem" })
              .option('helm', { type: 'string', describe: "Also check the HELM files in this folder (the bundle's helm/) against the signed hashes" }),
          handler: async (args) => {
            const { bundle, helm } = bundleToVerify(args.bundle, args.helm);
            let text: string;
            try {
              text = readFileSync(bundle, 'utf8');
            } catch (err) {
              throw new UserError('export.bundle-unreadable', `${bundle}: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
            }
            const report = verifyBundle(text, loadExportPublicKey(args.key));
            if (report.ok && helm) {
              const refs = (JSON.parse(text) as { helm: { runName: string; runSpecSha256: string; statsSha256: string }[] }).helm;
              report.problems.push(...helmFileProblems(refs, helm));
              report.ok = report.problems.length === 0;
            }
            if (args.json) printJson(io, report);
            if (!report.ok) throw new UserError('export.verify-failed', `${bundle}: does not verify: ${report.problems.join('; ')}`);
            const helmChecked = helm ? `, HELM files in ${helm} match` : '';
            if (!args.json) io.stdout(`${bundle}: verifies (export ${report.exportId}, ${report.results} result(s), signed by key ${report.keyFingerprint}${helmChecked})\n`);
          },
        })
        .demandCommand(1, 'name a subcommand: request, show, list, release, withdraw, download or verify'),
    handler: () => undefined,
  };
}

/**
 * What `export verify` checks when given a path: a bundle file as it is; an export's folder (what
 * `export download --out DIR` wrote, DIR/<export id>/) as its bundle.json and, unless --helm names
 * another folder, the helm/ folder beside it when there is one. People point at the folder they were
 * told was written; refusing it sent them looking for the file.
 */
function bundleToVerify(path: string, helm: string | undefined): { bundle: string; helm: string | undefined } {
  if (!existsSync(path) || !statSync(path).isDirectory()) return { bundle: path, helm };
  const bundle = join(path, 'bundle.json');
  if (!existsSync(bundle)) {
    throw new UserError('export.bundle-unreadable', `${path}: a folder with no bundle.json; name the export's folder (what "export download --out DIR" wrote: DIR/<export id>) or its bundle.json`);
  }
  const beside = join(path, 'helm');
  return { bundle, helm: helm ?? (existsSync(beside) && statSync(beside).isDirectory() ? beside : undefined) };
}
