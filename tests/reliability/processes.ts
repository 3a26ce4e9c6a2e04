/**
 * Processes of the reliability suite, each as deployed: `ehrbench worker` processes (from dist/, so
 * the suite builds first), each with its own config folder (its own log file and witness folder, like
 * workers on separate hosts sharing one PostgreSQL), and the loopback model server in its own process.
 * Every stdout/stderr goes to a file, so the suite can search all output for prompt text afterwards.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
export const CLI = join(ROOT, 'bin', 'ehrbench.js');

export interface WorkerProcess {
  name: string;
  dir: string;
  configFile: string;
  child?: ChildProcess;
  /** Exits we did not cause (a crash): must stay empty. */
  crashes: { code: number | null; signal: NodeJS.Signals | null }[];
  killed: number;
  /** Where the latest start's output begins in stderr.log. */
  startedAt: number;
}

/**
 * A worker's config: the shared site configuration with its own folder for logs and witnesses.
 * `shared` is the site config with absolute paths already.
 */
export function workerHome(root: string, name: string, shared: Record<string, unknown>): WorkerProcess {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, 'config.json');
  const logging = { level: 'info', file: join(dir, 'logs', 'ehrbench.log') };
  writeFileSync(configFile, JSON.stringify({ ...shared, logging }, null, 2));
  return { name, dir, configFile, crashes: [], killed: 0, startedAt: 0 };
}

export function startWorker(w: WorkerProcess, databaseUrl: string): void {
  w.startedAt = statSync(join(w.dir, 'stderr.log'), { throwIfNoEntry: false })?.size ?? 0;
  const out = openSync(join(w.dir, 'stdout.log'), 'a');
  const err = openSync(join(w.dir, 'stderr.log'), 'a');
  const child = spawn(process.execPath, ['--max-old-space-size=256', CLI, '--config', w.configFile, 'worker', '--workers', '1'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_DATABASE_URL: databaseUrl },
    stdio: ['ignore', out, err],
  });
  closeSync(out);
  closeSync(err);
  w.child = child;
  child.once('exit', (code, signal) => {
    if (w.child === child) w.child = undefined;
    if (!(child as ChildProcess & { expected?: boolean }).expected) w.crashes.push({ code, signal });
  });
}

/**
 * Waits until the worker's latest start has come up ("running" on stderr): a SIGTERM before that
 * ends a process that has not installed its handler yet, which is a start-up, not a shutdown.
 */
export async function waitStarted(w: WorkerProcess, deadline: number): Promise<void> {
  for (;;) {
    const latest = readFileSync(join(w.dir, 'stderr.log')).subarray(w.startedAt).toString();
    if (/running \d+ run\(s\) at a time/.test(latest) || !w.child) return;
    if (Date.now() > deadline) throw new Error(`worker ${w.name} did not come up; its stderr: ${latest.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sends `signal` and waits for the exit; returns the exit code (null when killed by the signal). */
export function stopWorker(w: WorkerProcess, signal: 'SIGKILL' | 'SIGTERM', giveUpAt?: number): Promise<number | null | 'hung'> {
  const child = w.child;
  if (!child || child.exitCode !== null) return Promise.resolve(child?.exitCode ?? null);
  (child as ChildProcess & { expected?: boolean }).expected = true;
  if (signal === 'SIGKILL') w.killed += 1;
  return new Promise((resolve) => {
    // A shutdown that never ends is a finding, reported as 'hung' (the process is then killed).
    const timer =
      giveUpAt === undefined
        ? undefined
        : setTimeout(
            () => {
              resolve('hung');
              child.kill('SIGKILL');
            },
            Math.max(0, giveUpAt - Date.now()),
          );
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
    child.kill(signal);
  });
}

export interface ModelServerProcess {
  output: string;
  /** Stops it and returns what it printed (the fault counts). */
  stop(): Promise<string>;
}

/** The loopback model server with transient faults, in its own process. */
export function startFaultyServer(home: string, port: number, latencyMs: number, outFile: string): Promise<ModelServerProcess> {
  const child = fork(
    join(ROOT, 'dist', 'demo', 'model-server-main.js'),
    [join(home, 'keys', 'demo-model-server.pem'), join(home, 'keys', 'demo-model-server.key.pem'), String(port), String(latencyMs), 'faults'],
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  );
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const stop = () =>
    new Promise<string>((resolve) => {
      child.removeAllListeners('exit');
      child.once('exit', () => {
        writeFileSync(outFile, output);
        resolve(output);
      });
      child.kill('SIGTERM');
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`model server exited with ${code}`)));
    child.stdout?.on('data', () => {
      if (output.startsWith('ready')) resolve({ output, stop });
    });
  });
}

/** Runs the CLI to completion; resolves with its exit code and output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

export function readIfExists(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
