/**
 * Runs SQL against a site's SQLite database with a time limit. Queries go to one child process
 * (executor-main.ts) one at a time; when a query overruns the limit the child is killed (SIGKILL: a
 * statement inside SQLite cannot be interrupted otherwise) and a fresh one serves the next query.
 * The time limit counts from when the query is handed to the child, not while it waits its turn.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { UserError } from '../../errors';
import { PACKAGE_ROOT } from '../../paths';

export interface ExecRequest {
  id: number;
  db: string;
  sql: string;
  maxRows: number;
}

export type ExecError = 'timeout' | 'sql' | 'not-a-query' | 'too-many-rows' | 'database' | 'crashed';

export type ExecReply = { id: number; ok: true; rows: string[] } | { id: number; ok: false; error: ExecError };

export type ExecResult = { ok: true; rows: string[] } | { ok: false; error: ExecError };

export interface SqlExecutorOptions {
  timeoutMs?: number;
  maxRows?: number;
}

/** EHRSQL's evaluate.py gives each query 60 s. */
export const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_ROWS = 100_000;

function childScript(): string {
  // Compiled: beside this file. Under ts-jest/swc (src/*.ts): the built copy in dist/.
  const here = join(__dirname, 'executor-main.js');
  if (existsSync(here)) return here;
  const built = join(PACKAGE_ROOT, 'dist', 'annotate', 'ehrsql', 'executor-main.js');
  if (existsSync(built)) return built;
  throw new UserError('ehrsql.executor-missing', `${built} is missing; run "npm run build"`);
}

export class SqlExecutor {
  private child: ChildProcess | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private closed = false;
  readonly timeoutMs: number;
  readonly maxRows: number;

  constructor(opts: SqlExecutorOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRows = opts.maxRows ?? DEFAULT_MAX_ROWS;
  }

  /** Runs one statement; resolves with its rows (canonical strings) or the class of its failure. */
  run(db: string, sql: string): Promise<ExecResult> {
    const result = this.queue.then(() => this.send(db, sql));
    this.queue = result.catch(() => undefined);
    return result;
  }

  private spawn(): ChildProcess {
    const child = fork(childScript(), [], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced' });
    child.on('error', () => undefined);
    return child;
  }

  private send(db: string, sql: string): Promise<ExecResult> {
    if (this.closed) return Promise.reject(new UserError('ehrsql.executor-closed', 'the SQL executor is closed'));
    const child = (this.child ??= this.spawn());
    const id = this.nextId++;
    return new Promise<ExecResult>((resolve) => {
      const done = (r: ExecResult) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(r);
      };
      const onMessage = (m: ExecReply) => {
        if (m.id !== id) return;
        done(m.ok ? { ok: true, rows: m.rows } : { ok: false, error: m.error });
      };
      const onExit = () => {
        if (this.child === child) this.child = undefined;
        done({ ok: false, error: 'crashed' });
      };
      const timer = setTimeout(() => {
        if (this.child === child) this.child = undefined;
        child.kill('SIGKILL');
        done({ ok: false, error: 'timeout' });
      }, this.timeoutMs);
      child.on('message', onMessage);
      child.once('exit', onExit);
      child.send({ id, db, sql, maxRows: this.maxRows } satisfies ExecRequest);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    }
  }
}
