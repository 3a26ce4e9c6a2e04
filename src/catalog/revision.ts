/**
 * The data revision a run used: which bytes its instances came from, so that two runs of one benchmark
 * can be told apart when their data differs under the same name (HELM's MedCalc-Bench loader moved to a
 * newer dataset under the same run name: HELM #3921). A file is identified by its sha256 (the pin when
 * there is one, which planning verifies; otherwise hashed when the run is requested, and that hash then
 * holds the file to those bytes when the run is planned). An OMOP source is identified without reading
 * any note text: its schema and filter, the labels file's sha256 and the pin of its notes when the site
 * pinned them. Only names and hashes: never a path, a connection or data.
 */
import { basename } from 'node:path';
import { canonicalHash } from '../canonical';
import { hashFile } from './readiness';
import type { Benchmark } from './types';

export interface DataRevision {
  /** One value for comparing runs: the sha256 of the canonical JSON of the parts below. */
  sha256: string;
  /** Each data file read, in order: its file name (no folder) and sha256. */
  files?: { name: string; sha256: string }[];
  /** An OMOP note source: what identifies it without data. noteIdsSha256 is null when the site did not pin its notes. */
  omop?: { schema: string | null; filter: unknown; labelsSha256: string | null; noteIdsSha256: string | null };
}

/** The revision of a benchmark's data as it is now, or undefined when no data is bound. */
export async function dataRevision(b: Benchmark): Promise<DataRevision | undefined> {
  const source = b.source;
  if (!source) return undefined;
  if (source.kind === 'files') {
    const files: { name: string; sha256: string }[] = [];
    for (const f of source.files) files.push({ name: basename(f.path), sha256: f.sha256 ?? (await hashFile(f.path)).sha256 });
    return { sha256: canonicalHash({ files }), files };
  }
  const spec = source.spec;
  const labelsSha256 = spec.labels ? (spec.labelsSha256 ?? (await hashFile(spec.labels.path)).sha256) : null;
  const omop = { schema: spec.schema ?? null, filter: spec.filter ?? null, labelsSha256, noteIdsSha256: spec.noteIdsSha256 ?? null };
  return { sha256: canonicalHash({ omop }), omop };
}

/**
 * The benchmark with the hashes a run recorded as its pins, so that planning refuses (dataset.hash-mismatch)
 * a file or labels file changed since the run was requested, on the bytes it parses. Pins of the
 * definition or the site stay as they are (a revision recorded them unchanged).
 */
export function pinnedToRevision(b: Benchmark, revision: DataRevision | undefined): Benchmark {
  const source = b.source;
  if (!revision || !source) return b;
  if (source.kind === 'files' && revision.files?.length === source.files.length) {
    return { ...b, source: { ...source, files: source.files.map((f, i) => ({ ...f, sha256: f.sha256 ?? revision.files?.[i]?.sha256 })) } };
  }
  if (source.kind === 'omop-note' && revision.omop) {
    const { labelsSha256, noteIdsSha256 } = revision.omop;
    const spec = { ...source.spec, ...(labelsSha256 && !source.spec.labelsSha256 ? { labelsSha256 } : {}), ...(noteIdsSha256 && !source.spec.noteIdsSha256 ? { noteIdsSha256 } : {}) };
    return { ...b, source: { ...source, spec } };
  }
  return b;
}

/** How a run's data revision reads in `runs show` and comparisons: its sha256, or "unknown" for a run from before revisions were recorded. */
export function revisionLabel(revision: DataRevision | null | undefined): string {
  return revision ? revision.sha256 : 'unknown';
}
