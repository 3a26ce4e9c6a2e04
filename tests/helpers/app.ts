/** A real app (config, store, catalog, guard, engine) with the loopback model server on its port. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { type Behaviour, type ModelServer, startModelServer } from '../../src/demo/model-server';
import type { Actor } from '../../src/identity/actor';
import type { EngineSettings } from '../../src/runs/engine';
import type { Backend } from './db';
import { makeHome, type TestHome } from './home';

export interface TestApp {
  app: App;
  server: ModelServer;
  home: TestHome;
  close(): Promise<void>;
}

export interface TestAppOptions {
  backend?: Backend;
  latencyMs?: number;
  behaviour?: (n: number, prompt: string) => Behaviour;
  settings?: Partial<EngineSettings>;
}

export const researcher: Actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' };

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const home = await makeHome(opts.backend ?? 'pglite');
  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    ...(opts.latencyMs ? { latencyMs: opts.latencyMs } : {}),
    ...(opts.behaviour ? { behaviour: opts.behaviour } : {}),
  });
  const app = await openApp({ file: home.configFile, env: home.env });
  Object.assign(app.engine.settings, opts.settings ?? {});
  return {
    app,
    server,
    home,
    async close() {
      await app.close();
      await server.close();
      await home.cleanup();
    },
  };
}
