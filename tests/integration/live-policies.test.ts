/**
 * site-data.json and endpoints.json are re-read by a running daemon, as principals.json is (issue 28).
 * After IT bound a benchmark and `benchmarks check` said ready, researchers got a 503 until a restart,
 * and a hand-added endpoint gave a false "not in the allowlist <server path>" 404. Now the request
 * after the edit uses it, recorded first as policy.change; a broken edit keeps the last good version
 * and the log names the file and the field; the requester is told which benchmark or endpoint, never
 * a server path.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

const QUESTIONS = [
  { id: 'q1', question: 'Which vitamin deficiency causes scurvy?', options: ['Vitamin A', 'Vitamin B12', 'Vitamin C', 'Vitamin D'], answer: 'C' },
  { id: 'q2', question: 'Which organ produces insulin?', options: ['Liver', 'Pancreas', 'Kidney', 'Spleen'], answer: 'B' },
];

interface Change {
  detail: Record<string, string | number>;
}

describe('a running daemon and the policy files IT edits', () => {
  let t: TestDaemon;
  let siteData: string;
  let endpointsFile: string;
  beforeAll(async () => {
    t = await startTestDaemon({ workers: 0 });
    siteData = join(t.home.home, 'site-data.json');
    endpointsFile = join(t.home.home, 'access-policies', 'endpoints.json');
    writeFileSync(join(t.home.home, 'medqa.jsonl'), QUESTIONS.map((q) => JSON.stringify(q)).join('\n') + '\n');
    // Data a site binds is held to approval-required: alice's IRB approval covers MedQA.
    await t.app.approvals.create({ protocolNumber: 'IRB-LIVE-1', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['med_qa'], purpose: 'live policies' }, 'carol');
  });
  afterAll(() => t?.close());

  const changes = (policy: string) => t.app.db.query<Change>("SELECT detail FROM audit_events WHERE event_type = 'policy.change' AND detail->>'policy' = $1 ORDER BY seq", [policy]);
  const request = (benchmarkId: string, endpointId: string) => t.call('alice', 'POST', '/v1/runs', { benchmarkId, endpointId, maxInstances: 2 });

  it('serves a benchmark bound in site-data.json on the next request, recorded as policy.change first', async () => {
    const before = await request('med_qa', 'vpc-gated');
    // The requester learns which benchmark cannot run, never where the site keeps its files.
    expect(before.status).toBe(503);
    expect(before.json).toMatchObject({ error: 'service.unavailable' });
    expect(before.json.message).toContain('benchmark med_qa cannot be run here right now');
    expect(before.json.message).toContain('dataset.not-configured');
    expect(JSON.stringify(before.json)).not.toContain(t.home.home);

    writeFileSync(siteData, JSON.stringify({ benchmarks: { med_qa: { source: { type: 'jsonl', path: 'medqa.jsonl' } } } }, null, 2));
    const after = await request('med_qa', 'vpc-gated');
    expect([after.status, after.json.benchmarkId, after.json.tier]).toEqual([200, 'med_qa', 'approval-required']);
    const reload = (await changes('site-data')).at(-1);
    expect(reload?.detail).toMatchObject({ policy: 'site-data', trigger: 'reload', added: 'benchmarks.med_qa' });
  });

  it('uses an endpoint added to endpoints.json on the next request; before, the 404 names the endpoint and no path', async () => {
    const unknown = await request('pubmed_qa', 'hand-added');
    expect(unknown.status).toBe(404);
    expect(unknown.json).toMatchObject({ error: 'endpoint.unknown' });
    expect(unknown.json.message).toContain('endpoint "hand-added" is not in the site\'s endpoint allowlist');
    expect(JSON.stringify(unknown.json)).not.toContain(t.home.home);

    const policy = JSON.parse(readFileSync(endpointsFile, 'utf8'));
    policy.endpoints.push({ ...policy.endpoints[0], id: 'hand-added', description: 'added by hand while the daemon runs' });
    writeFileSync(endpointsFile, JSON.stringify(policy, null, 2));
    const run = await request('pubmed_qa', 'hand-added');
    expect([run.status, run.json.endpointId]).toEqual([200, 'hand-added']);
    expect((await changes('endpoints')).at(-1)?.detail).toMatchObject({ policy: 'endpoints', trigger: 'reload', added: 'hand-added' });
    expect((await t.call('alice', 'GET', '/v1/endpoints')).json.map((e: { id: string }) => e.id)).toContain('hand-added');
  });

  it('keeps the last good version through a broken edit, logs the file and the field, and applies the fix', async () => {
    const recorded = (await changes('endpoints')).length;
    const good = readFileSync(endpointsFile, 'utf8');
    const broken = JSON.parse(good);
    broken.endpoints[0].classification.maxTier = 'everything';
    writeFileSync(endpointsFile, JSON.stringify(broken, null, 2));
    writeFileSync(siteData, '{ "benchmarks": { "med_qa": ');
    // Both files broken: the versions in force still serve.
    expect((await request('pubmed_qa', 'hand-added')).status).toBe(200);
    expect((await request('med_qa', 'vpc-gated')).status).toBe(200);
    expect(await changes('endpoints')).toHaveLength(recorded);

    // The fix is applied like any edit.
    const fixed = JSON.parse(good);
    fixed.endpoints = fixed.endpoints.filter((e: { id: string }) => e.id !== 'hand-added');
    writeFileSync(endpointsFile, JSON.stringify(fixed, null, 2));
    expect((await request('pubmed_qa', 'hand-added')).status).toBe(404);
    expect((await changes('endpoints')).at(-1)?.detail).toMatchObject({ trigger: 'reload', removed: 'hand-added' });

    await t.stop();
    const log = readFileSync(join(t.home.home, 'logs', 'ehrbench.log'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const kept = log.filter((l) => l.message === 'policy.invalid-kept-last');
    expect(kept).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ level: 'error', policy: 'endpoints', file: endpointsFile, field: '/endpoints/0/classification/maxTier', errorCode: 'policy.invalid' }),
        expect.objectContaining({ level: 'error', policy: 'site-data', file: siteData }),
      ]),
    );
    // Logged once per problem, not on every request.
    expect(kept.filter((l) => l.policy === 'endpoints')).toHaveLength(1);
    // The configuration is applied at start only, and says so.
    expect(log.find((l) => l.message === 'config.loaded')).toMatchObject({ file: t.home.configFile });
  });
});
