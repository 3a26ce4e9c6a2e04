/**
 * What a run's instances show, one by one, through the daemon's API (SECURITY T58): a public run's
 * prompts, predictions, references and scores to everyone who may read the run, filterable (failed,
 * wrong, metric) and paged; an approval-required or private run's failed and blocked instances by
 * ordinal, state and code only, never text or scores, to its requester and compliance officers only
 * (admins and auditors refused under a rule, other researchers told the run is not theirs, as by
 * `runs show`). Every read is in the trail as instance.read, with counts and the filter and no text.
 */
import type { Behaviour } from '../../src/demo/model-server';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { addOpenBenchmark, finishedRuns } from '../helpers/instance-runs';

jest.setTimeout(180_000);

/** Every answer is "A" (yes); the prompt of note 3 is refused, so that instance fails for good. */
function behaviour(_n: number, prompt: string): Behaviour {
  if (prompt.includes('Synthetic note 3:')) return { kind: 'status', status: 400, body: '{"error":{"message":"bad request"}}' };
  return { kind: 'answer', text: 'A' };
}

let t: TestDaemon;
let publicRun: string;
let privateRun: string;

const instances = (who: string, runId: string, query = '') => t.call(who, 'GET', `/v1/runs/${runId}/instances${query}`);

beforeAll(async () => {
  t = await startTestDaemon({
    behaviour,
    rows: 6,
    // A public benchmark on the same synthetic notes (labels no, yes, no, yes, no, yes; the model says yes).
    prepare: (_home, config) => addOpenBenchmark(config),
  });
  const pub = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_open', endpointId: 'demo-loopback' });
  expect(pub.status).toBe(200);
  ({ publicRun, privateRun } = await finishedRuns(t, pub.json.runId, 'IRB-INST-1'));
});
afterAll(() => t?.close());

describe("a public run's instances", () => {
  it('shows each instance whole to its requester: prompt, prediction, references and scores, in ordinal order', async () => {
    const r = await instances('alice', publicRun);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ runId: publicRun, tier: 'public', view: 'text', rule: 'visibility.instances.public-tier', metric: 'exact_match', prompts: 'rebuilt', nextAfter: null, after: null });
    const shown = r.json.instances as Record<string, any>[];
    expect(shown.map((i) => i.ordinal)).toEqual([0, 1, 2, 3, 4, 5]);
    const first = shown.find((i) => i.key === '1')!;
    expect(first).toMatchObject({ state: 'done', errorCode: null, prediction: 'A', references: ['no'], score: 0, scores: { exact_match: 0 } });
    expect(first.prompt).toContain('Synthetic note 1: stable vital signs');
    expect(first.prompt).toMatch(/Is follow-up needed\?/);
    expect(shown.find((i) => i.key === '2')).toMatchObject({ score: 1 });
    expect(shown.find((i) => i.key === '3')).toMatchObject({ state: 'failed', errorCode: expect.stringMatching(/^model\./), prediction: null, score: null });
  });

  it('filters: failed (failed or blocked), wrong (main score below full marks), both; and pages by ordinal', async () => {
    const keys = async (q: string) => ((await instances('alice', publicRun, q)).json.instances as { key: string }[]).map((i) => i.key);
    expect(await keys('?failed=true')).toEqual(['3']);
    expect(await keys('?wrong=true')).toEqual(['1', '5']);
    expect(await keys('?failed=true&wrong=true')).toEqual(['1', '3', '5']);

    const seen: number[] = [];
    let after: number | null = null;
    let pages = 0;
    do {
      const page: { status: number; json: any } = await instances('alice', publicRun, `?limit=4${after === null ? '' : `&after=${after}`}`);
      expect(page.status).toBe(200);
      seen.push(...page.json.instances.map((i: { ordinal: number }) => i.ordinal));
      after = page.json.nextAfter;
      pages += 1;
    } while (after !== null);
    expect([pages, seen]).toEqual([2, [0, 1, 2, 3, 4, 5]]);
  });

  it('shows the metric asked for, and refuses one the run does not have, naming those it has', async () => {
    expect((await instances('alice', publicRun, '?metric=exact_match')).json.metric).toBe('exact_match');
    const unknown = await instances('alice', publicRun, '?metric=rouge_l');
    expect(unknown.status).toBe(400);
    expect(unknown.json).toMatchObject({ error: 'run.unknown-metric', message: expect.stringMatching(/has no metric "rouge_l"; its metrics: exact_match$/) });
    // Out of the schema: a page over 500, a cursor below 0, a metric that is no name.
    for (const q of ['?limit=501', '?after=-1', '?metric=%3Cimg%3E']) expect([q, (await instances('alice', publicRun, q)).json.error]).toEqual([q, 'request.invalid']);
  });

  it('shows them to auditors and admins too (they may read every run); another researcher is told the run is not his', async () => {
    for (const who of ['erin', 'ivan', 'carol']) expect([who, (await instances(who, publicRun)).json.view]).toEqual([who, 'text']);
    const bob = await instances('bob', publicRun);
    expect([bob.status, bob.json.error]).toEqual([404, 'run.not-found']);
  });
});

describe("an approval-required or private run's instances", () => {
  it('shows its requester and compliance officers the failed and blocked ones by ordinal, state and code, and nothing else', async () => {
    for (const who of ['alice', 'carol', 'dave']) {
      const r = await instances(who, privateRun);
      expect([who, r.status]).toEqual([who, 200]);
      expect(r.json).toMatchObject({ view: 'codes-only', rule: 'visibility.instances.codes-only', metric: null, prompts: 'withheld', tier: 'private' });
      expect(r.json.reason).toMatch(/never shown/);
      expect(r.json.instances).toEqual([{ ordinal: 2, state: 'failed', errorCode: expect.stringMatching(/^model\./) }]);
      // Not a word of the notes, the answers or the labels, whatever the filter.
      expect(JSON.stringify(r.json)).not.toMatch(/Synthetic|vital|follow|"A"|"yes"|"no"/);
      expect((await instances(who, privateRun, '?failed=true&limit=1')).json.instances).toHaveLength(1);
    }
  });

  it('refuses the filters that read scores (wrong, metric) under the codes-only rule', async () => {
    for (const q of ['?wrong=true', '?metric=exact_match']) {
      const r = await instances('alice', privateRun, q);
      expect([q, r.status, r.json.error, r.json.rule]).toEqual([q, 403, 'policy.denied', 'visibility.instances.codes-only']);
    }
  });

  it('refuses admins and auditors under visibility.instances.withheld; another researcher is told the run is not his', async () => {
    for (const who of ['erin', 'ivan']) {
      const r = await instances(who, privateRun);
      expect([who, r.status, r.json.rule]).toEqual([who, 403, 'visibility.instances.withheld']);
    }
    const bob = await instances('bob', privateRun);
    expect([bob.status, bob.json.error]).toEqual([404, 'run.not-found']);
  });
});

describe('the trail of instance reads', () => {
  it('records each read as instance.read with its rule, the count and the filter, and no text', async () => {
    const events = await t.app.db.query<{ outcome: string; rule: string; actor_principal: string; run_id: string; detail: Record<string, unknown> }>(
      `SELECT outcome, rule, actor_principal, run_id::text AS run_id, detail FROM audit_events WHERE event_type = 'instance.read' ORDER BY seq`,
    );
    expect(events.find((e) => e.actor_principal === 'alice' && e.run_id === publicRun && e.detail.wrong === true && e.detail.failed === false)).toMatchObject({
      outcome: 'success',
      rule: 'visibility.instances.public-tier',
      detail: { count: 2, limit: 50, view: 'text', metric: 'exact_match' },
    });
    expect(events.find((e) => e.actor_principal === 'carol' && e.run_id === privateRun)).toMatchObject({
      outcome: 'success',
      rule: 'visibility.instances.codes-only',
      detail: { count: 1, view: 'codes-only' },
    });
    expect(events.find((e) => e.actor_principal === 'erin' && e.run_id === privateRun)).toMatchObject({ outcome: 'denied', rule: 'visibility.instances.withheld', detail: { count: 0 } });
    // The unknown metric was refused before anything was read: no event names it.
    expect(events.filter((e) => e.detail.metric === 'rouge_l')).toEqual([]);
    // No instance text or key anywhere in the trail.
    const rows = await t.app.db.query<{ row: string }>(`SELECT row_to_json(a)::text AS row FROM audit_events a`);
    expect(rows.filter((r) => /Synthetic note|vital signs|follow-up/.test(r.row))).toEqual([]);
  });

  it('keeps exports aggregate-only: the export of the public run holds no instance', async () => {
    const e = await t.call('alice', 'POST', '/v1/exports', { runIds: [publicRun] });
    expect(e.status).toBe(200);
    expect(e.json.preview).not.toMatch(/Synthetic note|"prediction"|"prompt"|"instances"/);
  });
});
