/**
 * Rating studies as people use them (src/operations/studies.ts), on two completed ACI-Bench runs judged
 * by a three-judge jury on the loopback stand-in: the researcher opens a study on her runs, two
 * clinicians rate it blinded, the policy gate refuses who may not, the agreement is computed from the
 * store (aggregates only, no rater named), every act is audited without text, and an export of the
 * benchmark states the jury's validation by the closed study. PGlite and, with TEST_DATABASE_URL, PostgreSQL.
 */
import type { App } from '../../src/app';
import type { ExportContent } from '../../src/export';
import { type Caller, Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { backends, type Backend } from '../helpers/db';
import { type JuryApp, startJuryApp } from '../helpers/jury-app';

jest.setTimeout(240_000);

const ANSWER_CANARY = 'ANSWER-CANARY-OPS-31';

interface Setup extends JuryApp {
  ops: Operations;
  runIds: string[];
}

async function start(backend: Backend): Promise<Setup> {
  // Two clinicians, and the researcher of the runs a clinician too (she may not rate her own runs).
  const jury = await startJuryApp(
    backend,
    (n) => `ASSESSMENT AND PLAN ${ANSWER_CANARY} answer ${n}: knee pain, ibuprofen.`,
    (principals) => {
      principals.push({ id: 'cleo', roles: ['clinician'], status: 'active' }, { id: 'cyd', roles: ['clinician'], status: 'active' });
      (principals.find((p) => p.id === 'alice') as { roles: string[] }).roles = ['researcher', 'clinician'];
    },
  );
  const ops = new Operations(jury.app);
  const runIds: string[] = [];
  for (let i = 0; i < 2; i++) {
    const view = await ops.requestRun(callerOf(jury.app, 'alice'), { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, maxInstances: 6, sample: 'first' });
    expect((await executeRun(jury.app.engine, view.runId)).status).toBe('completed');
    runIds.push(view.runId);
  }
  return { ...jury, ops, runIds };
}

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'allowed',
    (e: { rule?: string; code?: string }) => e.rule ?? e.code ?? 'thrown',
  );

describe.each(backends())('rating studies through the operations on %s', (backend) => {
  let t: Setup;
  beforeAll(async () => {
    t = await start(backend);
  });
  afterAll(async () => {
    await t.close();
  });

  it('opens, rates blinded, refuses by rule, measures agreement, audits without text, and validates the jury in an export', async () => {
    const { app, ops, runIds } = t;
    const as = (id: string) => callerOf(app, id);

    // Who may open: not another researcher (her runs are not his: not found), not a clinician or an auditor.
    const spec = { title: 'Knee notes', runIds, instancesPerRun: 6, ratersPerItem: 2, seed: 7 };
    expect(await refusal(ops.studies.open(as('bob'), spec))).toBe('run.not-found');
    expect(await refusal(ops.studies.open(as('erin'), spec))).toBe('rbac.researcher-required');
    expect(await refusal(ops.studies.open(as('cleo'), spec))).toBe('run.not-found');
    const opened = await ops.studies.open(as('alice'), spec);
    const studyId = opened.study.studyId;
    expect(opened.study).toMatchObject({ benchmarkId: 'aci_bench', runIds, items: 12, status: 'open', openedBy: 'alice' });
    expect(opened.agreement).toBeNull();

    // A clinician sees the study blinded: no benchmark, runs or tier; the researcher of the runs may not rate them.
    const listed = await ops.studies.list(as('cleo'));
    expect(listed.map((s) => [s.studyId, s.benchmarkId, s.runIds, s.tier])).toEqual([[studyId, null, null, null]]);
    expect(await refusal(ops.studies.next(as('alice'), studyId))).toBe('sod.rater-holds-other-role');
    expect(await refusal(ops.studies.next(as('erin'), studyId))).toBe('rbac.clinician-required');
    expect(await refusal(ops.studies.detail(as('cleo'), studyId))).toBe('rating.study-not-found');

    // Two clinicians rate every item; what they are shown names no run, model or endpoint.
    let rated = 0;
    for (const clinician of ['cleo', 'cyd']) {
      for (;;) {
        const next = await ops.studies.next(as(clinician), studyId);
        if (!next.item) break;
        const shown = JSON.stringify(next.item);
        for (const hidden of [...runIds, DEMO_ENDPOINT_ID, 'judge-gpt']) expect(shown).not.toContain(hidden);
        expect(next.item.answer).toContain(ANSWER_CANARY);
        const n = (rated++ % 5) + 1;
        const scores = clinician === 'cleo' ? { accuracy: n, completeness: n, clarity: 3 } : { accuracy: Math.min(5, n + 1), completeness: n, clarity: 4 };
        await ops.studies.rate(as(clinician), studyId, next.item.itemId, { state: 'rated', scores });
      }
    }
    expect(rated).toBe(24);
    expect(await refusal(ops.studies.rate(as('cleo'), studyId, opened.study.studyId, { state: 'rated', scores: { accuracy: 1, completeness: 1, clarity: 1 } }))).not.toBe('allowed');

    // The agreement: aggregates per dataset and pooled, never a clinician's id or a rating.
    const detail = await ops.studies.detail(as('alice'), studyId);
    expect(detail.progress).toMatchObject({ items: 12, itemsCovered: 12, raters: 2, rated: 24 });
    const all = detail.agreement?.rows.find((r) => r.dataset === 'ALL');
    expect(all).toMatchObject({ items: 12, clinicians: 2 });
    expect(typeof all?.icc.value === 'number' || typeof all?.icc.reason === 'string').toBe(true);
    expect(detail.agreement?.rankStability.map((r) => r.judge).sort()).toEqual(['judge 1', 'judge 2', 'judge 3']);
    const text = JSON.stringify(detail);
    for (const person of ['cleo', 'cyd']) expect(text).not.toContain(person);
    // The compliance officer and the auditor read it too; another researcher does not.
    expect((await ops.studies.detail(as('carol'), studyId)).agreement?.rows.length).toBe(2);
    expect(await refusal(ops.studies.detail(as('bob'), studyId))).toBe('rating.study-not-found');

    // Every act is in the trail, none with text.
    const events = await app.db.query<{ event_type: string; n: number }>(
      "SELECT event_type, count(*)::integer AS n FROM audit_events WHERE event_type LIKE 'study.%' AND outcome = 'success' GROUP BY event_type ORDER BY event_type",
    );
    expect(events.map((e) => [e.event_type, e.n])).toEqual([
      ['study.open', 1],
      ['study.rate', 24],
    ]);
    const trail = JSON.stringify(await app.db.query('SELECT * FROM audit_events'));
    expect(trail).not.toContain(ANSWER_CANARY);
    const refused = await app.db.query<{ rule: string }>("SELECT rule FROM audit_events WHERE outcome = 'denied' AND actor_principal IN ('alice', 'erin', 'cleo', 'bob') ORDER BY seq");
    expect(refused.map((r) => r.rule)).toEqual(expect.arrayContaining(['rbac.researcher-required', 'sod.rater-holds-other-role', 'rbac.clinician-required']));

    // An export before the study closes: the jury is not validated; after: by this study, with its ICC.
    const before = JSON.parse((await ops.requestExport(as('alice'), [runIds[0] as string])).preview) as ExportContent;
    expect(before.results[0]?.juryValidation).toMatchObject({ validated: false });
    expect(await refusal(ops.studies.close(as('cleo'), studyId))).toBe('visibility.study.not-yours');
    await ops.studies.close(as('alice'), studyId);
    expect(await refusal(ops.studies.next(as('cleo'), studyId))).toBe('rating.study-closed');
    const after = JSON.parse((await ops.requestExport(as('alice'), [runIds[1] as string])).preview) as ExportContent;
    const validation = after.results[0]?.juryValidation;
    expect(validation).toMatchObject({ validated: true, studyId, clinicians: 2, items: { low: expect.any(Number), high: expect.any(Number) } });
    if (validation?.validated && validation.icc && all?.icc.value !== null && all?.icc.value !== undefined) expect(validation.icc.value).toBeCloseTo(all.icc.value, 2);
  });
});
