/** A real data directory made by `ehrbench init`, on a free port, with a store on the chosen backend. */
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { initHome } from '../../src/setup/init';
import { type Backend, freshStore, type TestStore, tempDir } from './db';

export const TEST_PRINCIPALS = [
  { id: 'alice', roles: ['researcher'], status: 'active' },
  { id: 'bob', roles: ['researcher'], status: 'active' },
  { id: 'carol', roles: ['compliance'], status: 'active' },
  { id: 'dave', roles: ['compliance'], status: 'active' },
  { id: 'erin', roles: ['auditor'], status: 'active' },
  { id: 'ivan', roles: ['admin'], status: 'active' },
  { id: 'rita', roles: ['researcher', 'compliance'], status: 'active' },
];

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

export interface TestHome {
  home: string;
  configFile: string;
  port: number;
  store: TestStore;
  env: NodeJS.ProcessEnv;
  cleanup(): Promise<void>;
}

/** Cached init output: key generation is the slow part and every test may share the same keys. */
let keysTemplate: string | undefined;

export async function makeHome(backend: Backend = 'pglite'): Promise<TestHome> {
  const home = tempDir('home');
  const port = await freePort();
  if (!keysTemplate) {
    keysTemplate = tempDir('keys-template');
    initHome({ home: keysTemplate });
  }
  cpSync(join(keysTemplate, 'keys'), join(home, 'keys'), { recursive: true });
  initHome({ home, demoPort: port, siteId: 'test-site' });
  const store = await freshStore(backend);
  // The embedded store of this home is the fresh copy; PostgreSQL comes in through the environment.
  const config = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
  config.database.embeddedDir = store.embeddedDir;
  writeFileSync(join(home, 'config.json'), JSON.stringify(config, null, 2));
  // People for access tests, besides the operating-system account init mapped (researcher, auditor).
  const principalsFile = join(home, 'access-policies', 'principals.json');
  const principals = JSON.parse(readFileSync(principalsFile, 'utf8')) as { principals: unknown[] };
  principals.principals.push(...TEST_PRINCIPALS);
  writeFileSync(principalsFile, JSON.stringify(principals, null, 2));
  const env: NodeJS.ProcessEnv = { ...process.env, EHRBENCH_HOME: home };
  delete env.EHRBENCH_DATABASE_URL;
  if (store.url) env.EHRBENCH_DATABASE_URL = store.url;
  const cleanup = async () => {
    await store.drop();
    rmSync(home, { recursive: true, force: true });
  };
  return { home, configFile: join(home, 'config.json'), port, store, env, cleanup };
}
