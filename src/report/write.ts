/**
 * Writing a report file all or nothing: the page goes to a hidden temporary file next to the
 * destination (written, flushed, closed: src/export's writeDurably), then takes the destination's name
 * in one step: a hard link, which refuses an existing file, or with --force a rename, which replaces it
 * (where the file system has no hard links, a check and a rename).
 * A failure at any point removes the temporary file, so no half-written report is ever left.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { UserError } from '../errors';
import { writeDurably, type WriteFile } from '../export';

export function reportExists(file: string): UserError {
  return new UserError('report.exists', `${file} already exists; pass --force to replace it, or name another file`);
}

export function writeReportFile(file: string, html: string, opts: { force?: boolean; writeFile?: WriteFile } = {}): void {
  if (!opts.force && existsSync(file)) throw reportExists(file);
  const dir = dirname(file);
  const temp = join(dir, `.${basename(file)}.${randomBytes(6).toString('hex')}.partial`);
  try {
    (opts.writeFile ?? writeDurably)(temp, html);
    if (opts.force) renameSync(temp, file);
    else {
      try {
        linkSync(temp, file);
      } catch (err) {
        // A file system without hard links (some network shares): check, then rename.
        if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
        if (existsSync(file)) throw reportExists(file);
        renameSync(temp, file);
      }
      rmSync(temp, { force: true });
    }
  } catch (err) {
    rmSync(temp, { force: true });
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw reportExists(file);
    throw new UserError('report.write-failed', `${file}: the report cannot be written (${code ?? 'error'}); check the folder exists and is writable`);
  }
  syncDirectory(dir);
}

/** Makes the new name durable; best effort where directories cannot be opened. */
function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // Some platforms cannot fsync a directory; the file itself is flushed.
  }
}
