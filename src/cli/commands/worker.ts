import type { Server } from 'node:http';
import type { CommandModule } from 'yargs';
import { type App, openApp } from '../../app';
import { isStoreUnavailable } from '../../db';
import { describeError, UserError } from '../../errors';
import { serviceActor } from '../../identity';
import { enableProcessMetrics, observeStore, restrictLabelsToPolicies, startLocalListener } from '../../observability';
import { RunScheduler } from '../../runs';
import { announceStore, type GlobalArgs } from '../context';
import type { Io } from '../output';

/**
 * `ehrbench worker`: executes approved runs, nothing else (no API). Any number of workers can share
 * one PostgreSQL: they claim instances with SKIP LOCKED, keep them with lease heartbeats, share each
 * endpoint's capacity through slot leases, and a killed worker's instances are claimed again once its
 * leases expire. SIGTERM stops taking work, gives back leases and seals the audit trail.
 */
export function workerCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs & { workers?: number; 'health-port'?: number }> {
  return {
    command: 'worker',
    describe: 'Run workers only (no API): execute approved runs from the shared store',
    builder: (y) =>
      y.option('workers', { type: 'number', describe: 'Runs executed at once (default: server.workers from the config)' }).option('health-port', {
        type: 'number',
        describe: "Loopback port for this worker's /health and /ready (default: worker.healthPort, else none; 0: none). Never server.healthPort: the daemon holds it",
      }),
    handler: async (args) => {
      const healthPortArg = args['health-port'];
      if (healthPortArg !== undefined && !(Number.isInteger(healthPortArg) && healthPortArg >= 0 && healthPortArg <= 65535)) {
        throw new UserError('cli.usage', '--health-port must be a port number from 1 to 65535 (0: no health port)');
      }
      const app = await whenStoreReachable(io, () => openApp({ ...(args.config ? { file: args.config } : {}), env: io.env, consoleLog: true, logLevel: args.verbose ? 'debug' : 'info' }));
      announceStore(app, io);
      const workers = args.workers ?? app.config.server.workers;
      if (workers < 1) {
        await app.close();
        throw new UserError('cli.usage', '--workers must be at least 1 for a worker process');
      }
      const scheduler = new RunScheduler(app.engine, { workers, pollSeconds: app.config.server.pollSeconds, tick: () => app.canary.tick() });
      restrictLabelsToPolicies(app);
      observeStore(app.db);
      enableProcessMetrics();
      let health: Server | undefined;
      try {
        // The port first: a worker that cannot start has not started (no worker.start in the trail).
        const healthPort = healthPortArg ?? app.config.worker.healthPort;
        if (healthPort) health = await openHealthPort(app, healthPort);
        await whenStoreReachable(io, () => app.audit.record({ type: 'daemon.start', action: 'E', outcome: 'success', rule: 'worker.start', actor: serviceActor('worker'), detail: { workers } }));
      } catch (err) {
        health?.close();
        await app.close();
        throw err;
      }
      scheduler.start();
      io.stderr(`ehrbench worker ${scheduler.workerId} running ${workers} run(s) at a time\n`);
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      io.stderr('ehrbench worker stopping: giving back leases, sealing the audit trail\n');
      health?.close();
      await scheduler.stop();
      await app.audit.record({ type: 'daemon.stop', action: 'E', outcome: 'success', rule: 'worker.stop', actor: serviceActor('worker') }).catch(() => undefined);
      await app.close();
    },
  };
}

/**
 * The worker's own loopback health port. Workers beside the daemon (the systemd layout) never take
 * server.healthPort; a port in use is one line that names it and the way to give another.
 */
async function openHealthPort(app: App, port: number): Promise<Server> {
  try {
    return await startLocalListener({
      port,
      metrics: app.config.worker.healthPortMetrics,
      ready: () => app.db.query('SELECT seq FROM audit_head').then(() => true),
      stoppedBy: () => app.audit.unavailable()?.rule,
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    const what = code === 'EADDRINUSE' ? 'is in use' : 'cannot be opened';
    throw new UserError('worker.health-port-unavailable', `health port ${port} ${what} (${code}): give the worker its own with --health-port or worker.healthPort`);
  }
}

/** Longest wait between attempts to reach the store at start. */
const MAX_START_BACKOFF_MS = 10_000;

/**
 * Runs `fn` until the store answers: a worker started while PostgreSQL restarts (or before it is up)
 * waits for it instead of exiting. Only the error code is printed. No signal handler here: a SIGTERM
 * while waiting ends the process as usual (it holds no leases yet).
 */
async function whenStoreReachable<T>(io: Io, fn: () => Promise<T>): Promise<T> {
  for (let wait = 250; ; wait = Math.min(MAX_START_BACKOFF_MS, wait * 2)) {
    try {
      return await fn();
    } catch (err) {
      const code = describeError(err).code;
      if (!isStoreUnavailable(err)) throw err;
      io.stderr(`ehrbench worker: store not reachable (${code}); retrying in ${wait} ms\n`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
