/**
 * The files a benchmark names, held to their places. A site benchmark's `prompt.templateFile`,
 * `dataset.files[].path` and `jury.promptFile` are read into prompts that leave the process: a
 * template of `../../keys/audit-mac.key` once sent the MAC key to an endpoint with every prompt. So:
 *   - a file a benchmark definition names resolves, every link followed, inside the benchmark's own
 *     folder, the package's shipped datasets, or a folder the configuration declares for site data
 *     (catalog.dataDirs);
 *   - a file a site-data binding names (site-data.json) may lie anywhere the site keeps its data;
 *   - neither is ever one of the daemon's own files (keys, PKI, secrets, the de-identification secret,
 *     database credentials, the configuration, the policies, the audit witnesses, the database).
 * Refused when the benchmark is loaded, naming the rule, and checked again on the file actually
 * opened when it is read: a link swapped in after the load is refused too.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FilePlaces } from '../config';
import { openedPath, realPath, within } from '../confine';
import { type ErrorCode, UserError } from '../errors';
import { PACKAGE_ROOT } from '../paths';
import type { RuleId } from '../policy';

export type { FilePlaces } from '../config';

/** No configuration: a benchmark's files are held to its own folder and the shipped datasets. */
export const NO_PLACES: FilePlaces = { dataDirs: [], daemonFiles: [] };

const SHIPPED_DATASETS = join(PACKAGE_ROOT, 'datasets');

type FileRule = Extract<RuleId, 'benchmark.file-outside-folder' | 'benchmark.file-is-daemon-file'>;

export interface FileProblem {
  rule: FileRule;
  reason: string;
}

/**
 * What is wrong with reading `file` for a benchmark, or undefined. `folder`: the benchmark's folder
 * for a file its definition names; undefined for a file a site-data binding names (anywhere but the daemon's).
 */
export function fileProblem(file: string, folder: string | undefined, places: FilePlaces): FileProblem | undefined {
  const real = realPath(file);
  const via = real === file ? '' : ` (resolves to ${real})`;
  const own = places.daemonFiles.find((d) => within(real, realPath(d.path)));
  if (own) return { rule: 'benchmark.file-is-daemon-file', reason: `${file}${via} is ${own.what}, never a benchmark's file` };
  if (folder === undefined) return undefined;
  if (![folder, SHIPPED_DATASETS, ...places.dataDirs].some((dir) => within(real, realPath(dir)))) {
    return {
      rule: 'benchmark.file-outside-folder',
      reason: `${file}${via} is outside the benchmark's folder ${folder}; move it there or declare its folder in the config's catalog.dataDirs`,
    };
  }
  return undefined;
}

/** Throws the one-line error for a file that breaks a rule: where it is named, the file, the rule. */
export function refuseFile(code: ErrorCode, where: string, problem: FileProblem | undefined): void {
  if (problem) throw new UserError(code, `${where}: ${problem.reason} (rule ${problem.rule})`);
}

/**
 * Reads a text file a benchmark definition names, checking the file actually opened. Non-blocking
 * open: a FIFO put in its place cannot hang the daemon, and is refused as not a regular file.
 */
export function readConfinedText(file: string, folder: string, places: FilePlaces, where: string): string {
  refuseFile('benchmark.invalid', where, fileProblem(file, folder, places));
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError('benchmark.invalid', `${where}: ${file} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${code ?? 'error'})`}`);
  }
  try {
    refuseFile('benchmark.invalid', where, fileProblem(openedPath(fd, file), folder, places));
    if (!fstatSync(fd).isFile()) throw new UserError('benchmark.invalid', `${where}: ${file} is not a regular file`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** The check a dataset reader makes on each file it opens (the rules of the load, on the real file). */
export function openedCheck(folder: string | undefined, places: FilePlaces, where: string): (fd: number, file: string) => void {
  return (fd, file) => refuseFile('dataset.unreadable', where, fileProblem(openedPath(fd, file), folder, places));
}
