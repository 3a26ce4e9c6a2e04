/**
 * Endpoint secrets by reference (issue 15 item 10). An endpoint's `auth.file` once could name any file
 * the daemon can read, and `endpoints probe` sent the audit MAC key as a bearer token. Now a reference
 * resolves (symlinks followed) inside the secrets directory (config secrets.dir, default
 * <home>/secrets), never to the daemon's own keys and credentials; checked when the policy is loaded
 * and again when the secret is read.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config';
import { type Endpoint, loadEndpointPolicy, readSecretReference } from '../../src/egress';
import { UserError } from '../../src/errors';
import { tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';
import { startTlsServer, testPki, type TlsServer } from '../helpers/tls';

const MAC_KEY = 'a'.repeat(64);
const ENDPOINT_KEY = 'endpoint-key-123';

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

/** A site home laid out as `ehrbench init` makes it, with stand-in key files (no real keys needed). */
function siteHome(config: Record<string, unknown> = {}) {
  const home = tempDir('secrets');
  for (const dir of ['keys', 'pki', 'secrets', 'access-policies', 'elsewhere']) mkdirSync(join(home, dir), { mode: 0o700 });
  writeFileSync(join(home, 'keys', 'audit-mac.key'), `${MAC_KEY}\n`, { mode: 0o600 });
  writeFileSync(join(home, 'keys', 'export-signing.key.pem'), 'export key\n', { mode: 0o600 });
  writeFileSync(join(home, 'pki', 'ca.key.pem'), 'site CA key\n', { mode: 0o600 });
  writeFileSync(join(home, 'secrets', 'aoai-key'), `${ENDPOINT_KEY}\n`, { mode: 0o600 });
  writeFileSync(join(home, 'elsewhere', 'key'), 'not in the secrets folder\n', { mode: 0o600 });
  writeFileSync(join(home, 'config.json'), JSON.stringify({ configVersion: 1, site: { id: 's1' }, ...config }));
  return home;
}

function writePolicy(home: string, auth: Record<string, unknown>): string {
  const file = join(home, 'access-policies', 'endpoints.json');
  const endpoint = {
    id: 'aoai',
    provider: 'azure-openai',
    url: 'https://aoai.internal/openai',
    deployment: 'gpt-4o',
    apiVersion: '2024-10-21',
    addresses: ['10.20.4.7'],
    allowedCidrs: ['10.20.0.0/16'],
    auth: { type: 'api-key', ...auth },
    classification: { inVpc: true, baa: true, maxTier: 'private' },
  };
  writeFileSync(file, JSON.stringify({ endpoints: [endpoint] }));
  return file;
}

/** Loads the home's policy as the daemon does: with the secret places of its configuration. */
function loadWith(home: string, auth: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const config = loadConfig({ file: join(home, 'config.json'), env });
  return loadEndpointPolicy(writePolicy(home, auth), { secrets: config.secrets });
}

describe('endpoint secret references at policy load', () => {
  it.each<[string, (home: string) => Record<string, unknown>, (home: string) => NodeJS.ProcessEnv, Record<string, unknown>]>([
    ['the audit MAC key by absolute path', (h) => ({ file: join(h, 'keys', 'audit-mac.key') }), () => ({}), {}],
    ['the audit MAC key by a path relative to the policy', () => ({ file: '../keys/audit-mac.key' }), () => ({}), {}],
    ['the export signing key', (h) => ({ file: join(h, 'keys', 'export-signing.key.pem') }), () => ({}), {}],
    ['the site CA key (pki/)', (h) => ({ file: join(h, 'pki', 'ca.key.pem') }), () => ({}), {}],
    ['a link in the secrets folder to the MAC key', (h) => (symlinkSync(join(h, 'keys', 'audit-mac.key'), join(h, 'secrets', 'mac-link')), { file: join(h, 'secrets', 'mac-link') }), () => ({}), {}],
    [
      'the de-identification secret, even inside the secrets folder',
      (h) => (writeFileSync(join(h, 'secrets', 'deid.hex'), 'ab\n'), { file: join(h, 'secrets', 'deid.hex') }),
      () => ({}),
      { deid: { secretFile: 'secrets/deid.hex' } },
    ],
    [
      'the database password file (PGPASSFILE), even inside the secrets folder',
      (h) => (writeFileSync(join(h, 'secrets', 'pgpass'), '*:*:*:*:pw\n'), { file: join(h, 'secrets', 'pgpass') }),
      (h) => ({ PGPASSFILE: join(h, 'secrets', 'pgpass') }),
      {},
    ],
    ['the database URL variable', () => ({ env: 'EHRBENCH_DATABASE_URL' }), () => ({ EHRBENCH_DATABASE_URL: 'postgres://app:pw@db/ehrbench' }), {}],
    ['the libpq password variable', () => ({ env: 'PGPASSWORD' }), () => ({ PGPASSWORD: 'pw' }), {}],
  ])('refuses %s, naming the rule', (_what, auth, env, config) => {
    const home = siteHome(config);
    const err = errorOf(() => loadWith(home, auth(home), env(home)));
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('policy.invalid');
    expect(err.message).toMatch(/\/endpoints\/0\/auth\/(file|env): /);
    expect(err.message).toContain('(rule policy.secret-is-daemon-key)');
    expect(err.message.split('\n')).toHaveLength(1);
    expect(err.message).not.toContain(MAC_KEY);
  });

  it.each<[string, (home: string) => Record<string, unknown>]>([
    ['a file elsewhere on the host', () => ({ file: '/etc/hostname' })],
    ['a file beside the secrets folder', (h) => ({ file: join(h, 'elsewhere', 'key') })],
    ['a path that climbs out with ..', (h) => ({ file: join(h, 'secrets', '..', 'elsewhere', 'key') })],
    ['a link in the secrets folder to a file outside it', (h) => (symlinkSync(join(h, 'elsewhere', 'key'), join(h, 'secrets', 'out-link')), { file: join(h, 'secrets', 'out-link') })],
    ['a folder link in the secrets folder that leads outside', (h) => (symlinkSync(join(h, 'elsewhere'), join(h, 'secrets', 'dir-link')), { file: join(h, 'secrets', 'dir-link', 'key') })],
  ])('refuses %s as outside the secrets directory', (_what, auth) => {
    const home = siteHome();
    const err = errorOf(() => loadWith(home, auth(home)));
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('policy.invalid');
    expect(err.message).toMatch(/\/endpoints\/0\/auth\/file: /);
    expect(err.message).toContain(join(home, 'secrets'));
    expect(err.message).toContain('(rule policy.secret-outside-secrets-dir)');
    expect(err.message.split('\n')).toHaveLength(1);
  });

  it('refuses a file reference when no secrets directory is configured (a policy loaded without a config)', () => {
    const home = siteHome();
    const err = errorOf(() => loadEndpointPolicy(writePolicy(home, { file: join(home, 'secrets', 'aoai-key') })));
    expect((err as UserError).code).toBe('policy.invalid');
    expect(err.message).toMatch(/auth\/file: .*no secrets directory.*\(rule policy\.secret-outside-secrets-dir\)/);
  });

  it('accepts a file in the secrets directory, directly or through links that stay inside it, and reads it', () => {
    const home = siteHome();
    expect(readSecretReference(loadWith(home, { file: join(home, 'secrets', 'aoai-key') }).get('aoai'), {}, 'API key')).toBe(ENDPOINT_KEY);
    // Kubernetes mounts a Secret as links into a timestamped folder beside them: all inside.
    mkdirSync(join(home, 'secrets', '..2024_01_01'));
    writeFileSync(join(home, 'secrets', '..2024_01_01', 'k8s-key'), 'k8s-key-value\n');
    symlinkSync('..2024_01_01', join(home, 'secrets', '..data'));
    symlinkSync('..data/k8s-key', join(home, 'secrets', 'k8s-key'));
    expect(readSecretReference(loadWith(home, { file: join(home, 'secrets', 'k8s-key') }).get('aoai'), {}, 'API key')).toBe('k8s-key-value');
    // A secrets folder configured elsewhere, and a variable that is not the daemon's.
    const other = siteHome({ secrets: { dir: 'elsewhere' } });
    expect(readSecretReference(loadWith(other, { file: join(other, 'elsewhere', 'key') }).get('aoai'), {}, 'API key')).toBe('not in the secrets folder');
    expect(readSecretReference(loadWith(other, { env: 'AOAI_KEY' }).get('aoai'), { AOAI_KEY: 'k' }, 'API key')).toBe('k');
  });

  it('resolves the secrets directory from config.json (secrets.dir, default <home>/secrets)', () => {
    const home = siteHome();
    expect(loadConfig({ file: join(home, 'config.json'), env: {} }).secrets.dir).toBe(join(home, 'secrets'));
    const other = siteHome({ secrets: { dir: '/run/credentials/ehrbench.service' } });
    expect(loadConfig({ file: join(other, 'config.json'), env: {} }).secrets.dir).toBe('/run/credentials/ehrbench.service');
  });

  it('checks again when the secret is read: a file swapped for a link to the MAC key after load is refused', () => {
    const home = siteHome();
    const endpoint: Endpoint = loadWith(home, { file: join(home, 'secrets', 'aoai-key') }).get('aoai');
    rmSync(join(home, 'secrets', 'aoai-key'));
    symlinkSync(join(home, 'keys', 'audit-mac.key'), join(home, 'secrets', 'aoai-key'));
    const err = errorOf(() => readSecretReference(endpoint, {}, 'API key'));
    expect(err.message).toContain('(rule policy.secret-is-daemon-key)');
    expect(err.message).not.toContain(MAC_KEY);
    // An endpoint that did not come through the loader has no secret places: its file is never read.
    const bare: Endpoint = { ...endpoint, secretPlaces: undefined };
    expect(errorOf(() => readSecretReference(bare, {}, 'API key')).message).toContain('(rule policy.secret-outside-secrets-dir)');
  });
});

describe('the shipped deployments', () => {
  it('keep their endpoint keys in the secrets directory their configuration names', () => {
    const configMap = parse(readFileSync(join(ROOT, 'deploy', 'kubernetes', 'configmap.yaml'), 'utf8')) as { data: Record<string, string> };
    const dir = tempDir('secrets-k8s');
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, configMap.data['config.json'] as string);
    const policyFile = join(dir, 'endpoints.json');
    writeFileSync(policyFile, configMap.data['endpoints.json'] as string);
    const config = loadConfig({ file: configFile, env: {} });
    expect(config.secrets.dir).toBe('/etc/ehrbench/endpoint-keys');
    const policy = loadEndpointPolicy(policyFile, { secrets: config.secrets });
    expect(policy.endpoints.map((e) => e.auth.file)).toEqual(['/etc/ehrbench/endpoint-keys/aoai-eastus']);
    // systemd: the example policy's files under config.example.json (also loaded in egress-policy.test.ts).
    const systemd = loadConfig({ file: join(ROOT, 'deploy', 'systemd', 'config.example.json'), env: { PGPASSFILE: '/run/credentials/ehrbench.service/pgpass' } });
    expect(systemd.secrets.dir).toBe('/etc/ehrbench/secrets');
    // The unit's pgpass credential is a daemon file, refused even with secrets.dir at the credentials folder.
    expect(systemd.secrets.daemonFiles.map((f) => f.path)).toContain('/run/credentials/ehrbench.service/pgpass');
    expect(readFileSync(join(ROOT, 'deploy', 'systemd', 'tmpfiles.conf'), 'utf8')).toMatch(/^d \/etc\/ehrbench\/secrets\s+0750 root\s+ehrbench -$/m);
  });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), ...args], { env, timeout: 60_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('endpoints probe with a secret reference (the reported attack, end to end)', () => {
  let home: TestHome;
  let server: TlsServer;
  beforeAll(async () => {
    home = await makeHome('pglite');
    server = await startTlsServer({ cert: testPki().server });
  });
  afterAll(async () => {
    await server.close();
    await home.cleanup();
  });

  const policyWith = (auth: Record<string, unknown>) => {
    const file = join(tempDir('secrets-cli'), 'endpoints.json');
    const endpoint = {
      id: 'local',
      provider: 'openai-compatible',
      url: `https://model.test:${server.port}/v1`,
      model: 'test-model',
      addresses: ['127.0.0.1'],
      allowedCidrs: ['127.0.0.1/32'],
      tls: { caFile: testPki().caFile },
      auth,
      classification: { inVpc: true, baa: false, maxTier: 'public', development: true },
    };
    writeFileSync(file, JSON.stringify({ endpoints: [endpoint] }));
    return file;
  };

  it('ehrbench init makes the secrets directory, owner only, and names it in the config', () => {
    expect(statSync(join(home.home, 'secrets')).isDirectory()).toBe(true);
    expect(statSync(join(home.home, 'secrets')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(home.configFile, 'utf8')).secrets).toEqual({ dir: 'secrets' });
  });

  it('refuses a probe whose auth.file names the audit MAC key: one line, the rule, no request sent', async () => {
    const policy = policyWith({ type: 'api-key', file: join(home.home, 'keys', 'audit-mac.key') });
    const macKey = readFileSync(join(home.home, 'keys', 'audit-mac.key'), 'utf8').trim();
    const requests = server.requests();
    const r = await cli(['endpoints', 'probe', 'local', '--config', home.configFile, '--policy', policy], home.env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ehrbench: .*auth\/file: .*\(rule policy\.secret-is-daemon-key\)\n$/);
    expect(r.stdout + r.stderr).not.toContain(macKey);
    expect(server.requests()).toBe(requests);
    expect(server.authorizations.concat(server.apiKeys).filter((v) => v?.includes(macKey))).toEqual([]);
  });

  it('refuses "endpoints list" on a site whose allowlist names a daemon key', async () => {
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    const site = tempDir('secrets-list');
    const configFile = join(site, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        ...config,
        keys: { dir: join(home.home, 'keys') },
        policies: { ...config.policies, endpoints: policyWith({ type: 'api-key', file: join(home.home, 'keys', 'audit-mac.key') }) },
      }),
    );
    const r = await cli(['endpoints', 'list', '--config', configFile], home.env);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/^ehrbench: .*\(rule policy\.secret-is-daemon-key\)\n$/);
  });

  it('sends a key from the secrets directory', async () => {
    writeFileSync(join(home.home, 'secrets', 'probe-key'), `${ENDPOINT_KEY}\n`, { mode: 0o600 });
    const policy = policyWith({ type: 'api-key', file: join(home.home, 'secrets', 'probe-key') });
    const r = await cli(['endpoints', 'probe', 'local', '--config', home.configFile, '--policy', policy, '--json'], home.env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(server.authorizations.at(-1)).toBe(`Bearer ${ENDPOINT_KEY}`);
  });
});
