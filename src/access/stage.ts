/**
 * The access stage of the run pipeline: the rules of ./rules.ts fed from the principal directory and
 * the approval store. Checked when a run is requested, when it starts and before every instance.
 * A requester whose certificates were revoked after the run was requested (a blanket revocation, as
 * the API's break-glass makes) is refused as the API refuses them: the run stops at its next instance.
 */
import type { AccessStage, Endpoint, RunContext } from '../contracts';
import type { Decision } from '../policy';
import type { ApprovalStore } from './approvals';
import type { PrincipalDirectory } from './principals';
import { decideRunAccess, type RunAccessDecision } from './rules';

/** The first blanket revocation of a principal at or after a time (src/identity/revocations.ts). */
export type RevokedSince = (principal: string, since: Date) => Promise<{ revokedAt: Date; revokedBy: string } | undefined>;

export class AccessPolicy implements AccessStage {
  constructor(
    private readonly principals: () => PrincipalDirectory,
    private readonly approvals: ApprovalStore,
    private readonly revokedSince: RevokedSince,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  async checkRun(ctx: Omit<RunContext, 'runId'> & { runId?: string }): Promise<RunAccessDecision> {
    const principal = this.principals().get(ctx.requester.principal);
    if (!principal) {
      return { allowed: false, rule: 'principal.unknown-or-disabled', reason: `${ctx.requester.principal} is not an active principal` };
    }
    // A run already requested: its requester's certificate may have been revoked since.
    const revoked = ctx.requestedAt ? await this.revokedSince(principal.id, ctx.requestedAt) : undefined;
    if (revoked) {
      return { allowed: false, rule: 'principal.revoked', reason: `${principal.id}'s certificates were revoked by ${revoked.revokedBy} after the run was requested` };
    }
    let approvals;
    if (ctx.approvalId) {
      const bound = await this.approvals.get(ctx.approvalId);
      if (!bound) return { allowed: false, rule: 'approval.unknown', reason: `approval ${ctx.approvalId} does not exist` };
      approvals = [bound];
    } else approvals = ctx.tier === 'public' ? [] : await this.approvals.forPrincipal(principal.id);
    const decision = decideRunAccess({
      tier: ctx.tier,
      benchmarkId: ctx.benchmark.definition.id,
      endpoint: ctx.endpoint,
      principal: principal.id,
      isResearcher: principal.roles.includes('researcher'),
      approvals,
      now: this.clock(),
    });
    // Once requested, a private run runs only after a compliance officer approved it.
    if (decision.allowed && decision.needsRunApproval && ctx.runId && ctx.approvedBy) {
      return { ...decision, rule: 'tier.private.run-approved', reason: `run approved by ${ctx.approvedBy}`, needsRunApproval: false };
    }
    return decision;
  }

  async checkEndpoint(ctx: RunContext, endpoint: Endpoint): Promise<Decision> {
    return this.checkInstance(endpoint.id === ctx.endpoint.id ? ctx : { ...ctx, endpoint });
  }

  async checkInstance(ctx: RunContext): Promise<Decision> {
    const decision = await this.checkRun(ctx);
    if (decision.allowed && (decision as RunAccessDecision).needsRunApproval) {
      return { allowed: false, rule: 'tier.private.run-not-approved', reason: 'private run has no compliance approval' };
    }
    return decision;
  }
}
