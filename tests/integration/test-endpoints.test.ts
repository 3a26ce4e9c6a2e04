/**
 * The test profile IT smoke-tests the daemon with before a real model is connected: `ehrbench init
 * --test-endpoints` writes three clearly labelled loopback endpoints (one per tier), `ehrbench
 * demo-server` serves them in the foreground, and an approval-required and a private run go end to end
 * on the daemon against them. Through the real binary where a person would type it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadEndpointPolicy } from '../../src/egress';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');
const TEST_IDS = ['test-public', 'test-approval-required', 'test-private'];

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** `ehrbench demo-server` in the foreground, as IT runs it next to `serve`; resolves once it listens. */
function startDemoServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'demo-server'], { env: { PATH: process.env.PATH, ...env } });
  let err = '';
  return new Promise((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (/listening on https:\/\/localhost:\d+\/v1/.test(err)) resolve({ child, stderr: () => err });
    });
    child.on('exit', (code) => reject(new Error(`demo-server exited ${code}: ${err}`)));
  });
}

async function until<T>(what: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the test profile: init --test-endpoints, demo-server, runs of every tier on the daemon', () => {
  let t: TestDaemon;
  let init: { code: number | null; stdout: string; stderr: string };
  let demo: { child: ChildProcess; stderr: () => string } | undefined;

  beforeAll(async () => {
    t = await startTestDaemon({
      rows: 4,
      workers: 1,
      // Before the daemon opens the data directory: what IT types after the first init.
      prepare: (home) => {
        const r = require('node:child_process').spawnSync(process.execPath, [BIN, 'init', '--home', home.home, '--test-endpoints'], {
          env: { PATH: process.env.PATH, ...home.env },
          encoding: 'utf8',
        });
        init = { code: r.status, stdout: r.stdout, stderr: r.stderr };
      },
    });
    // The helper's in-process model server gives its port to the one IT starts.
    await t.server.close();
    demo = await startDemoServer(t.home.env);
  });
  afterAll(async () => {
    demo?.child.kill('SIGTERM');
    await t?.close();
  });

  it('writes three labelled loopback test endpoints into the existing policy, keeping the rest', () => {
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('test endpoints');
    const policy = JSON.parse(readFileSync(join(t.home.home, 'access-policies', 'endpoints.json'), 'utf8'));
    const byId = new Map(policy.endpoints.map((e: { id: string }) => [e.id, e]));
    expect(byId.has('demo-loopback')).toBe(true);
    for (const id of TEST_IDS) {
      expect(byId.get(id)).toMatchObject({ test: true, description: expect.stringMatching(/^TEST ENDPOINT: loopback stand-in, never real data/), allowedCidrs: ['127.0.0.1/32'] });
    }
    expect((byId.get('test-public') as any).classification).toEqual({ inVpc: true, baa: false, maxTier: 'public', development: true });
    expect((byId.get('test-approval-required') as any).classification).toEqual({ inVpc: true, baa: false, maxTier: 'approval-required', development: true });
    // The rules refuse development endpoints for private data: the private one is marked test instead.
    expect((byId.get('test-private') as any).classification).toEqual({ inVpc: true, baa: true, maxTier: 'private' });
  });

  it('lists them as TEST', async () => {
    const r = await cli(['endpoints', 'list'], t.home.env);
    expect(r.code).toBe(0);
    for (const id of TEST_IDS) expect(r.stdout).toMatch(new RegExp(`^${id} .*TEST`, 'm'));
    expect(r.stdout).toMatch(/^demo-loopback .* no\s*$/m);
  });

  it('runs an approval-required and a private run end to end on the daemon against demo-server', async () => {
    const approval = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'SMOKE-TEST-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_gated', 'site_private'],
      endpoints: ['test-approval-required', 'test-private'],
      purpose: 'smoke test of the daemon with the test endpoints',
    });
    expect(approval.status).toBe(200);

    const gated = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'test-approval-required' });
    expect([gated.status, gated.json.status, gated.json.testEndpoint]).toEqual([200, 'approved', true]);
    const priv = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'test-private' });
    expect([priv.status, priv.json.status]).toEqual([200, 'requested']);
    expect((await t.call('dave', 'POST', `/v1/runs/${priv.json.runId}/approve`, {})).status).toBe(200);

    for (const id of [gated.json.runId, priv.json.runId]) {
      const done = await until(async () => {
        const r = await t.call('alice', 'GET', `/v1/runs/${id}`);
        return ['completed', 'failed'].includes(r.json.status) ? r.json : undefined;
      });
      expect(done).toMatchObject({ status: 'completed', counts: { done: 4, failed: 0, blocked: 0 }, testEndpoint: true });
    }

    // `runs show` over --server says the run went to a test endpoint.
    const alice = t.ids.alice!;
    const shown = await cli(['runs', 'show', priv.json.runId, '--server', `https://localhost:${t.daemon.port}`, '--cert', alice.certFile, '--key', alice.keyFile, '--ca', t.caFile], t.home.env);
    expect(shown.stderr).toBe('');
    expect(shown.stdout).toMatch(/on test-private \[TEST ENDPOINT: loopback stand-in, never real data\] \(private\), completed/);

    // Its results never leave, so they can never pass for real ones: no export is even requested.
    const exported = await cli(
      ['export', 'request', '--runs', gated.json.runId, '--server', `https://localhost:${t.daemon.port}`, '--cert', alice.certFile, '--key', alice.keyFile, '--ca', t.caFile],
      t.home.env,
    );
    expect(exported.code).toBe(3);
    expect(exported.stderr).toMatch(/^ehrbench: denied by rule export\.test-endpoint: run [0-9a-f-]{36} went to the test endpoint test-approval-required/);
    expect(await t.app.db.query('SELECT 1 FROM exports')).toEqual([]);
  });

  it('refuses EHR-tier data for a test endpoint under an approval that does not name it', async () => {
    const approval = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-REAL-9',
      principalInvestigator: 'bob',
      personnel: ['bob'],
      benchmarks: ['site_gated', 'site_private'],
      purpose: 'a real study: any endpoint the tier rules allow',
    });
    expect(approval.status).toBe(200);
    for (const [benchmarkId, endpointId] of [
      ['site_gated', 'test-approval-required'],
      ['site_private', 'test-private'],
    ]) {
      const r = await t.call('bob', 'POST', '/v1/runs', { benchmarkId, endpointId });
      expect([r.status, r.json.rule]).toEqual([403, 'approval.test-endpoint-not-named']);
    }
    // The same approval still covers a real endpoint.
    expect((await t.call('bob', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', maxInstances: 1 })).status).toBe(200);
  });

  it('warns in the daemon log at start-up that test endpoints are configured', () => {
    const log = readFileSync(join(t.home.home, 'logs', 'ehrbench.log'), 'utf8');
    const warnings = log
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((e) => e.message === 'endpoint.test-configured');
    expect(warnings.map((w) => w.endpointId).sort()).toEqual([...TEST_IDS].sort());
    expect(warnings.every((w) => w.level === 'warn')).toBe(true);
  });
});

describe('a test endpoint in the policy', () => {
  const write = (endpoint: Record<string, unknown>) => {
    const file = join(tempDir('test-endpoint'), 'endpoints.json');
    writeFileSync(file, JSON.stringify({ endpoints: [endpoint] }));
    return file;
  };
  const base = {
    id: 'test-x',
    provider: 'openai-compatible',
    url: 'https://localhost:18443/v1',
    addresses: ['127.0.0.1'],
    auth: { type: 'none' },
    classification: { inVpc: true, baa: true, maxTier: 'private' },
    test: true,
  };

  it('is accepted on loopback only', () => {
    expect(loadEndpointPolicy(write({ ...base, allowedCidrs: ['127.0.0.1/32'] })).endpoints[0]?.test).toBe(true);
    const file = write({ ...base, url: 'https://models.hospital.internal/v1', addresses: ['10.20.0.5'], allowedCidrs: ['10.20.0.0/24'] });
    expect(() => loadEndpointPolicy(file)).toThrow(
      new RegExp(
        `^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: /endpoints/0/allowedCidrs: a test endpoint reaches only this machine \\(loopback\\); 10\\.20\\.0\\.0/24 is not loopback \\(rule policy\\.test-endpoint-not-loopback\\)`,
      ),
    );
  });
});
