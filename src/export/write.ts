/**
 * Writing a released export to disk, all or nothing: every file goes into a hidden temporary folder
 * next to the destination (each written, flushed and closed), and the folder is renamed into place
 * in one step. A failure at any point (disk full, permissions) removes the temporary folder, so no
 * partial bundle is ever left where a reader would find it. An existing destination is never replaced.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../errors';
import { BUNDLE_FILE } from './bundle';

export interface ExportFiles {
  exportId: string;
  bundle: string;
  helm: { dir: string; runSpec: string; stats: string }[];
}

/** How one file's bytes reach the disk; tests substitute one that fails like a full disk. */
export type WriteFile = (path: string, data: string) => void;

/** Writes, flushes and closes; `wx` so nothing existing is overwritten. */
export const writeDurably: WriteFile = (path, data) => {
  const fd = openSync(path, 'wx', 0o640);
  try {
    const bytes = Buffer.from(data, 'utf8');
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
};

/** `<dir>/<exportId>/bundle.json` and, for HELM, `<dir>/<exportId>/helm/<run>/{run_spec,stats}.json`. */
export function writeExportFiles(dir: string, files: ExportFiles, writeFile: WriteFile = writeDurably): string {
  const target = join(dir, files.exportId);
  if (existsSync(target)) throw new UserError('export.already-written', `${target} already exists; a released export is never overwritten`);
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  const temp = join(dir, `.${files.exportId}.${randomBytes(6).toString('hex')}.partial`);
  try {
    mkdirSync(temp, { mode: 0o750 });
    writeFile(join(temp, BUNDLE_FILE), files.bundle);
    for (const run of files.helm) {
      const runDir = join(temp, 'helm', run.dir);
      mkdirSync(runDir, { recursive: true, mode: 0o750 });
      writeFile(join(runDir, 'run_spec.json'), run.runSpec);
      writeFile(join(runDir, 'stats.json'), run.stats);
    }
    renameSync(temp, target);
  } catch (err) {
    rmSync(temp, { recursive: true, force: true });
    throw err;
  }
  syncDirectory(dir);
  return target;
}

/** Makes the rename itself durable; best effort where directories cannot be opened. */
function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory; the files themselves are flushed.
  }
}
