/**
 * Access decisions for runs. Deny by default: a run is allowed only by a rule that names why.
 * This module holds the tier rules that need no approval records (public data, endpoint class);
 * approval-required and private runs are refused until IRB approvals are wired in.
 */
import type { AccessStage, Decision, RunContext } from '../runs/stages';
import { tierWithin } from '../tiers';

const allow = (rule: string, reason: string): Decision => ({ allowed: true, rule, reason });
const deny = (rule: string, reason: string): Decision => ({ allowed: false, rule, reason });

/** Rules about where data of a tier may be sent, whoever asks. */
export function endpointDecision(ctx: Pick<RunContext, 'tier' | 'endpoint'>): Decision | undefined {
  const c = ctx.endpoint.classification;
  if (ctx.tier === 'private' && c.development) {
    return deny('endpoint.development-not-private', `endpoint ${ctx.endpoint.id} is a development endpoint and never receives private-tier data`);
  }
  if (!tierWithin(ctx.tier, c.maxTier)) {
    return deny('endpoint.tier-ceiling', `endpoint ${ctx.endpoint.id} accepts at most ${c.maxTier} data, this benchmark is ${ctx.tier}`);
  }
  if (ctx.tier !== 'public' && !c.inVpc) {
    return deny('endpoint.not-in-vpc', `endpoint ${ctx.endpoint.id} is not inside the hospital network; ${ctx.tier} data may not go there`);
  }
  if (ctx.tier === 'private' && !c.baa) {
    return deny('endpoint.no-baa', `endpoint ${ctx.endpoint.id} has no business associate agreement; private data may not go there`);
  }
  return undefined;
}

export const tierGate: AccessStage = {
  async checkRun(ctx) {
    const endpoint = endpointDecision(ctx);
    if (endpoint) return endpoint;
    if (ctx.tier === 'public') return allow('tier.public', 'public benchmark: any researcher, any allowlisted endpoint');
    return deny('tier.approval-unavailable', `${ctx.tier} benchmarks need an IRB approval; approvals are not configured`);
  },
  async checkInstance(ctx) {
    return ctx.tier === 'public' ? allow('tier.public', 'public benchmark') : deny('tier.approval-unavailable', 'no approval');
  },
};
