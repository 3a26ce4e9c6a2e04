/**
 * `ehrbench endpoints check` and `probe` as a user runs them (the built binary in a child process),
 * and the proof that NODE_EXTRA_CA_CERTS widens nothing: a server certified by a CA given only
 * through that variable is refused by the guard, although Node's default agent in the same
 * environment trusts it.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { spkiSha256 } from '../../src/egress';
import { tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';
import { startTlsServer, testPki, type TlsServer } from '../helpers/tls';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The binary, asynchronously: the TLS servers live in this process and must keep answering. */
function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'ehrbench.js'), ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function nodeScript(script: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { env: { PATH: process.env.PATH, ...env }, timeout: 30_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function pinOf(pem: string): string {
  return spkiSha256(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'));
}

function writePolicy(endpoints: Record<string, unknown>[]): string {
  const file = join(tempDir('egress-cli'), 'endpoints.json');
  writeFileSync(file, JSON.stringify({ endpoints }));
  return file;
}

function endpointJson(port: number, tls: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'local',
    provider: 'openai-compatible',
    url: `https://model.test:${port}/v1`,
    model: 'test-model',
    addresses: ['127.0.0.1'],
    allowedCidrs: ['127.0.0.1/32'],
    tls,
    auth: { type: 'none' },
    classification: { inVpc: true, baa: false, maxTier: 'public', development: true },
    ...extra,
  };
}

const REFUSE_INSERTS = 'CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()';

const servers: TlsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function server(cert = testPki().server): Promise<TlsServer> {
  const s = await startTlsServer({ cert });
  servers.push(s);
  return s;
}

describe('ehrbench endpoints check', () => {
  it.each([['check'], ['probe']])('prints help for "endpoints %s"', async (sub) => {
    const r = await cli(['endpoints', sub, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`ehrbench endpoints ${sub}`);
    expect(r.stdout).toContain('--policy');
  });

  it('prints an allowed decision as JSON and exits 0, sending nothing', async () => {
    const s = await server();
    const policy = writePolicy([endpointJson(s.port, { caFile: testPki().caFile })]);
    const r = await cli(['endpoints', 'check', `https://model.test:${s.port}/v1/chat/completions`, '--policy', policy, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ allowed: true, endpoint: 'local', rule: 'egress.allowlisted-endpoint', reason: expect.any(String) });
    expect(JSON.parse(r.stdout).reason).toContain('127.0.0.1 in 127.0.0.1/32');
    expect(s.connections()).toBe(0);
  });

  it.each([
    ['a hex IPv4 host', 'https://0x7f.1/v1/models', 'egress.url.ipv4-non-canonical', null],
    ['userinfo', 'https://model.test@evil.example/v1', 'egress.url.userinfo', null],
    ['a path outside the endpoint', 'https://model.test:PORT/admin', 'egress.url.path', 'local'],
  ])('refuses %s with its rule and exit 1', async (_what, url, rule, endpoint) => {
    const s = await server();
    const policy = writePolicy([endpointJson(s.port, { caFile: testPki().caFile })]);
    const r = await cli(['endpoints', 'check', url.replace('PORT', String(s.port)), '--policy', policy, '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ allowed: false, endpoint, rule, reason: expect.any(String) });
  });

  it('refuses to start under a proxy variable, in one line naming it', async () => {
    const policy = writePolicy([endpointJson(18443, {})]);
    const r = await cli(['endpoints', 'check', 'https://model.test:18443/v1', '--policy', policy], { https_proxy: 'http://10.99.0.1:3128' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('ehrbench: environment variable https_proxy is set and could weaken the egress guard; unset it before starting ehrbench (no proxy or TLS override is allowed)\n');
  });
});

describe('ehrbench endpoints probe', () => {
  // A probe is audited like every outbound call: it runs against a site home (config, audit trail).
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome('pglite');
  });
  afterAll(async () => {
    await home.cleanup();
  });
  const withDb = async <T>(fn: (app: App) => Promise<T>): Promise<T> => {
    const app = await openApp({ file: home.configFile, env: home.env });
    try {
      return await fn(app);
    } finally {
      await app.close();
    }
  };
  const probe = (policy: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}) =>
    cli(['endpoints', 'probe', 'local', '--config', home.configFile, '--policy', policy, ...extra], { ...home.env, ...env });

  it('connects through the guard, verifies CA, name and pin, lists the models, and exits 0', async () => {
    const pki = testPki();
    const s = await server();
    const policy = writePolicy([endpointJson(s.port, { caFile: pki.caFile, spkiSha256: [pinOf(pki.server.certPem)] })]);
    const r = await probe(policy, ['--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: true,
      endpoint: 'local',
      address: '127.0.0.1',
      cidr: '127.0.0.1/32',
      resolution: 'addresses',
      tls: { trust: 'endpoint-ca', hostnameVerified: true, pinChecked: true, serverSpkiSha256: pinOf(pki.server.certPem) },
      models: ['test-model'],
    });
    expect(s.paths).toEqual(['GET /v1/models']);
  });

  it('calls the Azure models route with the api-version and the key from the environment', async () => {
    const s = await server();
    const policy = writePolicy([
      endpointJson(
        s.port,
        { caFile: testPki().caFile },
        { provider: 'azure-openai', url: `https://model.test:${s.port}/openai`, deployment: 'gpt-4o', apiVersion: '2024-10-21', model: undefined, auth: { type: 'api-key', env: 'PROBE_KEY' } },
      ),
    ]);
    const r = await probe(policy, [], { PROBE_KEY: 'k-123' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^endpoint local: ok\n/);
    expect(s.paths).toEqual(['GET /openai/models?api-version=2024-10-21']);
    expect(s.apiKeys).toEqual(['k-123']);
  });

  it('fails with exit 1 and the rule on a wrong pin, before any request', async () => {
    const pki = testPki();
    const s = await server();
    const policy = writePolicy([endpointJson(s.port, { caFile: pki.caFile, spkiSha256: [pinOf(pki.rogueCa.certPem)] })]);
    const r = await probe(policy, ['--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, rule: 'egress.tls.pin-mismatch', address: '127.0.0.1', models: null });
    expect(s.requests()).toBe(0);
  });

  it('records the probe in the audit trail before the request leaves; with no trail, no request', async () => {
    const pki = testPki();
    const s = await server();
    const policy = writePolicy([endpointJson(s.port, { caFile: pki.caFile })]);
    const probes = () =>
      withDb((app) =>
        app.db.query<{ outcome: string; rule: string; actor: string; endpoint: string }>(
          "SELECT outcome, rule, actor_principal AS actor, endpoint_id AS endpoint FROM audit_events WHERE event_type = 'endpoint.call' AND detail->>'purposeOfCall' = 'probe'",
        ),
      );
    const before = (await probes()).length;
    const ok = await probe(policy, ['--json']);
    expect(ok.code).toBe(0);
    const after = await probes();
    expect(after.length).toBe(before + 1);
    expect(after.at(-1)).toMatchObject({ outcome: 'success', rule: 'egress.allowlisted-endpoint', endpoint: 'local' });
    expect(after.at(-1)?.actor).toMatch(/^local:/);

    // The trail refuses to record: the probe stops before any request, with the audit error in one line.
    await withDb((app) => app.db.query(REFUSE_INSERTS));
    try {
      const requests = s.requests();
      const refused = await probe(policy, ['--json']);
      expect(refused.code).not.toBe(0);
      // --json: the error is one JSON object on stderr
      expect(JSON.parse(refused.stderr)).toMatchObject({ error: 'audit.unavailable', message: expect.stringMatching(/^the audit trail cannot record events/) });
      expect(s.requests()).toBe(requests);
    } finally {
      await withDb((app) => app.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events'));
    }
  });

  it('is not widened by NODE_EXTRA_CA_CERTS: a server certified only through it is refused', async () => {
    const pki = testPki();
    const s = await server(pki.issue({ by: pki.rogueCa }));
    const extra = { NODE_EXTRA_CA_CERTS: pki.rogueCaFile };

    // The variable does work in such a process: Node's default agent trusts the server.
    const plain = await nodeScript(
      `require('https').get('https://127.0.0.1:${s.port}/v1/models', (res) => { console.log(res.statusCode); res.resume(); }).on('error', (e) => { console.log(e.code); });`,
      extra,
    );
    expect(plain.stdout.trim()).toBe('200');
    const requestsBefore = s.requests();

    // The guard, with the endpoint trusting only Node's bundled roots, refuses it before any request.
    const bundled = await probe(writePolicy([endpointJson(s.port, {})]), ['--json'], extra);
    expect(bundled.code).toBe(1);
    expect(JSON.parse(bundled.stdout)).toMatchObject({ ok: false, rule: 'egress.tls.untrusted' });
    // Nor does an endpoint CA file widen to the process store.
    const other = await probe(writePolicy([endpointJson(s.port, { caFile: pki.caFile })]), ['--json'], extra);
    expect(JSON.parse(other.stdout)).toMatchObject({ ok: false, rule: 'egress.tls.untrusted' });
    expect(s.requests()).toBe(requestsBefore);

    // Named as the endpoint's own CA, the same server is accepted: the refusal was about trust.
    const named = await probe(writePolicy([endpointJson(s.port, { caFile: pki.rogueCaFile })]), ['--json'], extra);
    expect(named.code).toBe(0);
  });
});
