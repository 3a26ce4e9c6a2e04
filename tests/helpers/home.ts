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

/**
 * A port for a server a test configures before it starts (the demo model server's port is written into
 * the config first). Probing with listen(0) and closing hands out an ephemeral port that any parallel
 * test's listen(0) may take before ours binds it; these ports come from below the ephemeral range
 * (32768+), a block of 500 per jest worker and process, so neither another worker nor an ephemeral socket gets them.
 */
let nextPort = 0;
export async function freePort(): Promise<number> {
  // The jest worker and the process: two jest runs at once (each with workers 1 and 2) get other blocks.
  const worker = Number(process.env.JEST_WORKER_ID ?? '1') - 1 + process.ppid + process.pid;
  const base = 20_000 + (worker % 24) * 500;
  for (let tries = 0; tries < 500; tries++) {
    const port = base + (nextPort++ % 500);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${base}-${base + 499}`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
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
  // The embedded store of this home is the fresh copy; a PostgreSQL home pins postgres, its URL coming
  // in through the environment (EHRBENCH_DATABASE_URL, the default database.urlEnv).
  const config = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
  config.database = { backend: store.url ? 'postgres' : 'embedded', embeddedDir: store.embeddedDir };
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
