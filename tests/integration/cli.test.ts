/** The real `ehrbench` binary: one-line errors, exit codes, no stack traces, --help everywhere. */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';
import { initHome } from '../../src/setup/init';

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const COMMANDS = [
  [],
  ['init'],
  ['demo'],
  ['run'],
  ['runs'],
  ['runs', 'list'],
  ['runs', 'show'],
  ['runs', 'resume'],
  ['benchmarks', 'list'],
  ['benchmarks', 'show'],
  ['endpoints', 'list'],
  ['db', 'status'],
  ['db', 'migrate'],
  ['audit', 'verify'],
  ['audit', 'export'],
  ['audit', 'tail'],
  ['audit', 'search'],
  ['leaderboard'],
  ['ratings', 'agreement'],
  ['ratings', 'plan'],
  ['whoami'],
  ['serve'],
  ['worker'],
  ['approvals', 'add'],
  ['approvals', 'list'],
  ['approvals', 'show'],
  ['approvals', 'suspend'],
  ['approvals', 'reinstate'],
  ['approvals', 'close'],
  ['runs', 'request'],
  ['runs', 'approve'],
  ['runs', 'watch'],
  ['runs', 'cancel'],
  ['pki', 'init'],
  ['pki', 'issue'],
  ['pki', 'sign'],
  ['pki', 'revoke'],
];

describe('ehrbench CLI', () => {
  it.each(COMMANDS)('prints help for "%s" and exits 0', (...cmd) => {
    const r = cli([...cmd, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('ehrbench');
    expect(r.stdout).toContain('--config');
  });

  it('explains a usage error in one line with exit code 2', () => {
    const r = cli(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^ehrbench: Unknown argument: frobnicate; see --help/);
  });

  it('reports a bad config file in one line naming file and path, without a stack trace', () => {
    const home = tempDir('cli');
    initHome({ home });
    const file = join(home, 'config.json');
    writeFileSync(file, JSON.stringify({ configVersion: 1, site: { id: 'x' }, runs: { colour: 1 } }));
    const r = cli(['runs', 'list'], { EHRBENCH_HOME: home });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: ${file}: /runs: unknown key "colour" (allowed: concurrencyPerEndpoint, maxAttempts, leaseSeconds, claimBatch)\n`);
  });

  it('tells a fresh machine to run init first', () => {
    const r = cli(['runs', 'list'], { EHRBENCH_HOME: join(tempDir('cli'), 'missing') });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ehrbench: .*config\.json: no configuration found; run "npx ehrbench init" first/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('lists the built-in benchmarks as a table and as JSON', () => {
    const home = tempDir('cli');
    initHome({ home });
    const table = cli(['benchmarks', 'list'], { EHRBENCH_HOME: home });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/Medical Research Assistance \(\d+\)\n[\s\S]*pubmed_qa\s+PubMedQA\s+Conducting Literature Research\s+public\s+exact_match/);
    const json = JSON.parse(cli(['benchmarks', 'list', '--json'], { EHRBENCH_HOME: home }).stdout) as { id: string }[];
    expect(json.map((b) => b.id)).toEqual(expect.arrayContaining(['medcalc_bench', 'medec', 'pubmed_qa']));
  });

  it('refuses an unknown benchmark in one line', () => {
    const home = tempDir('cli');
    initHome({ home });
    const r = cli(['run', '--benchmark', 'nope', '--endpoint', 'demo-loopback'], { EHRBENCH_HOME: home });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('ehrbench: unknown benchmark "nope"; see "npx ehrbench benchmarks list"\n');
  });
});
