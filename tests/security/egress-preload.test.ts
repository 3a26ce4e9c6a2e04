/**
 * Preloads (issue 15 item 12). A `--require` preload that deletes NODE_OPTIONS (and empties
 * process.execArgv) before the environment check was never seen, and could capture prompts in clear
 * text. At start-up ehrbench now refuses when a loaded module lies outside the installation (the
 * package root), and reads the command line and NODE_OPTIONS the process was started with from /proc,
 * which a preload cannot edit from JavaScript.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertNoForeignCode, foreignModules } from '../../src/egress';
import { UserError } from '../../src/errors';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function node(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 60_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A preload that covers its tracks as far as JavaScript can, and leaves a mark to prove it ran. */
function preloads(dir: string) {
  const mark = join(dir, 'ran');
  const hide = `delete process.env.NODE_OPTIONS; process.execArgv.length = 0; require('fs').writeFileSync(${JSON.stringify(mark)}, 'x');`;
  const evil = join(dir, 'evil.js');
  writeFileSync(evil, `${hide}\n`);
  // Also removes itself from the module cache.
  const hidden = join(dir, 'hidden.js');
  writeFileSync(hidden, `${hide}\ndelete require.cache[__filename];\n`);
  // An ES module: never in require.cache at all.
  const esm = join(dir, 'evil.mjs');
  writeFileSync(esm, `import { writeFileSync } from 'node:fs';\ndelete process.env.NODE_OPTIONS;\nprocess.execArgv.length = 0;\nwriteFileSync(${JSON.stringify(mark)}, 'x');\n`);
  return { mark, evil, hidden, esm };
}

function policyFile(dir: string): string {
  const file = join(dir, 'endpoints.json');
  const endpoint = {
    id: 'local',
    provider: 'openai-compatible',
    url: 'https://model.test:18443/v1',
    model: 'test-model',
    addresses: ['127.0.0.1'],
    allowedCidrs: ['127.0.0.1/32'],
    auth: { type: 'none' },
    classification: { inVpc: true, baa: false, maxTier: 'public', development: true },
  };
  writeFileSync(file, JSON.stringify({ endpoints: [endpoint] }));
  return file;
}

const BIN = join(ROOT, 'bin', 'ehrbench.js');

describe('a preload that hides itself', () => {
  it('is seen without one: the command works and lists the endpoint (the control)', async () => {
    const dir = tempDir('preload');
    const r = await node([BIN, 'endpoints', 'list', '--policy', policyFile(dir)]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('local');
  });

  it.each<[string, (p: ReturnType<typeof preloads>) => { args: string[]; env: NodeJS.ProcessEnv }]>([
    ['node -r evil.js, which deletes NODE_OPTIONS and empties execArgv', (p) => ({ args: ['-r', p.evil], env: {} })],
    ['NODE_OPTIONS=--require evil.js, deleted by the preload', (p) => ({ args: [], env: { NODE_OPTIONS: `--require ${p.evil}` } })],
    ['a preload that also removes itself from require.cache (command line)', (p) => ({ args: ['--require', p.hidden], env: {} })],
    ['a preload that also removes itself from require.cache (NODE_OPTIONS)', (p) => ({ args: [], env: { NODE_OPTIONS: `-r ${p.hidden}` } })],
    ['an ES module preload (--import in NODE_OPTIONS)', (p) => ({ args: [], env: { NODE_OPTIONS: `--import=${p.esm}` } })],
    ['NODE_OPTIONS from --env-file, with a preload that hides itself', (p) => (writeFileSync(`${p.mark}.env`, `NODE_OPTIONS="-r ${p.hidden}"\n`), { args: [`--env-file=${p.mark}.env`], env: {} })],
  ])('refuses %s, in one line naming the rule, exit non-zero', async (_what, how) => {
    const dir = tempDir('preload');
    const p = preloads(dir);
    const { args, env } = how(p);
    const r = await node([...args, BIN, 'endpoints', 'list', '--policy', policyFile(dir)], env);
    // The preload did run (or the test proves nothing), and ehrbench did not go on.
    expect(existsSync(p.mark)).toBe(true);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^ehrbench: [^\n]*\(rule egress\.env\.foreign-module\)\n$/);
  });

  it('is refused by openApp itself, for a caller that does not come through the command line', async () => {
    const dir = tempDir('preload');
    const p = preloads(dir);
    const script = `require(${JSON.stringify(join(ROOT, 'dist', 'app.js'))}).openApp({ file: ${JSON.stringify(join(dir, 'no-config.json'))}, env: {} }).then(() => process.exit(0), (e) => { console.error(e.message); process.exit(1); });`;
    const r = await node(['-e', script], { NODE_OPTIONS: `--require ${p.evil}` });
    expect(existsSync(p.mark)).toBe(true);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`node loaded ${p.evil}`);
    expect(r.stderr).toMatch(/\(rule egress\.env\.foreign-module\)\n$/);
  });

  it.each([
    ['code given with -e', (bin: string, _dir: string) => ['-e', `require(${JSON.stringify(bin)})`]],
    ['a wrapper script outside the installation', (bin: string, dir: string) => (writeFileSync(join(dir, 'wrapper.js'), `require(${JSON.stringify(bin)});\n`), [join(dir, 'wrapper.js')])],
  ])('refuses to run ehrbench from %s', async (_what, args) => {
    const r = await node(args(BIN, tempDir('preload')));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ehrbench: [^\n]*\(rule egress\.env\.foreign-module\)\n$/);
  });
});

describe('the foreign-module check', () => {
  it('lists modules outside the installation, by their real path', () => {
    const root = tempDir('install');
    const outside = tempDir('outside');
    mkdirSync(join(root, 'node_modules', 'dep'), { recursive: true });
    writeFileSync(join(root, 'node_modules', 'dep', 'index.js'), '');
    writeFileSync(join(outside, 'evil.js'), '');
    // A link inside the installation to a file outside it is outside.
    symlinkSync(join(outside, 'evil.js'), join(root, 'node_modules', 'dep', 'linked.js'));
    const cache = {
      [join(root, 'node_modules', 'dep', 'index.js')]: {},
      [join(root, 'node_modules', 'dep', 'linked.js')]: {},
      [join(outside, 'evil.js')]: {},
      [`${root}-sibling/x.js`]: {},
      'not-a-path': {},
    };
    expect(foreignModules(cache, root).sort()).toEqual([join(outside, 'evil.js'), join(outside, 'evil.js'), `${root}-sibling/x.js`, 'not-a-path'].sort());
    expect(foreignModules({ [join(root, 'node_modules', 'dep', 'index.js')]: {} }, root)).toEqual([]);
  });

  it('refuses with code egress.unsafe-environment and the rule, naming the module', () => {
    let err: unknown;
    try {
      assertNoForeignCode({ cache: { '/tmp/evil.js': {} }, mainModule: BIN });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('egress.unsafe-environment');
    expect((err as Error).message).toMatch(/\/tmp\/evil\.js.*\(rule egress\.env\.foreign-module\)$/);
  });

  it('refuses a main module outside the installation, or none (-e)', () => {
    expect(() => assertNoForeignCode({ cache: {}, mainModule: null })).toThrow(/node runs code from its command line .*\(rule egress\.env\.foreign-module\)$/);
    expect(() => assertNoForeignCode({ cache: {}, mainModule: '/tmp/wrapper.js' })).toThrow(/node runs \/tmp\/wrapper\.js, not a script of the installation/);
    expect(() => assertNoForeignCode({ cache: {}, mainModule: BIN, startCommandLine: [process.execPath, BIN], startNodeOptions: '' })).not.toThrow();
  });

  it('refuses a preload flag in the command line or NODE_OPTIONS the process was started with', () => {
    expect(() => assertNoForeignCode({ cache: {}, mainModule: BIN, startCommandLine: [process.execPath, '-r', '/tmp/evil.js', BIN, 'serve'] })).toThrow(/-r.*\(rule egress\.env\.foreign-module\)$/);
    expect(() => assertNoForeignCode({ cache: {}, mainModule: BIN, startNodeOptions: '--import=/tmp/x.mjs' })).toThrow(/NODE_OPTIONS.*--import.*\(rule egress\.env\.foreign-module\)$/);
    // The deployed command lines pass: harmless node flags, then ehrbench's own arguments.
    expect(() => assertNoForeignCode({ cache: {}, mainModule: BIN, startCommandLine: [process.execPath, '--max-old-space-size=256', BIN, 'serve'], startNodeOptions: '' })).not.toThrow();
    expect(() =>
      assertNoForeignCode({
        cache: {},
        mainModule: BIN,
        startCommandLine: ['/nodejs/bin/node', '--max-old-space-size=256', '/app/bin/ehrbench.js', 'worker'],
        startNodeOptions: '--max-old-space-size=4096',
      }),
    ).not.toThrow();
  });

  it('passes in the process the tests run in (jest and its modules are inside the package root)', () => {
    expect(() => assertNoForeignCode()).not.toThrow();
  });
});

describe('the service units', () => {
  it.each(['ehrbench.service', 'ehrbench-worker@.service'])('%s unsets the variables that load code into node', (unit) => {
    const text = readFileSync(join(ROOT, 'deploy', 'systemd', unit), 'utf8');
    const unset = [...text.matchAll(/^UnsetEnvironment=(.*)$/gm)].flatMap((m) => (m[1] as string).split(/\s+/));
    expect(unset).toEqual(expect.arrayContaining(['NODE_OPTIONS', 'NODE_PATH']));
  });
});
