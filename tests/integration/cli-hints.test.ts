/**
 * The commands a hint tells people to type work for them (issue 17, item 18): after `npm ci` in a
 * clone `ehrbench` is not on the PATH and `npx ehrbench` is; after a global install or `npm link` it
 * is. Through the real binary, reached each way.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { commandPrefix } from '../../src/command-prefix';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

const BIN = join(ROOT, 'bin', 'ehrbench.js');
const NODE_DIR = dirname(process.execPath);

/** A folder holding an `ehrbench` that links to `target`, as a global install or `npm link` makes it. */
function binDir(target: string, under = ''): string {
  const dir = join(tempDir('path-bin'), under);
  mkdirSync(dir, { recursive: true });
  symlinkSync(target, join(dir, 'ehrbench'));
  return dir;
}

/** `runs list` without a configuration: its error says which command makes one. */
function hintOf(file: string, args: string[], path: string): string {
  const home = tempDir('hint-home');
  const r = spawnSync(file, [...args, 'runs', 'list'], { encoding: 'utf8', env: { PATH: path, HOME: home, EHRBENCH_HOME: join(home, 'none') } });
  expect(r.status).toBe(1);
  const m = /; run "(.+) init" first/.exec(r.stderr);
  expect(m).not.toBeNull();
  return m?.[1] as string;
}

describe('the command a hint names', () => {
  it('is "npx ehrbench" when the binary is run as node bin/ehrbench.js, even with another ehrbench on the PATH', () => {
    expect(hintOf(process.execPath, [BIN], [NODE_DIR, process.env.PATH].join(delimiter))).toBe('npx ehrbench');
    // An ehrbench on the PATH that is another installation would not run this one.
    const other = join(tempDir('other-install'), 'ehrbench.js');
    writeFileSync(other, '#!/usr/bin/env node\n', { mode: 0o755 });
    expect(hintOf(process.execPath, [BIN], [binDir(other), NODE_DIR].join(delimiter))).toBe('npx ehrbench');
  });

  it('is "ehrbench" when the binary was reached through an ehrbench on the PATH (global install, npm link)', () => {
    const dir = binDir(BIN);
    expect(hintOf('ehrbench', [], [dir, NODE_DIR].join(delimiter))).toBe('ehrbench');
  });

  it('is "npx ehrbench" when the ehrbench on the PATH is the node_modules/.bin that npx or npm run put there', () => {
    const dir = binDir(BIN, join('project', 'node_modules', '.bin'));
    expect(hintOf('ehrbench', [], [dir, NODE_DIR].join(delimiter))).toBe('npx ehrbench');
  });

  it('is decided from the script and the PATH alone', () => {
    const dir = binDir(BIN);
    expect(commandPrefix(join(dir, 'ehrbench'), { PATH: dir })).toBe('ehrbench');
    expect(commandPrefix(BIN, { PATH: dir })).toBe('ehrbench');
    expect(commandPrefix(BIN, { PATH: tempDir('empty-path') })).toBe('npx ehrbench');
    expect(commandPrefix(BIN, {})).toBe('npx ehrbench');
  });
});
