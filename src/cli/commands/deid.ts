/**
 * `ehrbench deid --in FILE.jsonl --out FILE.jsonl [--on-residual fail|mark] [--mode surrogate|tag]`:
 * de-identifies a JSON-lines file with the site's de-identification settings and secret. Each input line
 * is {"id", "text", "subject"?, "known"?} (schemas/deid-input.schema.json); each output line is
 * {"id", "text", "spans", "residual"?} with span offsets into the input text and residual offsets into
 * the output text (schemas/deid-output.schema.json).
 *
 * Lines of one subject share evidence: a name found in one of them is looked for in all of them, as
 * `Deidentifier.findAll` and `deid eval` do. So the file is read twice, line by line: first to validate
 * it and collect each subject's name words, then to de-identify. Memory grows with the number of
 * subjects and name words, never with the text. The output appears only when the command finished
 * (written to a temporary file, then renamed). Errors name the file and line, never the text.
 *
 * `ehrbench deid eval` (deid-eval.ts) is registered here as a subcommand.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, type ReadStream, renameSync, rmSync, type WriteStream } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { CommandModule } from 'yargs';
import { loadConfig, validateOrThrow } from '../../config';
import { Deidentifier, type DeidOutput, loadSecret, RESIDUAL_RULE, type ReplacementMode, settingsFrom, type SpanType } from '../../deid';
import type { KnownIdentifiers } from '../../catalog';
import { UserError } from '../../errors';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';
import { deidEvalCommand } from './deid-eval';

/** What to do with a line whose output the residual scan still flags. */
export type OnResidual = 'fail' | 'mark';

/** Exit code of `--on-residual mark` when a line was marked: the file is complete but not clean. */
export const MARKED_EXIT_CODE = 3;

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

/** Subject -> the name words harvested from all its lines. */
type Evidence = Map<string, Set<string>>;

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
 * First pass: every line parsed and validated (bad lines are refused here, before anything is written),
 * and the number of lines of each subject. Only counts are kept.
 */
async function countSubjects(inFile: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for await (const { line } of inputLines(inFile)) {
    const subject = subjectOf(line);
    counts.set(subject, (counts.get(subject) ?? 0) + 1);
  }
  return counts;
}

/**
 * Second pass, for subjects of more than one line only (a subject's only line has no other record to
 * learn from, and detection is the costly part): each subject's name words, from all its lines. Only
 * the words are kept, so a file of any size needs memory for its subjects, not its text.
 */
export async function collectEvidence(deid: Deidentifier, inFile: string): Promise<Evidence> {
  const evidence: Evidence = new Map();
  const counts = await countSubjects(inFile);
  if (![...counts.values()].some((n) => n > 1)) return evidence;
  for await (const { lineNo, line } of inputLines(inFile)) {
    const subject = subjectOf(line);
    if ((counts.get(subject) ?? 0) < 2) continue;
    let words: string[];
    try {
      words = deid.harvest(line.text, line.known);
    } catch (err) {
      throw failure(err, inFile, lineNo);
    }
    if (words.length === 0) continue;
    let set = evidence.get(subject);
    if (!set) evidence.set(subject, (set = new Set()));
    for (const w of words) set.add(w);
  }
  return evidence;
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
async function writeDeidentified(deid: Deidentifier, inFile: string, output: WriteStream, evidence: Evidence, onResidual: OnResidual): Promise<DeidFileReport> {
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
      const words = evidence.get(subject);
      const out = deid.run({ text: line.text, subject, ...knownOf(line), ...(words ? { evidence: words } : {}) });
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
    await new Promise<void>((done, fail) => output.end((err?: Error | null) => (err ? fail(err) : done())));
    if (writeError) throw writeError;
    return report;
  } catch (err) {
    throw failure(err, inFile, lineNo);
  }
}

/** De-identifies `inFile` into `outFile` atomically; returns counts only (no text). */
export async function deidentifyFile(deid: Deidentifier, inFile: string, outFile: string, onResidual: OnResidual = 'fail'): Promise<DeidFileReport> {
  // Evidence first: the whole input is read (and validated) before the output is created.
  const evidence = await collectEvidence(deid, inFile);
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
        .usage('$0 deid --in FILE.jsonl --out FILE.jsonl [--on-residual fail|mark] [--mode surrogate|tag]\n$0 deid eval --gold FILE [--json] [--show-text] [--with-known]')
        .command(deidEvalCommand(io))
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
