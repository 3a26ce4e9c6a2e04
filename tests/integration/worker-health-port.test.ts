/**
 * `serve` and `worker` on one host, the documented systemd layout (issue 17, item 4): a worker opens a
 * health port only when given its own (`--health-port` or `worker.healthPort`), never the daemon's
 * `server.healthPort`, and a port in use is one line naming it, through the real binary.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { initSitePki } from '../../src/identity/site-pki';
import { ROOT } from '../helpers/paths';
import { freePort, makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');
const postgresOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;

function editConfig(home: TestHome, edit: (c: Record<string, any>) => void): void {
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  edit(config);
  writeFileSync(home.configFile, JSON.stringify(config, null, 2));
}

const start = (home: TestHome, args: string[]) => spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...home.env }, stdio: ['ignore', 'ignore', 'pipe'] });

/** Resolves with all of `child`'s stderr once it matches `pattern`; rejects if the child exits first. */
function waitFor(child: ChildProcess, pattern: RegExp): Promise<string> {
  let text = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      text += c.toString();
      if (pattern.test(text)) resolve(text);
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} before printing ${pattern}: ${text}`)));
  });
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  return exited;
}

const holdPort = (port: number) =>
  new Promise<Server>((resolve) => {
    const s = createServer();
    s.listen(port, '127.0.0.1', () => resolve(s));
  });

describe('a worker and its health port', () => {
  let home: TestHome;
  beforeEach(async () => {
    home = await makeHome('pglite');
  });
  afterEach(() => home.cleanup());

  it('names a port in use in one line, and what to do', async () => {
    const port = await freePort();
    const held = await holdPort(port);
    try {
      const r = spawnSync(process.execPath, [BIN, 'worker', '--workers', '1', '--health-port', String(port)], { env: { PATH: process.env.PATH, ...home.env }, encoding: 'utf8', timeout: 60_000 });
      expect(r.status).toBe(1);
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('ehrbench:'));
      expect(lines).toEqual([`ehrbench: health port ${port} is in use (EADDRINUSE): give the worker its own with --health-port or worker.healthPort`]);
      expect(r.stderr).not.toMatch(/unexpected|at .*\.js:\d+/);
    } finally {
      held.close();
    }
  });

  it('answers /health on the port it was given (--health-port, else worker.healthPort)', async () => {
    const [flag, configured] = [await freePort(), await freePort()];
    editConfig(home, (c) => (c.worker = { healthPort: configured }));
    for (const [args, port] of [
      [['--health-port', String(flag)], flag],
      [[], configured],
    ] as const) {
      const worker = start(home, ['worker', '--workers', '1', ...args]);
      try {
        await waitFor(worker, /ehrbench worker .* running 1 run\(s\) at a time/);
        const res = await fetch(`http://127.0.0.1:${port}/health`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ status: 'ok' });
        expect(await stop(worker)).toBe(0);
      } finally {
        await stop(worker);
      }
    }
  });
});

postgresOnly('serve and worker on one host', () => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome('postgres');
    initSitePki(join(home.home, 'pki'));
  });
  afterAll(() => home.cleanup());

  it('both start: the worker does not take the daemon health port', async () => {
    const [apiPort, healthPort] = [await freePort(), await freePort()];
    editConfig(home, (c) => (c.server = { port: apiPort, healthPort, workers: 0 }));
    const serve = start(home, ['serve', '--workers', '0']);
    let worker: ChildProcess | undefined;
    try {
      await waitFor(serve, /ehrbench daemon listening on/);
      worker = start(home, ['worker', '--workers', '1']);
      const text = await waitFor(worker, /ehrbench worker .* running 1 run\(s\) at a time/);
      expect(text).not.toMatch(/EADDRINUSE/);
      expect((await fetch(`http://127.0.0.1:${healthPort}/health`)).status).toBe(200);
      expect(await stop(worker)).toBe(0);
    } finally {
      if (worker) await stop(worker);
      await stop(serve);
    }
  });
});
