/**
 * The embedded store holds run items (patient text) in files PGlite writes world-readable (0666): its
 * folder is what keeps other accounts out, so it is made 0700, whether ehrbench creates it or finds it.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db';
import { tempDir } from '../helpers/db';

jest.setTimeout(60_000);

const mode = (path: string) => statSync(path).mode & 0o777;

describe('the embedded store folder', () => {
  it('is created private to its owner', async () => {
    const dir = join(tempDir('pglite-mode'), 'nested', 'db');
    const db = await openDatabase({ embeddedDir: dir, migrate: false });
    await db.close();
    expect(mode(dir)).toBe(0o700);
  });

  it('is made private when found readable by others', async () => {
    const dir = join(tempDir('pglite-mode'), 'db');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const db = await openDatabase({ embeddedDir: dir, migrate: false });
    await db.close();
    expect(mode(dir)).toBe(0o700);
  });
});
