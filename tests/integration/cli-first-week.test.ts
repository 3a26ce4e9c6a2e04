/**
 * What a hospital's first users trip on, through the real binary: Ctrl-C in a local run, a run whose
 * instances all failed, errors with --json, a bare `ehrbench`, `| head`, and the catalog before init.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { startModelServer } from '../../src/demo/model-server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let home: TestHome;
beforeEach(async () => {
  home = await makeHome('pglite');
});
afterEach(async () => {
  await home.cleanup();
});

const serverFor = (h: TestHome, latencyMs: number) =>
  startModelServer({
    certPem: readFileSync(join(h.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(h.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: h.port,
    latencyMs,
  });

describe('a local run', () => {
  it('stops on Ctrl-C with the resume command, gives its leases back, and resumes to completion', async () => {
    const server = await serverFor(home, 40);
    try {
      const child = spawn(process.execPath, [BIN, 'run', '--config', home.configFile, '--benchmark', 'pubmed_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '200'], {
        env: { PATH: process.env.PATH, ...home.env },
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      // Interrupt once the run is under way (its first progress line).
      await new Promise<void>((resolve) => {
        const check = () => (/done \d+/.test(stderr) ? resolve() : setTimeout(check, 50));
        check();
      });
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(130);
      const hint = /interrupted; resume with: npx ehrbench runs resume ([0-9a-f-]{36})\n$/.exec(stderr);
      expect(hint).not.toBeNull();
      const runId = hint?.[1] as string;

      // Nothing is left held: no claimed instance, no endpoint slot, no planner lease.
      const app = await openApp({ file: home.configFile, env: home.env });
      try {
        expect(await app.db.query("SELECT 1 FROM run_items WHERE run_id = $1 AND state = 'claimed'", [runId])).toEqual([]);
        expect(await app.db.query('SELECT 1 FROM endpoint_slots WHERE holder IS NOT NULL')).toEqual([]);
        expect((await app.engine.store.getRun(runId))?.status).toBe('running');
      } finally {
        await app.close();
      }
      const resumed = await cli(['runs', 'resume', runId, '--config', home.configFile, '--json'], home.env);
      expect(resumed.code).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ status: 'completed', counts: { done: 200, failed: 0 } });
    } finally {
      await server.close();
    }
  });

  it('whose every instance failed exits non-zero with one line per cause, not a line per call', async () => {
    // No model server: every call is refused by the loopback address.
    const r = await cli(['run', '--config', home.configFile, '--benchmark', 'pubmed_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '20'], home.env);
    expect(r.code).toBe(5);
    const failed = r.stderr.split('\n').filter((l) => l.includes('failed: endpoint'));
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatch(/failed: endpoint demo-loopback: model\.[a-z-]+ \(.+\): 20 instances$/);
    expect(r.stderr).not.toMatch(/run\.item\.call-failed/);
    expect(r.stderr).toMatch(/ehrbench: run [0-9a-f-]{36} failed: no instance finished \(20 failed, 0 blocked\): there are no results/);
    // The run is failed in the store too, not "completed" with nothing done.
    expect(r.stdout).toMatch(/\bfailed\s+[0-9a-f-]{36}/);
  });
});

describe('the command line', () => {
  it('gives errors as one JSON object on stderr with --json', async () => {
    // A read command never migrates: on the fresh store the refusal itself comes as JSON.
    const fresh = await cli(['runs', 'show', '00000000-0000-4000-8000-000000000000', '--config', home.configFile, '--json'], home.env);
    expect(fresh.code).toBe(1);
    expect(JSON.parse(fresh.stderr)).toEqual({ error: 'db.migrations-pending', message: expect.stringContaining('db migrate" as the owner') });
    expect((await cli(['db', 'migrate', '--config', home.configFile], home.env)).code).toBe(0);
    const r = await cli(['runs', 'show', '00000000-0000-4000-8000-000000000000', '--config', home.configFile, '--json'], home.env);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stderr)).toEqual({ error: 'run.not-found', message: expect.stringContaining('does not exist') });
  });

  it('says its hint once when called with nothing', () => {
    const r = spawnSync(process.execPath, [BIN], { encoding: 'utf8', env: { PATH: process.env.PATH, ...home.env } });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('ehrbench: name a command; see --help\n');
  });

  it('ends quietly when the reader of its output stops early (| head)', () => {
    const r = spawnSync('sh', ['-c', `"${process.execPath}" "${BIN}" benchmarks list --json | head -c 10`], { encoding: 'utf8', env: { PATH: process.env.PATH, ...home.env } });
    expect(r.stdout).toHaveLength(10);
    expect(r.stderr).toBe('');
  });

  it('lists and shows the shipped benchmarks before "ehrbench init"', () => {
    const empty = tempDir('no-init');
    const env = { PATH: process.env.PATH, HOME: empty, EHRBENCH_HOME: join(empty, 'ehrbench') };
    const list = spawnSync(process.execPath, [BIN, 'benchmarks', 'list'], { encoding: 'utf8', env });
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/39 benchmarks/);
    const show = spawnSync(process.execPath, [BIN, 'benchmarks', 'show', 'pubmed_qa'], { encoding: 'utf8', env });
    expect(show.status).toBe(0);
    expect(show.stdout).toContain('PubMedQA');
  });

  it('prints a shell completion script that completes its commands', () => {
    const script = spawnSync(process.execPath, [BIN, 'completion'], { encoding: 'utf8', env: { PATH: process.env.PATH, ...home.env } });
    expect(script.status).toBe(0);
    expect(script.stdout).toContain('###-begin-ehrbench-completions-###');
    const words = spawnSync(process.execPath, [BIN, '--get-yargs-completions', 'ehrbench', ''], { encoding: 'utf8', env: { PATH: process.env.PATH, ...home.env } });
    expect(words.stdout.split('\n')).toEqual(expect.arrayContaining(['run', 'runs', 'benchmarks', 'audit', 'export']));
  });
});
