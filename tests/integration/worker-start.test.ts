/**
 * `ehrbench worker` started while its PostgreSQL is not reachable waits for it (a worker comes up
 * with or before the database after a host restart), and starts once it answers; a store that
 * refuses it for good (no such database) ends it at once with the one-line error.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { ROOT } from '../helpers/paths';
import { freePort, makeHome, type TestHome } from '../helpers/home';

const postgresOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;

/** Resolves when `child`'s stderr has printed text matching `pattern`; returns everything so far. */
function waitForStderr(child: ChildProcess, pattern: RegExp): Promise<string> {
  let text = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      text += c.toString();
      if (pattern.test(text)) resolve(text);
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code} before printing ${pattern}: ${text}`)));
  });
}

/** A TCP relay to the real PostgreSQL: "the database" appears on `port` when it is started. */
function relay(port: number, target: URL): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

postgresOnly('ehrbench worker and an unreachable store', () => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome('postgres');
  });
  afterAll(() => home.cleanup());

  const env = (url: string) => ({ PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: home.home, EHRBENCH_DATABASE_URL: url });

  it('waits while the database is down and starts when it comes up', async () => {
    const real = new URL(home.store.url as string);
    const port = await freePort();
    const via = new URL(real.toString());
    via.port = String(port);
    const worker = spawn(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'worker', '--workers', '1'], { env: env(via.toString()), stdio: ['ignore', 'ignore', 'pipe'] });
    let server: Server | undefined;
    try {
      const waiting = await waitForStderr(worker, /store not reachable \(db\.unreachable\)/);
      expect(waiting).not.toMatch(/Error:|at .*\.js:\d+/);
      server = await relay(port, real);
      await waitForStderr(worker, /ehrbench worker .* running 1 run\(s\) at a time/);
      const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
      worker.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
      server?.close();
    }
  });

  it('exits at once with one line when the store refuses it for good', () => {
    const wrong = new URL(home.store.url as string);
    wrong.pathname = '/ehrbench_no_such_database';
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'worker', '--workers', '1'], { env: env(wrong.toString()), encoding: 'utf8', timeout: 60_000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/db\.unreachable|cannot connect \(3D000\)/);
    expect(r.stderr).not.toMatch(/retrying/);
  });
});
