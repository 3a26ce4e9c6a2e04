/**
 * What a benchmark needs before a run reads it, and the one error for each need that is not met: its
 * data bound, its files intact (sha256), EHRSQL's site database, judges for the jury; and the size
 * limits of what it reads. Planning (verifyDataset) and the pre-flight (`ehrbench benchmarks check`)
 * say the same thing in the same words.
 */
import { commandPrefix } from '../command-prefix';
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { UserError } from '../errors';
import type { Benchmark, CatalogLimits } from './types';

/**
 * The default size limits: 1 MiB of prompt variables holds HELM's longest prompts (100,000 tokens);
 * 16 MiB per record lets HELM's own length filters (EHRSHOT, MedAlign) see, and leave out, longer ones.
 */
export const DEFAULT_LIMITS: CatalogLimits = { maxInstanceBytes: 1_048_576, maxRecordBytes: 16_777_216 };

export function limitsOf(b: Benchmark): CatalogLimits {
  return b.limits ?? DEFAULT_LIMITS;
}

const SITE_FILE = 'the site data file (site-data.json in the data directory)';

/** The error for a benchmark whose data the site has not bound; it says what to supply and where. */
export function dataMissing(b: Benchmark): UserError {
  const d = b.definition;
  const formats = d.dataRequirements?.formats.join(' or ') ?? 'csv or jsonl';
  const columns = d.dataRequirements?.columns.filter((c) => !c.optional).map((c) => c.name) ?? [];
  return new UserError(
    'dataset.not-configured',
    `benchmark ${d.id}: its data is supplied by the site and none is configured; add benchmarks.${d.id}.source (${formats}${columns.length ? ` with columns ${columns.join(', ')}` : ''}) to ${b.siteFile ?? SITE_FILE}; see "${commandPrefix()} benchmarks show ${d.id}"`,
  );
}

/** Whether the benchmark is scored against the site's EHRSQL database. */
export function needsDatabase(b: Benchmark): boolean {
  return b.definition.dataRequirements?.resources?.includes('ehrsql-database') ?? false;
}

/** The error for an EHRSQL benchmark whose database is not set, or not there. */
export function databaseMissing(b: Benchmark): UserError {
  const id = b.definition.id;
  const db = b.site?.database;
  if (!db) {
    return new UserError('ehrsql.no-database', `benchmark ${id}: execution accuracy runs SQL against the site's SQLite database; set benchmarks.${id}.database in ${b.siteFile ?? SITE_FILE}`);
  }
  return new UserError('ehrsql.no-database', `${db}: the SQLite database for benchmark ${id} does not exist; check benchmarks.${id}.database`);
}

/** Whether a file starts as every SQLite 3 database does ("SQLite format 3\0"). */
export function isSqliteFile(path: string): boolean {
  const header = Buffer.alloc(16);
  const fd = openSync(path, 'r');
  try {
    return readSync(fd, header, 0, 16, 0) === 16 && header.toString('latin1') === 'SQLite format 3\u0000';
  } finally {
    closeSync(fd);
  }
}

/** The error for a jury benchmark without judges. */
export function judgesMissing(b: Benchmark): UserError {
  const id = b.definition.id;
  return new UserError(
    'jury.no-judges',
    `benchmark ${id}: ${b.definition.rubric ? 'rubric grading needs a grader endpoint (the first judge)' : 'the LLM jury needs judge endpoints (MedHELM uses three)'}; set jury.judges (endpoint ids from the allowlist) in ${b.siteFile ?? SITE_FILE}, for all jury benchmarks or under benchmarks.${id}`,
  );
}

/** sha256 and size of a file, read as a stream. */
export async function hashFile(path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  await new Promise<void>((resolve, reject) => {
    createReadStream(path)
      .on('data', (chunk) => {
        hash.update(chunk);
        bytes += chunk.length;
      })
      .on('end', () => resolve())
      .on('error', (err: NodeJS.ErrnoException) => reject(new UserError('dataset.unreadable', `${path}: cannot read (${err.code ?? 'error'}); check the dataset path`)));
  });
  return { sha256: hash.digest('hex'), bytes };
}

/** The size of a file that can be opened for reading, without reading it (the error as hashFile's). */
export function readableFile(path: string): { bytes: number } {
  try {
    const fd = openSync(path, 'r');
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw Object.assign(new Error('not a file'), { code: st.isDirectory() ? 'EISDIR' : 'ENOTFILE' });
      return { bytes: st.size };
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw new UserError('dataset.unreadable', `${path}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the dataset path`);
  }
}

export function hashMismatch(b: Benchmark, path: string): UserError {
  return new UserError('dataset.hash-mismatch', `${path}: content differs from the sha256 pinned for benchmark ${b.definition.id}; restore the file or update the pin`);
}

/**
 * Checks that a benchmark can run before any instance is read: data bound, shipped files intact
 * (sha256), site resources present (EHRSQL's database) and judges named for the jury.
 */
export async function verifyDataset(b: Benchmark): Promise<void> {
  if (!b.source) throw dataMissing(b);
  if (b.source.kind === 'files') {
    // Hashed only when pinned (a read of the whole file); an unpinned one must be readable.
    for (const f of b.source.files) {
      if (!f.sha256) readableFile(f.path);
      else if ((await hashFile(f.path)).sha256 !== f.sha256) throw hashMismatch(b, f.path);
    }
  }
  if (needsDatabase(b) && !(b.site?.database && existsSync(b.site.database))) throw databaseMissing(b);
  if ((b.definition.jury || b.definition.rubric) && !b.judges?.length) throw judgesMissing(b);
}
