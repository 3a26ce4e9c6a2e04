/**
 * Rating studies (src/ratings) on two completed ACI-Bench runs judged by a three-judge LLM jury on
 * the loopback stand-in: the seeded sample, blinded items in a per-rater order that survives a restart,
 * the raters-per-item cap, validation of ratings, a closed study, the agreement inputs with the jury's
 * scores, and audit events without text. On PGlite and, when TEST_DATABASE_URL is set, PostgreSQL.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { Catalog } from '../../src/catalog';
import { DEMO_MODEL_ID, type ModelServer, startModelServer } from '../../src/demo/model-server';
import type { Queryable } from '../../src/db';
import { RatingStudies, type RatingEventDetail, type Study, type StudyEventDetail } from '../../src/ratings';
import { raterOrder } from '../../src/ratings/order';
import { approveRun, executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp, type TestApp } from '../helpers/app';
import { backends, type Backend } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(180_000);

/** In every model answer: must never reach an audit event. */
const ANSWER_CANARY = 'ANSWER-CANARY-31';
const isJudgePrompt = (prompt: string) => prompt.includes('<gold_response>');

interface StudyApp {
  app: App;
  server: ModelServer;
  home: TestHome;
  runIds: string[];
}

/** An app whose jury has three judges, and two completed ACI-Bench runs of six instances each. */
async function startStudyApp(backend: Backend): Promise<StudyApp> {
  const home = await makeHome(backend);
  let answers = 0;
  let judged = 0;
  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    behaviour: (_n, prompt) => {
      if (!isJudgePrompt(prompt)) return { kind: 'answer', text: `ASSESSMENT AND PLAN ${ANSWER_CANARY} answer ${++answers}: knee pain, ibuprofen.` };
      const s = (judged++ % 5) + 1;
      return { kind: 'answer', text: `{"accuracy": {"score": ${s}, "explanation": "x"}, "completeness": {"score": ${6 - s}, "explanation": "x"}, "clarity": {"score": 3, "explanation": "x"}}` };
    },
  });
  const policyFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(policyFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
  const { family: _family, ...demo } = policy.endpoints[0] as Record<string, unknown>;
  for (const id of ['judge-gpt', 'judge-llama', 'judge-claude']) {
    policy.endpoints.push({ ...demo, id, description: `judge ${id}`, model: id, classification: { inVpc: true, baa: true, maxTier: 'private' } });
  }
  writeFileSync(policyFile, JSON.stringify(policy, null, 2));
  writeFileSync(join(home.home, 'site-data.json'), JSON.stringify({ benchmarks: {}, jury: { judges: ['judge-gpt', 'judge-llama', 'judge-claude'] } }));
  const app = await openApp({ file: home.configFile, env: home.env });
  const runIds: string[] = [];
  for (let i = 0; i < 2; i++) {
    const run = await requestRun(app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 6 });
    expect((await executeRun(app.engine, run.run_id)).status).toBe('completed');
    runIds.push(run.run_id);
  }
  return { app, server, home, runIds };
}

const studies = (app: App) => new RatingStudies(app.db, app.engine);

/**
 * Audit callbacks that keep what they were given (the integrator's record an audit event with it, in
 * the transaction they are handed).
 */
function recorders() {
  const seen: (StudyEventDetail | RatingEventDetail)[] = [];
  return {
    seen,
    study: async (_tx: Queryable, _study: Study, detail: StudyEventDetail) => {
      seen.push(detail);
    },
    rating: async (_tx: Queryable, detail: RatingEventDetail) => {
      seen.push(detail);
    },
  };
}

/** An audit trail that cannot record: the change must not happen either. */
const unrecordable = async () => {
  throw new Error('audit unavailable');
};

const SCORES = { accuracy: 4, completeness: 3, clarity: 5 };

/** Every item the rater is offered, rating each, until none is left. */
async function rateAll(s: RatingStudies, studyId: string, rater: string, record: (tx: Queryable, d: RatingEventDetail) => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  for (;;) {
    const next = await s.next(studyId, rater);
    if (!next.item) return seen;
    seen.push(next.item.itemId);
    await s.rate(studyId, next.item.itemId, rater, SCORES, record);
  }
}

/** The item ids of a study in the order `rater` is meant to meet them (positions from the store, order from the seed). */
async function expectedOrder(app: App, study: Study, rater: string): Promise<string[]> {
  const rows = await app.db.query<{ item_id: string; position: number }>('SELECT item_id::text AS item_id, position FROM rating_items WHERE study_id = $1::uuid', [study.studyId]);
  const byPosition = new Map(rows.map((r) => [r.position, r.item_id]));
  return raterOrder(rows.length, study.seed, rater).map((p) => byPosition.get(p) as string);
}

describe.each(backends())('rating studies on %s', (backend) => {
  let t: StudyApp;
  beforeAll(async () => {
    t = await startStudyApp(backend);
  });
  afterAll(async () => {
    await t.app.close();
    await t.server.close();
    await t.home.cleanup();
  });

  it('opens a study on two completed jury runs: a seeded sample of each, its criteria from the jury prompt, one audit event without text', async () => {
    const r = recorders();
    const study = await studies(t.app).open({ title: 'Knee notes (pilot)', runIds: t.runIds, instancesPerRun: 4, ratersPerItem: 2, seed: 31 }, 'alice', r.study);
    expect(study).toMatchObject({ benchmarkId: 'aci_bench', tier: 'public', approvalId: null, status: 'open', items: 8, seed: 31, ratersPerItem: 2, openedBy: 'alice' });
    expect(study.criteria.map((c) => [c.name, c.min, c.max])).toEqual([
      ['accuracy', 1, 5],
      ['completeness', 1, 5],
      ['clarity', 1, 5],
    ]);
    expect(study.criteria[0]?.description).toBe('Does the note provide correct clinical information based on the conversation?');
    const perRun = await t.app.db.query<{ run_id: string; n: number }>(
      'SELECT run_id::text AS run_id, count(*)::integer AS n FROM rating_items WHERE study_id = $1::uuid GROUP BY run_id ORDER BY run_id',
      [study.studyId],
    );
    expect(perRun.map((p) => p.n)).toEqual([4, 4]);
    // The same seed samples the same instances again; item ids are new and random, never derived from a run.
    const again = await studies(t.app).open({ title: 'Knee notes again', runIds: t.runIds, instancesPerRun: 4, ratersPerItem: 2, seed: 31 }, 'alice', r.study);
    const keys = async (id: string) =>
      (await t.app.db.query<{ k: string; item_id: string }>('SELECT run_id::text || item_key AS k, item_id::text AS item_id FROM rating_items WHERE study_id = $1::uuid ORDER BY position', [id])).map(
        (x) => x,
      );
    const [a, b] = [await keys(study.studyId), await keys(again.studyId)];
    expect(b.map((x) => x.k)).toEqual(a.map((x) => x.k));
    expect(b.map((x) => x.item_id)).not.toEqual(expect.arrayContaining([a[0]?.item_id]));
    expect(r.seen).toEqual([{ studyId: study.studyId, benchmarkId: 'aci_bench', tier: 'public', approvalId: null, runs: 2, items: 8 }, expect.objectContaining({ studyId: again.studyId })]);
    // No audit event, no study: the event commits with the study or neither does.
    const before = (await studies(t.app).list()).length;
    await expect(studies(t.app).open({ title: 'Unrecorded', runIds: t.runIds, instancesPerRun: 1, ratersPerItem: 1 }, 'alice', unrecordable)).rejects.toThrow('audit unavailable');
    expect((await studies(t.app).list()).length).toBe(before);
  });

  it('refuses runs that cannot form a study, naming the run', async () => {
    const s = studies(t.app);
    const r = recorders();
    const pending = await requestRun(t.app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 1 });
    await expect(s.open({ title: 'x', runIds: [t.runIds[0] as string, pending.run_id], instancesPerRun: 2, ratersPerItem: 1 }, 'alice', r.study)).rejects.toMatchObject({
      code: 'rating.runs-unsuitable',
      message: expect.stringMatching(new RegExp(`run ${pending.run_id} is ${pending.status}, not completed`)),
    });
    const missing = '00000000-0000-4000-8000-000000000000';
    await expect(s.open({ title: 'x', runIds: [missing], instancesPerRun: 2, ratersPerItem: 1 }, 'alice', r.study)).rejects.toMatchObject({ code: 'rating.runs-unsuitable' });
    await expect(s.open({ title: 'x', runIds: t.runIds, instancesPerRun: 2, ratersPerItem: 1, benchmarkId: 'med_dialog' }, 'alice', r.study)).rejects.toMatchObject({
      code: 'rating.runs-unsuitable',
      message: expect.stringContaining('not med_dialog'),
    });
    await expect(s.open({ title: 'line\nbreak', runIds: t.runIds, instancesPerRun: 2, ratersPerItem: 1 }, 'alice', r.study)).rejects.toMatchObject({
      code: 'rating.invalid',
      message: expect.stringContaining('/title'),
    });
    expect(r.seen).toEqual([]);
  });

  it('shows each rater the items blinded, in an order of their own that continues after a restart', async () => {
    const r = recorders();
    const study = await studies(t.app).open({ title: 'Order', runIds: t.runIds, instancesPerRun: 3, ratersPerItem: 2, seed: 5 }, 'alice', r.study);
    const s = studies(t.app);
    const first = await s.next(study.studyId, 'dana');
    if (!first.item) throw new Error('an item was expected');
    // Blinded: the item id, the prompt, the answer, the criteria and progress; nothing of the run.
    expect(Object.keys(first.item).sort()).toEqual(['answer', 'criteria', 'itemId', 'progress', 'prompt', 'studyId']);
    const shown = JSON.stringify(first);
    for (const hidden of [...t.runIds, DEMO_MODEL_ID, DEMO_ENDPOINT_ID, '1.1.0', 'aci_bench']) expect(shown).not.toContain(hidden);
    expect(first.item.prompt).toContain('[doctor]');
    expect(first.item.answer).toContain(ANSWER_CANARY);
    expect(first.item.progress).toEqual({ done: 0, remaining: 6, total: 6 });
    // Asked again without answering: the same item.
    expect((await s.next(study.studyId, 'dana')).item?.itemId).toBe(first.item.itemId);

    const danaOrder = await expectedOrder(t.app, study, 'dana');
    const erinOrder = await expectedOrder(t.app, study, 'erin');
    expect(erinOrder).not.toEqual(danaOrder);
    const met: string[] = [];
    for (let i = 0; i < 3; i++) {
      const next = await s.next(study.studyId, 'dana');
      met.push(next.item?.itemId as string);
      await s.rate(study.studyId, next.item?.itemId as string, 'dana', SCORES, r.rating);
    }
    // A new session (a new service over the same store) continues where dana stopped.
    const later = studies(t.app);
    const rest = await rateAll(later, study.studyId, 'dana', r.rating);
    expect([...met, ...rest]).toEqual(danaOrder);
    expect(await later.next(study.studyId, 'dana')).toEqual({ item: null, progress: { done: 6, remaining: 0, total: 6 } });
    expect(await rateAll(later, study.studyId, 'erin', r.rating)).toEqual(erinOrder);
  });

  it('offers no item that ratersPerItem other clinicians rated, and refuses a rating beyond the cap', async () => {
    const r = recorders();
    const s = studies(t.app);
    const study = await s.open({ title: 'Cap', runIds: t.runIds, instancesPerRun: 2, ratersPerItem: 1, seed: 9 }, 'alice', r.study);
    const danas = await rateAll(s, study.studyId, 'dana', r.rating);
    expect(danas).toHaveLength(4);
    expect(await s.next(study.studyId, 'erin')).toEqual({ item: null, progress: { done: 0, remaining: 0, total: 0 } });
    await expect(s.rate(study.studyId, danas[0] as string, 'erin', SCORES, r.rating)).rejects.toMatchObject({ code: 'rating.item-covered' });
    // Dana may change her own rating while the study is open; it is recorded as a change.
    const changed = await s.rate(study.studyId, danas[0] as string, 'dana', { ...SCORES, clarity: 2 }, r.rating);
    expect(changed).toMatchObject({ state: 'rated', changed: true, criteria: ['accuracy', 'clarity', 'completeness'] });
    // A skip or a flag does not count towards the cap.
    const skipStudy = await s.open({ title: 'Cap skip', runIds: t.runIds, instancesPerRun: 1, ratersPerItem: 1, seed: 9 }, 'alice', r.study);
    const offered = (await s.next(skipStudy.studyId, 'dana')).item?.itemId as string;
    await s.skip(skipStudy.studyId, offered, 'dana', r.rating);
    const second = (await s.next(skipStudy.studyId, 'dana')).item?.itemId as string;
    await s.flag(skipStudy.studyId, second, 'dana', 'unreadable', r.rating);
    expect(await s.next(skipStudy.studyId, 'dana')).toEqual({ item: null, progress: { done: 2, remaining: 0, total: 2 } });
    const erin = await s.next(skipStudy.studyId, 'erin');
    expect(erin.item?.progress).toEqual({ done: 0, remaining: 2, total: 2 });
    const progress = await s.progress(skipStudy.studyId);
    expect(progress).toMatchObject({ items: 2, itemsCovered: 0, raters: [{ rater: 'dana', rated: 0, skipped: 1, flagged: 1 }] });
  });

  it('refuses a rating that misses a criterion, names an unknown one, or leaves the scale, without echoing the input', async () => {
    const r = recorders();
    const s = studies(t.app);
    const study = await s.open({ title: 'Validation', runIds: t.runIds, instancesPerRun: 1, ratersPerItem: 2, seed: 1 }, 'alice', r.study);
    const itemId = (await s.next(study.studyId, 'dana')).item?.itemId as string;
    const rate = (scores: Record<string, number>) => s.rate(study.studyId, itemId, 'dana', scores, r.rating);
    await expect(rate({ accuracy: 4, completeness: 3 })).rejects.toMatchObject({
      code: 'rating.invalid',
      message: 'rating: /scores/clarity is missing; score every criterion (accuracy, completeness, clarity)',
    });
    await expect(rate({ ...SCORES, empathy: 3 })).rejects.toMatchObject({ code: 'rating.invalid', message: expect.stringContaining('unknown criterion "empathy"') });
    await expect(rate({ ...SCORES, clarity: 6 })).rejects.toMatchObject({ code: 'rating.invalid', message: 'rating: /scores/clarity must be a whole number from 1 to 5' });
    await expect(rate({ ...SCORES, clarity: 2.5 })).rejects.toMatchObject({ code: 'rating.invalid', message: expect.stringContaining('/scores/clarity') });
    const err = (await rate({ ...SCORES, 'Patient John Smith': 3 }).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('rating.invalid');
    expect(err.message).not.toContain('John');
    await expect(s.flag(study.studyId, itemId, 'dana', 'saw John' as never, r.rating)).rejects.toMatchObject({
      code: 'rating.invalid',
      message: 'flag: the reason must be one of phi-visible, unreadable, off-topic, not-qualified, other',
    });
    await expect(s.rate(study.studyId, '00000000-0000-4000-8000-000000000000', 'dana', SCORES, r.rating)).rejects.toMatchObject({ code: 'rating.item-not-found' });
    await expect(s.rate(study.studyId, 'not-an-id', 'dana', SCORES, r.rating)).rejects.toMatchObject({ code: 'rating.item-not-found', message: expect.not.stringContaining('not-an-id') });
    await expect(s.next('00000000-0000-4000-8000-000000000000', 'dana')).rejects.toMatchObject({ code: 'rating.study-not-found' });
    await expect(s.rate(study.studyId, itemId, 'dana', SCORES, unrecordable)).rejects.toThrow('audit unavailable');
    // Nothing was written and nothing recorded by the refusals.
    expect(r.seen).toHaveLength(1);
    expect(await t.app.db.query('SELECT 1 FROM ratings WHERE study_id = $1::uuid', [study.studyId])).toEqual([]);
  });

  it('refuses ratings, changes and offers once a study is closed', async () => {
    const r = recorders();
    const s = studies(t.app);
    const study = await s.open({ title: 'Closing', runIds: t.runIds, instancesPerRun: 1, ratersPerItem: 2, seed: 2 }, 'alice', r.study);
    const itemId = (await s.next(study.studyId, 'dana')).item?.itemId as string;
    await s.rate(study.studyId, itemId, 'dana', SCORES, r.rating);
    const closed = await s.close(study.studyId, 'alice', r.study);
    expect(closed).toMatchObject({ status: 'closed', closedBy: 'alice' });
    await expect(s.rate(study.studyId, itemId, 'dana', { ...SCORES, clarity: 1 }, r.rating)).rejects.toMatchObject({ code: 'rating.study-closed' });
    await expect(s.skip(study.studyId, itemId, 'erin', r.rating)).rejects.toMatchObject({ code: 'rating.study-closed' });
    await expect(s.next(study.studyId, 'erin')).rejects.toMatchObject({ code: 'rating.study-closed' });
    await expect(s.close(study.studyId, 'alice', r.study)).rejects.toMatchObject({ code: 'rating.study-closed' });
    expect((await s.list()).find((x) => x.studyId === study.studyId)?.status).toBe('closed');
    const kept = await t.app.db.query<{ scores: Record<string, number> }>('SELECT scores FROM ratings WHERE study_id = $1::uuid', [study.studyId]);
    expect(kept).toEqual([{ scores: SCORES }]);
  });

  it("joins every rating with its run, the jury's composite and per-judge scores and ROUGE-L, in the agreement statistics' shapes", async () => {
    const r = recorders();
    const s = studies(t.app);
    const study = await s.open({ title: 'Agreement', runIds: t.runIds, instancesPerRun: 2, ratersPerItem: 2, seed: 3 }, 'alice', r.study);
    await rateAll(s, study.studyId, 'dana', r.rating);
    const erinFirst = (await s.next(study.studyId, 'erin')).item?.itemId as string;
    await s.rate(study.studyId, erinFirst, 'erin', { accuracy: 2, completeness: 2, clarity: 3 }, r.rating);
    const erinSecond = (await s.next(study.studyId, 'erin')).item?.itemId as string;
    await s.flag(study.studyId, erinSecond, 'erin', 'phi-visible', r.rating);

    const out = await s.ratingsFor(study.studyId);
    expect(out.criteria).toEqual(['accuracy', 'completeness', 'clarity']);
    expect(out.rows).toHaveLength(6);
    // Flagged and skipped ratings are rows, but not clinicians' scores.
    expect(out.clinicians).toHaveLength(5);
    expect(out.clinicians).toContainEqual({ rater: 'erin', dataset: 'aci_bench', item: erinFirst, scores: { accuracy: 2, completeness: 2, clarity: 3 } });
    const stored = await t.app.db.query<{ item_id: string; run_id: string; scores: Record<string, number | null> }>(
      `SELECT ri.item_id::text AS item_id, ri.run_id::text AS run_id, i.scores FROM rating_items ri JOIN run_items i ON i.run_id = ri.run_id AND i.item_key = ri.item_key WHERE ri.study_id = $1::uuid`,
      [study.studyId],
    );
    expect(out.jury).toHaveLength(4);
    for (const item of stored) {
      const jury = item.scores.jury_score as number;
      expect(out.jury).toContainEqual({ dataset: 'aci_bench', item: item.item_id, scores: { accuracy: jury, completeness: jury, clarity: jury } });
      const judge1 = item.scores.jury_judge_1 as number;
      expect(out.judges).toContainEqual({ judge: 'judge-gpt', dataset: 'aci_bench', item: item.item_id, scores: { accuracy: judge1, completeness: judge1, clarity: judge1 } });
      const rouge = out.rouge.find((x) => x.item === item.item_id);
      expect(rouge?.dataset).toBe('aci_bench');
      expect(rouge?.value).toBeCloseTo(item.scores.rouge_l as number, 12);
      const row = out.rows.find((x) => x.itemId === item.item_id);
      expect(row).toMatchObject({ runId: item.run_id, endpointId: DEMO_ENDPOINT_ID, jury: { composite: jury } });
    }
    expect(new Set(out.judges.map((j) => j.judge))).toEqual(new Set(['judge-gpt', 'judge-llama', 'judge-claude']));
    expect(out.rows.find((x) => x.rater === 'erin' && x.itemId === erinSecond)).toMatchObject({ state: 'flagged', flagReason: 'phi-visible', scores: null });

    // The audit callbacks had ids, states and criterion names: no answer, prompt or instance key.
    const recorded = JSON.stringify(r.seen);
    expect(recorded).not.toContain(ANSWER_CANARY);
    expect(recorded).not.toContain('[doctor]');
    const keys = await t.app.db.query<{ item_key: string }>('SELECT item_key FROM rating_items WHERE study_id = $1::uuid', [study.studyId]);
    for (const k of keys) expect(recorded).not.toContain(k.item_key);
  });
});

/** Synthetic notes (every value invented): the names and numbers a clinician must never read. */
const NOTES = [
  { id: 'n1', patient: 'p-1', name: 'Marguerite Hollis', mrn: '00384157', note: 'Mrs. Hollis (MRN 00384157) was admitted with CHF; diuresed, discharged home on furosemide.' },
  { id: 'n2', patient: 'p-2', name: 'Kwame Okonkwo', mrn: 'K4471902', note: 'Mr. Okonkwo (MRN K4471902) was treated for urosepsis with ceftriaxone and improved.' },
  { id: 'n3', patient: 'p-3', name: 'Imelda Sayre', mrn: 'S1182733', note: 'Ms. Sayre (MRN S1182733) had a hip fracture repaired; rehabilitation was arranged.' },
];
const PLANTED = ['Hollis', '00384157', 'Okonkwo', 'K4471902', 'Sayre', 'S1182733'];
const JUDGES = ['judge-a', 'judge-b'];

/** A private site benchmark judged by an LLM jury, over the notes above (the test's own catalog). */
function writePrivateJuryBenchmark(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const quote = (v: string) => `"${v.replace(/"/g, '""')}"`;
  const cols = ['id', 'patient', 'name', 'mrn', 'note'] as const;
  writeFileSync(
    join(dir, 'notes.csv'),
    [['id', 'patient', 'name', 'mrn', 'note', 'summary'].join(','), ...NOTES.map((n) => [...cols.map((c) => quote(n[c])), quote('A short hospital course.')].join(','))].join('\n') + '\n',
  );
  writeFileSync(join(dir, 'prompt.txt'), 'Write the brief hospital course of this note.\n\nNote:\n{{note}}\n\nCourse:');
  writeFileSync(join(dir, 'jury.txt'), readFileSync(join(__dirname, '..', '..', 'benchmarks', 'aci_bench', 'jury.txt'), 'utf8'));
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id: 'site_course_jury',
      version: '1.0.0',
      displayName: 'Site hospital courses (synthetic)',
      category: 'Clinical Note Generation',
      subcategory: 'Documenting Patient Visits',
      tier: 'private',
      dataset: {
        origin: 'shipped',
        files: [{ path: 'notes.csv' }],
        format: 'csv',
        adapter: 'columns',
        columns: { id: 'id', vars: { note: 'note' }, reference: 'summary', subject: 'patient', known: { names: ['name'], mrns: ['mrn'] } },
      },
      prompt: { templateFile: 'prompt.txt', maxTokens: 50 },
      references: 'summary: a reference course',
      metrics: { main: 'jury_score', secondary: ['jury_score_normalized'] },
      jury: { promptFile: 'jury.txt', criteria: ['accuracy', 'completeness', 'clarity'], judges: JUDGES },
      split: 'test',
      lowerIsBetter: false,
    }),
  );
}

describe.each(backends())('a rating study of a private run on %s', (backend) => {
  let t: TestApp;
  let runId: string;
  let approvalId: string;
  beforeAll(async () => {
    t = await startTestApp({
      backend,
      behaviour: (_n, prompt) =>
        isJudgePrompt(prompt)
          ? { kind: 'answer', text: '{"accuracy": {"score": 4, "explanation": "x"}, "completeness": {"score": 3, "explanation": "x"}, "clarity": {"score": 5, "explanation": "x"}}' }
          : { kind: 'answer', text: `${ANSWER_CANARY}: admitted, treated, discharged.` },
    });
    const siteDir = join(t.home.home, 'site-benchmarks');
    writePrivateJuryBenchmark(join(siteDir, 'site_course_jury'));
    const catalog = Catalog.load([siteDir]);
    t.app.engine.catalog = () => catalog;
    const file = t.app.config.policies.endpoints;
    const policy = JSON.parse(readFileSync(file, 'utf8')) as { endpoints: Record<string, unknown>[] };
    const { family: _family, ...demo } = policy.endpoints[0] as Record<string, unknown>;
    const classification = { inVpc: true, baa: true, maxTier: 'private', development: false };
    for (const id of ['site-private-loopback', ...JUDGES]) policy.endpoints.push({ ...demo, id, description: `private ${id}`, model: id, classification });
    writeFileSync(file, JSON.stringify(policy, null, 2));
    await t.app.refreshPolicies();
    const approval = await t.app.approvals.create(
      { protocolNumber: 'IRB-RATE-1', principalInvestigator: researcher.principal, personnel: [researcher.principal], benchmarks: ['site_course_jury'], purpose: 'rating study test' },
      'carol',
    );
    approvalId = approval.approvalId;
    const run = await requestRun(t.app.engine, { benchmarkId: 'site_course_jury', endpointId: 'site-private-loopback', requester: researcher, approvalId });
    await approveRun(t.app.engine, run.run_id, { principal: 'carol', role: 'compliance', authMethod: 'mtls' });
    expect((await executeRun(t.app.engine, run.run_id)).status).toBe('completed');
    runId = run.run_id;
  });
  afterAll(async () => {
    await t.close();
  });

  it('shows the clinician the de-identified prompt the model received, never the stored original', async () => {
    const r = recorders();
    const s = studies(t.app);
    const study = await s.open({ title: 'Private courses', runIds: [runId], instancesPerRun: 3, ratersPerItem: 1, seed: 4 }, 'alice', r.study);
    expect(study).toMatchObject({ tier: 'private', approvalId, benchmarkId: 'site_course_jury', items: 3 });
    const sentToModel = t.server.received.map((x) => x.prompt).filter((p) => !isJudgePrompt(p));
    expect(sentToModel).toHaveLength(3);
    const shown: string[] = [];
    for (;;) {
      const next = await s.next(study.studyId, 'dana');
      if (!next.item) break;
      shown.push(next.item.prompt);
      for (const id of PLANTED) expect(next.item.prompt).not.toContain(id);
      expect(next.item.answer).toContain(ANSWER_CANARY);
      await s.skip(study.studyId, next.item.itemId, 'dana', r.rating);
    }
    // Byte for byte what the model server received: rebuilt and de-identified again as the run did.
    expect(shown.sort()).toEqual([...sentToModel].sort());
    // The store still holds the originals: what is shown is not read from them.
    const stored = await t.app.db.query<{ note: string }>("SELECT payload->'vars'->>'note' AS note FROM run_items WHERE run_id = $1::uuid", [runId]);
    expect(stored.map((x) => x.note).join(' ')).toContain('Hollis');
  });

  it('refuses to show an item once its prompt can no longer be rebuilt as sent, naming only the item', async () => {
    const r = recorders();
    const s = studies(t.app);
    const study = await s.open({ title: 'Template change', runIds: [runId], instancesPerRun: 1, ratersPerItem: 1, seed: 8 }, 'alice', r.study);
    const inForce = t.app.engine.catalog;
    const changedDir = join(t.home.home, 'changed-benchmarks');
    cpSync(join(t.home.home, 'site-benchmarks'), changedDir, { recursive: true });
    writeFileSync(join(changedDir, 'site_course_jury', 'prompt.txt'), 'Summarise this note.\n\n{{note}}');
    const changed = Catalog.load([changedDir]);
    t.app.engine.catalog = () => changed;
    try {
      const err = (await s.next(study.studyId, 'dana').catch((e: unknown) => e)) as Error & { code: string };
      expect(err.code).toBe('rating.prompt-unavailable');
      const itemId = (await t.app.db.query<{ item_id: string }>('SELECT item_id::text AS item_id FROM rating_items WHERE study_id = $1::uuid', [study.studyId]))[0]?.item_id as string;
      expect(err.message).toContain(itemId);
      for (const hidden of [runId, 'site-private-loopback']) expect(err.message).not.toContain(hidden);
      // The rater can still move on.
      await s.skip(study.studyId, itemId, 'dana', r.rating);
      expect((await s.next(study.studyId, 'dana')).item).toBeNull();
      // And no new study is opened on a run whose prompts cannot be shown as sent.
      await expect(s.open({ title: 'After the change', runIds: [runId], instancesPerRun: 1, ratersPerItem: 1 }, 'alice', r.study)).rejects.toMatchObject({ code: 'rating.runs-unsuitable' });
    } finally {
      t.app.engine.catalog = inForce;
    }
  });
});
