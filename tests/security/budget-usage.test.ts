/**
 * The budget does not take the endpoint's word (issue 27, class 3). Spend was summed from the usage the
 * endpoint reported: one that left `usage` out ran many calls under a budget that stops an honest one
 * after three, and negative counts lowered the recorded spend. Now a call whose usage is missing,
 * negative, beyond the request or implausibly low is charged its worst case (its budget hold), the
 * run says how many calls were so charged, and a metric counts them per endpoint.
 */
import { renderTemplate, type Instance } from '../../src/catalog';
import { costUsd, deidentifiedPrompt, promptTokenBound } from '../../src/calls';
import type { Behaviour } from '../../src/demo/model-server';
import { metricsText } from '../../src/observability';
import { type Caller, Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import { main } from '../../src/cli/main';
import type { App } from '../../src/app';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

const PRICE = { inputUsdPerMillion: 1000, outputUsdPerMillion: 1000 };

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

/** What the stand-in endpoint reports as usage in each scenario (`honest`: its own counts). */
const USAGE: Record<string, Behaviour> = {
  honest: { kind: 'answer' },
  omitted: { kind: 'answer', usage: 'omit' },
  negative: { kind: 'answer', usage: { prompt_tokens: -1_000_000, completion_tokens: -1_000_000, total_tokens: -2_000_000 } },
  beyond: { kind: 'answer', usage: { prompt_tokens: 5, completion_tokens: 1_000_000_000, total_tokens: 1_000_000_005 } },
  zero: { kind: 'answer', usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } },
};

describe.each(backends())('the budget and the usage an endpoint reports, on %s', (backend) => {
  let t: TestDaemon;
  let scenario = 'honest';
  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 0, rows: 20, concurrency: 1, behaviour: () => USAGE[scenario] as Behaviour });
    // The budget arithmetic is checked against known prompt sizes: de-identification passes prompts through.
    t.app.engine.deid = { version: 'test-passthrough', apply: (_ctx, _instance, prompt) => ({ ok: true, prompt: deidentifiedPrompt(prompt), spans: 0 }) };
    t.app.config.export.prices.push({ endpoint: 'vpc-gated', ...PRICE });
  });
  afterAll(() => t.close());

  /** The worst case of one call of site_gated: the prompt's token bound in, max_tokens out. */
  async function worstCase(runId: string): Promise<number> {
    const [first] = await t.app.db.query<{ payload: Instance }>('SELECT payload FROM run_items WHERE run_id = $1 AND ordinal = 0', [runId]);
    const b = t.app.catalog().get('site_gated');
    return costUsd(promptTokenBound(renderTemplate(b.template, first?.payload as Instance, 'test')), b.definition.prompt.maxTokens, PRICE);
  }

  /** A run of site_gated under a fresh approval whose budget is 3.5 calls at their worst case. */
  async function runUnder(name: string): Promise<{ runId: string; calls: number; worst: number; budget: number }> {
    scenario = name;
    const ops = new Operations(t.app);
    const before = t.server.requestCount();
    const budget = Math.round(WORST * 3.5 * 1e6) / 1e6;
    const runId = (await ops.requestRun(callerOf(t.app, 'alice'), { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: (await approval(ops, name, budget)).approvalId })).runId;
    await executeRun(t.app.engine, runId).catch((e: unknown) => e);
    return { runId, calls: t.server.requestCount() - before, worst: WORST, budget };
  }

  let WORST = 0;
  async function approval(ops: Operations, name: string, budgetUsd?: number) {
    return ops.createApproval(callerOf(t.app, 'carol'), {
      protocolNumber: `IRB-USAGE-${name}`,
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_gated'],
      purpose: 'usage test',
      ...(budgetUsd !== undefined ? { budgetUsd } : {}),
    });
  }

  it('measures the worst case of a call', async () => {
    scenario = 'honest';
    const ops = new Operations(t.app);
    const alice = callerOf(t.app, 'alice');
    const run = await ops.requestRun(alice, { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: (await approval(ops, 'measure')).approvalId, maxInstances: 1 });
    expect((await executeRun(t.app.engine, run.runId)).status).toBe('completed');
    WORST = await worstCase(run.runId);
    expect(WORST).toBeGreaterThan(0);
  });

  it('an honest endpoint is charged what it reports, and not flagged', async () => {
    scenario = 'honest';
    const ops = new Operations(t.app);
    const run = await ops.requestRun(callerOf(t.app, 'alice'), { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: (await approval(ops, 'honest')).approvalId, maxInstances: 4 });
    expect((await executeRun(t.app.engine, run.runId)).status).toBe('completed');
    const done = await t.app.db.query<{ prompt_tokens: number; usage_under_reported: boolean }>("SELECT prompt_tokens, usage_under_reported FROM run_items WHERE run_id = $1 AND state = 'done'", [
      run.runId,
    ]);
    expect(done).toHaveLength(4);
    // The stand-in counts words: far below the worst case, and taken as it is.
    const words = t.server.received.slice(-4).map((r) => r.prompt.split(/\s+/).filter(Boolean).length);
    expect(done.map((r) => r.prompt_tokens).sort()).toEqual(words.sort());
    expect(done.every((r) => !r.usage_under_reported)).toBe(true);
    expect((await ops.showRun(callerOf(t.app, 'alice'), run.runId)).usageUnderReported).toBe(0);
  });

  it.each(['omitted', 'negative', 'beyond', 'zero'])('an endpoint whose usage is %s is charged each call at its worst case: at most three calls, then the budget stops it', async (name) => {
    const lying = await runUnder(name);
    // 3.5 worst cases of budget: at most three calls (fewer while a stored result's hold is not yet released).
    expect(lying.calls).toBeGreaterThanOrEqual(1);
    expect(lying.calls).toBeLessThanOrEqual(3);
    const run = await t.app.engine.store.getRun(lying.runId);
    expect(run).toMatchObject({ status: 'halted', error_code: 'budget.exceeded' });
    const done = await t.app.db.query<{ prompt_tokens: number; completion_tokens: number; usage_under_reported: boolean }>(
      "SELECT prompt_tokens, completion_tokens, usage_under_reported FROM run_items WHERE run_id = $1 AND state = 'done'",
      [lying.runId],
    );
    expect(done).toHaveLength(lying.calls);
    // Each call charged its worst case: the token bound of the prompt the endpoint received, max_tokens out.
    const sent = t.server.received.slice(-lying.calls).map((r) => promptTokenBound(r.prompt));
    expect(done.map((r) => r.prompt_tokens).sort()).toEqual(sent.sort());
    for (const r of done) expect([r.usage_under_reported, r.completion_tokens]).toEqual([true, 1]);
    const charged = done.reduce((a, r) => a + costUsd(r.prompt_tokens, r.completion_tokens, PRICE), 0);
    expect(charged).toBeLessThanOrEqual(lying.budget);
    const view = await new Operations(t.app).showRun(callerOf(t.app, 'alice'), lying.runId);
    expect(view.usageUnderReported).toBe(lying.calls);
    expect(view.estimatedCostUsd).toBeCloseTo(charged, 6);
  });

  it('runs show warns of the calls so charged', async () => {
    const [run] = await t.app.db.query<{ run_id: string }>("SELECT r.run_id FROM runs r JOIN approvals a ON a.approval_id = r.approval_id WHERE a.protocol_number = 'IRB-USAGE-omitted'");
    const out: string[] = [];
    const io = { stdout: (s: string) => void out.push(s), stderr: (s: string) => void out.push(s), env: t.home.env };
    const alice = t.ids.alice as { certFile: string; keyFile: string };
    const code = await main(['runs', 'show', run?.run_id as string, '--server', `https://localhost:${t.daemon.port}`, '--cert', alice.certFile, '--key', alice.keyFile, '--ca', t.caFile], io);
    const [{ n } = { n: 0 }] = await t.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM run_items WHERE run_id = $1 AND usage_under_reported', [run?.run_id]);
    expect(n).toBeGreaterThan(0);
    expect(out.join('')).toContain(
      `  warning: ${n} call${n === 1 ? '' : 's'} of this run came back without truthful usage (missing, negative, beyond the request or implausibly low); each was charged its worst case, so tokens and cost are upper bounds for them.`,
    );
    expect(code).toBe(0);
  });

  it('counts the calls so charged per endpoint, by what was wrong', async () => {
    const { body } = await metricsText();
    for (const problem of ['missing', 'invalid', 'over-request', 'implausibly-low']) {
      expect(body).toMatch(new RegExp(`ehrbench_endpoint_usage_under_reported_total\\{endpoint="vpc-gated",purpose="model",problem="${problem}"\\} [1-9]`));
    }
  });
});
