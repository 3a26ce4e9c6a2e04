/**
 * What the console's compliance and admin screens read from the API (issue 28), through the real
 * daemon: audit search newest first with paging and a type left out (bad parameters refused with
 * request.invalid), the endpoints' refused tiers with their rules, a run's approval coverage, purpose,
 * model and size, the last verification's outcome in the chain's health, and no 404 for the favicon.
 */
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(120_000);

describe('the API behind the console screens', () => {
  let t: TestDaemon;

  beforeAll(async () => {
    t = await startTestDaemon({ workers: 0 });
    const actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' } as const;
    // A trail with many model calls among the other events.
    for (let i = 0; i < 30; i += 1) {
      await t.app.audit.record({ type: 'endpoint.call', action: 'E', outcome: 'success', rule: 'egress.allowlisted-endpoint', actor, subject: { endpointId: 'demo-loopback' } });
    }
  });

  afterAll(async () => {
    await t?.close();
  });

  const seqs = (events: { seq: number }[]) => events.map((e) => e.seq);

  it('searches the trail newest first, a page at a time, with the model calls left out', async () => {
    const newest = await t.call('erin', 'GET', '/v1/audit/events?order=newest&limit=5');
    expect(newest.status).toBe(200);
    const first = seqs(newest.json);
    expect(first).toEqual([...first].sort((a, b) => b - a));
    const head = await t.call('erin', 'GET', '/v1/audit/tail?n=1');
    // the newest page starts at the head (less the audit.read of this very search, recorded before it answered)
    expect(first[0]).toBeGreaterThanOrEqual(head.json[0].seq - 1);
    const next = await t.call('erin', 'GET', `/v1/audit/events?order=newest&limit=5&before=${first.at(-1)}`);
    expect(seqs(next.json)).toEqual(first.map((s) => s - 5));

    const oldest = await t.call('erin', 'GET', '/v1/audit/events?limit=3');
    const after = await t.call('erin', 'GET', `/v1/audit/events?limit=3&after=${oldest.json.at(-1).seq}`);
    expect(after.json[0].seq).toBe(oldest.json.at(-1).seq + 1);

    const withCalls = await t.call('erin', 'GET', '/v1/audit/events?order=newest&limit=200');
    expect(withCalls.json.some((e: { event_type: string }) => e.event_type === 'endpoint.call')).toBe(true);
    const hidden = await t.call('erin', 'GET', '/v1/audit/events?order=newest&limit=200&exclude=endpoint.call');
    expect(hidden.status).toBe(200);
    expect(hidden.json.length).toBeGreaterThan(0);
    expect(hidden.json.filter((e: { event_type: string }) => e.event_type === 'endpoint.call')).toEqual([]);
  });

  it('refuses a bad order, page, type or excluded type with request.invalid, naming the field', async () => {
    for (const [q, field] of [
      ['order=latest', 'order'],
      ['before=0', 'before'],
      ['before=x', 'before'],
      ['type=run.approved', 'type'],
      ['exclude=endpoint.call,model.call', 'exclude'],
      ['before=9&after=2', 'before'],
    ] as const) {
      const r = await t.call('erin', 'GET', `/v1/audit/events?${q}`);
      expect({ q, status: r.status, error: r.json.error }).toEqual({ q, status: 400, error: 'request.invalid' });
      expect(r.json.message).toContain(field);
    }
  });

  it('lists with each endpoint the tiers it refuses, each with its rule', async () => {
    const r = await t.call('alice', 'GET', '/v1/endpoints');
    const refused = Object.fromEntries((r.json as { id: string; refusedTiers: { tier: string; rule: string }[] }[]).map((e) => [e.id, e.refusedTiers.map((x) => `${x.tier}:${x.rule}`)]));
    expect(refused['vpc-private']).toEqual([]);
    expect(refused['vpc-gated']).toEqual(['private:endpoint.tier-ceiling']);
    expect(refused['demo-loopback']!.length).toBeGreaterThan(0);
  });

  it('shows with a run why its approval covers it, its purpose, model and size', async () => {
    const a = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-API-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: [],
      tiers: ['private'],
      purpose: 'tier walk',
    });
    expect(a.status).toBe(200);
    const r = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId: a.json.approvalId, purpose: 'queue triage', maxInstances: 3 });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ approvalCoverage: 'tier', purpose: 'queue triage', maxInstances: 3, irbProtocol: 'IRB-API-1' });
    const listed = (await t.call('carol', 'GET', '/v1/runs')).json.find((x: { runId: string }) => x.runId === r.json.runId);
    expect(listed).toMatchObject({ approvalCoverage: 'tier', purpose: 'queue triage', maxInstances: 3 });
    expect(listed.model).toEqual(expect.any(String));
    const pub = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 1 });
    expect(pub.json).toMatchObject({ approvalCoverage: null, purpose: null, maxInstances: 1 });
  });

  it("keeps the last verification's outcome: the chain's health says who verified, when, and what it found", async () => {
    const before = await t.call('erin', 'GET', '/v1/audit/health');
    expect(before.json.lastVerify).toBeNull();
    const v = await t.call('erin', 'GET', '/v1/audit/verify');
    expect(v.json.ok).toBe(true);
    const after = await t.call('carol', 'GET', '/v1/audit/health');
    expect(after.json.lastVerify).toMatchObject({ actor: 'erin', outcome: 'verified', rule: 'audit.verify.outcome' });
  });

  it('answers the favicon with 204, not 404', async () => {
    const r = await t.call('alice', 'GET', '/favicon.ico');
    expect(r.status).toBe(204);
  });
});
