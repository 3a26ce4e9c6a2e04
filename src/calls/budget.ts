/**
 * The budget check, before every outbound call of a run (model under test and judges alike). An IRB
 * approval may carry a budget (USD); a run bound to it may not make a call whose worst case would take
 * the approval's estimated spend past it:
 *   spent (tokens stored for every run under the approval, and its judges' tokens, priced per endpoint)
 *   + held (worst cases of calls in flight, on any worker)
 *   + this call's worst case (prompt token upper bound, max_tokens out)      <= budget
 * The check and the hold are one short transaction under a row lock on the approval, so concurrent
 * calls (several loops, several workers) cannot all slip under the cap together. A hold is released
 * when the call's result is stored (its tokens then count as spent), when a judge's tokens are charged
 * (`charge`, one transaction) or when the call fails; a hold
 * left by a worker that died expires after the item lease. Without a price for an endpoint the
 * budget cannot be enforced, so the call is refused (fail closed).
 */
import { randomUUID } from 'node:crypto';
import type { PriceEntry } from '../config';
import type { Database, Queryable } from '../db';
import { costUsd, type Decision, type Endpoint, type PricedEndpoint, priceFor, type RunContext } from '../contracts';
import type { Completion } from '../models';
import { approvalBudget } from '../access';
import { promptTokenBound } from './cost';

/** A hold on an approval's budget for one call's worst-case cost. */
export interface BudgetHold {
  holdId: string;
}

export interface BudgetDecision extends Decision {
  hold?: BudgetHold;
  /** Dollar figures behind the decision (rounded), for the audit event. */
  detail?: Record<string, number>;
}

/** Tokens spent on one endpoint (and model or deployment), summed. */
export interface TokenSum {
  endpoint_id: string;
  model: string | null;
  deployment: string | null;
  p: number;
  c: number;
}

export type ModelTokens = (q: Queryable, approvalId: string) => Promise<TokenSum[]>;

/** What a call to `endpoint` for the run may cost at most: the prompt's token bound in, `maxTokens` out. */
export interface BudgetRequest {
  endpoint: Endpoint;
  prompt: string;
  maxTokens: number;
}

export interface BudgetStage {
  reserve(ctx: RunContext, req: BudgetRequest): Promise<BudgetDecision>;
  release(hold: BudgetHold): Promise<void>;
  /** A judge call answered: its tokens are recorded as the run's spend and its hold released, together. */
  charge(ctx: RunContext, endpoint: Endpoint, completion: Pick<Completion, 'promptTokens' | 'completionTokens' | 'usageUnderReported'>, hold: BudgetHold | undefined): Promise<void>;
  /**
   * A refusal (budget.no-price) when the approval has a budget and one of `endpoints` (the run's, its
   * judges') has no price: such a budget cannot be enforced, so the run is refused when it is requested
   * or approved, not halted at its first call.
   */
  unenforceable(approvalId: string | undefined, endpoints: readonly PricedEndpoint[]): Promise<BudgetDecision | undefined>;
}

const cents = (usd: number) => Math.round(usd * 100) / 100;

export class ApprovalBudgets implements BudgetStage {
  constructor(
    private readonly db: Database,
    private readonly prices: readonly PriceEntry[],
    private readonly holdSeconds: number,
    /** The model's tokens stored under an approval, from the run store that owns them. */
    private readonly modelTokens: ModelTokens,
  ) {}

  /** Estimated spend of every run under the approval (see spentUnder). */
  spent(approvalId: string, q: Queryable = this.db): Promise<{ usd: number; unpriced?: string }> {
    return spentUnder(q, approvalId, this.prices, this.modelTokens);
  }

  async unenforceable(approvalId: string | undefined, endpoints: readonly PricedEndpoint[]): Promise<BudgetDecision | undefined> {
    if (!approvalId) return undefined;
    const approval = await approvalBudget(this.db, approvalId);
    if (!approval || approval.budget_usd === null) return undefined;
    return unpricedUnderBudget(this.prices, endpoints, approval.protocol_number);
  }

  async reserve(ctx: RunContext, { endpoint, prompt, maxTokens }: BudgetRequest): Promise<BudgetDecision> {
    if (!ctx.approvalId) return { allowed: true, rule: 'budget.not-bound', reason: 'run is not bound to an approval' };
    const approvalId = ctx.approvalId;
    const price = priceFor(this.prices, endpoint);
    // Most approvals have no budget: that is settled without a lock (budgets are set at creation).
    const plain = await approvalBudget(this.db, approvalId);
    if (plain && plain.budget_usd === null) return { allowed: true, rule: 'budget.none', reason: 'approval has no budget' };
    return this.db.transaction(async (tx) => {
      const approval = await approvalBudget(tx, approvalId, { lock: true });
      if (!approval) return { allowed: false, rule: 'budget.approval-unknown', reason: `approval ${approvalId} does not exist` };
      if (approval.budget_usd === null) return { allowed: true, rule: 'budget.none', reason: 'approval has no budget' };
      const budget = Number(approval.budget_usd);
      if (!price) {
        return { allowed: false, rule: 'budget.no-price', reason: `endpoint ${endpoint.id} has no price in the config (export.prices); a budget cannot be enforced without one` };
      }
      const spent = await this.spent(approvalId, tx);
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
      await tx.query(`INSERT INTO budget_holds (hold_id, approval_id, run_id, usd, expires_at) VALUES ($1::uuid, $2::uuid, $3::uuid, $4, now() + make_interval(secs => $5))`, [
        holdId,
        approvalId,
        ctx.runId,
        worst,
        this.holdSeconds,
      ]);
      return { allowed: true, rule: 'budget.within', reason: 'within the approval budget', hold: { holdId }, detail };
    });
  }

  async release(hold: BudgetHold): Promise<void> {
    await this.db.query('DELETE FROM budget_holds WHERE hold_id = $1::uuid', [hold.holdId]);
  }

  async charge(ctx: RunContext, endpoint: Endpoint, completion: Pick<Completion, 'promptTokens' | 'completionTokens' | 'usageUnderReported'>, hold: BudgetHold | undefined): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO judge_spend (spend_id, run_id, approval_id, endpoint_id, model, deployment, prompt_tokens, completion_tokens, usage_under_reported)
         VALUES ($1::uuid, $2::uuid, $3::uuid, $4, $5, $6, $7, $8, $9)`,
        [
          randomUUID(),
          ctx.runId,
          ctx.approvalId ?? null,
          endpoint.id,
          endpoint.model ?? null,
          endpoint.deployment ?? null,
          completion.promptTokens ?? 0,
          completion.completionTokens ?? 0,
          completion.usageUnderReported === true,
        ],
      );
      if (hold) await tx.query('DELETE FROM budget_holds WHERE hold_id = $1::uuid', [hold.holdId]);
    });
  }
}

/**
 * Estimated spend of every run under an approval: the tokens stored with finished instances, priced
 * by the run's endpoint, and the judges' tokens, priced by each judge's endpoint.
 */
async function spentUnder(q: Queryable, approvalId: string, prices: readonly PriceEntry[], modelTokens: ModelTokens): Promise<{ usd: number; unpriced?: string }> {
  const judges = await q.query<TokenSum>(
    `SELECT endpoint_id, model, deployment, sum(prompt_tokens)::bigint AS p, sum(completion_tokens)::bigint AS c
       FROM judge_spend WHERE approval_id = $1::uuid
      GROUP BY endpoint_id, model, deployment`,
    [approvalId],
  );
  const rows = [...(await modelTokens(q, approvalId)), ...judges];
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
  const rows = await q.query<{ usd: number }>('SELECT COALESCE(sum(usd), 0)::double precision AS usd FROM budget_holds WHERE approval_id = $1::uuid AND expires_at > now()', [approvalId]);
  return Number(rows[0]?.usd ?? 0);
}

/** budget.no-price for the first endpoint of `endpoints` without a price, naming it and the setting. */
export function unpricedUnderBudget(prices: readonly PriceEntry[], endpoints: readonly PricedEndpoint[], protocol: string): BudgetDecision | undefined {
  const unpriced = endpoints.find((e) => !priceFor(prices, e));
  if (!unpriced) return undefined;
  return {
    allowed: false,
    rule: 'budget.no-price',
    reason: `approval ${protocol} has a budget, and endpoint ${unpriced.id} has no price in the config (export.prices), so the budget cannot be enforced: add a price for ${unpriced.id} under export.prices in config.json, or use a priced endpoint`,
  };
}
