/**
 * The budget check, a stage before every model call. An IRB approval may carry a budget (USD); a run
 * bound to it may not make a call whose worst case would take the approval's estimated spend past it:
 *   spent (tokens stored for every run under the approval, priced per endpoint)
 *   + held (worst cases of calls in flight, on any worker)
 *   + this call's worst case (prompt token upper bound, max_tokens out)      <= budget
 * The check and the hold are one short transaction under a row lock on the approval, so concurrent
 * calls (several loops, several workers) cannot all slip under the cap together. A hold is released
 * when the call's result is stored (its tokens then count as spent) or when the call fails; a hold
 * left by a worker that died expires after the item lease. Without a price for an endpoint the
 * budget cannot be enforced, so the call is refused (fail closed).
 */
import { randomUUID } from 'node:crypto';
import type { PriceEntry } from '../config';
import type { Database, Queryable } from '../db';
import { costUsd, priceFor, promptTokenBound } from './cost';
import type { BudgetDecision, BudgetHold, BudgetStage, RunContext } from './stages';

const cents = (usd: number) => Math.round(usd * 100) / 100;

export class ApprovalBudgets implements BudgetStage {
  constructor(
    private readonly db: Database,
    private readonly prices: readonly PriceEntry[],
    private readonly holdSeconds: number,
  ) {}

  async reserve(ctx: RunContext, prompt: string): Promise<BudgetDecision> {
    if (!ctx.approvalId) return { allowed: true, rule: 'budget.not-bound', reason: 'run is not bound to an approval' };
    const approvalId = ctx.approvalId;
    const price = priceFor(this.prices, ctx.endpoint);
    const maxTokens = ctx.benchmark.definition.prompt.maxTokens;
    // Most approvals have no budget: that is settled without a lock (budgets are set at creation).
    const plain = await this.db.query<{ budget_usd: number | null }>('SELECT budget_usd FROM approvals WHERE approval_id = $1::uuid', [approvalId]);
    if (plain[0] && plain[0].budget_usd === null) return { allowed: true, rule: 'budget.none', reason: 'approval has no budget' };
    return this.db.transaction(async (tx) => {
      const rows = await tx.query<{ budget_usd: number | null; protocol_number: string }>(
        'SELECT budget_usd, protocol_number FROM approvals WHERE approval_id = $1::uuid FOR UPDATE',
        [approvalId],
      );
      const approval = rows[0];
      if (!approval) return { allowed: false, rule: 'budget.approval-unknown', reason: `approval ${approvalId} does not exist` };
      if (approval.budget_usd === null) return { allowed: true, rule: 'budget.none', reason: 'approval has no budget' };
      const budget = Number(approval.budget_usd);
      if (!price) {
        return { allowed: false, rule: 'budget.no-price', reason: `endpoint ${ctx.endpoint.id} has no price in the config (export.prices); a budget cannot be enforced without one` };
      }
      const spent = await spentUnder(tx, approvalId, this.prices);
      if (spent.unpriced) {
        return { allowed: false, rule: 'budget.no-price', reason: `endpoint ${spent.unpriced} of an earlier run under this approval has no price in the config (export.prices)` };
      }
      const held = await heldUnder(tx, approvalId);
      const worst = costUsd(promptTokenBound(prompt), maxTokens, price);
      const detail = { budgetUsd: cents(budget), spentUsd: cents(spent.usd), heldUsd: cents(held), callWorstCaseUsd: cents(worst) };
      if (spent.usd + held + worst > budget) {
        return {
          allowed: false,
          rule: 'budget.exceeded',
          reason: `approval ${approval.protocol_number}: estimated spend $${detail.spentUsd} + in flight $${detail.heldUsd} + this call's worst case $${detail.callWorstCaseUsd} would exceed its budget of $${detail.budgetUsd}`,
          detail,
        };
      }
      const holdId = randomUUID();
      await tx.query(
        `INSERT INTO budget_holds (hold_id, approval_id, run_id, usd, expires_at) VALUES ($1::uuid, $2::uuid, $3::uuid, $4, now() + make_interval(secs => $5))`,
        [holdId, approvalId, ctx.runId, worst, this.holdSeconds],
      );
      return { allowed: true, rule: 'budget.within', reason: 'within the approval budget', hold: { holdId }, detail };
    });
  }

  async release(hold: BudgetHold): Promise<void> {
    await this.db.query('DELETE FROM budget_holds WHERE hold_id = $1::uuid', [hold.holdId]);
  }
}

/** Estimated spend of every run under an approval, from the tokens stored with finished instances. */
export async function spentUnder(q: Queryable, approvalId: string, prices: readonly PriceEntry[]): Promise<{ usd: number; unpriced?: string }> {
  const rows = await q.query<{ endpoint_id: string; model: string | null; deployment: string | null; p: number; c: number }>(
    `SELECT r.endpoint_id, r.spec->'endpoint'->>'model' AS model, r.spec->'endpoint'->>'deployment' AS deployment,
            COALESCE(sum(i.prompt_tokens), 0)::bigint AS p, COALESCE(sum(i.completion_tokens), 0)::bigint AS c
       FROM runs r JOIN run_items i ON i.run_id = r.run_id
      WHERE r.approval_id = $1::uuid AND i.state = 'done'
      GROUP BY r.endpoint_id, r.spec->'endpoint'->>'model', r.spec->'endpoint'->>'deployment'`,
    [approvalId],
  );
  let usd = 0;
  for (const r of rows) {
    if (Number(r.p) === 0 && Number(r.c) === 0) continue;
    const price = priceFor(prices, { id: r.endpoint_id, model: r.model, deployment: r.deployment });
    if (!price) return { usd, unpriced: r.endpoint_id };
    usd += costUsd(Number(r.p), Number(r.c), price);
  }
  return { usd };
}

async function heldUnder(q: Queryable, approvalId: string): Promise<number> {
  const rows = await q.query<{ usd: number }>(
    'SELECT COALESCE(sum(usd), 0)::double precision AS usd FROM budget_holds WHERE approval_id = $1::uuid AND expires_at > now()',
    [approvalId],
  );
  return Number(rows[0]?.usd ?? 0);
}
