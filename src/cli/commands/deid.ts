/**
 * `ehrbench deid --in FILE.jsonl --out FILE.jsonl`: de-identifies a JSON-lines file with the site's
 * de-identification settings and secret. Each input line is {"id", "text", "subject"?, "known"?}
 * (schemas/deid-input.schema.json); each output line is {"id", "text", "spans"} with end-exclusive
 * offsets into the input text (schemas/deid-output.schema.json). Lines stream through one at a time; the
 * output appears only when every line succeeded (written to a temporary file, then renamed). Errors name
 * the file and line, never the text.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { CommandModule } from 'yargs';
import { loadConfig, validateOrThrow } from '../../config';
import { Deidentifier, loadSecret, RESIDUAL_RULE, type ReplacementMode, settingsFrom, type SpanType } from '../../deid';
import type { KnownIdentifiers } from '../../catalog/types';
import { UserError } from '../../errors';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

interface DeidArgs extends GlobalArgs {
  in: string;
  out: string;
  mode?: ReplacementMode;
}

interface InputLine {
  id: string;
  text: string;
  subject?: string;
  known?: KnownIdentifiers;
}

export interface DeidFileReport {
  lines: number;
  spans: number;
  byType: Partial<Record<SpanType, number>>;
}

/** De-identifies `inFile` into `outFile` atomically; returns counts only (no text). */
export async function deidentifyFile(deid: Deidentifier, inFile: string, outFile: string): Promise<DeidFileReport> {
  const input = createReadStream(inFile);
  try {
    await once(input, 'open');
  } catch (err) {
    throw new UserError('deid.input-unreadable', `${inFile}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the --in path`);
  }
  const tmp = join(dirname(outFile), `.${basename(outFile)}.${process.pid}.tmp`);
  const output = createWriteStream(tmp, { flags: 'wx', mode: 0o600 });
  try {
    await once(output, 'open');
  } catch (err) {
    input.destroy();
    throw new UserError('deid.output-unwritable', `${outFile}: cannot write (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the --out folder`);
  }
  // A write error (disk full) is kept and reported at the next step rather than thrown from an event.
  let writeError: Error | undefined;
  output.on('error', (err) => {
    writeError ??= err;
  });
  const report: DeidFileReport = { lines: 0, spans: 0, byType: {} };
  let lineNo = 0;
  try {
    const lines = createInterface({ input, crlfDelay: Infinity });
    for await (const raw of lines) {
      lineNo += 1;
      if (raw.trim() === '') continue;
      const line = parseLine(raw, inFile, lineNo);
      const out = deid.run({ text: line.text, subject: line.subject ?? line.id, ...(line.known ? { known: line.known } : {}) });
      if (out.residual.length > 0) {
        throw new UserError('deid.residual-identifier', `${inFile}: line ${lineNo}: an identifier remained after de-identification (rule ${RESIDUAL_RULE}); nothing was written`);
      }
      report.lines += 1;
      report.spans += out.spans.length;
      for (const s of out.spans) report.byType[s.type] = (report.byType[s.type] ?? 0) + 1;
      if (writeError) throw writeError;
      if (!output.write(JSON.stringify({ id: line.id, text: out.text, spans: out.spans }) + '\n')) await once(output, 'drain');
    }
    await new Promise<void>((done, fail) => output.end((err?: Error | null) => (err ? fail(err) : done())));
    if (writeError) throw writeError;
    renameSync(tmp, outFile);
    return report;
  } catch (err) {
    output.destroy();
    input.destroy();
    rmSync(tmp, { force: true });
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError('deid.failed', `${inFile}: line ${lineNo}: de-identification failed (${code ?? (err as Error).name ?? 'error'}); nothing was written`);
  }
}

function parseLine(raw: string, file: string, lineNo: number): InputLine {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new UserError('deid.input-invalid', `${file}: line ${lineNo} is not valid JSON; each line must be one JSON object {"id", "text", "known"?}`);
  }
  return validateOrThrow<InputLine>('deid-input.schema.json', value, `${file}: line ${lineNo}`, 'deid.input-invalid');
}

export function deidCommand(io: Io): CommandModule<GlobalArgs, DeidArgs> {
  return {
    command: 'deid',
    describe: 'De-identify a JSON-lines file (HIPAA Safe Harbor identifiers replaced, spans reported)',
    builder: (y) =>
      y
        .option('in', { type: 'string', demandOption: true, describe: 'Input JSONL: {"id", "text", "subject"?, "known"?} per line' })
        .option('out', { type: 'string', demandOption: true, describe: 'Output JSONL: {"id", "text", "spans"} per line (written only if every line succeeds)' })
        .option('mode', { choices: ['surrogate', 'tag'] as const, describe: 'Replacement (default: the configuration\'s deid.mode)' }),
    handler: async (args) => {
      const inFile = resolve(args.in);
      const outFile = resolve(args.out);
      if (inFile === outFile) throw new UserError('cli.usage', `--out must differ from --in (${args.out})`, 2);
      const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
      const settings = settingsFrom({ ...config.deid, ...(args.mode ? { mode: args.mode } : {}) });
      let secret: Buffer | undefined;
      const deid = new Deidentifier(settings, () => (secret ??= loadSecret(settings.secretFile)));
      const report = await deidentifyFile(deid, inFile, outFile);
      if (args.json) return printJson(io, { out: outFile, ...report });
      const types = Object.entries(report.byType)
        .map(([t, n]) => `${t} ${n}`)
        .join(', ');
      io.stdout(`${report.lines} lines de-identified into ${outFile}: ${report.spans} identifiers${types ? ` (${types})` : ''}\n`);
    },
  };
}
