/**
 * Reading the catalog loads no code that can call out: `ehrbench benchmarks list` (the built binary in
 * a child process) must not load the model clients, the SDK, the egress guard, the outbound gateway
 * or the annotators. Catalog validation needs metric names only (src/metrics/annotated.ts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(60_000);

/** Module paths that mean client code was loaded. */
const CLIENT_CODE = [/node_modules\/openai\//, /node_modules\/@azure\//, /\/dist\/models\//, /\/dist\/calls\//, /\/dist\/annotate\//, /\/dist\/egress\/guard\.js$/];

let home: TestHome;
beforeAll(async () => {
  home = await makeHome('pglite');
});
afterAll(async () => {
  await home.cleanup();
});

function modulesLoadedBy(args: string[]): string[] {
  const dir = tempDir('modules');
  const out = join(dir, 'modules.json');
  // Not a -r preload: ehrbench refuses to start with one (rule egress.env.foreign-module).
  try {
    execFileSync(process.execPath, [join(ROOT, 'tests', 'helpers', 'modules-entry.js'), out, ...args], { env: { PATH: process.env.PATH, ...home.env }, encoding: 'utf8', stdio: 'pipe' });
  } catch {
    // the exit code does not matter here, only what was loaded
  }
  return JSON.parse(readFileSync(out, 'utf8')) as string[];
}

describe('ehrbench benchmarks list', () => {
  it('loads no model client, SDK, egress guard, gateway or annotator code', () => {
    const modules = modulesLoadedBy(['benchmarks', 'list', '--config', home.configFile, '--json']);
    const client = modules.filter((m) => CLIENT_CODE.some((re) => re.test(m)));
    expect(client).toEqual([]);
    // Control: the hook saw the command's own modules, the catalog among them.
    expect(modules.some((m) => m.endsWith(join('dist', 'catalog', 'index.js')))).toBe(true);
    // Was 574 when the catalog reached the SDK through metrics -> jury -> models.
    expect(modules.length).toBeLessThan(400);
  });

  it('control: a command that calls out does load them (the check can see client code)', () => {
    // The demo endpoint's server is not running: the probe fails, after loading the gateway and the SDK.
    const modules = modulesLoadedBy(['endpoints', 'probe', DEMO_ENDPOINT_ID, '--config', home.configFile, '--json']);
    expect(modules.filter((m) => CLIENT_CODE.some((re) => re.test(m))).length).toBeGreaterThan(0);
  });
});
