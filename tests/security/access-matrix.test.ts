/**
 * Who may do what, over the real HTTPS daemon with real client certificates (node-forge PKI):
 * role x action x tier, allowed and denied, each decision naming its rule and recorded in the audit
 * trail; separation of duties; strict request bodies (4xx, never 5xx); certificates from another CA,
 * unknown or revoked.
 */
import { readFileSync } from 'node:fs';
import { Agent, fetch } from 'undici';
import { issueClientCertificate } from '../../src/identity/site-pki';
import { createCa, issueCertificate } from '../../src/identity/pki';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(120_000);

let t: TestDaemon;
let approvalId: string;

beforeAll(async () => {
  t = await startTestDaemon({ workers: 0 });
  const created = await t.call('carol', 'POST', '/v1/approvals', {
    protocolNumber: 'IRB-2026-001',
    principalInvestigator: 'alice',
    personnel: ['alice', 'rita'],
    benchmarks: ['site_gated', 'site_private'],
    purpose: 'model evaluation',
    duaId: 'DUA-77',
  });
  expect(created.status).toBe(200);
  approvalId = created.json.approvalId;
});
afterAll(() => t.close());

async function auditedRule(type: string, rule: string): Promise<number> {
  const rows = await t.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE event_type = $1 AND rule = $2', [type, rule]);
  return rows[0]?.n ?? 0;
}

type Case = [who: string, benchmark: string, endpoint: string, status: number, rule: string, runStatus: string];

describe('run requests: role x tier x endpoint', () => {
  const cases: Case[] = [
    ['alice', 'medec', 'demo-loopback', 200, 'tier.public', 'approved'],
    ['bob', 'medec', 'demo-loopback', 200, 'tier.public', 'approved'],
    ['alice', 'site_gated', 'vpc-gated', 200, 'tier.approval-required.approval', 'approved'],
    ['alice', 'site_private', 'vpc-private', 200, 'tier.private.approval', 'requested'],
    ['bob', 'site_gated', 'vpc-gated', 403, 'approval.none', '-'],
    ['bob', 'site_private', 'vpc-private', 403, 'approval.none', '-'],
    ['carol', 'medec', 'demo-loopback', 403, 'rbac.researcher-required', '-'],
    ['erin', 'medec', 'demo-loopback', 403, 'rbac.researcher-required', '-'],
    ['ivan', 'medec', 'demo-loopback', 403, 'rbac.researcher-required', '-'],
    ['alice', 'site_private', 'demo-loopback', 403, 'endpoint.development-not-private', '-'],
    ['alice', 'site_private', 'vpc-gated', 403, 'endpoint.tier-ceiling', '-'],
    ['alice', 'site_gated', 'demo-loopback', 403, 'endpoint.tier-ceiling', '-'],
  ];
  it.each(cases)('%s requests %s on %s -> %i %s', async (who, benchmark, endpoint, status, rule, runStatus) => {
    const before = await auditedRule(status === 200 ? 'run.request' : status === 403 && rule.startsWith('rbac.') ? 'access.denied' : 'run.request', rule);
    const r = await t.call(who, 'POST', '/v1/runs', { benchmarkId: benchmark, endpointId: endpoint, maxInstances: 2 });
    expect(r.status).toBe(status);
    if (status === 200) {
      expect(r.json.status).toBe(runStatus);
      expect(r.json.requestedBy).toBe(who);
    } else {
      expect(r.json.rule).toBe(rule);
      expect(r.json.message).toMatch(new RegExp(`^denied by rule ${rule.replace(/\./g, '\\.')}: `));
    }
    const after = await auditedRule(status === 403 && rule.startsWith('rbac.') ? 'access.denied' : 'run.request', rule);
    expect(after).toBe(before + 1);
  });

  it('refuses approval-required data for a researcher not on the protocol, even with a named approval id', async () => {
    const r = await t.call('bob', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId });
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('approval.not-on-personnel');
  });
});

describe('approving private runs: separation of duties', () => {
  it('lets a compliance officer approve, never the requester nor another researcher', async () => {
    const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', maxInstances: 2 });
    const id = requested.json.runId;
    expect((await t.call('alice', 'POST', `/v1/runs/${id}/approve`, {})).json.rule).toBe('rbac.compliance-required');
    expect((await t.call('bob', 'POST', `/v1/runs/${id}/approve`, {})).json.rule).toBe('rbac.compliance-required');
    expect((await t.call('erin', 'POST', `/v1/runs/${id}/approve`, {})).json.rule).toBe('rbac.compliance-required');
    const ok = await t.call('carol', 'POST', `/v1/runs/${id}/approve`, {});
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ status: 'approved', approvedBy: 'carol', requestedBy: 'alice' });
    const again = await t.call('dave', 'POST', `/v1/runs/${id}/approve`, {});
    expect(again.json.rule).toBe('run.not-awaiting-approval');
    expect(await auditedRule('run.approve', 'sod.compliance-approval')).toBeGreaterThanOrEqual(1);
  });

  it('refuses a researcher who is also a compliance officer approving their own run', async () => {
    const requested = await t.call('rita', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', maxInstances: 2 });
    expect(requested.json.status).toBe('requested');
    const self = await t.call('rita', 'POST', `/v1/runs/${requested.json.runId}/approve`, {});
    expect(self.status).toBe(403);
    expect(self.json.rule).toBe('sod.approver-is-requester');
    expect(await auditedRule('run.approve', 'sod.approver-is-requester')).toBe(1);
  });
});

describe('approvals and audit: who may manage and read them', () => {
  it('only compliance records and changes approvals', async () => {
    const body = { protocolNumber: 'IRB-X', principalInvestigator: 'bob', personnel: ['bob'], tiers: ['approval-required'], purpose: 'p' };
    for (const who of ['alice', 'erin', 'ivan']) {
      const r = await t.call(who, 'POST', '/v1/approvals', body);
      expect([r.status, r.json.rule]).toEqual([403, 'rbac.compliance-required']);
    }
    const r = await t.call('dave', 'POST', '/v1/approvals', body);
    expect(r.status).toBe(200);
    expect((await t.call('alice', 'POST', `/v1/approvals/${r.json.approvalId}/suspend`, { reason: 'x' })).json.rule).toBe('rbac.compliance-required');
  });

  it('requires a second compliance officer to reinstate what one suspended', async () => {
    const r = await t.call('carol', 'POST', '/v1/approvals', { protocolNumber: 'IRB-S', principalInvestigator: 'bob', personnel: ['bob'], tiers: ['approval-required'], purpose: 'p' });
    const id = r.json.approvalId;
    expect((await t.call('carol', 'POST', `/v1/approvals/${id}/suspend`, { reason: 'audit finding' })).json.status).toBe('suspended');
    expect((await t.call('carol', 'POST', `/v1/approvals/${id}/reinstate`, { reason: 'resolved' })).json.rule).toBe('sod.reinstate-by-suspender');
    expect((await t.call('dave', 'POST', `/v1/approvals/${id}/reinstate`, { reason: 'resolved' })).json.status).toBe('active');
    const history = await t.call('erin', 'GET', `/v1/approvals/${id}`);
    expect(history.json.history.map((h: { change: string; changedBy: string }) => `${h.change}:${h.changedBy}`)).toEqual(['create:carol', 'suspend:carol', 'reinstate:dave']);
  });

  it('shows researchers only their own runs and the approvals naming them', async () => {
    const bobs = await t.call('bob', 'GET', '/v1/runs');
    expect(bobs.json.length).toBeGreaterThan(0);
    expect(bobs.json.every((r: { requestedBy: string }) => r.requestedBy === 'bob')).toBe(true);
    const alices = (await t.call('alice', 'GET', '/v1/runs')).json as { runId: string }[];
    expect((await t.call('bob', 'GET', `/v1/runs/${alices[0]?.runId}`)).status).toBe(404);
    expect((await t.call('carol', 'GET', `/v1/runs/${alices[0]?.runId}`)).status).toBe(200);
    const approvals = (await t.call('bob', 'GET', '/v1/approvals')).json as { personnel: string[] }[];
    expect(approvals.every((a) => a.personnel.includes('bob'))).toBe(true);
  });

  it('lets compliance and auditors read and verify the audit trail, nobody else', async () => {
    for (const who of ['alice', 'ivan']) expect((await t.call(who, 'GET', '/v1/audit/events?limit=5')).status).toBe(403);
    const events = await t.call('erin', 'GET', '/v1/audit/events?type=run.request&limit=500');
    expect(events.status).toBe(200);
    expect(events.json.length).toBeGreaterThan(10);
    for (const e of events.json) expect(Object.keys(e)).not.toContain('row_mac');
    const verify = await t.call('carol', 'GET', '/v1/audit/verify');
    expect(verify.json).toMatchObject({ ok: true, findings: [] });
  });
});

describe('request bodies: clear 4xx, never 5xx', () => {
  const bad: [string, string, unknown, number, RegExp][] = [
    ['POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', status: 'approved' }, 400, /unknown field "status"/],
    ['POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', approvedBy: 'carol' }, 400, /unknown field "approvedBy"/],
    ['POST', '/v1/runs', { benchmarkId: 'medec' }, 400, /missing required key "endpointId"/],
    ['POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: '5' }, 400, /maxInstances: must be integer/],
    ['POST', '/v1/runs', { benchmarkId: 'MEDEC; DROP TABLE runs', endpointId: 'demo-loopback' }, 400, /benchmarkId: must match pattern/],
    ['POST', '/v1/runs', { benchmarkId: 'nope', endpointId: 'demo-loopback' }, 404, /unknown benchmark "nope"/],
    ['POST', '/v1/runs', [], 400, /must be object/],
    ['POST', '/v1/approvals', { protocolNumber: 'P', principalInvestigator: 'alice', personnel: ['alice'], tiers: ['private'], purpose: 'p', status: 'active' }, 400, /unknown field "status"/],
    [
      'POST',
      '/v1/approvals',
      { protocolNumber: 'P', principalInvestigator: 'alice', personnel: ['alice'], tiers: ['private'], purpose: 'p', createdAt: '2020-01-01T00:00:00Z' },
      400,
      /unknown field "createdAt"/,
    ],
    ['POST', '/v1/approvals', { protocolNumber: 'P', principalInvestigator: 'alice', personnel: [], tiers: ['private'], purpose: 'p' }, 400, /personnel: must NOT have fewer than 1 items/],
    ['POST', `/v1/runs/00000000-0000-0000-0000-000000000000/approve`, { approvedBy: 'carol' }, 400, /unknown field "approvedBy"/],
    ['POST', `/v1/runs/not-a-uuid/approve`, {}, 400, /id: must match pattern/],
    ['POST', `/v1/runs/00000000-0000-0000-0000-000000000000/cancel`, {}, 400, /missing required key "reason"/],
  ];
  it.each(bad)('%s %s %j -> %i', async (method, path, body, status, message) => {
    // A researcher for run requests (others are refused by role before their body matters).
    const r = await t.call(path === '/v1/runs' ? 'alice' : 'carol', method, path, body);
    expect(r.status).toBe(status);
    expect(r.json.message).toMatch(message);
  });

  it('answers malformed JSON, a wrong media type and an oversized body with 4xx', async () => {
    expect((await t.call('alice', 'POST', '/v1/runs', undefined, { body: '{"benchmarkId": "medec",' })).status).toBe(400);
    expect((await t.call('alice', 'POST', '/v1/runs', undefined, { body: 'benchmarkId=medec', contentType: 'text/plain' })).status).toBe(415);
    const huge = JSON.stringify({ benchmarkId: 'medec', endpointId: 'demo-loopback', purpose: 'x'.repeat(70_000) });
    const r = await t.call('alice', 'POST', '/v1/runs', undefined, { body: huge });
    expect(r.status).toBe(413);
    expect(r.json).toEqual({ error: 'request.too-large', message: 'request body exceeds the size limit' });
  });

  it('serialises only the fields of the response schema', async () => {
    const r = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 1 });
    expect(Object.keys(r.json).sort()).toEqual(
      [
        'aggregates',
        'approvalCoverage',
        'approvalId',
        'approvedBy',
        'benchmarkId',
        'benchmarkVersion',
        'completionTokens',
        'counts',
        'createdAt',
        'data',
        'endpointId',
        'errorCode',
        'estimatedCostUsd',
        'finishedAt',
        'fingerprints',
        'instanceCount',
        'irbProtocol',
        'jury',
        'mainMetric',
        'mainScore',
        'maxInstances',
        'model',
        'outcome',
        'pins',
        'preset',
        'promptTokens',
        'purpose',
        'reasoningTokens',
        'repeat',
        'requestedBy',
        'runId',
        'sample',
        'scoring',
        'skipped',
        'stale',
        'startedAt',
        'status',
        'testEndpoint',
        'tier',
        'usageUnderReported',
        'withheld',
      ].sort(),
    );
  });
});

describe('certificates', () => {
  it('refuses a certificate from another CA at the TLS handshake', async () => {
    const rogueCa = createCa('rogue CA');
    const forged = issueCertificate(rogueCa, { commonName: 'carol', usage: 'client', days: 30 });
    const agent = new Agent({ connect: { ca: t.ca, cert: forged.certPem, key: forged.keyPem, servername: 'localhost' } });
    await expect(fetch(`https://localhost:${t.daemon.port}/v1/whoami`, { dispatcher: agent })).rejects.toThrow();
    await agent.close();
  });

  it('refuses a connection without a client certificate', async () => {
    const agent = new Agent({ connect: { ca: t.ca, servername: 'localhost' } });
    await expect(fetch(`https://localhost:${t.daemon.port}/v1/whoami`, { dispatcher: agent })).rejects.toThrow();
    await agent.close();
  });

  it('refuses a certificate of the site CA that maps to no principal', async () => {
    const stranger = issueClientCertificate(`${t.home.home}/pki`, 'mallory', 'researcher');
    const r = await t.call({ cert: readFileSync(stranger.certFile, 'utf8'), key: readFileSync(stranger.keyFile, 'utf8'), certFile: '', keyFile: '' }, 'GET', '/v1/whoami');
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('identity.unknown-principal');
  });

  it('refuses a revoked certificate from the next request on', async () => {
    expect((await t.call('bob', 'GET', '/v1/whoami')).json).toMatchObject({ principal: 'bob', roles: ['researcher'], authMethod: 'mtls' });
    expect((await t.call('alice', 'POST', '/v1/principals/bob/revoke', { reason: 'x' })).json.rule).toBe('rbac.compliance-required');
    const revoked = await t.call('ivan', 'POST', '/v1/principals/bob/revoke', { reason: 'left the hospital' });
    // bob's runs of the earlier tests still in progress are halted with his certificates.
    expect(revoked.json).toMatchObject({ principal: 'bob', revoked: 1 });
    for (const runId of revoked.json.stoppedRuns as string[]) expect((await t.app.engine.store.getRun(runId))?.status).toBe('halted');
    const r = await t.call('bob', 'GET', '/v1/whoami');
    expect(r.status).toBe(403);
    expect(r.json.rule).toBe('pki.certificate-revoked');
    expect(await auditedRule('access.denied', 'pki.certificate-revoked')).toBeGreaterThanOrEqual(1);
  });
});

describe('health', () => {
  it('answers health and readiness', async () => {
    expect((await t.call('alice', 'GET', '/health')).json).toEqual({ status: 'ok' });
    expect((await t.call('alice', 'GET', '/ready')).json).toEqual({ status: 'ready' });
  });
});
