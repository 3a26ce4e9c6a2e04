/**
 * Paths held to places: the real path of a file (every link followed), whether it lies within a
 * folder, and the path of a file actually opened (Linux names it in /proc/self/fd, so a link swapped
 * after a check cannot redirect the read). Endpoint secrets (src/egress/secrets.ts) and the files a
 * benchmark names (src/catalog/confine.ts) are confined with these.
 */
import { readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';

/** The real path of `p`; for a path that does not exist yet, its nearest existing folder's real path and the rest. */
export function realPath(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    const parent = dirname(p);
    return parent === p ? p : join(realPath(parent), basename(p));
  }
}

/** True when `p` is `dir` itself or lies below it (both real paths). */
export function within(p: string, dir: string): boolean {
  const rel = relative(dir, p);
  return rel === '' || (!isAbsolute(rel) && rel.split(sep)[0] !== '..');
}

/** The real path of the file open as `fd` (opened by the name `file`, resolved again where /proc is absent). */
export function openedPath(fd: number, file: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realPath(file);
  }
}
