import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import lockfile from 'proper-lockfile';
import { UserError } from '../errors';
import type { Database, Queryable } from './index';

/**
 * PostgreSQL's shared buffers inside PGlite's WASM heap. initdb picks 128 MB, all of it resident in
 * the process; the embedded store's tables are small and its files sit in the OS page cache, so 16 MB
 * holds the working set of a run.
 */
export const EMBEDDED_SHARED_BUFFERS = '16MB';

/**
 * The young generation of the store's thread, in MB. V8's default (up to 48 MB on 64-bit hosts) fills with
 * the short-lived copies of rows the thread hands over; 8 MB collects them sooner at no measured cost
 * (bench:run: 8 MB less peak RSS, CPU per instance within the noise).
 */
export const EMBEDDED_THREAD_YOUNG_GENERATION_MB = 8;

/**
 * V8 compiles PGlite's 9 MB WebAssembly module on several background tasks (one per thread of Node's
 * V8 platform, four by default), each with its own compiler memory that the allocator keeps
 * afterwards: about 50 MB of resident memory for the life of the process. With one task an existing store opened as fast here (0.36-0.58 s
 * either way) and the process kept 40-55 MB less. Process-wide, and set before the store's thread
 * starts, which is when the module is compiled; the only other WebAssembly in the daemon is undici's
 * HTTP parser, a few hundred kB.
 */
let compilationTasksSet = false;
function oneWasmCompilationTask(): void {
  if (compilationTasksSet) return;
  setFlagsFromString('--wasm-num-compilation-tasks=1');
  compilationTasksSet = true;
}

/** PGlite's start parameters with the embedded store's memory settings. */
export function embeddedStartParams(): string[] {
  // Loaded here only (PGlite itself runs in its thread): a process on PostgreSQL never loads it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { PGlite } = require('@electric-sql/pglite') as typeof import('@electric-sql/pglite');
  return [...PGlite.defaultStartParams, '-c', `shared_buffers=${EMBEDDED_SHARED_BUFFERS}`];
}

/**
 * The store's folder, created or made private to its owner (0700). PGlite writes its files 0666 (its
 * file system ignores the umask), and they hold run items, patient text: the folder is what keeps
 * other accounts of the host out. A folder that cannot be made private is refused, not used.
 */
function privateFolder(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    if ((statSync(dataDir).mode & 0o077) !== 0) chmodSync(dataDir, 0o700);
  } catch (err) {
    throw new UserError(
      'db.embedded-permissions',
      `embedded store at ${dataDir} cannot be made private to its owner (${(err as NodeJS.ErrnoException).code ?? 'error'}); give it to the account ehrbench runs as, mode 0700`,
    );
  }
}

/**
 * Creates the data directory of a new store (initdb) in a short-lived child process. PGlite runs
 * initdb in a second PGlite instance plus an initdb module and copies the result as a tarball: about
 * 600 MB for a few seconds, which a closed instance's WASM memory does not give back to the process
 * that held it. In a child, that memory goes with the child and the store's process starts at its
 * steady size. The child is handed only the module path and the folder (argv, never code built from
 * them); it inherits no NODE_OPTIONS and no preloads.
 */
const CREATE_SOURCE = `
const [modulePath, dataDir, params] = process.argv.slice(1);
const { PGlite } = require(modulePath);
(async () => {
  const db = new PGlite(dataDir, { startParams: JSON.parse(params) });
  await db.waitReady;
  await db.close();
})().then(() => process.exit(0), (err) => { process.stderr.write(String((err && err.name) || 'Error')); process.exit(1); });
`;

async function createInChild(dataDir: string): Promise<void> {
  const child = spawn(process.execPath, ['-e', CREATE_SOURCE, '--', require.resolve('@electric-sql/pglite'), dataDir, JSON.stringify(embeddedStartParams())], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-200)));
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(-1));
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0 || !existsSync(join(dataDir, 'PG_VERSION'))) {
    // Only the error's class name, never its text (it could quote a path or a setting).
    const name = /^[A-Za-z]{1,40}$/.test(stderr.trim()) ? stderr.trim() : 'initdb failed';
    throw new UserError('db.embedded-unavailable', `embedded store at ${dataDir} cannot be created (${name})`);
  }
}

/**
 * The embedded PostgreSQL runs in a worker thread of this process, so that its statements (WASM,
 * synchronous) do not hold the event loop that serves model calls, leases and the API. The thread
 * owns the one PGlite session; the main thread sends it statements and transaction boundaries and
 * gets rows back. A transaction holds PGlite's transaction lock in the thread from `begin` to `end`,
 * exactly as PGlite.transaction does in-process: other statements wait for it.
 */
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { PGlite } = require(workerData.modulePath);
const INT8_OID = 20;
const plain = (err) => {
  const out = { name: (err && err.name) || 'Error', message: String((err && err.message) || err) };
  for (const k of Object.keys(err || {})) if (typeof err[k] === 'string' || typeof err[k] === 'number') out[k] = err[k];
  return out;
};
const db = new PGlite(workerData.dataDir, { parsers: { [INT8_OID]: (v) => Number(v) }, startParams: workerData.startParams });
const txs = new Map();
const reply = (id, value) => parentPort.postMessage({ id, ok: true, value });
const refuse = (id, err) => parentPort.postMessage({ id, ok: false, error: plain(err) });
const ROLLBACK = Symbol('rollback');
db.waitReady.then(() => parentPort.postMessage({ ready: true }), (err) => parentPort.postMessage({ ready: false, error: plain(err) }));
parentPort.on('message', (m) => {
  switch (m.op) {
    case 'query':
    case 'exec': {
      const target = m.tx === undefined ? db : txs.get(m.tx) && txs.get(m.tx).tx;
      if (!target) return refuse(m.id, new Error('transaction is not open'));
      const p = m.op === 'query' ? target.query(m.sql, m.params, m.arrays ? { rowMode: 'array' } : undefined).then((r) => r.rows) : target.exec(m.sql).then(() => undefined);
      return void p.then((v) => reply(m.id, v), (err) => refuse(m.id, err));
    }
    case 'begin': {
      let started = false;
      db.transaction((tx) => new Promise((resolve, reject) => {
        started = true;
        txs.set(m.tx, { tx, resolve, reject });
        reply(m.id);
      })).then(
        () => { const t = txs.get(m.tx); txs.delete(m.tx); if (t && t.endId !== undefined) reply(t.endId); },
        (err) => {
          const t = txs.get(m.tx);
          txs.delete(m.tx);
          if (!started) return refuse(m.id, err);
          if (t && t.endId !== undefined) return err === ROLLBACK ? reply(t.endId) : refuse(t.endId, err);
        },
      );
      return;
    }
    case 'end': {
      const t = txs.get(m.tx);
      if (!t) return refuse(m.id, new Error('transaction is not open'));
      t.endId = m.id;
      return m.commit ? t.resolve() : t.reject(ROLLBACK);
    }
    case 'close':
      return void db.close().then(() => reply(m.id), (err) => refuse(m.id, err));
  }
});
`;

type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: Record<string, unknown> & { name: string; message: string } };

/** An error from the thread, as an Error with the fields PGlite gave it (SQLSTATE `code`, ...). */
function revive(e: Record<string, unknown> & { name: string; message: string }): Error {
  const err = new Error(e.message);
  Object.assign(err, e);
  return err;
}

class PgliteThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private nextId = 1;
  private nextTx = 1;
  private broken: Error | undefined;
  readonly ready: Promise<void>;

  constructor(dataDir: string) {
    oneWasmCompilationTask();
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { modulePath: require.resolve('@electric-sql/pglite'), dataDir, startParams: embeddedStartParams() },
      // The thread loads only PGlite: no inherited preloads or flags.
      execArgv: [],
      env: {},
      resourceLimits: { maxYoungGenerationSizeMb: EMBEDDED_THREAD_YOUNG_GENERATION_MB },
    });
    // Idle, the thread does not keep the process alive (as an in-process PGlite would not).
    this.worker.unref();
    this.ready = new Promise<void>((resolve, reject) => {
      const onReady = (m: { ready?: boolean; error?: { name: string; message: string } }) => {
        if (m.ready === undefined) return;
        this.worker.off('message', onReady);
        if (m.ready) resolve();
        else reject(revive(m.error ?? { name: 'Error', message: 'PGlite did not start' }));
      };
      this.worker.on('message', onReady);
      this.worker.once('error', reject);
    });
    this.worker.on('message', (m: Reply | { ready: boolean }) => {
      if (!('id' in m)) return;
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.ok) p.resolve(m.value);
      else p.reject(revive(m.error));
    });
    const fail = (err: Error) => {
      this.broken ??= err;
      for (const p of this.pending.values()) p.reject(this.unavailable());
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', () => fail(new Error('exited')));
  }

  private unavailable(): UserError {
    return new UserError('db.embedded-unavailable', `the embedded store stopped (${this.broken?.name ?? 'Error'}); restart ehrbench`);
  }

  call<T>(message: Record<string, unknown>): Promise<T> {
    if (this.broken) return Promise.reject(this.unavailable());
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      try {
        this.worker.postMessage({ ...message, id });
      } catch (err) {
        // A parameter that cannot be sent (a function, a symbol) fails this statement only.
        this.pending.delete(id);
        if (this.pending.size === 0) this.worker.unref();
        reject(err);
      }
    });
  }

  queryable(tx?: number): Queryable {
    return {
      query: <R>(sql: string, params?: readonly unknown[]) => this.call<R[]>({ op: 'query', sql, params: params ?? [], tx }),
      exec: (sql: string) => this.call<void>({ op: 'exec', sql, tx }),
    };
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const tx = this.nextTx++;
    await this.call({ op: 'begin', tx });
    let result: T;
    try {
      result = await fn(this.queryable(tx));
    } catch (err) {
      await this.call({ op: 'end', tx, commit: false }).catch(() => undefined);
      throw err;
    }
    await this.call({ op: 'end', tx, commit: true });
    return result;
  }

  async close(): Promise<void> {
    try {
      if (!this.broken) await this.call({ op: 'close' });
    } finally {
      await this.worker.terminate();
    }
  }
}

/**
 * Opens the embedded store. PGlite is one process's database: a lock file keeps a second ehrbench
 * process (a CLI next to a running daemon) from opening the same folder and corrupting it.
 */
export async function openPglite(dataDir: string): Promise<Database> {
  privateFolder(dataDir);
  let unlock: () => Promise<void>;
  try {
    unlock = await lockfile.lock(dataDir, { stale: 15_000, update: 5_000, realpath: false, lockfilePath: `${dataDir}.lock` });
  } catch {
    throw new UserError('db.embedded-in-use', `embedded store at ${dataDir} is in use by another ehrbench process; stop it, or talk to it through the daemon`);
  }
  let thread: PgliteThread | undefined;
  try {
    if (!existsSync(join(dataDir, 'PG_VERSION'))) await createInChild(dataDir);
    thread = new PgliteThread(dataDir);
    await thread.ready;
  } catch (err) {
    await thread?.close().catch(() => undefined);
    await unlock().catch(() => undefined);
    if (err instanceof UserError) throw err;
    throw new UserError('db.embedded-unavailable', `embedded store at ${dataDir} cannot be opened (${(err as Error).name})`);
  }
  const db = thread;
  return {
    backend: 'pglite',
    ...db.queryable(),
    queryArrays: <R>(sql: string, params?: readonly unknown[]) => db.call<R[]>({ op: 'query', sql, params: params ?? [], arrays: true }),
    transaction: (fn) => db.transaction(fn),
    close: async () => {
      await db.close();
      await unlock().catch(() => undefined);
    },
  };
}
