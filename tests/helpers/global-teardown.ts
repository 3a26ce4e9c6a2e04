/** Removes this test run's temporary folder (global-setup made it; every tempDir of the run is inside). */
import { rmSync } from 'node:fs';
import { TEST_RUN_TMP } from './paths';

export default async function globalTeardown(): Promise<void> {
  const dir = process.env[TEST_RUN_TMP];
  if (dir) rmSync(dir, { recursive: true, force: true });
}
