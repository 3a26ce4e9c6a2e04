/**
 * Cost and budget: a run bound to an approval with a budget stops before the call whose worst case
 * would exceed it, and the model server never receives that call. Runs through the operations and
 * the engine of a real daemon's app (approval-required site benchmark, in-VPC endpoint).
 */
import { renderTemplate, type Instance } from '../../src/catalog';
import { type Caller, Operations } from '../../src/operations';
import { costUsd, deidentifiedPrompt, promptTokenBound } from '../../src/calls';
import { executeRun } from '../../src/runs/engine';
import type { App } from '../../src/app';
import { backends } from '../helpers/db';
import { startTestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

const PRICE = { inputUsdPerMillion: 1000, outputUsdPerMillion: 1000 };

describe.each(backends())('approval budgets on %s', (backend) => {
  it('halts a run before the call that would exceed the budget; the model server never receives it', async () => {
    const t = await startTestDaemon({ backend, workers: 0, rows: 30, concurrency: 1 });
    try {
      const { app } = t;
      // The budget arithmetic is checked against known prompt sizes, so the de-identification stage
      // (tested on its own in deid-run and phi-canary) passes prompts through unchanged here.
      app.engine.deid = { version: 'test-passthrough', apply: (_ctx, _instance, prompt) => ({ ok: true, prompt: deidentifiedPrompt(prompt), spans: 0 }) };
      const ops = new Operations(app);
      const alice = callerOf(app, 'alice');
      const carol = callerOf(app, 'carol');
      const approval = (budgetUsd?: number) =>
        ops.createApproval(carol, {
          protocolNumber: `IRB-BUDGET-${budgetUsd ?? 'none'}`,
          principalInvestigator: 'alice',
          personnel: ['alice'],
          benchmarks: ['site_gated'],
          purpose: 'budget test',
          ...(budgetUsd !== undefined ? { budgetUsd } : {}),
        });
      const run = async (approvalId: string) => (await ops.requestRun(alice, { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId })).runId;

      // A budget without a price for the endpoint cannot be enforced: the run is refused when it is
      // requested, naming the endpoint and the setting, and its refusal is audited; nothing is sent.
      const budgeted = (await approval(5)).approvalId;
      await expect(run(budgeted)).rejects.toMatchObject({
        rule: 'budget.no-price',
        message: expect.stringContaining('endpoint vpc-gated has no price in the config (export.prices)'),
      });
      const [refused] = await app.db.query<{ outcome: string; rule: string }>("SELECT outcome, rule FROM audit_events WHERE event_type = 'run.request' ORDER BY seq DESC LIMIT 1");
      expect(refused).toEqual({ outcome: 'denied', rule: 'budget.no-price' });
      // An approval that names such an endpoint with a budget is refused when it is recorded.
      await expect(
        ops.createApproval(carol, {
          protocolNumber: 'IRB-BUDGET-NAMED',
          principalInvestigator: 'alice',
          personnel: ['alice'],
          benchmarks: ['site_gated'],
          endpoints: ['vpc-gated'],
          purpose: 'p',
          budgetUsd: 5,
        }),
      ).rejects.toMatchObject({
        rule: 'budget.no-price',
      });
      expect(await app.db.query("SELECT 1 FROM approvals WHERE protocol_number = 'IRB-BUDGET-NAMED'")).toEqual([]);

      // The price table is read from the config at start-up; the test adds one to the same table.
      app.config.export.prices.push({ endpoint: 'vpc-gated', ...PRICE });
      // A price taken away after the request: the gateway still refuses the first call (a second wall).
      const unpriced = await run(budgeted);
      const priced = app.config.export.prices.pop()!;
      await expect(executeRun(app.engine, unpriced)).rejects.toMatchObject({ rule: 'budget.no-price' });
      expect(t.server.requestCount()).toBe(0);
      expect((await app.engine.store.getRun(unpriced))?.status).toBe('halted');
      app.config.export.prices.push(priced);
      const budget = 0.25;
      const capped = await run((await approval(budget)).approvalId);
      const err = await executeRun(app.engine, capped).catch((e: unknown) => e as { rule?: string });
      expect(err).toMatchObject({ rule: 'budget.exceeded' });
      const stored = await app.engine.store.getRun(capped);
      expect(stored).toMatchObject({ status: 'halted', error_code: 'budget.exceeded' });

      // Every call the server received has its result stored; nothing more was sent.
      const done = await app.db.query<{ prompt_tokens: number; completion_tokens: number }>("SELECT prompt_tokens, completion_tokens FROM run_items WHERE run_id = $1 AND state = 'done'", [capped]);
      expect(done.length).toBeGreaterThan(0);
      expect(done.length).toBeLessThan(30);
      expect(t.server.requestCount()).toBe(done.length);
      const spent = done.reduce((a, r) => a + costUsd(r.prompt_tokens, r.completion_tokens, PRICE), 0);
      expect(spent).toBeLessThanOrEqual(budget);

      // The refused call: audited with its figures; its worst case would have crossed the budget.
      const [denied] = await app.db.query<{ detail: { ordinal: number; spentUsd: number; heldUsd: number; callWorstCaseUsd: number; budgetUsd: number } }>(
        "SELECT detail FROM audit_events WHERE run_id = $1 AND event_type = 'endpoint.call' AND outcome = 'denied' AND rule = 'budget.exceeded'",
        [capped],
      );
      expect(denied).toBeDefined();
      const [next] = await app.db.query<{ payload: Instance }>('SELECT payload FROM run_items WHERE run_id = $1 AND ordinal = $2', [capped, denied?.detail.ordinal]);
      const benchmark = app.catalog().get('site_gated');
      const prompt = renderTemplate(benchmark.template, next?.payload as Instance, 'test');
      const worst = costUsd(promptTokenBound(prompt), benchmark.definition.prompt.maxTokens, PRICE);
      // At the moment of refusal: what was stored, plus the worst cases of calls still in flight (several
      // instances are in flight at once), plus this call's worst case, would have crossed the budget.
      expect((denied?.detail.spentUsd ?? 0) + (denied?.detail.heldUsd ?? 0) + worst).toBeGreaterThan(budget - 0.005);
      expect(denied?.detail.spentUsd).toBeLessThanOrEqual(spent + 0.005);
      expect(denied?.detail.callWorstCaseUsd).toBeCloseTo(worst, 2);
      expect(t.server.received.map((r) => r.prompt)).not.toContain(prompt);
      // No hold outlives its call.
      expect(await app.db.query('SELECT 1 FROM budget_holds')).toEqual([]);

      // The run's estimated cost is what the budget counted.
      const view = await ops.showRun(alice, capped);
      expect(view.estimatedCostUsd).toBeCloseTo(spent, 6);

      // An approval without a budget does not stop a run.
      const before = t.server.requestCount();
      const free = await run((await approval()).approvalId);
      const summary = await executeRun(app.engine, free);
      expect(summary.status).toBe('completed');
      expect(t.server.requestCount() - before).toBe(30);
    } finally {
      await t.close();
    }
  });
});
