/**
 * `ehrbench deid --in FILE.jsonl --out FILE.jsonl [--on-residual fail|mark] [--mode surrogate|tag]`:
 * de-identifies a JSON-lines file with the site's de-identification settings and secret. Each input line
 * is {"id", "text", "subject"?, "known"?} (schemas/deid-input.schema.json); each output line is
 * {"id", "text", "spans", "residual"?} with span offsets into the input text and residual offsets into
 * the output text (schemas/deid-output.schema.json).
 *
 * The file is one dataset, read twice, line by line (as `Deidentifier.findAll` and `deid eval` read
 * theirs): first to validate and survey every line (each subject's name words; the words strong rules
 * took anywhere, weighed against their ordinary uses: src/deid/evidence.ts), then to de-identify each
 * line knowing both. The first reading's detections are kept for the second while they cover at most
 * READS_KEPT_CHARS of text (reading is the costly part); the lines after that are read again. So memory
 * grows with the dataset's vocabulary and subjects, and with its text only up to that bound (100 MB of
 * notes kept every reading: 903 MB peak). The output appears only when the command finished (written to a
 * temporary file, then renamed). Errors name the file and line, never the text.
 *
 * `ehrbench deid eval` (deid-eval.ts) is registered here as a subcommand.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, type ReadStream, renameSync, rmSync, type WriteStream } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { CommandModule } from 'yargs';
import { loadConfig } from '../../config';
import { validateOrThrow } from '../../schema';
import { Deidentifier, type DeidOutput, EvidenceCollector, loadSecret, type PackedDetections, RESIDUAL_RULE, type ReplacementMode, settingsFrom, type SpanType } from '../../deid';
import type { KnownIdentifiers } from '../../catalog';
import { UserError } from '../../errors';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';
import { deidEvalCommand } from './deid-eval';
import { deidLexiconsCommand } from './deid-lexicons';

/** What to do with a line whose output the residual scan still flags. */
export type OnResidual = 'fail' | 'mark';

/** Exit code of `--on-residual mark` when a line was marked: the file is complete but not clean. */
export const MARKED_EXIT_CODE = 3;

/**
 * How much text (in characters) the first reading's detections are kept for: about 9 bytes of memory a
 * character, so some 300 MB at most; past it the second pass reads each line again (slower, bounded).
 */
export const READS_KEPT_CHARS = 32 * 1024 * 1024;

interface DeidArgs extends GlobalArgs {
  in?: string;
  out?: string;
  mode?: ReplacementMode;
  'on-residual': OnResidual;
}

interface InputLine {
  id: string;
  text: string;
  subject?: string;
  known?: KnownIdentifiers;
}

/** Counts only: a report must never carry text from the file. */
export interface DeidFileReport {
  lines: number;
  spans: number;
  byType: Partial<Record<SpanType, number>>;
  /** Lines written with a "residual" array (only ever non-zero with --on-residual mark). */
  marked: number;
  /** Residual findings in the marked lines, by type. */
  residualByType: Partial<Record<SpanType, number>>;
  /** 1-based input line numbers of the marked lines. */
  markedLines: number[];
}

function subjectOf(line: InputLine): string {
  return line.subject ?? line.id;
}

function knownOf(line: InputLine): { known?: KnownIdentifiers } {
  return line.known ? { known: line.known } : {};
}

async function openInput(inFile: string): Promise<ReadStream> {
  const input = createReadStream(inFile);
  try {
    await once(input, 'open');
  } catch (err) {
    throw new UserError('deid.input-unreadable', `${inFile}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the --in path`);
  }
  return input;
}

/** A foreign error (fs, a detector bug) as one line naming the place; its message may quote data. */
function failure(err: unknown, inFile: string, lineNo: number): UserError {
  if (err instanceof UserError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  return new UserError('deid.failed', `${inFile}: line ${lineNo}: de-identification failed (${code ?? (err as Error).name ?? 'error'}); nothing was written`);
}

function parseLine(raw: string, file: string, lineNo: number): InputLine {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new UserError('deid.input-invalid', `${file}: line ${lineNo} is not valid JSON; each line must be one JSON object {"id", "text", "subject"?, "known"?}`);
  }
  return validateOrThrow<InputLine>('deid-input.schema.json', value, `${file}: line ${lineNo}`, 'deid.input-invalid');
}

/**
 * The non-blank lines of the input, parsed and validated, one at a time. Reading and parsing errors come
 * out as one-line UserErrors naming the line; errors of the caller's loop body are the caller's to name.
 */
async function* inputLines(inFile: string): AsyncGenerator<{ lineNo: number; line: InputLine }> {
  const input = await openInput(inFile);
  let lineNo = 0;
  try {
    for await (const raw of createInterface({ input, crlfDelay: Infinity })) {
      lineNo += 1;
      if (raw.trim() === '') continue;
      yield { lineNo, line: parseLine(raw, inFile, lineNo) };
    }
  } catch (err) {
    throw failure(err, inFile, lineNo + 1);
  } finally {
    input.destroy();
  }
}

/**
 * First pass: every line parsed and validated (bad lines are refused here, before anything is written)
 * and surveyed (`Deidentifier.survey`, the name and place rules alone): the file is one dataset, so each
 * subject's name words and the words strong rules took anywhere are collected before any line is
 * de-identified. Only words and counts are kept (evidence.ts), so memory grows with the dataset's
 * vocabulary and subjects, never with its text.
 */
export async function collectEvidence(deid: Deidentifier, inFile: string, keptChars = READS_KEPT_CHARS): Promise<{ collector: EvidenceCollector; reads: PackedDetections[]; lines: number }> {
  const collector = new EvidenceCollector();
  const reads: PackedDetections[] = [];
  let lines = 0;
  let kept = 0;
  for await (const { lineNo, line } of inputLines(inFile)) {
    try {
      const read = deid.read(line.text, line.known);
      collector.add(subjectOf(line), read.survey);
      lines += 1;
      // Kept while under the bound, in order: the second pass reads again whatever comes after.
      if (reads.length === lines - 1 && kept + line.text.length <= keptChars) {
        reads.push(read.found);
        kept += line.text.length;
      }
    } catch (err) {
      throw failure(err, inFile, lineNo);
    }
  }
  return { collector, reads, lines };
}

/** The output file, opened exclusively under a temporary name next to the target. */
async function openOutput(outFile: string): Promise<{ tmp: string; output: WriteStream }> {
  const tmp = join(dirname(outFile), `.${basename(outFile)}.${process.pid}.tmp`);
  const output = createWriteStream(tmp, { flags: 'wx', mode: 0o600 });
  try {
    await once(output, 'open');
  } catch (err) {
    throw new UserError('deid.output-unwritable', `${outFile}: cannot write (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the --out folder`);
  }
  return { tmp, output };
}

function count<K extends string>(into: Partial<Record<K, number>>, key: K): void {
  into[key] = (into[key] ?? 0) + 1;
}

/**
 * One output line: the residual findings (offsets into the output text) only when there are any, and of
 * each only the fields the output schema allows (a finding that ever carried more must not leak it).
 */
function outputLine(id: string, out: DeidOutput): string {
  const residual = out.residual.map(({ start, end, type }) => ({ start, end, type }));
  return JSON.stringify({ id, text: out.text, spans: out.spans, ...(residual.length > 0 ? { residual } : {}) }) + '\n';
}

/** The finished temporary file takes the output's name (atomic on one file system). */
function publish(tmp: string, outFile: string): void {
  try {
    renameSync(tmp, outFile);
  } catch (err) {
    throw new UserError('deid.output-unwritable', `${outFile}: cannot write (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the --out path; nothing was written`);
  }
}

/**
 * Second pass: de-identifies each line with its subject's evidence and writes it. With `fail`, the first
 * line that still carries an identifier stops everything and nothing is written; with `mark`, it is
 * written with its residual findings and counted, and the file is completed.
 */
async function writeDeidentified(
  deid: Deidentifier,
  inFile: string,
  output: WriteStream,
  { collector: evidence, reads, lines }: Awaited<ReturnType<typeof collectEvidence>>,
  onResidual: OnResidual,
): Promise<DeidFileReport> {
  const dataset = evidence.dataset();
  let index = 0;
  // A write error (disk full) is kept and reported at the next step rather than thrown from an event.
  let writeError: Error | undefined;
  output.on('error', (err) => {
    writeError ??= err;
  });
  const report: DeidFileReport = { lines: 0, spans: 0, byType: {}, marked: 0, residualByType: {}, markedLines: [] };
  let lineNo = 0;
  try {
    for await (const next of inputLines(inFile)) {
      lineNo = next.lineNo;
      const { line } = next;
      const subject = subjectOf(line);
      const words = evidence.subject(subject);
      // the file changed between the two readings: its lines no longer match what was read
      if (index >= lines)
        throw new UserError('deid.input-changed', `${inFile}: line ${lineNo} was not there when the file was first read; the file changed while ehrbench read it; nothing was written`);
      const found = reads[index++] ?? deid.read(line.text, line.known).found;
      let out: DeidOutput;
      try {
        out = deid.runRead({ text: line.text, subject, ...knownOf(line), ...(words ? { evidence: words } : {}), dataset }, found);
      } catch (err) {
        if (err instanceof UserError && err.code === 'deid.input-changed')
          throw new UserError('deid.input-changed', `${inFile}: line ${lineNo} changed while ehrbench read the file; nothing was written; run it again on a file nobody is writing`);
        throw err;
      }
      if (out.residual.length > 0) {
        if (onResidual === 'fail') {
          throw new UserError('deid.residual-identifier', `${inFile}: line ${lineNo}: an identifier remained after de-identification (rule ${RESIDUAL_RULE}); nothing was written`);
        }
        report.marked += 1;
        report.markedLines.push(lineNo);
        for (const f of out.residual) count(report.residualByType, f.type);
      }
      report.lines += 1;
      report.spans += out.spans.length;
      for (const s of out.spans) count(report.byType, s.type);
      if (writeError) throw writeError;
      if (!output.write(outputLine(line.id, out))) await once(output, 'drain');
    }
    if (index !== lines) throw new UserError('deid.input-changed', `${inFile}: lines went missing after the file was first read; the file changed while ehrbench read it; nothing was written`);
    await new Promise<void>((done, fail) => output.end((err?: Error | null) => (err ? fail(err) : done())));
    if (writeError) throw writeError;
    return report;
  } catch (err) {
    throw failure(err, inFile, lineNo);
  }
}

/** De-identifies `inFile` into `outFile` atomically; returns counts only (no text). */
export async function deidentifyFile(deid: Deidentifier, inFile: string, outFile: string, onResidual: OnResidual = 'fail', keptChars = READS_KEPT_CHARS): Promise<DeidFileReport> {
  // Evidence first: the whole input is read (and validated) before the output is created.
  const evidence = await collectEvidence(deid, inFile, keptChars);
  const { tmp, output } = await openOutput(outFile);
  try {
    const report = await writeDeidentified(deid, inFile, output, evidence, onResidual);
    publish(tmp, outFile);
    return report;
  } catch (err) {
    output.destroy();
    rmSync(tmp, { force: true });
    throw err;
  }
}

function byTypeText(counts: Partial<Record<SpanType, number>>): string {
  return Object.entries(counts)
    .map(([t, n]) => `${t} ${n}`)
    .join(', ');
}

/** The terminal summary: counts and line numbers, never text. */
function summary(report: DeidFileReport, outFile: string): string {
  const types = byTypeText(report.byType);
  let text = `${report.lines} lines de-identified into ${outFile}: ${report.spans} identifiers${types ? ` (${types})` : ''}\n`;
  if (report.marked > 0) {
    const findings = Object.values(report.residualByType).reduce((a, b) => a + (b ?? 0), 0);
    text += `${report.marked} ${report.marked === 1 ? 'line' : 'lines'} marked with "residual": ${findings} residual findings (${byTypeText(report.residualByType)}); input lines ${report.markedLines.join(', ')}\n`;
  }
  return text;
}

export function deidCommand(io: Io): CommandModule<GlobalArgs, DeidArgs> {
  return {
    command: 'deid',
    describe: 'De-identify a JSON-lines file (HIPAA Safe Harbor identifiers replaced, spans reported); `deid eval` scores detection on annotated notes',
    builder: (y) =>
      y
        .usage(
          '$0 deid --in FILE.jsonl --out FILE.jsonl [--on-residual fail|mark] [--mode surrogate|tag]\n$0 deid eval --gold FILE [--json] [--show-text] [--with-known] [--holdout-by subject --proposal FILE]\n$0 deid lexicons propose --gold FILE --out DIR',
        )
        .command(deidEvalCommand(io))
        .command(deidLexiconsCommand(io))
        // Not global: `deid eval` has options of its own and must not inherit these (or their demands).
        .option('in', {
          type: 'string',
          global: false,
          describe: 'Input JSONL: {"id", "text", "subject"?, "known"?} per line; lines of one subject (default: the id) share names found in any of them',
        })
        .option('out', { type: 'string', global: false, describe: 'Output JSONL: {"id", "text", "spans", "residual"?} per line (written only when the command finishes)' })
        .option('on-residual', {
          choices: ['fail', 'mark'] as const,
          default: 'fail' as OnResidual,
          global: false,
          describe: 'A line whose output still carries an identifier: fail (stop, write nothing) or mark (write it with "residual" offsets into the output text, finish the file, exit 3)',
        })
        .option('mode', { choices: ['surrogate', 'tag'] as const, global: false, describe: "Replacement (default: the configuration's deid.mode)" })
        .epilog('Exit codes: 0 done; 1 bad input or a residual identifier with --on-residual fail (nothing written); 2 usage; 3 lines were marked with --on-residual mark (file written).'),
    handler: async (args) => {
      if (!args.in || !args.out) throw new UserError('cli.usage', 'give --in FILE.jsonl and --out FILE.jsonl (or use `deid eval --gold FILE`); see --help');
      const inFile = resolve(args.in);
      const outFile = resolve(args.out);
      if (inFile === outFile) throw new UserError('cli.usage', `--out must differ from --in (${args.out})`);
      const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
      const settings = settingsFrom({ ...config.deid, ...(args.mode ? { mode: args.mode } : {}) });
      let secret: Buffer | undefined;
      const deid = new Deidentifier(settings, () => (secret ??= loadSecret(settings.secretFile)));
      const onResidual = args['on-residual'];
      const report = await deidentifyFile(deid, inFile, outFile, onResidual);
      if (args.json) printJson(io, { out: outFile, onResidual, ...report });
      else io.stdout(summary(report, outFile));
      if (report.marked > 0) {
        io.stderr(
          `ehrbench: ${outFile}: ${report.marked} of ${report.lines} lines still carry an identifier (rule ${RESIDUAL_RULE}); they are marked with "residual" and must not be released as they are\n`,
        );
        process.exitCode = MARKED_EXIT_CODE;
      }
    },
  };
}
