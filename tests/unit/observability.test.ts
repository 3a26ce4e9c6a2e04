/**
 * Metric labels are an egress path like any other: they end up in Prometheus and every dashboard.
 * These tests feed the hooks what a bug or an attacker could (patient names, instance keys, prompts,
 * huge numbers of distinct ids) and check that none of it reaches the exposition text, that real
 * rule names and ids do, and that a hook never throws into the code it observes.
 */
import { createServer } from 'node:http';
import { createEndpointTransport, EgressDenied } from '../../src/egress';
import {
  clearConfiguredIds,
  metricsText,
  observeAuditBatch,
  observeAuditEvent,
  observeEgressEvent,
  observeInstance,
  observeModelCall,
  observeModelCallFailure,
  observeRunFinished,
  observeRunStarted,
  resetMetrics,
  restrictIds,
  startLocalListener,
  validRule,
} from '../../src/observability';
import { BENCHMARK_ID_PATTERN, ENDPOINT_ID_PATTERN, MAX_DISTINCT_VALUES } from '../../src/observability/labels';
import { GuardedCounter } from '../../src/observability/registry';
import { loopbackEndpoint } from '../helpers/tls';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/paths';

const CANARY = 'Jane Roe MRN 4411-PATIENT-CANARY';
const ctx = (benchmark = 'pubmed_qa', endpoint = 'aoai-east', tier = 'public') => ({ benchmark: { definition: { id: benchmark } }, tier, endpoint: { id: endpoint } });

/** Every sample line of the exposition text as { name, labels, value }. */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`unparsable exposition line: ${line}`);
      const labels: Record<string, string> = {};
      for (const pair of (m[2] ?? '').match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []) {
        const eq = pair.indexOf('=');
        labels[pair.slice(0, eq)] = JSON.parse(pair.slice(eq + 1));
      }
      return { name: m[1] as string, labels, value: Number(m[3]) };
    });
}

async function value(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const found = samples((await metricsText()).body).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found?.value;
}

beforeEach(() => {
  resetMetrics();
  clearConfiguredIds();
});

describe('label values', () => {
  it('uses the id patterns of the benchmark and endpoint schemas', () => {
    const bench = JSON.parse(readFileSync(join(ROOT, 'schemas', 'benchmark.schema.json'), 'utf8'));
    const endpoints = JSON.parse(readFileSync(join(ROOT, 'schemas', 'endpoints.schema.json'), 'utf8'));
    expect(BENCHMARK_ID_PATTERN.source).toBe(bench.properties.id.pattern);
    expect(ENDPOINT_ID_PATTERN.source).toBe(endpoints.$defs.endpoint.properties.id.pattern);
  });

  it.each(['egress.url.host', 'egress.address.not-allowed', 'approval.not-on-personnel', 'rbac.admin-required', 'deid.unavailable', 'model.http-error', 'run.item.attempts-exhausted'])(
    'accepts the rule %s',
    (r) => expect(validRule(r)).toBe(true),
  );

  it.each([CANARY, 'john.smith', 'egress', 'Egress.url.host', 'egress.url host', 'egress.url.host\n', `egress.${'a'.repeat(90)}`, 'egress..host', 'deid.mrn-4411.jane.roe.x.y', '_other', ''])(
    'refuses %j as a rule',
    (r) => expect(validRule(r)).toBe(false),
  );
});

describe('hooks', () => {
  it('count runs, instances, latency, blocked prompts and failures under configured ids', async () => {
    restrictIds({ benchmarks: ['pubmed_qa'], endpoints: ['aoai-east'] });
    observeRunStarted(ctx(), false);
    observeRunStarted(ctx(), true);
    observeInstance(ctx(), 'done');
    observeInstance(ctx(), 'done');
    observeInstance(ctx(), 'blocked', 'deid.residual-identifier');
    observeModelCall('aoai-east', 1500);
    observeModelCallFailure(ctx(), 'model.timeout', false);
    observeModelCallFailure(ctx(), 'model.timeout', true);
    observeRunFinished(ctx(), 'completed');
    observeRunFinished(ctx(), 'failed', false);

    const run = { benchmark: 'pubmed_qa', tier: 'public' };
    expect(await value('ehrbench_runs_started_total', { ...run, resumed: 'false' })).toBe(1);
    expect(await value('ehrbench_runs_started_total', { ...run, resumed: 'true' })).toBe(1);
    expect(await value('ehrbench_instances_total', { ...run, endpoint: 'aoai-east', outcome: 'done' })).toBe(2);
    expect(await value('ehrbench_instances_total', { ...run, endpoint: 'aoai-east', outcome: 'blocked' })).toBe(1);
    expect(await value('ehrbench_instances_total', { ...run, endpoint: 'aoai-east', outcome: 'failed' })).toBe(1);
    expect(await value('ehrbench_prompts_blocked_total', { ...run, rule: 'deid.residual-identifier' })).toBe(1);
    expect(await value('ehrbench_model_call_duration_seconds_sum', { endpoint: 'aoai-east' })).toBeCloseTo(1.5);
    expect(await value('ehrbench_model_call_duration_seconds_bucket', { endpoint: 'aoai-east', le: '1' })).toBe(0);
    expect(await value('ehrbench_model_call_duration_seconds_bucket', { endpoint: 'aoai-east', le: '2' })).toBe(1);
    expect(await value('ehrbench_model_call_failures_total', { endpoint: 'aoai-east', code: 'model.timeout' })).toBe(2);
    expect(await value('ehrbench_runs_finished_total', { ...run, status: 'completed' })).toBe(1);
    // A transition another worker made is not counted twice.
    expect(await value('ehrbench_runs_finished_total', { ...run, status: 'failed' })).toBeUndefined();
  });

  it('never puts patient text, instance keys or unknown ids into a label', async () => {
    restrictIds({ benchmarks: ['pubmed_qa'], endpoints: ['aoai-east'] });
    observeInstance(ctx(CANARY), 'done');
    observeInstance(ctx('pubmed_qa', 'instance-4411'), 'done');
    observeInstance(ctx('pubmed_qa', 'aoai-east', CANARY), 'done');
    observeInstance(ctx(), 'blocked', `deid.${CANARY}`);
    observeModelCallFailure(ctx(), `model.http-error ${CANARY}`, false);
    observeEgressEvent({ type: 'egress.denied', endpointId: 'aoai-east', rule: CANARY });
    observeAuditEvent({ type: 'access.denied', outcome: 'denied', rule: 'john.smith' as never });
    observeAuditEvent({ type: CANARY as never, outcome: 'denied', rule: 'rbac.admin-required' });
    // A configured-looking id that the deployment did not configure: refused too.
    observeRunStarted(ctx('other_benchmark'), false);

    const text = (await metricsText()).body;
    expect(text).not.toContain('4411');
    expect(text).not.toContain('Jane');
    expect(text).not.toContain('john');
    expect(text).not.toContain('other_benchmark');
    expect(await value('ehrbench_instances_total', { benchmark: '_invalid', outcome: 'done' })).toBe(1);
    expect(await value('ehrbench_instances_total', { endpoint: '_invalid', outcome: 'done' })).toBe(1);
    expect(await value('ehrbench_instances_total', { tier: '_invalid', outcome: 'done' })).toBe(1);
    expect(await value('ehrbench_egress_refusals_total', { endpoint: 'aoai-east', rule: '_invalid' })).toBe(1);
    expect(await value('ehrbench_access_denials_total', { event: 'access.denied', rule: '_invalid' })).toBe(1);
    expect(await value('ehrbench_access_denials_total', { event: '_invalid', rule: 'rbac.admin-required' })).toBe(1);
    expect(await value('ehrbench_prompts_blocked_total', { benchmark: 'pubmed_qa', rule: '_invalid' })).toBe(1);
    expect(await value('ehrbench_model_call_failures_total', { endpoint: 'aoai-east', code: '_invalid' })).toBe(1);
    expect(await value('ehrbench_metric_label_rejections_total', { metric: 'ehrbench_instances_total', reason: 'invalid-value' })).toBe(3);
  });

  it('caps the distinct values of a label, so a key leaking into it cannot grow the series without bound', async () => {
    for (let i = 0; i < MAX_DISTINCT_VALUES + 50; i++) observeModelCall(`endpoint-${i}`, 10);
    const series = samples((await metricsText()).body).filter((s) => s.name === 'ehrbench_model_call_duration_seconds_count');
    expect(series).toHaveLength(MAX_DISTINCT_VALUES + 1);
    expect(series.find((s) => s.labels.endpoint === '_other')?.value).toBe(50);
    expect(await value('ehrbench_metric_label_rejections_total', { metric: 'ehrbench_model_call_duration_seconds', reason: 'too-many-values' })).toBe(50);
  });

  it('drops an observation with an undeclared or missing label instead of exporting it', async () => {
    const c = new GuardedCounter('ehrbench_test_guarded_total', 'test', { endpoint: { kind: 'id', of: 'endpoint' } });
    c.inc({ endpoint: 'aoai-east', prompt: CANARY } as never);
    c.inc({} as never);
    c.inc({ endpoint: 'aoai-east' });
    const text = (await metricsText()).body;
    expect(text).not.toContain('prompt=');
    expect(await value('ehrbench_test_guarded_total', { endpoint: 'aoai-east' })).toBe(1);
    expect(await value('ehrbench_metric_label_rejections_total', { metric: 'ehrbench_test_guarded_total', reason: 'undeclared-label' })).toBe(1);
    expect(await value('ehrbench_metric_label_rejections_total', { metric: 'ehrbench_test_guarded_total', reason: 'missing-label' })).toBe(1);
  });

  it('never throws into the observed code, whatever it is handed', () => {
    expect(() => observeInstance({} as never, 'done')).not.toThrow();
    expect(() => observeRunStarted(null as never, false)).not.toThrow();
    expect(() => observeModelCallFailure(undefined as never, 'model.timeout', true)).not.toThrow();
    expect(() => observeAuditBatch(Number.NaN, 'not a date', new Date())).not.toThrow();
  });

  it('records audit batch sizes and the lag from hand-over to commit', async () => {
    const now = new Date('2026-01-01T00:00:02.000Z');
    observeAuditBatch(7, '2026-01-01T00:00:00.000Z', now);
    observeAuditBatch(1, '2026-01-01T00:00:01.500Z', now);
    expect(await value('ehrbench_audit_batch_size_sum')).toBe(8);
    expect(await value('ehrbench_audit_batch_size_count')).toBe(2);
    expect(await value('ehrbench_audit_append_lag_seconds_sum')).toBeCloseTo(2.5);
  });

  it('counts audited denials by event type and rule, but not blocked prompts', async () => {
    observeAuditEvent({ type: 'access.denied', outcome: 'denied', rule: 'identity.unknown-principal' });
    observeAuditEvent({ type: 'run.request', outcome: 'denied', rule: 'approval.not-on-personnel' });
    observeAuditEvent({ type: 'run.request', outcome: 'success', rule: 'tier.public' });
    observeAuditEvent({ type: 'instance.blocked', outcome: 'denied', rule: 'deid.unavailable' as never });
    const denials = samples((await metricsText()).body).filter((s) => s.name === 'ehrbench_access_denials_total');
    expect(denials.map((s) => [s.labels.event, s.labels.rule, s.value])).toEqual(
      expect.arrayContaining([
        ['access.denied', 'identity.unknown-principal', 1],
        ['run.request', 'approval.not-on-personnel', 1],
      ]),
    );
    expect(denials).toHaveLength(2);
  });
});

describe('egress guard hook', () => {
  it('counts a real refusal of the guard under its rule, before any connection', async () => {
    let connections = 0;
    const server = createServer(() => undefined).on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const transport = createEndpointTransport(loopbackEndpoint(port, { id: 'test-model' }), { timeoutMs: 2000 });
    try {
      await expect(transport.fetch(`https://evil.example:${port}/v1/chat/completions`)).rejects.toBeInstanceOf(EgressDenied);
      await expect(transport.fetch(`https://model.test:${port}@169.254.169.254/v1`)).rejects.toBeInstanceOf(EgressDenied);
    } finally {
      await transport.close();
      server.close();
    }
    expect(connections).toBe(0);
    const refusals = samples((await metricsText()).body).filter((s) => s.name === 'ehrbench_egress_refusals_total');
    expect(refusals.reduce((n, s) => n + s.value, 0)).toBe(2);
    for (const s of refusals) {
      expect(s.labels.endpoint).toBe('test-model');
      expect(s.labels.rule).toMatch(/^egress\.url\./);
    }
  });
});

describe('the loopback listener', () => {
  async function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type: string; body: string }> {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method });
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  }

  it('answers health and readiness, and metrics only when enabled', async () => {
    let ready = true;
    const off = await startLocalListener({ port: 0, metrics: false, ready: async () => ready });
    const on = await startLocalListener({ port: 0, metrics: true, ready: async () => Promise.reject(new Error('store down')) });
    const portOf = (s: typeof off) => (s.address() as { port: number; address: string }).port;
    try {
      expect((off.address() as { address: string }).address).toBe('127.0.0.1');
      expect(await get(portOf(off), '/health')).toMatchObject({ status: 200 });
      expect(await get(portOf(off), '/ready')).toMatchObject({ status: 200 });
      ready = false;
      expect(await get(portOf(off), '/ready')).toMatchObject({ status: 503 });
      expect(await get(portOf(off), '/metrics')).toMatchObject({ status: 404 });
      expect(await get(portOf(off), '/metrics', 'POST')).toMatchObject({ status: 405 });

      observeModelCall('aoai-east', 20);
      const m = await get(portOf(on), '/metrics');
      expect(m.status).toBe(200);
      expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(m.body).toContain('ehrbench_model_call_duration_seconds_count{endpoint="aoai-east"} 1');
      expect(await get(portOf(on), '/ready')).toMatchObject({ status: 503 });
    } finally {
      off.close();
      on.close();
    }
  });
});
