/**
 * The LLM jury end to end: ACI-Bench through the real run engine, the model under test and three
 * judge endpoints on the loopback HTTPS server (official SDK, egress guard), judges answering valid,
 * invalid and partial JSON. Also: every judge call is audited before it is made, explanations are
 * kept nowhere, and a judge endpoint that may not receive the benchmark's tier is refused by rule.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import type { AuditEventInput } from '../../src/audit';
import { type Behaviour, DEMO_MODEL_ID, type ModelServer, startModelServer } from '../../src/demo/model-server';
import { PolicyDenied } from '../../src/errors';
import { annotateWithJury } from '../../src/annotate';
import { type ApprovalBudgets, costUsd } from '../../src/calls';
import type { Benchmark, Instance } from '../../src/catalog';
import { executeRun, requestRun } from '../../src/runs/engine';
import { judgesFor } from '../../src/runs/pipeline';
import { juryPolicyText } from '../../src/runs';
import type { RunContext } from '../../src/contracts';
import type { Tier } from '../../src/tiers';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher } from '../helpers/app';
import { makeHome, type TestHome } from '../helpers/home';
import { HEDGED_ANSWERS, PLAIN_ANSWERS, PURE_REFUSALS } from '../helpers/jury-answers';

jest.setTimeout(120_000);

const CANARY = 'EXPLANATION-CANARY-7f3a';

function judgeAnswer(scores: [number, number, number]): string {
  const [a, c, l] = scores;
  return `{"accuracy": {"score": ${a}, "explanation": "${CANARY} accurate"}, "completeness": {"score": ${c}, "explanation": "${CANARY}"}, "clarity": {"score": ${l}, "explanation": "${CANARY} {braces}"}}`;
}

interface JuryApp {
  app: App;
  server: ModelServer;
  home: TestHome;
  audited: { event: AuditEventInput; requestsSoFar: number }[];
  close(): Promise<void>;
}

/** The context of a run of `benchmark` by alice on the demo endpoint, for calling the jury directly. */
function runContext(t: JuryApp, benchmark: Benchmark, tier: Tier, approvalId?: string): RunContext {
  return {
    runId: randomUUID(),
    benchmark,
    endpoint: t.app.endpoints().get(DEMO_ENDPOINT_ID),
    tier,
    requester: researcher,
    scoring: 'corrected',
    deidentify: tier !== 'public',
    maxOutputTokens: benchmark.definition.prompt.maxTokens,
    ...(approvalId ? { approvalId } : {}),
  };
}

const item = (instance: Instance) => ({ itemKey: 'k', ordinal: 0, attempts: 1, instance });

/** A test app whose allowlist has three judge endpoints (and one that may receive public data only). */
async function startJuryApp(behaviour: (n: number, prompt: string) => Behaviour, limits: { judgeLimit?: number; modelLimit?: number; modelFamily?: string } = {}): Promise<JuryApp> {
  const home = await makeHome('pglite');
  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    behaviour,
  });
  const policyFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(policyFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
  const demo = policy.endpoints[0] as Record<string, unknown>;
  if (limits.modelLimit) demo.limits = { ...(demo.limits as object | undefined), concurrency: limits.modelLimit };
  if (limits.modelFamily) demo.family = limits.modelFamily;
  const judgeLimits = limits.judgeLimit ? { limits: { ...(demo.limits as object | undefined), concurrency: limits.judgeLimit } } : {};
  const judge = (id: string, classification: Record<string, unknown>) => {
    const { family: _modelFamily, ...base } = demo;
    return { ...base, id, description: `judge ${id}`, model: id, classification, ...judgeLimits };
  };
  policy.endpoints.push(
    judge('judge-gpt', { inVpc: true, baa: true, maxTier: 'private' }),
    judge('judge-llama', { inVpc: true, baa: true, maxTier: 'private' }),
    judge('judge-claude', { inVpc: true, baa: true, maxTier: 'private' }),
    judge('judge-public-only', { inVpc: true, baa: false, maxTier: 'public' }),
  );
  writeFileSync(policyFile, JSON.stringify(policy, null, 2));
  writeFileSync(join(home.home, 'site-data.json'), JSON.stringify({ benchmarks: {}, jury: { judges: ['judge-gpt', 'judge-llama', 'judge-claude'] } }));
  const app = await openApp({ file: home.configFile, env: home.env });
  Object.assign(app.engine.settings, { concurrency: 1 });
  const audited: JuryApp['audited'] = [];
  const record = app.engine.audit.record.bind(app.engine.audit);
  app.engine.audit = {
    seal: () => app.audit.seal(),
    record: async (event) => {
      audited.push({ event, requestsSoFar: server.requestCount() });
      await record(event);
    },
    recordIn: async (tx, event) => {
      audited.push({ event, requestsSoFar: server.requestCount() });
      await app.audit.recordIn(tx, event);
    },
  };
  return {
    app,
    server,
    home,
    audited,
    async close() {
      await app.close();
      await server.close();
      await home.cleanup();
    },
  };
}

const isJudgePrompt = (prompt: string) => prompt.includes('<gold_response>');

describe('LLM jury on ACI-Bench', () => {
  it('scores with valid, invalid and partial judge answers, skips judges on an empty answer, and keeps no explanation', async () => {
    let modelCalls = 0;
    let judgeCalls = 0;
    const t = await startJuryApp((_n, prompt) => {
      if (!isJudgePrompt(prompt)) {
        modelCalls += 1;
        // First instance: a note; second: an empty answer.
        return { kind: 'answer', text: modelCalls === 1 ? 'HISTORY OF PRESENT ILLNESS\nThe patient reports knee pain.' : '' };
      }
      judgeCalls += 1;
      switch (judgeCalls) {
        case 1:
          return { kind: 'answer', text: `Evaluation follows.\n${judgeAnswer([4, 5, 3])}` }; // valid
        case 2:
          return { kind: 'answer', text: 'The note is good overall; I would give it a four.' }; // invalid: dropped
        default:
          return { kind: 'answer', text: judgeAnswer([2, 3, 4]).slice(0, -1) }; // outer brace missing: one retry fixes it
      }
    });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 2 });
      // The run's spec records its jury: every judge asked (none of the model's family), refusals floored.
      expect(run.spec.jury).toEqual({ judgesAsked: ['judge-gpt', 'judge-llama', 'judge-claude'], judgesLeftOut: [], sameFamily: 'exclude', floor: 'empty-answer-or-refusal' });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect([modelCalls, judgeCalls]).toEqual([2, 3]);

      const rows = await t.app.db.query<{ ordinal: number; scores: Record<string, number | null>; prediction: string }>(
        'SELECT ordinal, scores, prediction FROM run_items WHERE run_id = $1 ORDER BY ordinal',
        [run.run_id],
      );
      // Instance 1: judges 1 and 3 survive: mean(4,5,3,2,3,4) = 3.5; normalised (3.5-1)/4 = 0.625.
      expect(rows[0]?.scores.jury_score).toBeCloseTo(3.5, 10);
      expect(rows[0]?.scores.jury_score_normalized).toBeCloseTo(0.625, 10);
      expect(rows[0]?.scores.jury_judges_used).toBe(2);
      // Per judge, by position: the second judge's answer could not be read, so it is counted as failed, not scored 0.
      expect(rows[0]?.scores).toMatchObject({ jury_judge_1: 4, jury_judge_2: null, jury_judge_3: 3, jury_judges_failed: 1, jury_judge_spread: 1, jury_refusal: 0, jury_judges_excluded: 0 });
      expect(rows[0]?.scores.rouge_1).toBeGreaterThan(0);
      // Instance 2: empty answer scores the floor without asking a judge.
      expect(rows[1]?.scores).toMatchObject({ jury_score: 1, jury_score_normalized: 0, jury_judges_used: 0 });
      expect(summary.mainScore).toBeCloseTo((3.5 + 1) / 2, 10);

      // The judges saw the dialogue, the answer and the reference note, through the guarded client.
      const judged = t.server.received.filter((r) => isJudgePrompt(r.prompt));
      expect(judged).toHaveLength(3);
      expect(judged[0]?.prompt).toContain('[doctor]');
      expect(judged[0]?.prompt).toContain('The patient reports knee pain.');
      // HELM's judge prompt, its {QUESTION} being HELM's input text (ACIBenchScenario's dialogue line first).
      expect(judged[0]?.prompt.startsWith('You are a medical expert tasked with evaluating the quality of a\ngenerated clinical note')).toBe(true);
      expect(judged[0]?.prompt).toContain('<conversation>\nDoctor-patient dialogue:\n\n[doctor]');
      expect(judged[0]?.prompt).toContain('<response>\nHISTORY OF PRESENT ILLNESS\nThe patient reports knee pain.\n</response>');

      // Each judge call was audited before it reached the server, naming the judge endpoint.
      const judgeEvents = t.audited.filter((a) => a.event.detail?.metric === 'jury');
      expect(judgeEvents.map((a) => a.event.subject?.endpointId)).toEqual(['judge-gpt', 'judge-llama', 'judge-claude']);
      const judgeRequestNumbers = t.server.received.map((r, i) => (isJudgePrompt(r.prompt) ? i + 1 : 0)).filter(Boolean);
      // Each judge call's audit event was recorded before that request reached the server (other
      // instances' calls may arrive in between: several instances are in flight at once).
      judgeEvents.forEach((a, i) => expect(a.requestsSoFar).toBeLessThan(judgeRequestNumbers[i] as number));

      // No explanation anywhere: not in the store, the audit trail or the log.
      const dump = await t.app.db.query<{ t: string }>('SELECT row_to_json(i)::text AS t FROM run_items i WHERE run_id = $1', [run.run_id]);
      expect(dump.map((d) => d.t).join('')).not.toContain(CANARY);
      expect(JSON.stringify(t.audited)).not.toContain(CANARY);
      await t.app.logger.close();
      expect(readFileSync(t.app.config.logging.file, 'utf8')).not.toContain(CANARY);
    } finally {
      await t.close();
    }
  });

  it("refuses a judge endpoint whose classification does not allow the benchmark's tier, before any call", async () => {
    const t = await startJuryApp(() => ({ kind: 'answer', text: judgeAnswer([5, 5, 5]) }));
    try {
      const base = t.app.catalog().get('aci_bench');
      // The same benchmark as if it held approval-required data, judged by an endpoint allowed public data only.
      const benchmark = { ...base, definition: { ...base.definition, tier: 'approval-required' as const }, judges: ['judge-gpt', 'judge-public-only'] };
      const approval = await t.app.approvals.create({ protocolNumber: 'IRB-JURY-1', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['aci_bench'], purpose: 'jury test' }, 'carol');
      const run = runContext(t, benchmark, 'approval-required', approval.approvalId);
      const instance = { key: 'k', vars: { conversation: '[doctor] hello' }, references: ['note'] };
      const err = await annotateWithJury('a note', instance, { mode: 'corrected', benchmark, judges: judgesFor(t.app.engine, run, item(instance), undefined) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PolicyDenied);
      expect((err as PolicyDenied).rule).toBe('jury.endpoint.tier-ceiling');
      expect((err as Error).message).toContain('judge-public-only');
      // No judge was called (not even the allowed one): the refusal is audited as a call not made.
      expect(t.audited.filter((a) => a.event.type === 'endpoint.call').map((a) => [a.event.outcome, a.event.rule, a.event.subject?.endpointId])).toEqual([
        ['denied', 'jury.endpoint.tier-ceiling', 'judge-public-only'],
      ]);
      expect(t.server.requestCount()).toBe(0);
    } finally {
      await t.close();
    }
  });

  it("refuses a judge the run's approval does not name, before any judge sees the note", async () => {
    const t = await startJuryApp(() => ({ kind: 'answer', text: judgeAnswer([5, 5, 5]) }));
    try {
      const base = t.app.catalog().get('aci_bench');
      const benchmark = { ...base, definition: { ...base.definition, tier: 'approval-required' as const } };
      // The approval names the model endpoint and two of the three judges.
      const approval = await t.app.approvals.create(
        {
          protocolNumber: 'IRB-JURY-2',
          principalInvestigator: 'alice',
          personnel: ['alice'],
          benchmarks: ['aci_bench'],
          endpoints: [DEMO_ENDPOINT_ID, 'judge-gpt', 'judge-llama'],
          purpose: 'jury test',
        },
        'carol',
      );
      const run = runContext(t, benchmark, 'approval-required', approval.approvalId);
      const instance = { key: 'k', vars: { conversation: '[doctor] hello' }, references: ['note'] };
      const err = await annotateWithJury('a note', instance, { mode: 'corrected', benchmark, judges: judgesFor(t.app.engine, run, item(instance), undefined) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PolicyDenied);
      expect((err as PolicyDenied).rule).toBe('jury.approval.endpoint-not-covered');
      expect((err as Error).message).toContain('judge-claude');
      expect(t.server.requestCount()).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('in helm mode drops a judge whose call fails; in corrected mode the instance fails instead of scoring lower', async () => {
    const t = await startJuryApp((_n, prompt) => (isJudgePrompt(prompt) && prompt.includes('FAILING') ? { kind: 'status', status: 400 } : { kind: 'answer', text: judgeAnswer([4, 4, 4]) }));
    try {
      const b = t.app.catalog().get('aci_bench');
      const instance = { key: 'k', vars: { conversation: '[doctor] hello FAILING' }, references: ['note'] };
      const run = runContext(t, b, 'public');
      const lease = await t.app.engine.calls.join(run);
      try {
        const judges = judgesFor(t.app.engine, run, item(instance), undefined);
        const ctx = (mode: 'helm' | 'corrected') => ({ mode, benchmark: b, judges });
        expect(await annotateWithJury('a note', instance, ctx('helm'))).toMatchObject({ jury_score: 1, jury_score_normalized: 0, jury_judges_used: 0, jury_judges_failed: 3 });
        await expect(annotateWithJury('a note', instance, ctx('corrected'))).rejects.toMatchObject({ code: 'model.http-error' });
      } finally {
        await lease.leave();
      }
    } finally {
      await t.close();
    }
  });

  it("holds each judge to its endpoint's concurrency limit, as the model endpoint is held to its own", async () => {
    const t = await startJuryApp((_n, prompt) => (isJudgePrompt(prompt) ? { kind: 'answer', text: judgeAnswer([4, 4, 4]), latencyMs: 40 } : { kind: 'answer', text: 'A note.', latencyMs: 40 }), {
      judgeLimit: 1,
      modelLimit: 4,
    });
    try {
      Object.assign(t.app.engine.settings, { concurrency: 4 });
      const run = await requestRun(t.app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 12 });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      const peaks = t.server.peakInFlight();
      // Control: the run did overlap its calls (the model endpoint saw more than one at once).
      expect(peaks[DEMO_MODEL_ID]).toBeGreaterThan(1);
      expect(peaks[DEMO_MODEL_ID]).toBeLessThanOrEqual(4);
      for (const judge of ['judge-gpt', 'judge-llama', 'judge-claude']) expect([judge, peaks[judge]]).toEqual([judge, 1]);
    } finally {
      await t.close();
    }
  });

  it("charges judge calls to the approval's budget, and halts before the judge call that would exceed it", async () => {
    const t = await startJuryApp((_n, prompt) => ({ kind: 'answer', text: isJudgePrompt(prompt) ? judgeAnswer([4, 4, 4]) : 'A note.' }));
    try {
      // The model is cheap and the judges dear: the budget covers the first instance's model call but
      // not the worst case of all of its judge calls.
      const cheap = { inputUsdPerMillion: 1, outputUsdPerMillion: 1 };
      const dear = { inputUsdPerMillion: 100, outputUsdPerMillion: 100 };
      t.app.config.export.prices.push({ endpoint: DEMO_ENDPOINT_ID, ...cheap }, ...['judge-gpt', 'judge-llama', 'judge-claude'].map((endpoint) => ({ endpoint, ...dear })));
      const budgetUsd = 1.0; // one judge call's worst case is 4,096 tokens out at $100/M = $0.41, plus the prompt
      const approval = await t.app.approvals.create(
        { protocolNumber: 'IRB-JURY-BUDGET', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['aci_bench'], purpose: 'jury budget', budgetUsd },
        'carol',
      );
      const run = await requestRun(t.app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 3, approvalId: approval.approvalId });
      const err = await executeRun(t.app.engine, run.run_id).catch((e: unknown) => e);
      expect(err).toMatchObject({ rule: 'budget.exceeded' });
      // The refused call was a judge's, audited as not made; the judge server never received it.
      const denied = t.audited.filter((a) => a.event.type === 'endpoint.call' && a.event.outcome === 'denied');
      // (two instances are in flight at once, so each may be refused at its own judge call)
      expect(denied.length).toBeGreaterThan(0);
      expect(new Set(denied.map((a) => `${a.event.rule} ${a.event.detail?.metric}`))).toEqual(new Set(['budget.exceeded jury']));
      const sent = t.audited.filter((a) => a.event.type === 'endpoint.call' && a.event.outcome === 'success' && a.event.detail?.metric === 'jury');
      expect(t.server.received.filter((r) => isJudgePrompt(r.prompt))).toHaveLength(sent.length);
      // What the judges that were called cost is the approval's spend, beside the model's.
      const spend = await t.app.db.query<{ endpoint_id: string; prompt_tokens: number }>('SELECT endpoint_id, prompt_tokens FROM judge_spend WHERE run_id = $1', [run.run_id]);
      expect(spend.length).toBe(sent.length);
      expect(spend.every((r) => r.prompt_tokens > 0)).toBe(true);
      const spent = await (t.app.engine.budget as ApprovalBudgets).spent(approval.approvalId);
      const judgeUsd = spend.reduce((a, r) => a + costUsd(r.prompt_tokens, 0, dear), 0);
      expect(spent.usd).toBeGreaterThanOrEqual(judgeUsd);
      expect(spent.usd).toBeLessThanOrEqual(budgetUsd);
      expect(await t.app.db.query('SELECT 1 FROM budget_holds')).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it("leaves out judges of the evaluated model's own family, unless the site allows them", async () => {
    const t = await startJuryApp(() => ({ kind: 'answer', text: judgeAnswer([4, 4, 4]) }));
    try {
      const b = t.app.catalog().get('aci_bench');
      const instance = { key: 'k', vars: { conversation: '[doctor] hello' }, references: ['note'] };
      // The evaluated model is a GPT: judge-gpt (model "judge-gpt") is of its family.
      const run = { ...runContext(t, b, 'public'), endpoint: { ...t.app.endpoints().get(DEMO_ENDPOINT_ID), model: 'gpt-4o-2024-05-13' } };
      const lease = await t.app.engine.calls.join(run);
      try {
        const judges = judgesFor(t.app.engine, run, item(instance), undefined);
        const before = t.server.requestCount();
        const excluded = await annotateWithJury('a note', instance, { mode: 'corrected', benchmark: b, judges });
        expect(excluded).toMatchObject({ jury_judges_used: 2, jury_judges_excluded: 1, jury_judge_1: null, jury_judge_2: 4, jury_judge_3: 4 });
        expect(t.server.requestCount() - before).toBe(2);
        const allowed = await annotateWithJury('a note', instance, { mode: 'corrected', benchmark: { ...b, jurySameFamily: 'allow' }, judges });
        expect(allowed).toMatchObject({ jury_judges_used: 3, jury_judges_excluded: 0, jury_judge_1: 4 });
        // helm mode is HELM's jury: every judge is asked, whatever the site's setting.
        const before3 = t.server.requestCount();
        const helm = await annotateWithJury('a note', instance, { mode: 'helm', benchmark: { ...b, jurySameFamily: 'exclude' }, judges });
        expect(helm).toMatchObject({ jury_judges_used: 3, jury_judges_excluded: 0, jury_judge_1: 4 });
        expect(t.server.requestCount() - before3).toBe(3);
      } finally {
        await lease.leave();
      }
    } finally {
      await t.close();
    }
  });

  it('records in the run spec which judges a helm-mode and a corrected-mode run ask, and what they floor', async () => {
    const t = await startJuryApp(() => ({ kind: 'answer', text: judgeAnswer([4, 4, 4]) }), { modelFamily: 'gpt' });
    try {
      const corrected = await requestRun(t.app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 1 });
      expect(corrected.spec.jury).toEqual({ judgesAsked: ['judge-llama', 'judge-claude'], judgesLeftOut: ['judge-gpt'], sameFamily: 'exclude', floor: 'empty-answer-or-refusal' });
      const helm = await requestRun(t.app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 1, scoring: 'helm' });
      expect(helm.spec.jury).toEqual({ judgesAsked: ['judge-gpt', 'judge-llama', 'judge-claude'], judgesLeftOut: [], sameFamily: 'helm-asks-all', floor: 'empty-answer' });
      // Shown where the run's scoring is shown (runs show, the run report).
      expect(juryPolicyText(corrected.spec.jury as NonNullable<typeof corrected.spec.jury>)).toBe(
        "asked judge-llama, judge-claude (left out: judge-gpt); judges of the model's own family left out; an empty answer or a refusal and nothing else scores the floor without a judge",
      );
      // Each run asks the judges its spec names: the helm run all three, the corrected run not judge-gpt.
      const judgesCalled = () =>
        t.server.received.filter((r) => isJudgePrompt(r.prompt)).map((r) => ['judge-gpt', 'judge-llama', 'judge-claude'].find((id) => r.body.includes(`"${id}"`) || r.path.includes(id)));
      expect((await executeRun(t.app.engine, helm.run_id)).status).toBe('completed');
      expect(judgesCalled()).toEqual(['judge-gpt', 'judge-llama', 'judge-claude']);
      expect((await executeRun(t.app.engine, corrected.run_id)).status).toBe('completed');
      expect(judgesCalled().slice(3)).toEqual(['judge-llama', 'judge-claude']);
    } finally {
      await t.close();
    }
  });

  it('asks the judges about a hedged answer in both modes; floors a pure refusal only in corrected mode, counting each', async () => {
    const t = await startJuryApp(() => ({ kind: 'answer', text: judgeAnswer([4, 4, 4]) }));
    try {
      const b = t.app.catalog().get('aci_bench');
      const instance = { key: 'k', vars: { conversation: '[doctor] hello' }, references: ['note'] };
      const run = runContext(t, b, 'public');
      const lease = await t.app.engine.calls.join(run);
      try {
        const judges = judgesFor(t.app.engine, run, item(instance), undefined);
        const judgeCallsFor = async (answer: string, mode: 'helm' | 'corrected') => {
          const before = t.server.requestCount();
          const scores = await annotateWithJury(answer, instance, { mode, benchmark: b, judges });
          return { scores, calls: t.server.requestCount() - before };
        };
        for (const mode of ['helm', 'corrected'] as const) {
          for (const answer of HEDGED_ANSWERS) {
            const { scores, calls } = await judgeCallsFor(answer, mode);
            expect([mode, calls]).toEqual([mode, 3]);
            expect(scores).toMatchObject({ jury_score: 4, jury_hedged: 1, jury_refusal: 0, jury_judges_used: 3 });
          }
          for (const answer of PLAIN_ANSWERS) {
            const { scores, calls } = await judgeCallsFor(answer, mode);
            expect([mode, calls]).toEqual([mode, 3]);
            expect(scores).toMatchObject({ jury_score: 4, jury_hedged: 0, jury_refusal: 0 });
          }
        }
        for (const answer of PURE_REFUSALS) {
          // helm mode: HELM asks the judges for every non-empty answer; the refusal is still counted.
          const helm = await judgeCallsFor(answer, 'helm');
          expect(helm.calls).toBe(3);
          expect(helm.scores).toMatchObject({ jury_score: 4, jury_refusal: 1, jury_hedged: 0, jury_judges_used: 3 });
          // corrected mode: the floor, without a judge.
          const corrected = await judgeCallsFor(answer, 'corrected');
          expect(corrected.calls).toBe(0);
          expect(corrected.scores).toMatchObject({ jury_score: 1, jury_refusal: 1, jury_hedged: 0, jury_judges_used: 0 });
        }
        // The empty answer is the one floor of both modes, as in HELM.
        for (const mode of ['helm', 'corrected'] as const) expect((await judgeCallsFor('  \n', mode)).calls).toBe(0);
      } finally {
        await lease.leave();
      }
    } finally {
      await t.close();
    }
  });

  it("in helm mode averages a judge's 0s as HELM does (no floor on a mean); corrected mode drops the off-scale judge", async () => {
    const t = await startJuryApp(() => ({
      kind: 'answer',
      text: '{"accuracy": {"score": 0, "explanation": "x"}, "completeness": {"score": 0, "explanation": "x"}, "clarity": {"score": 0, "explanation": "x"}}',
    }));
    try {
      const b = t.app.catalog().get('aci_bench');
      const instance = { key: 'k', vars: { conversation: '[doctor] hello' }, references: ['note'] };
      const run = runContext(t, b, 'public');
      const lease = await t.app.engine.calls.join(run);
      try {
        const judges = judgesFor(t.app.engine, run, item(instance), undefined);
        const helm = await annotateWithJury('PLAN: rest and ice.', instance, { mode: 'helm', benchmark: b, judges });
        expect(helm).toMatchObject({ jury_score: 0, jury_score_normalized: -0.25, jury_judges_used: 3 });
        const corrected = await annotateWithJury('PLAN: rest and ice.', instance, { mode: 'corrected', benchmark: b, judges });
        expect(corrected).toMatchObject({ jury_score: 1, jury_judges_used: 0, jury_judges_failed: 3 });
      } finally {
        await lease.leave();
      }
    } finally {
      await t.close();
    }
  });
});
