/**
 * The append-only JSON-lines files kept in every witness folder, outside the store, so that what they
 * record outlives a restored backup: certificate revocations (src/identity/revocation-ledger.ts) and
 * IRB approval changes (src/access/approval-ledger.ts). One way to write them (synced to disk before
 * the change it records may commit) and one way to read them; each ledger checks its own lines.
 */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Appends `line` (one JSON object, no newline) to the file `name` in every folder, synced; a folder that
 * cannot be written throws `unwritable(file, code)` so the caller's change does not happen.
 */
export function appendLedgerLine(dirs: string[], name: string, line: string, unwritable: (file: string, code: string) => Error): void {
  for (const dir of dirs) {
    const file = join(dir, name);
    let fd: number | undefined;
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      fd = openSync(file, 'a', 0o600);
      writeSync(fd, `${line}\n`);
      fsyncSync(fd);
    } catch (err) {
      throw unwritable(file, (err as NodeJS.ErrnoException).code ?? 'error');
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
}

/** The non-blank lines of `name` in every folder that has it, in order, each with where it stands (file:line). */
export function ledgerLines(dirs: string[], name: string): { text: string; where: string }[] {
  const lines: { text: string; where: string }[] = [];
  for (const dir of dirs) {
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, i) => {
        if (text.trim() !== '') lines.push({ text, where: `${file}:${i + 1}` });
      });
  }
  return lines;
}
