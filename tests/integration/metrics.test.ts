/**
 * /metrics on the real daemon: mutual TLS, a run through the API against the loopback model server,
 * then a scrape as an admin, an auditor, a researcher (refused and audited) and over the loopback
 * health port. The scrape must show the run, its instances, call latency and failures, the audit
 * gauges read from the store, and nothing of the instances' data.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { type App, openApp } from '../../src/app';
import { type Behaviour, type ModelServer, startModelServer } from '../../src/demo/model-server';
import { initSitePki, issueClientCertificate, type IssuedClient } from '../../src/identity/site-pki';
import { validRule } from '../../src/observability';
import { resetMetrics } from '../../src/observability/registry';
import { type Daemon, startDaemon } from '../../src/server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { recordIssued } from '../helpers/daemon';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

interface TestDaemon {
  app: App;
  daemon: Daemon;
  call(who: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
  close(): Promise<void>;
}

/**
 * The daemon with mutual TLS on a free port, a site PKI, certificates for a researcher (alice), an
 * auditor (erin) and an admin (ivan), and the loopback model server.
 */
async function startDaemonWith(backend: 'pglite' | 'postgres', server: Record<string, unknown>, behaviour: (n: number) => Behaviour, healthPort?: number): Promise<TestDaemon> {
  const home: TestHome = await makeHome(backend);
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  config.server = { port: 8443, workers: 1, pollSeconds: 0.1, ...server };
  writeFileSync(home.configFile, JSON.stringify(config, null, 2));
  const pkiDir = join(home.home, 'pki');
  initSitePki(pkiDir);
  const principalsFile = join(home.home, 'access-policies', 'principals.json');
  const principals = JSON.parse(readFileSync(principalsFile, 'utf8'));
  const ids: Record<string, { cert: string; key: string }> = {};
  const issuedToRecord: [IssuedClient, string][] = [];
  for (const [id, role] of [
    ['alice', 'researcher'],
    ['erin', 'auditor'],
    ['ivan', 'admin'],
  ] as const) {
    const issued = issueClientCertificate(pkiDir, id, role);
    issuedToRecord.push([issued, id]);
    principals.principals.find((p: { id: string }) => p.id === id).certificates = [{ commonName: id, issuerFingerprint: issued.issuerFingerprint }];
    ids[id] = { cert: readFileSync(issued.certFile, 'utf8'), key: readFileSync(issued.keyFile, 'utf8') };
  }
  writeFileSync(principalsFile, JSON.stringify(principals, null, 2));
  const model: ModelServer = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    behaviour,
  });
  let app: App | undefined;
  let daemon: Daemon | undefined;
  try {
    app = await openApp({ file: home.configFile, env: home.env });
    for (const [issued, id] of issuedToRecord) await recordIssued(app, issued, id);
    daemon = await startDaemon(app, { port: 0, ...(healthPort !== undefined ? { healthPort } : {}) });
  } catch (err) {
    await app?.close();
    await model.close();
    await home.cleanup();
    throw err;
  }
  const ca = readFileSync(join(pkiDir, 'ca.pem'), 'utf8');
  const agents = Object.fromEntries(Object.entries(ids).map(([id, m]) => [id, new Agent({ connect: { ca, cert: m.cert, key: m.key, servername: 'localhost' } })]));
  const started = { app, daemon };
  return {
    ...started,
    async call(who, method, path, body) {
      const res = await undiciFetch(`https://localhost:${started.daemon.port}${path}`, {
        method,
        dispatcher: agents[who],
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      });
      const text = await res.text();
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // Exposition text stays text.
      }
      return { status: res.status, json };
    },
    async close() {
      await started.daemon.close();
      await Promise.all(Object.values(agents).map((a) => a.close()));
      await started.app.close();
      await model.close();
      await home.cleanup();
    },
  };
}

jest.setTimeout(120_000);

function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line) as RegExpExecArray;
      const labels: Record<string, string> = {};
      for (const pair of (m[2] ?? '').match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []) {
        const eq = pair.indexOf('=');
        labels[pair.slice(0, eq)] = JSON.parse(pair.slice(eq + 1));
      }
      return { name: m[1] as string, labels, value: Number(m[3]) };
    });
}

function find(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  return samples(text).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** Label values ehrbench's own metrics may carry, whatever the metric. */
function allowedLabel(name: string, value: string, t: TestDaemon): boolean {
  switch (name) {
    case 'benchmark':
      return t.app
        .catalog()
        .list()
        .some((b) => b.definition.id === value);
    case 'endpoint':
      return t.app.endpoints().endpoints.some((e) => e.id === value);
    case 'rule':
    case 'code':
      return validRule(value);
    case 'le':
      return value === '+Inf' || Number.isFinite(Number(value));
    case 'version':
      return /^[0-9A-Za-z.+-]+$/.test(value);
    default:
      return /^[a-z][a-z0-9.-]*$/.test(value);
  }
}

describe.each(backends())('/metrics on the daemon (%s)', (backend) => {
  let t: TestDaemon;
  let healthPort: number;
  let runId: string;

  beforeAll(async () => {
    resetMetrics();
    // The second call is refused once (HTTP 400): a failed attempt, retried. The health listener takes
    // any free port (a port probed free beforehand can be taken by a parallel test before it binds).
    t = await startDaemonWith(backend, { healthPortMetrics: true }, (n) => (n === 2 ? { kind: 'status', status: 400 } : { kind: 'answer' }), 0);
    healthPort = t.daemon.healthPort as number;
    expect(healthPort).toBeGreaterThan(0);
    const res = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, maxInstances: 5 });
    expect(res.status).toBe(200);
    runId = res.json.runId;
    for (let i = 0; i < 300; i++) {
      const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
      if (r.json.status === 'completed') break;
      if (['failed', 'halted', 'cancelled'].includes(r.json.status)) throw new Error(`run ${r.json.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  it('shows an admin the run, its instances, call latency and failures, and the audit gauges', async () => {
    const res = await t.call('ivan', 'GET', '/metrics');
    expect(res.status).toBe(200);
    const text = res.json as string;
    const run = { benchmark: 'pubmed_qa', tier: 'public' };
    expect(find(text, 'ehrbench_runs_started_total', { ...run, resumed: 'false' })).toBe(1);
    expect(find(text, 'ehrbench_runs_finished_total', { ...run, status: 'completed' })).toBe(1);
    expect(find(text, 'ehrbench_instances_total', { ...run, endpoint: DEMO_ENDPOINT_ID, outcome: 'done' })).toBe(5);
    expect(find(text, 'ehrbench_model_call_duration_seconds_count', { endpoint: DEMO_ENDPOINT_ID })).toBe(5);
    expect(find(text, 'ehrbench_model_call_failures_total', { endpoint: DEMO_ENDPOINT_ID, code: 'model.http-error' })).toBe(1);
    expect(find(text, 'ehrbench_runs', { status: 'completed' })).toBe(1);
    expect(find(text, 'ehrbench_store_up')).toBe(1);
    // Read from the store: the trail has the run's events and a checkpoint sealed at its end.
    const head = await t.app.db.query<{ seq: number }>('SELECT seq FROM audit_head');
    expect(find(text, 'ehrbench_audit_head_seq')).toBeGreaterThanOrEqual(Number(head[0]?.seq) - 2);
    expect(find(text, 'ehrbench_audit_events_since_checkpoint')).toBeLessThan(Number(head[0]?.seq));
    expect(find(text, 'ehrbench_audit_seconds_since_checkpoint')).toBeGreaterThanOrEqual(0);
    expect(find(text, 'ehrbench_audit_batch_size_count')).toBeGreaterThan(0);
    expect(find(text, 'ehrbench_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('refuses a researcher, audits the refusal and counts it by rule', async () => {
    const res = await t.call('alice', 'GET', '/metrics');
    expect(res.status).toBe(403);
    expect(res.json.rule).toBe('rbac.admin-required');
    const audited = await t.app.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM audit_events WHERE event_type = 'access.denied' AND actor_principal = 'alice' AND rule = 'rbac.admin-required'",
    );
    expect(audited[0]?.n).toBe(1);
    const auditor = await t.call('erin', 'GET', '/metrics');
    expect(auditor.status).toBe(200);
    expect(find(auditor.json as string, 'ehrbench_access_denials_total', { event: 'access.denied', rule: 'rbac.admin-required' })).toBe(1);
  });

  it('serves the same metrics on the loopback health port, and readiness from the store', async () => {
    const res = await fetch(`http://127.0.0.1:${healthPort}/metrics`);
    expect(res.status).toBe(200);
    expect(find(await res.text(), 'ehrbench_instances_total', { benchmark: 'pubmed_qa', outcome: 'done' })).toBe(5);
    expect((await fetch(`http://127.0.0.1:${healthPort}/ready`)).status).toBe(200);
  });

  it('carries no instance key, prompt, reference or prediction, and only allowlisted label values', async () => {
    const text = (await t.call('erin', 'GET', '/metrics')).json as string;
    const items = await t.app.db.query<{ item_key: string; payload: Record<string, unknown>; prediction: string | null }>('SELECT item_key, payload, prediction FROM run_items WHERE run_id = $1', [
      runId,
    ]);
    expect(items).toHaveLength(5);
    const labelValues = new Set(samples(text).flatMap((s) => Object.values(s.labels)));
    for (const item of items) {
      expect(labelValues.has(item.item_key)).toBe(false);
      const texts = JSON.stringify(item.payload).match(/"([^"\\]{12,})"/g) ?? [];
      expect(texts.length).toBeGreaterThan(0);
      for (const quoted of texts) expect(text).not.toContain(quoted.slice(1, -1));
    }
    for (const s of samples(text).filter((x) => x.name.startsWith('ehrbench_') && !x.name.startsWith('ehrbench_nodejs_') && !x.name.startsWith('ehrbench_process_'))) {
      for (const [name, value] of Object.entries(s.labels)) expect([s.name, name, value, allowedLabel(name, value, t)]).toEqual([s.name, name, value, true]);
    }
  });
});
