/**
 * A malformed site-data.json breaks only the commands that need the binding (issue 28): runs, the
 * audit trail and approvals are read as before, and the catalog commands that resolve site data
 * refuse in one line naming the file. Through the real binary.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('a malformed site-data.json', () => {
  let home: TestHome;
  let siteData: string;
  beforeAll(async () => {
    home = await makeHome('pglite');
    expect((await cli(['db', 'migrate', '--config', home.configFile], home.env)).code).toBe(0);
    siteData = join(home.home, 'site-data.json');
    writeFileSync(siteData, '{ "benchmarks": { "med_qa": { "source": ');
  });
  afterAll(() => home?.cleanup());

  const run = (...args: string[]) => cli([...args, '--config', home.configFile], home.env);

  it('leaves the commands that do not need the binding working', async () => {
    for (const args of [
      ['runs', 'list'],
      ['audit', 'verify'],
      ['approvals', 'list'],
      ['export', 'list'],
      ['endpoints', 'list'],
    ]) {
      const r = await run(...args);
      // Besides the store line, at most the log's word that the file is invalid (its file, no content).
      const other = r.stderr
        .replace(/^(store|warning): .*\n/gm, '')
        .replace(/^\[error\] policy\.invalid policy=site-data file=(\S+) errorCode=site-data\.invalid\n/gm, (_, f: string) => (f === siteData ? '' : _));
      expect([args.join(' '), r.code, other]).toEqual([args.join(' '), 0, '']);
    }
  });

  it('refuses the catalog commands that resolve site data in one line naming the file', async () => {
    for (const args of [
      ['benchmarks', 'show', 'med_qa'],
      ['benchmarks', 'check', 'med_qa'],
    ]) {
      const r = await run(...args);
      expect([args.join(' '), r.code === 0]).toEqual([args.join(' '), false]);
      expect(r.stderr + r.stdout).toContain(siteData);
      expect(r.stderr).not.toMatch(/\bat .+\.js:\d+/);
    }
    const show = await run('benchmarks', 'show', 'med_qa');
    expect(show.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a local run (it resolves the catalog) naming the file', async () => {
    const bound = await run('run', '--benchmark', 'med_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '1');
    expect(bound.code).not.toBe(0);
    expect(bound.stderr).toContain(siteData);
  });
});
