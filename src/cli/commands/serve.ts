import type { CommandModule } from 'yargs';
import { startDaemon } from '../../server';
import { announceStore, type GlobalArgs } from '../context';
import { openApp } from '../../app';
import type { Io } from '../output';

export function serveCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs & { workers?: number }> {
  return {
    command: 'serve',
    describe: 'Run the daemon: HTTPS API with mutual TLS, and workers that execute approved runs',
    builder: (y) => y.option('workers', { type: 'number', describe: 'Runs executed at once (0: API only; default from config)' }),
    handler: async (args) => {
      const app = await openApp({ ...(args.config ? { file: args.config } : {}), env: io.env, consoleLog: true, logLevel: args.verbose ? 'debug' : 'info' });
      // The store this daemon decides from (revocations, approvals, the trail): CLI commands must name the same.
      announceStore(app, io);
      let daemon;
      try {
        daemon = await startDaemon(app, args.workers !== undefined ? { workers: args.workers } : {});
      } catch (err) {
        await app.close();
        throw err;
      }
      io.stderr(`ehrbench daemon listening on ${daemon.url} (mutual TLS)\n`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          io.stderr('ehrbench daemon stopping: finishing requests, releasing work, sealing the audit trail\n');
          resolve();
        };
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      await daemon.close();
      await app.close();
    },
  };
}
