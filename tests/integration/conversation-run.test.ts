/**
 * Multi-turn instances (HealthBench's conversations) take the one prompt path: every turn is
 * de-identified under the instance's subject (one surrogate map), the residual scan reads every turn,
 * and the gateway audits, budgets and sends the turns as they are. An approval-required site benchmark
 * of synthetic conversations runs through the real engine against the loopback HTTPS model server;
 * what the server received is searched for every identifier planted in a later turn.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEventInput } from '../../src/audit';
import { Catalog } from '../../src/catalog';
import { createDeidStage, settingsFrom } from '../../src/deid';
import { executeRun, requestRun } from '../../src/runs/engine';
import { researcher, startTestApp, type TestApp } from '../helpers/app';

jest.setTimeout(120_000);

const ENDPOINT = 'site-vpc-loopback';
const BENCHMARK = 'site_conversations';

type Turn = { role: 'system' | 'user' | 'assistant'; content: string };

/** Synthetic conversations; every identifier below is invented. */
const CONVERSATIONS: { prompt_id: string; prompt: Turn[] }[] = [
  {
    prompt_id: 'c1',
    prompt: [
      { role: 'system', content: 'You answer health questions from patients of the clinic.' },
      { role: 'user', content: 'I have had a dry cough for two weeks. Should I worry?' },
      { role: 'assistant', content: 'How old are you, and have you had a fever?' },
      {
        role: 'user',
        content:
          'I am 34 and my temperature was 38.2 C last night. My MRN is 00384157; call me at (508) 555-0187 or write to colette.hollis@example.net. My SSN is 031-44-9182. Dr. Renwick saw me on 3/11/2087.',
      },
    ],
  },
  {
    prompt_id: 'c2',
    prompt: [
      { role: 'user', content: 'Hello, this is Mrs. Marguerite Hollis. My knee has been swollen since Monday.' },
      { role: 'assistant', content: 'I am sorry to hear that. Did you injure it?' },
      { role: 'user', content: 'No injury. Mrs. Hollis has taken ibuprofen 400 mg twice a day. I live at 214 Pellham Road, Framingham.' },
    ],
  },
];

/** Identifiers of the later turns that must never reach the model. */
const PLANTED = ['00384157', '508) 555-0187', '555-0187', 'colette.hollis@example.net', '031-44-9182', 'Renwick', '3/11/2087', 'Hollis', 'Marguerite', '214 Pellham', 'Framingham'];

/** The rubric block and metrics of a site rubric benchmark graded by `grader` (none: scoring is not under test). */
function scoring(grader?: string): object {
  return grader ? { metrics: { main: 'rubric_score' }, rubric: { graders: [grader] } } : { metrics: { main: 'exact_match' } };
}

function writeSiteBenchmark(dir: string, lines: object[], grader?: string): void {
  mkdirSync(dir, { recursive: true });
  const rubric = [{ criterion: 'Advises seeing a clinician.', points: 5, tags: ['axis:accuracy'] }];
  writeFileSync(join(dir, 'conversations.jsonl'), lines.map((l) => JSON.stringify({ ...l, rubrics: rubric, example_tags: ['theme:context_seeking'] })).join('\n') + '\n');
  writeFileSync(join(dir, 'prompt.txt'), '(Not used: each instance is a conversation.)\n');
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id: BENCHMARK,
      version: '1.0.0',
      displayName: 'Site conversations (synthetic)',
      category: 'Clinical Decision Support',
      subcategory: 'Providing Clinical Knowledge Support',
      tier: 'approval-required',
      dataset: { origin: 'shipped', files: [{ path: 'conversations.jsonl' }], format: 'jsonl', adapter: 'health_bench' },
      prompt: { templateFile: 'prompt.txt', maxTokens: 40 },
      references: 'none (scoring is not under test)',
      ...scoring(grader),
      split: 'test',
      lowerIsBetter: false,
    }),
  );
}

interface Options {
  /** Graded by rubric by this endpoint, classified as given (the model's endpoint is classified for EHR data). */
  grader?: { id: string; classification: object };
}

const RUBRIC_ITEM = /# Rubric item\n/;

async function setUp(lines: object[], opts: Options = {}): Promise<{ t: TestApp; audited: AuditEventInput[] }> {
  const t = await startTestApp({
    behaviour: (_n, prompt) => ({ kind: 'answer', text: RUBRIC_ITEM.test(prompt) ? '{"explanation": "ok", "criteria_met": true}' : 'Please see your clinician this week.' }),
  });
  const siteDir = join(t.home.home, 'site-benchmarks');
  writeSiteBenchmark(join(siteDir, BENCHMARK), lines, opts.grader?.id);
  const catalog = Catalog.load([siteDir]);
  t.app.engine.catalog = () => catalog;
  const file = t.app.config.policies.endpoints;
  const policy = JSON.parse(readFileSync(file, 'utf8')) as { endpoints: Record<string, unknown>[] };
  policy.endpoints.push({
    ...policy.endpoints[0],
    id: ENDPOINT,
    description: 'Loopback endpoint classified for EHR data',
    classification: { inVpc: true, baa: true, maxTier: 'private', development: false },
  });
  if (opts.grader) policy.endpoints.push({ ...policy.endpoints[0], id: opts.grader.id, model: opts.grader.id, description: 'Loopback grader', classification: opts.grader.classification });
  writeFileSync(file, JSON.stringify(policy, null, 2));
  await t.app.refreshPolicies();
  await t.app.approvals.create(
    { protocolNumber: 'IRB-CONV-1', principalInvestigator: researcher.principal, personnel: [researcher.principal], benchmarks: [BENCHMARK], purpose: 'conversation test' },
    'carol',
  );
  const audited: AuditEventInput[] = [];
  const record = t.app.engine.audit.record.bind(t.app.engine.audit);
  t.app.engine.audit = {
    seal: () => t.app.audit.seal(),
    record: async (e) => {
      audited.push(e);
      await record(e);
    },
    recordIn: (tx, e) => t.app.audit.recordIn(tx, e),
  };
  return { t, audited };
}

const bodyOf = (raw: string) => JSON.parse(raw) as { messages: Turn[] };

describe('multi-turn instances', () => {
  it('sends every turn, de-identified under one subject, and audits the request over all of its turns', async () => {
    const { t, audited } = await setUp(CONVERSATIONS);
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: ENDPOINT, requester: researcher });
      expect(run.deid_version).toBe(t.app.engine.deid.version);
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 2, blocked: 0, failed: 0 });

      const bodies = t.server.received.map((r) => bodyOf(r.body));
      expect(bodies.map((b) => b.messages.map((m) => m.role)).sort((a, b) => b.length - a.length)).toEqual([
        ['system', 'user', 'assistant', 'user'],
        ['user', 'assistant', 'user'],
      ]);
      for (const r of t.server.received) for (const id of PLANTED) expect({ id, found: r.body.includes(id) }).toEqual({ id, found: false });
      const c1 = bodies.find((b) => b.messages.length === 4) as { messages: Turn[] };
      // what identifies no one is left as it was, turn by turn
      expect(c1.messages[0]?.content).toBe(CONVERSATIONS[0]?.prompt[0]?.content);
      expect(c1.messages[2]?.content).toBe(CONVERSATIONS[0]?.prompt[2]?.content);
      expect(c1.messages[3]?.content).toContain('38.2 C');

      // One surrogate map: "Mrs. Hollis" of the first turn is the same surrogate in the last.
      const c2 = bodies.find((b) => b.messages.length === 3) as { messages: Turn[] };
      const first = /Mrs\. (?:[A-Z][a-z]+ )?([A-Z][a-z]+)\. My knee/.exec(c2.messages[0]?.content ?? '')?.[1];
      const last = /Mrs\. ([A-Z][a-z]+) has taken/.exec(c2.messages[2]?.content ?? '')?.[1];
      expect(first).toBeDefined();
      expect(last).toBe(first);

      // Each request was audited before it was sent, its hash and size over all of its turns as sent.
      const calls = audited.filter((e) => e.type === 'endpoint.call' && e.outcome === 'success');
      expect(calls).toHaveLength(2);
      const sentPayloads = bodies.map((b) => JSON.stringify(b.messages.map((m) => ({ role: m.role, content: m.content }))));
      const hashes = sentPayloads.map((p) => createHash('sha256').update(p).digest('hex'));
      expect(calls.map((e) => e.detail?.requestSha256).sort()).toEqual([...hashes].sort());
      expect(calls.map((e) => e.detail?.requestBytes).sort()).toEqual(sentPayloads.map((p) => Buffer.byteLength(p)).sort());

      // The run store keeps the conversation with the instance, as it keeps a prompt's variables.
      const stored = await t.app.db.query<{ payload: { messages: Turn[] } }>('SELECT payload FROM run_items WHERE run_id = $1 ORDER BY ordinal', [run.run_id]);
      expect(stored.map((s) => s.payload.messages.length).sort()).toEqual([3, 4]);
    } finally {
      await t.close();
    }
  });

  it('a conversation with an identifier left in its second user turn is blocked and never sent', async () => {
    const { t } = await setUp(CONVERSATIONS.slice(0, 1));
    try {
      // Detectors off: the SSN, phone and e-mail of the later turn stay for the residual scan to find.
      t.app.engine.deid = createDeidStage(settingsFrom(t.app.config.deid), { detectors: [] });
      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: ENDPOINT, requester: researcher });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 0, blocked: 1 });
      expect(t.server.requestCount()).toBe(0);
      const blocked = await t.app.db.query<{ outcome_rule: string }>("SELECT outcome_rule FROM run_items WHERE run_id = $1 AND state = 'blocked'", [run.run_id]);
      expect(blocked.map((b) => b.outcome_rule)).toEqual(['deid.residual-identifier']);
    } finally {
      await t.close();
    }
  });

  it("a site's own rubric benchmark of an EHR tier: every grader prompt is de-identified too, and each criterion graded once", async () => {
    const grader = { id: 'site-vpc-grader', classification: { inVpc: true, baa: true, maxTier: 'private', development: false } };
    const { t, audited } = await setUp(CONVERSATIONS, { grader });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: ENDPOINT, requester: researcher });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 2, blocked: 0, failed: 0 });
      expect(summary.mainScore).toBe(1);
      const graded = t.server.received.filter((r) => RUBRIC_ITEM.test(r.prompt));
      expect(graded).toHaveLength(2);
      // the grader read the de-identified conversation and the answer, never an identifier
      for (const r of t.server.received) for (const id of PLANTED) expect({ id, found: r.body.includes(id) }).toEqual({ id, found: false });
      expect(graded.some((r) => r.prompt.includes('user: I am 34 and my temperature was 38.2 C last night.'))).toBe(true);
      expect(graded.every((r) => r.prompt.includes('assistant: Please see your clinician this week.'))).toBe(true);
      const events = audited.filter((e) => e.type === 'endpoint.call' && e.detail?.metric === 'rubric');
      expect(events.map((e) => [e.outcome, e.subject?.endpointId])).toEqual([
        ['success', grader.id],
        ['success', grader.id],
      ]);
    } finally {
      await t.close();
    }
  });

  it('a grader endpoint the data may not reach is refused by rule before any grader call; the run halts', async () => {
    const grader = { id: 'public-only-grader', classification: { inVpc: true, baa: false, maxTier: 'public' } };
    const { t } = await setUp(CONVERSATIONS.slice(0, 1), { grader });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: ENDPOINT, requester: researcher });
      const summary = await executeRun(t.app.engine, run.run_id).catch(async () => t.app.engine.store.getRun(run.run_id));
      expect(summary?.status).toBe('halted');
      const row = await t.app.engine.store.getRun(run.run_id);
      expect(row?.error_code).toBe('jury.endpoint.tier-ceiling');
      expect(t.server.received.filter((r) => RUBRIC_ITEM.test(r.prompt))).toHaveLength(0);
    } finally {
      await t.close();
    }
  });
});
