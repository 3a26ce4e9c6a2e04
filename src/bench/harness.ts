/** Shared pieces of the bench:* scripts: a throwaway data directory and an out-of-process model server. */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describeDatabase } from '../db';
import { initHome } from '../setup';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface BenchHome {
  home: string;
  port: number;
  remove(): void;
}

/** `database`: the store the config pins; by default PostgreSQL when EHRBENCH_DATABASE_URL is set. */
export async function benchHome(prefix: string, database: 'embedded' | 'postgres' = process.env.EHRBENCH_DATABASE_URL?.trim() ? 'postgres' : 'embedded'): Promise<BenchHome> {
  const home = mkdtempSync(join(tmpdir(), `ehrbench-${prefix}-`));
  const port = await freePort();
  initHome({ home, demoPort: port, siteId: 'bench', database });
  return { home, port, remove: () => rmSync(home, { recursive: true, force: true }) };
}

export interface ScratchDatabase {
  /** The new database's URL. */
  url: string;
  /** The server as the daemon names a store (host, port, database; never the URL), for messages. */
  server: string;
  drop(): Promise<void>;
}

/**
 * A new, empty database on the PostgreSQL server of `serverUrl` (read from the variable `source`), for
 * one measurement: a bench that reused one database would measure a store that grows with every run
 * (its audit chain, its queue).
 */
export async function scratchDatabase(serverUrl: string, source: string, prefix: string): Promise<ScratchDatabase> {
  const name = `ehrbench_${prefix}_${randomBytes(4).toString('hex')}`;
  const server = describeDatabase({ url: serverUrl, source, embeddedDir: '' });
  const client = new pg.Client({ connectionString: serverUrl });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    await client.end().catch(() => undefined);
    throw new Error(`${server} unavailable (${(err as { code?: string }).code ?? 'error'})`);
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    server,
    drop: async () => {
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}

/**
 * The definition of a public yes/no benchmark in `dir/<id>/` (the scale benchmark and the reliability
 * suite): the caller writes its rows to `data.jsonl`, each with `id`, `question` and `label`.
 * Returns the benchmark's folder.
 */
export function writeSyntheticDefinition(dir: string, id: string, displayName: string): string {
  const folder = join(dir, id);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'prompt.txt'), '{{question}}\n{{choices}}\nAnswer:');
  writeFileSync(
    join(folder, 'benchmark.json'),
    JSON.stringify({
      id,
      version: '1.0.0',
      displayName,
      category: 'Medical Research Assistance',
      subcategory: 'Conducting Literature Research',
      tier: 'public',
      dataset: {
        origin: 'shipped',
        files: [{ path: 'data.jsonl' }],
        format: 'jsonl',
        adapter: 'columns',
        columns: { id: 'id', vars: { question: 'question' }, reference: 'label', choices: ['yes', 'no'] },
      },
      prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
      references: 'label',
      metrics: { main: 'exact_match' },
      split: 'test',
      lowerIsBetter: false,
      deidentification: 'never',
    }),
  );
  return folder;
}

export interface ServerProcess {
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts dist/demo/model-server-main.js in a child process and waits until it listens. */
export function startServerProcess(home: string, port: number, latencyMs: number, mode?: 'faults' | 'jury'): Promise<ServerProcess> {
  const child = fork(
    join(__dirname, '..', 'demo', 'model-server-main.js'),
    [join(home, 'keys', 'demo-model-server.pem'), join(home, 'keys', 'demo-model-server.key.pem'), String(port), String(latencyMs), ...(mode ? [mode] : [])],
    { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
  );
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`model server exited with ${code}`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().startsWith('ready')) {
        resolve({
          child,
          stop: () =>
            new Promise<void>((r) => {
              child.removeAllListeners('exit');
              child.once('exit', () => r());
              child.kill('SIGTERM');
            }),
        });
      }
    });
  });
}

/** Peak resident memory of a process so far (the kernel's VmHWM), in bytes; 0 where /proc is not there or the process is gone. */
export function peakRssBytes(pid: number | 'self' = 'self'): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export function argFlag(name: string): boolean {
  return process.argv.includes(`--${name}`);
}

export function argNumber(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) ? v : fallback;
}
