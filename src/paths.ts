import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The package root (the folder holding package.json), found from this file in src/ or dist/. */
export const PACKAGE_ROOT: string = (() => {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above ' + __dirname);
    dir = up;
  }
  return dir;
})();

/** The data directory: EHRBENCH_HOME, or ./.ehrbench in the working directory. */
export function dataHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.EHRBENCH_HOME ?? '.ehrbench');
}

export const SCHEMA_DIR = join(PACKAGE_ROOT, 'schemas');
export const BUILTIN_BENCHMARK_DIR = join(PACKAGE_ROOT, 'benchmarks');
export const MIGRATION_DIR = join(PACKAGE_ROOT, 'src', 'db', 'migrations');
