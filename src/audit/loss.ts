/**
 * Accepting a rollback that cannot be repaired (audit/README.md, "On a rollback alarm", step 5). The
 * witness histories are the evidence of what the trail held, so they are never edited or deleted: they
 * are moved, whole, into a dated folder beside them, and the acceptance itself is the first event the
 * trail records afterwards (with the lost checkpoints, the archive and the incident), so the loss stays
 * visible in the trail as well as in the archived histories.
 *
 * Both moves are renames inside one folder: the files are either in place or archived, never copied
 * halfway, and a failure to record puts them back.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { Queryable } from '../db';
import { LEGACY_WITNESS_FILE, WITNESS_FILE, witnessedHeads } from './witness';

export const WITNESS_ARCHIVE_DIR = 'witness-archive';

/** A witnessed checkpoint the chain no longer holds: no row at its seq, or another row there. */
export interface WitnessedLoss {
  file: string;
  checkpointId: number;
  seq: number;
  held: 'no' | 'another-row';
}

/** Each witness's newest checkpoint that the chain does not hold, row for row. Throws when a witness cannot be read or does not verify. */
export async function witnessedLosses(q: Queryable, dirs: string[], trusted: Map<string, KeyObject>): Promise<WitnessedLoss[]> {
  const lost: WitnessedLoss[] = [];
  for (const head of witnessedHeads(dirs, trusted)) {
    const s = head.checkpoint.statement;
    const rows = await q.query<{ row_hash: string }>('SELECT row_hash FROM audit_events WHERE seq = $1', [s.seq]);
    if (rows[0]?.row_hash === s.headHash) continue;
    lost.push({ file: head.file, checkpointId: s.checkpointId, seq: s.seq, held: rows[0] ? 'another-row' : 'no' });
  }
  return lost;
}

export interface ArchivedWitness {
  /** The witness folder, as configured. */
  dir: string;
  /** The folder the histories were moved into (inside `dir`). */
  archive: string;
  files: string[];
}

/** A folder name from the time, sortable, without characters some filesystems refuse. */
export function archiveName(at: Date): string {
  return at.toISOString().replace(/[:.]/g, '-');
}

/** Moves each folder's witness files into `<dir>/witness-archive/<name>/`; the ledgers stay where they are. */
export function archiveWitnesses(dirs: string[], name: string): ArchivedWitness[] {
  const done: ArchivedWitness[] = [];
  try {
    for (const dir of dirs) {
      const present = [WITNESS_FILE, LEGACY_WITNESS_FILE].filter((f) => existsSync(join(dir, f)));
      if (present.length === 0) continue;
      const archive = join(dir, WITNESS_ARCHIVE_DIR, name);
      if (existsSync(archive)) throw new Error(`${archive} exists already`);
      mkdirSync(archive, { recursive: true, mode: 0o700 });
      const moved: ArchivedWitness = { dir, archive, files: [] };
      done.push(moved);
      for (const f of present) {
        renameSync(join(dir, f), join(archive, f));
        moved.files.push(f);
      }
    }
  } catch (err) {
    restoreWitnesses(done);
    throw err;
  }
  return done;
}

/** Puts archived witness files back where they were (the acceptance could not be recorded). */
export function restoreWitnesses(archived: ArchivedWitness[]): void {
  for (const a of archived) {
    for (const f of a.files) renameSync(join(a.archive, f), join(a.dir, f));
    if (readdirSync(a.archive).length === 0) rmdirSync(a.archive);
  }
}
