/**
 * `ehrbench demo-server [--port N]`: the loopback stand-in (src/demo/model-server.ts, a deterministic
 * fake model) in the foreground until Ctrl-C, for a daemon started with `ehrbench serve`: the demo
 * endpoint and the test endpoints of `ehrbench init --test-endpoints` point at it. It listens on
 * 127.0.0.1 only, with the certificate init issued from the development CA.
 */
import { commandPrefix } from '../../command-prefix';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandModule } from 'yargs';
import { loadConfig } from '../../config';
import { serveInForeground } from '../../demo';
import type { Endpoint } from '../../contracts';
import { UserError } from '../../errors';
import { DEFAULT_DEMO_PORT, DEMO_ENDPOINT_ID } from '../../setup';
import type { GlobalArgs } from '../context';
import type { Io } from '../output';
import { loadPolicy } from './endpoints';

interface DemoServerArgs extends GlobalArgs {
  port?: number;
}

function portOf(endpoint: Endpoint): number | undefined {
  const port = Number(new URL(endpoint.url).port);
  return port > 0 ? port : undefined;
}

export function demoServerCommand(io: Io): CommandModule<GlobalArgs, DemoServerArgs> {
  return {
    command: 'demo-server',
    describe: 'Serve the loopback stand-in model (not a model; never real data) in the foreground for the demo and test endpoints, until Ctrl-C',
    builder: (y) => y.option('port', { type: 'number', describe: `Port on 127.0.0.1 (default: the demo endpoint's in the policy, else ${DEFAULT_DEMO_PORT})` }),
    handler: async (args) => {
      const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
      const policy = loadPolicy(args, io);
      // The endpoints the stand-in is for: the demo endpoint and those marked test.
      const standIns = policy.endpoints.filter((e) => e.test || e.id === DEMO_ENDPOINT_ID);
      const port = args.port ?? standIns.map(portOf).find((p) => p !== undefined) ?? DEFAULT_DEMO_PORT;
      const served = standIns.filter((e) => portOf(e) === port).map((e) => e.id);
      const cert = join(config.keysDir, 'demo-model-server.pem');
      const key = join(config.keysDir, 'demo-model-server.key.pem');
      for (const file of [cert, key]) {
        if (!existsSync(file)) throw new UserError('demo.keys-missing', `${file} does not exist; run "${commandPrefix()} init" to create the stand-in's certificate`);
      }
      const forWhom = served.length ? `for endpoints ${served.join(', ')}` : `for no endpoint of ${policy.file} (none points at port ${port})`;
      await serveInForeground({
        certPem: readFileSync(cert, 'utf8'),
        keyPem: readFileSync(key, 'utf8'),
        port,
        onReady: (s) => io.stderr(`demo model server (a deterministic stand-in, not a model: never send it real data) listening on https://localhost:${s.port}/v1 ${forWhom}; Ctrl-C stops it\n`),
        onStop: () => io.stderr('demo model server stopped\n'),
      }).catch((err: NodeJS.ErrnoException) => {
        if (err instanceof UserError) throw err;
        throw new UserError(
          'demo.port-in-use',
          `demo model server cannot listen on 127.0.0.1:${port} (${err.code ?? 'error'}); stop what uses it, or pass --port and change the endpoints' URLs in ${policy.file}`,
        );
      });
    },
  };
}
