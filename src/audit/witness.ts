/**
 * Witness histories outside the database. Every checkpoint a process seals, or finds sealed by another
 * writer, is appended as one line to `audit-witness.jsonl` in each witness folder (the data directory's
 * audit/ folder and every folder in `audit.witnessDirs`). A history is only ever appended to, never
 * rewritten: a chain rolled back behind any checkpoint it holds keeps disagreeing with it, however many
 * checkpoints are sealed afterwards. A line is the signed statement, as the single-checkpoint witness
 * of earlier versions held it ({"statement": canonical JSON text, "signature": base64}); such a file
 * (`audit-witness.json`) is still read, as a history of one.
 */
import type { KeyObject } from 'node:crypto';
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors';
import { type CheckpointStatement, checkSignature, type SignedCheckpoint } from './checkpoint';

export const WITNESS_FILE = 'audit-witness.jsonl';
/** The single-checkpoint witness of earlier versions: read, never written. */
export const LEGACY_WITNESS_FILE = 'audit-witness.json';

/** How much of a history's end is read to find its newest checkpoint: about a hundred lines. */
const TAIL_BYTES = 64 * 1024;

export interface WitnessEntry {
  /** The file and line it was read from, for findings. */
  source: string;
  file: string;
  checkpoint: SignedCheckpoint;
}

/** A witness that could not be used: `unreadable` (missing, no permission) or invalid content. */
export interface WitnessProblem {
  file: string;
  problem: string;
  unreadable: boolean;
}

const invalid = (where: string, what: string) => new UserError('audit.witness-invalid', `${where}: ${what}; restore the witness from a copy (a line cut short by a crash may be removed)`);

function parseEntry(text: string, where: string): SignedCheckpoint {
  let raw: { statement?: unknown; signature?: unknown } | null;
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch {
    throw invalid(where, 'witness entry is not valid JSON');
  }
  if (typeof raw !== 'object' || raw === null || typeof raw.statement !== 'string' || typeof raw.signature !== 'string') {
    throw invalid(where, 'a witness entry must hold "statement" and "signature" strings');
  }
  let statement: CheckpointStatement;
  try {
    statement = JSON.parse(raw.statement) as CheckpointStatement;
  } catch {
    throw invalid(where, 'witness statement is not JSON');
  }
  return { statement, statementText: raw.statement, signature: raw.signature };
}

/**
 * The entries of a witness text. A text that is one JSON value is one entry: the pretty-printed file
 * of earlier versions, or a history of one line. Otherwise it is a history, one entry a line;
 * `complete` drops a last line without its newline (being written by another process right now).
 */
function entriesOf(text: string, file: string, where: (line: number) => string, complete = false): WitnessEntry[] {
  try {
    JSON.parse(text);
    return [{ source: where(1), file, checkpoint: parseEntry(text, where(1)) }];
  } catch (err) {
    if (err instanceof UserError) throw err;
  }
  const lines = text.split('\n');
  if (complete) lines.pop();
  const entries: WitnessEntry[] = [];
  lines.forEach((line, i) => {
    if (line.trim()) entries.push({ source: where(i + 1), file, checkpoint: parseEntry(line, where(i + 1)) });
  });
  return entries;
}

function unreadable(file: string, err: unknown): UserError {
  return new UserError('audit.witness-unreadable', `${file}: witness cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
}

/** Every checkpoint a witness file holds, in file order; throws naming the file and line. */
export function readWitnessHistory(file: string): WitnessEntry[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw unreadable(file, err);
  }
  return entriesOf(text, file, (line) => `${file}:${line}`);
}

/** The newest checkpoint of a witness file (the one with the highest checkpoint id). */
export function readWitness(file: string): SignedCheckpoint {
  const newest = newestOf(readWitnessHistory(file));
  if (!newest) throw invalid(file, 'the witness holds no checkpoint');
  return newest.checkpoint;
}

function newestOf(entries: WitnessEntry[]): WitnessEntry | undefined {
  return entries.reduce<WitnessEntry | undefined>((a, b) => (!a || b.checkpoint.statement.checkpointId > a.checkpoint.statement.checkpointId ? b : a), undefined);
}

/** The end of a file: the whole of a short one, or its last complete lines. */
function readTail(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (err) {
    throw unreadable(file, err);
  }
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, TAIL_BYTES);
    const buf = Buffer.alloc(length);
    readSync(fd, buf, 0, length, size - length);
    const text = buf.toString('utf8');
    return length === size ? text : text.slice(text.indexOf('\n') + 1);
  } finally {
    closeSync(fd);
  }
}

/**
 * The newest checkpoint a witness file holds, reading only the end of a long history; undefined when
 * the file does not exist. A file that exists but cannot be read or parsed throws: it cannot be checked.
 */
export function newestWitnessed(file: string): WitnessEntry | undefined {
  try {
    if (!statSync(file, { throwIfNoEntry: false })) return undefined;
  } catch (err) {
    throw unreadable(file, err);
  }
  return newestOf(entriesOf(readTail(file), file, () => `${file} (end)`, true));
}

/**
 * The newest checkpoint of each witness file in `dirs`, with its signature checked: heads the chain
 * must still hold. A witness that cannot be read or does not verify throws (the chain cannot be
 * checked against it); a folder without one is skipped (it gets one at the next seal).
 */
export function witnessedHeads(dirs: string[], trusted: Map<string, KeyObject>): WitnessEntry[] {
  const heads: WitnessEntry[] = [];
  for (const dir of dirs) {
    for (const name of [WITNESS_FILE, LEGACY_WITNESS_FILE]) {
      const newest = newestWitnessed(join(dir, name));
      if (!newest) continue;
      const bad = checkSignature(newest.checkpoint, trusted);
      if (bad) throw invalid(newest.source, `witness checkpoint ${newest.checkpoint.statement.checkpointId}: ${bad}`);
      heads.push(newest);
    }
  }
  return heads;
}

/**
 * Appends the checkpoint to each folder's history, durably (fsync) before the seal counts as done.
 * A history that already holds this or a later checkpoint (from another writer) is left as it is, so
 * each history stays in checkpoint order.
 */
export function appendWitness(dirs: string[], cp: SignedCheckpoint): void {
  const line = JSON.stringify({ statement: cp.statementText, signature: cp.signature }) + '\n';
  for (const dir of dirs) {
    const file = join(dir, WITNESS_FILE);
    const newest = newestWitnessed(file);
    if (newest && newest.checkpoint.statement.checkpointId >= cp.statement.checkpointId) continue;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const fd = openSync(file, 'a+', 0o644);
    try {
      // A line cut short by a crash stays on its own line (the verifier reports it), not glued to this one.
      writeSync(fd, endsWithNewline(fd) ? line : `\n${line}`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Writes the checkpoint as the single-checkpoint witness (`audit-witness.json`) that releases before
 * the history format read and wrote, atomically (a synced temporary file, renamed), only forward. A
 * site that rolls back to such a release then finds there the newest checkpoint of the release it
 * left, and that release's own check raises the rollback alarm when its restored chain does not hold it.
 */
export function writeLegacyWitness(dirs: string[], cp: SignedCheckpoint): void {
  const text = JSON.stringify({ statement: cp.statementText, signature: cp.signature }, null, 2) + '\n';
  for (const dir of dirs) {
    const file = join(dir, LEGACY_WITNESS_FILE);
    const newest = newestWitnessed(file);
    if (newest && newest.checkpoint.statement.checkpointId >= cp.statement.checkpointId) continue;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = openSync(tmp, 'w', 0o644);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  }
}

function endsWithNewline(fd: number): boolean {
  const size = fstatSync(fd).size;
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  readSync(fd, last, 0, 1, size - 1);
  return last[0] === 0x0a;
}

/**
 * The witnesses to verify against: each configured folder's files (`audit.witnessDirs`) and each file
 * given (`--witness`). A witness that cannot be used is reported, not thrown, so that the verifier
 * still reports everything else.
 */
export function loadWitnesses(dirs: string[], files: string[] = []): { witnesses: WitnessEntry[]; problems: WitnessProblem[]; notes: string[] } {
  const witnesses: WitnessEntry[] = [];
  const problems: WitnessProblem[] = [];
  /** Statements already read from a folder's history: its legacy file repeats the newest one. */
  const seen = new Set<string>();
  const load = (file: string, label: string, countAs = file) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      problems.push({ file, unreadable: true, problem: `witness ${file} (${label}) cannot be read (${code}); ${MISSING_HINT}` });
      return;
    }
    try {
      for (const w of entriesOf(text, file, (line) => `${file}:${line}`)) {
        // The same signed statement twice in one witness (both formats of a folder) is one checkpoint.
        const key = `${countAs}\n${w.checkpoint.statementText}`;
        if (seen.has(key)) continue;
        seen.add(key);
        witnesses.push({ ...w, file: countAs });
      }
    } catch (err) {
      problems.push({ file, unreadable: false, problem: (err as Error).message });
    }
  };
  const notes: string[] = [];
  for (const dir of dirs) {
    const present = [WITNESS_FILE, LEGACY_WITNESS_FILE].map((n) => join(dir, n)).filter((f) => exists(f));
    if (present.length === 1 && present[0] === join(dir, LEGACY_WITNESS_FILE)) {
      notes.push(
        `witness folder ${dir} holds only ${LEGACY_WITNESS_FILE} (one checkpoint), no ${WITNESS_FILE} (the history): checked against that checkpoint; the next seal starts the history (if the history was there, restore it from its copy)`,
      );
    }
    // A folder with neither file is reported as missing its history (the file ehrbench writes now).
    // Both formats in one folder (audit.legacyWitness) are one witness, counted as its history.
    for (const file of present.length ? present : [join(dir, WITNESS_FILE)]) load(file, 'audit.witnessDirs', present.length === 2 ? join(dir, WITNESS_FILE) : file);
  }
  for (const file of files) load(file, '--witness');
  return { witnesses, problems, notes };
}

const MISSING_HINT = 'restore it from its copy; if the folder was only just added to audit.witnessDirs, the next checkpoint writes it; --allow-missing-witness verifies without it';

/** True unless the file is known not to exist (a permission error counts as present: it is reported). */
function exists(file: string): boolean {
  try {
    return statSync(file, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return true;
  }
}
