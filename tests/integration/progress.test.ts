/**
 * One progress display (issue 17, item 5) for `run`, `runs resume`, `demo` and `runs watch`: outside
 * a terminal it prints a line now and then with the counts and an ETA, and says `awaiting approval`
 * and `planning` while there is nothing to count yet (never a full bar of 0/0). Through the real
 * binary, with its stderr a pipe.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { countsText, formatEta, ProgressDisplay } from '../../src/cli/progress';
import { runPhase } from '../../src/contracts';
import { startModelServer } from '../../src/demo/model-server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A line at most every 0.1 s while the counts move. */
const FAST = { EHRBENCH_PROGRESS_SECONDS: '0.1' };

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 120_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const RUNNING = /^pubmed_qa: running: done (\d+) of 200, blocked 0, failed 0, left (\d+), ETA (\S+)$/;

describe('the progress display outside a terminal', () => {
  const counts = (done: number, pending: number) => ({ pending, claimed: 0, done, blocked: 0, failed: 0 });

  it('names what the run does before there is anything to count', () => {
    expect(runPhase({ status: 'requested', instanceCount: null, counts: counts(0, 0) })).toBe('awaiting approval');
    expect(runPhase({ status: 'approved', instanceCount: null, counts: counts(0, 0) })).toBe('starting');
    expect(runPhase({ status: 'running', instanceCount: null, counts: counts(3, 40) })).toBe('planning');
    expect(runPhase({ status: 'running', instanceCount: 43, counts: counts(3, 40) })).toBe('running');
    // Figures withheld from the caller: nothing is said about planning either.
    expect(runPhase({ status: 'running', instanceCount: null, counts: null })).toBe('running');
    expect(countsText({ status: 'running', instanceCount: null, counts: counts(3, 40) }, '-')).toBe(': done 3, blocked 0, failed 0 (43 queued so far)');
    expect(formatEta(75)).toBe('1m15s');
    expect(formatEta(undefined)).toBe('-');
  });

  it('prints a line on every change of phase, and at most one per period while the counts move', () => {
    let now = 0;
    const lines: string[] = [];
    const display = new ProgressDisplay({ stdout: () => undefined, stderr: (t) => lines.push(t), env: {} }, { label: 'b', tty: false, lineMs: 1000, clock: () => now });
    display.update({ status: 'requested', instanceCount: null, counts: counts(0, 0) });
    now = 500;
    display.update({ status: 'running', instanceCount: null, counts: counts(0, 10) });
    display.update({ status: 'running', instanceCount: 100, counts: counts(0, 100) });
    now = 1000;
    display.update({ status: 'running', instanceCount: 100, counts: counts(10, 90) });
    now = 2000;
    display.update({ status: 'running', instanceCount: 100, counts: counts(20, 80) });
    display.update({ status: 'completed', instanceCount: 100, counts: counts(100, 0) });
    display.stop();
    expect(lines).toEqual([
      'b: awaiting approval\n',
      'b: planning: done 0, blocked 0, failed 0 (10 queued so far)\n',
      'b: running: done 0 of 100, blocked 0, failed 0, left 100, ETA -\n',
      // Not at 1 s (0.5 s after the last line); at 2 s: 20 finished since counting began at 0.5 s, 80 left.
      'b: running: done 20 of 100, blocked 0, failed 0, left 80, ETA 6s\n',
      'b: completed: done 100 of 100, blocked 0, failed 0\n',
    ]);
  });
});

describe('ehrbench run', () => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome('pglite');
  });
  afterAll(() => home.cleanup());

  it('prints periodic lines with the counts and an ETA, then where the run ended', async () => {
    const server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
      latencyMs: 60,
    });
    try {
      const r = await cli(['run', '--config', home.configFile, '--benchmark', 'pubmed_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '200'], { ...home.env, ...FAST });
      expect(r.code).toBe(0);
      const lines = r.stderr.split('\n').filter(Boolean);
      const running = lines.filter((l) => RUNNING.test(l));
      expect(running.length).toBeGreaterThanOrEqual(2);
      const done = running.map((l) => Number(RUNNING.exec(l)?.[1]));
      expect(done).toEqual([...done].sort((a, b) => a - b));
      expect(lines.at(-1)).toBe('pubmed_qa: completed: done 200 of 200, blocked 0, failed 0');
      expect(r.stderr).not.toMatch(/0\/0|100%/);
    } finally {
      await server.close();
    }
  });
});

describe('ehrbench runs watch', () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ workers: 1, rows: 40, latencyMs: 60, concurrency: 2 });
  });
  afterAll(() => t?.close());

  /** Resolves once the child's stderr matches `pattern`; rejects after 30 s or if the child exits first. */
  function waitFor(child: ChildProcess, pattern: RegExp, text: { value: string }): Promise<void> {
    return new Promise((resolve, reject) => {
      setTimeout(() => reject(new Error(`no ${pattern} in 30 s: ${JSON.stringify(text.value)}`)), 30_000).unref();
      const check = () => (pattern.test(text.value) ? resolve() : undefined);
      child.stderr?.on('data', check);
      child.once('exit', () => (pattern.test(text.value) ? resolve() : reject(new Error(`exited before ${pattern}: ${text.value}`))));
      check();
    });
  }

  it('says awaiting approval until a compliance officer approves, then follows the counts to the end', async () => {
    const approval = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-PROGRESS-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_private'],
      purpose: 'progress test',
    });
    expect(approval.status).toBe(200);
    const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId: approval.json.approvalId });
    expect(requested.json.status).toBe('requested');
    const runId = requested.json.runId as string;
    const alice = t.ids.alice;
    if (!alice) throw new Error('no alice');
    const watch = spawn(
      process.execPath,
      [BIN, 'runs', 'watch', runId, '--interval', '0.1', '--server', `https://localhost:${t.daemon.port}`, '--cert', alice.certFile, '--key', alice.keyFile, '--ca', t.caFile],
      { env: { PATH: process.env.PATH, ...t.home.env, ...FAST }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const stderr = { value: '' };
    watch.stderr.on('data', (d: Buffer) => (stderr.value += d.toString()));
    const exited = new Promise<number | null>((resolve) => watch.once('exit', resolve));
    try {
      await waitFor(watch, /site_private: awaiting approval/, stderr);
      // Nothing is counted, and nothing runs, while the run waits.
      await sleep(500);
      expect(stderr.value).toBe('site_private: awaiting approval\n');
      expect((await t.call('dave', 'POST', `/v1/runs/${runId}/approve`, {})).status).toBe(200);
      expect(await exited).toBe(0);
    } finally {
      if (watch.exitCode === null) watch.kill('SIGKILL');
    }
    const lines = stderr.value.split('\n').filter(Boolean);
    expect(lines[0]).toBe('site_private: awaiting approval');
    const counted = lines.filter((l) => /^site_private: running: done \d+ of 40, blocked \d+, failed 0, left \d+, ETA \S+$/.test(l));
    expect(counted.length).toBeGreaterThanOrEqual(2);
    expect(lines.at(-1)).toMatch(/^site_private: completed: done \d+ of 40, blocked \d+, failed 0$/);
    expect(stderr.value).not.toMatch(/0\/0|100%/);
  });
});
