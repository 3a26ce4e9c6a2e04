/**
 * HealthBench's rubric grading end to end: a site benchmark of ten synthetic conversations in
 * HealthBench's layout (tests/fixtures/health-bench; never HealthBench data) runs through the real
 * engine; the model and the grader are endpoints of the loopback HTTPS server, the grader answering
 * each criterion by a marker in its text (met, not met, malformed once, fenced, always malformed).
 * The run's overall, theme and axis scores must be those of OpenAI's reference formula
 * (simple-evals healthbench_eval.py), computed again here from the fixture alone.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEventInput } from '../../src/audit';
import { Catalog } from '../../src/catalog';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp, type TestApp } from '../helpers/app';
import { Operations } from '../../src/operations';
import { type Backend, backends } from '../helpers/db';

jest.setTimeout(180_000);

const FIXTURE = join(__dirname, '..', 'fixtures', 'health-bench', 'synthetic.jsonl');
const BENCHMARK = 'site_health_bench';
const GRADER = 'grader-loopback';
const CANARY = 'GRADER-EXPLANATION-CANARY-51c2';

interface Criterion {
  criterion: string;
  points: number;
  tags: string[];
}
interface Example {
  prompt_id: string;
  rubrics: Criterion[];
  example_tags: string[];
}

const examples = readFileSync(FIXTURE, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Example);

const marker = (text: string) => /\{g:([01rfx])\}/.exec(text)?.[1] as string;

// --- The reference formula, written out again from healthbench_eval.py --------------------------

/** calculate_score: points of the criteria met over the positive points; None without positive points. */
function calculateScore(items: Criterion[], met: boolean[]): number | null {
  const possible = items.filter((i) => i.points > 0).reduce((a, i) => a + i.points, 0);
  if (possible === 0) return null;
  return items.reduce((a, i, k) => a + (met[k] ? i.points : 0), 0) / possible;
}

/** _aggregate_get_clipped_mean over the examples that were scored: name -> clipped mean of its values. */
function referenceMetrics(scored: Example[]): Map<string, { mean: number; n: number; values: number[] }> {
  const values = new Map<string, number[]>();
  const add = (name: string, v: number) => (values.get(name) ?? values.set(name, []).get(name))?.push(v);
  for (const ex of scored) {
    const met = ex.rubrics.map((r) => marker(r.criterion) !== '0');
    const overall = calculateScore(ex.rubrics, met) as number;
    add('score', overall);
    for (const tag of ex.example_tags) add(tag, overall);
    const byTag = new Map<string, [Criterion, boolean][]>();
    ex.rubrics.forEach((r, k) => r.tags.forEach((t) => (byTag.get(t) ?? byTag.set(t, []).get(t))?.push([r, met[k] as boolean])));
    for (const [tag, pairs] of byTag) {
      const s = calculateScore(
        pairs.map((p) => p[0]),
        pairs.map((p) => p[1]),
      );
      if (s !== null) add(tag, s);
    }
  }
  const out = new Map<string, { mean: number; n: number; values: number[] }>();
  for (const [name, v] of values) out.set(name, { mean: Math.min(1, Math.max(0, v.reduce((a, x) => a + x, 0) / v.length)), n: v.length, values: v });
  return out;
}

// --- The loopback grader ---------------------------------------------------------------------------

function graderAnswer(criterion: string, calls: Map<string, number>): string {
  const n = (calls.get(criterion) ?? 0) + 1;
  calls.set(criterion, n);
  const grade = (met: boolean) => JSON.stringify({ explanation: `${CANARY} looked at the last turn`, criteria_met: met });
  switch (marker(criterion)) {
    case '1':
      return grade(true);
    case '0':
      return grade(false);
    case 'r':
      return n === 1 ? `The response meets it. ${CANARY}` : grade(true);
    case 'f':
      return '```json\n' + grade(true) + '\n```';
    default:
      return `{"explanation": "${CANARY}", "criteria_met": "maybe"}`;
  }
}

const RUBRIC_ITEM = /# Rubric item\n\[(-?[0-9.]+)\] ([^\n]*)\n\n# Instructions/;

async function setUp(backend: Backend, opts: { graderConcurrency?: number; latencyMs?: number } = {}): Promise<{ t: TestApp; audited: AuditEventInput[]; graderCalls: Map<string, number> }> {
  const graderCalls = new Map<string, number>();
  const t = await startTestApp({
    backend,
    ...(opts.latencyMs ? { latencyMs: opts.latencyMs } : {}),
    behaviour: (_n, prompt) => {
      const item = RUBRIC_ITEM.exec(prompt);
      return item ? { kind: 'answer', text: graderAnswer(item[2] as string, graderCalls) } : { kind: 'answer', text: 'Please see a clinician if it gets worse.' };
    },
  });
  const dir = join(t.home.home, 'site-benchmarks', BENCHMARK);
  mkdirSync(dir, { recursive: true });
  copyFileSync(FIXTURE, join(dir, 'synthetic.jsonl'));
  writeFileSync(join(dir, 'prompt.txt'), '(Not used: each instance is a conversation.)\n');
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id: BENCHMARK,
      version: '1.0.0',
      displayName: 'Site HealthBench (synthetic)',
      category: 'Clinical Decision Support',
      subcategory: 'Providing Clinical Knowledge Support',
      tier: 'public',
      dataset: { origin: 'shipped', files: [{ path: 'synthetic.jsonl' }], format: 'jsonl', adapter: 'health_bench' },
      prompt: { templateFile: 'prompt.txt', maxTokens: 64 },
      references: 'none: graded against each rubric',
      metrics: { main: 'rubric_score', secondary: ['rubric_criteria_graded', 'rubric_grades_failed'] },
      rubric: { graders: [GRADER], maxGradeAttempts: 3, concurrency: opts.graderConcurrency ?? 3 },
      split: 'test',
      lowerIsBetter: false,
    }),
  );
  const catalog = Catalog.load([join(t.home.home, 'site-benchmarks')]);
  t.app.engine.catalog = () => catalog;
  // and the app's, which the instances view reads
  t.app.catalog = () => catalog;
  const file = t.app.config.policies.endpoints;
  const policy = JSON.parse(readFileSync(file, 'utf8')) as { endpoints: Record<string, unknown>[] };
  policy.endpoints.push({ ...policy.endpoints[0], id: GRADER, model: GRADER, description: 'Loopback grader' });
  writeFileSync(file, JSON.stringify(policy, null, 2));
  await t.app.refreshPolicies();
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
  return { t, audited, graderCalls };
}

// The run's figures are computed by the store (clipped mean, bootstrap std): on both backends.
describe.each(backends())('HealthBench rubric grading (%s)', (backend) => {
  it('scores the run as the reference formula does: overall, theme and axis clipped means; a malformed grade leaves its instance unscored', async () => {
    const { t, audited, graderCalls } = await setUp(backend);
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: DEMO_ENDPOINT_ID, requester: researcher });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts).toMatchObject({ done: 10, failed: 0, blocked: 0 });

      const failing = examples.filter((e) => e.rubrics.some((r) => marker(r.criterion) === 'x'));
      expect(failing.map((e) => e.prompt_id)).toEqual(['hb-07']);
      const expected = referenceMetrics(examples.filter((e) => !failing.includes(e)));
      const agg = new Map(summary.aggregates.map((a) => [a.metric, a]));
      const got = (name: string) => agg.get(name);

      // overall: the main score
      expect(summary.mainMetric).toBe('rubric_score');
      expect(summary.mainScore).toBeCloseTo(expected.get('score')?.mean as number, 12);
      expect(got('rubric_score')?.n).toBe(9);
      // every theme and axis of the fixture, as the reference names them (theme:x -> rubric_theme_x)
      const named = [...expected.keys()].filter((k) => k.startsWith('theme:') || k.startsWith('axis:'));
      expect(named.length).toBe(12);
      for (const name of named) {
        const metric = `rubric_${name.replace(':', '_')}`;
        expect({ metric, value: got(metric)?.value, n: got(metric)?.n }).toEqual({ metric, value: expect.closeTo(expected.get(name)?.mean as number, 12), n: expected.get(name)?.n });
      }
      // the clipping is the mean's, not each instance's: emergency referrals average below zero
      const emergency = expected.get('theme:emergency_referrals')?.values as number[];
      expect(emergency.reduce((a, x) => a + x, 0) / emergency.length).toBeLessThan(0);
      expect(got('rubric_theme_emergency_referrals')?.value).toBe(0);

      // bootstrap std beside each clipped mean: near the standard error of the mean (seeded, so fixed)
      const scores = expected.get('score')?.values as number[];
      const mean = scores.reduce((a, x) => a + x, 0) / scores.length;
      const stderr = Math.sqrt(scores.reduce((a, x) => a + (x - mean) ** 2, 0) / scores.length / scores.length);
      const std = got('rubric_score_bootstrap_std')?.value as number;
      expect(std).toBeGreaterThan(stderr * 0.75);
      expect(std).toBeLessThan(stderr * 1.25);
      // and no proportion's interval for them (runs show gives one to [0, 1] metrics): a theme whose
      // every score lies in [0, 1] is still a mean of scores, not of 0/1 outcomes
      expect(expected.get('theme:health_data_tasks')?.values).toEqual([1]);
      const unit = await t.app.engine.store.unitMetrics(run.run_id);
      expect([...unit].filter((m) => m.startsWith('rubric_') && m !== 'rubric_criteria_graded' && m !== 'rubric_grades_failed')).toEqual([]);

      // per instance: the failed grade is counted, and the instance has no score rather than a low one
      const rows = await t.app.db.query<{ item_key: string; scores: Record<string, number | null> }>('SELECT item_key, scores FROM run_items WHERE run_id = $1', [run.run_id]);
      const hb07 = rows.find((r) => r.item_key === 'hb-07')?.scores;
      expect(hb07).toMatchObject({ rubric_score: null, rubric_grades_failed: 1, rubric_criteria_graded: 1 });
      expect(rows.find((r) => r.item_key === 'hb-04')?.scores.rubric_score).toBeCloseTo(-1.1, 12);

      // one grader call per criterion, plus the retries: "r" once more, "x" three times in all
      const criteria = examples.flatMap((e) => e.rubrics.map((r) => r.criterion));
      for (const c of criteria) expect({ c, calls: graderCalls.get(c) }).toEqual({ c, calls: { r: 2, x: 3 }[marker(c)] ?? 1 });
      const graderEvents = audited.filter((e) => e.type === 'endpoint.call' && e.detail?.metric === 'rubric');
      expect(graderEvents).toHaveLength(criteria.length + 2 + 2);
      expect(new Set(graderEvents.map((e) => e.subject?.endpointId))).toEqual(new Set([GRADER]));
      // and each grader call is charged to the run, as a judge's is
      const spend = await t.app.db.query<{ n: number }>('SELECT count(*)::integer AS n FROM judge_spend WHERE run_id = $1 AND endpoint_id = $2', [run.run_id, GRADER]);
      expect(spend[0]?.n).toBe(graderEvents.length);

      // the grader saw the conversation and the response as the reference writes them
      const graded = t.server.received.filter((r) => RUBRIC_ITEM.test(r.prompt)).map((r) => r.prompt);
      expect(
        graded.some((p) =>
          p.includes(
            'user: Do I need any vaccines before a trip to the tropics?\n\nassistant: Where exactly are you going, and for how long?\n\nuser: Three weeks in the lowlands, mostly rural.\n\nassistant: Please see a clinician if it gets worse.',
          ),
        ),
      ).toBe(true);
      expect(graded.some((p) => p.includes('# Rubric item\n[-8] Claims vaccines are never needed {g:0} hb-02\n\n# Instructions'))).toBe(true);

      // the instances view of this public run shows each conversation turn by turn, as it was sent
      const caller = { principal: { id: researcher.principal, roles: ['researcher' as const], status: 'active' as const }, authMethod: 'mtls' as const };
      const page = await new Operations(t.app).listInstances(caller, run.run_id, { limit: 20 });
      expect(page.prompts).toBe('rebuilt');
      const shown = page.instances.find((i) => i.key === 'hb-02')?.prompt;
      expect(shown).toContain(
        'user: Do I need any vaccines before a trip to the tropics?\n\nassistant: Where exactly are you going, and for how long?\n\nuser: Three weeks in the lowlands, mostly rural.',
      );
      expect(shown).not.toContain('Not used');

      // no explanation kept: not in the store, the audit trail or the log
      const dump = await t.app.db.query<{ t: string }>('SELECT row_to_json(i)::text AS t FROM run_items i WHERE run_id = $1', [run.run_id]);
      expect(dump.map((d) => d.t).join('')).not.toContain(CANARY);
      expect(JSON.stringify(audited)).not.toContain(CANARY);
      await t.app.logger.close();
      expect(readFileSync(t.app.config.logging.file, 'utf8')).not.toContain(CANARY);
    } finally {
      await t.close();
    }
  });

  it('asks the grader at most rubric.concurrency criteria of an instance at once', async () => {
    // One instance of three criteria, answers slowed so that unbounded calls would overlap.
    const { t } = await setUp(backend, { graderConcurrency: 1, latencyMs: 100 });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 1, sample: 'first' });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 1 });
      expect(t.server.received.filter((r) => RUBRIC_ITEM.test(r.prompt))).toHaveLength(3);
      expect(t.server.peakInFlight()[GRADER]).toBe(1);
    } finally {
      await t.close();
    }
  });
});
