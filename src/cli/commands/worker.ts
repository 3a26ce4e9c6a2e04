import type { Server } from 'node:http';
import type { CommandModule } from 'yargs';
import { openApp } from '../../app';
import { isStoreUnavailable } from '../../db';
import { describeError, UserError } from '../../errors';
import { serviceActor } from '../../identity';
import { enableProcessMetrics, observeStore, restrictIds, startLocalListener } from '../../observability';
import { RunScheduler } from '../../runs';
import type { GlobalArgs } from '../context';
import type { Io } from '../output';

/**
 * `ehrbench worker`: executes approved runs, nothing else (no API). Any number of workers can share
 * one PostgreSQL: they claim instances with SKIP LOCKED, keep them with lease heartbeats, share each
 * endpoint's capacity through slot leases, and a killed worker's instances are claimed again once its
 * leases expire. SIGTERM stops taking work, gives back leases and seals the audit trail.
 */
export function workerCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs & { workers?: number }> {
  return {
    command: 'worker',
    describe: 'Run workers only (no API): execute approved runs from the shared store',
    builder: (y) => y.option('workers', { type: 'number', describe: 'Runs executed at once (default: server.workers from the config)' }),
    handler: async (args) => {
      const app = await whenStoreReachable(io, () => openApp({ ...(args.config ? { file: args.config } : {}), env: io.env, consoleLog: true, logLevel: args.verbose ? 'debug' : 'info' }));
      const workers = args.workers ?? app.config.server.workers;
      if (workers < 1) {
        await app.close();
        throw new UserError('cli.usage', '--workers must be at least 1 for a worker process');
      }
      const scheduler = new RunScheduler(app.engine, { workers, pollSeconds: app.config.server.pollSeconds });
      restrictIds({ benchmarks: app.catalog.list().map((b) => b.definition.id), endpoints: app.endpoints.endpoints.map((e) => e.id) });
      observeStore(app.db);
      enableProcessMetrics();
      let health: Server | undefined;
      try {
        await whenStoreReachable(io, () => app.audit.record({ type: 'daemon.start', action: 'E', outcome: 'success', rule: 'worker.start', actor: serviceActor('worker'), detail: { workers } }));
        if (app.config.server.healthPort) {
          health = await startLocalListener({
            port: app.config.server.healthPort,
            metrics: app.config.server.healthPortMetrics,
            ready: () => app.db.query('SELECT seq FROM audit_head').then(() => true),
          });
        }
      } catch (err) {
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
