/** The audit fields every run event shares: who the engine is, and the run's ids. Never instance data. */
import { serviceActor } from '../identity';
import type { RunContext } from '../contracts';

/** Model calls and run transitions are made by the daemon's engine on the requester's behalf. */
export const ENGINE_ACTOR = serviceActor('engine');

export function auditBase(ctx: Pick<RunContext, 'benchmark' | 'endpoint' | 'tier' | 'purpose' | 'irbProtocol' | 'approvalId'> & { runId?: string }) {
  return {
    ...(ctx.purpose ? { purpose: ctx.purpose } : {}),
    ...(ctx.irbProtocol ? { irbProtocol: ctx.irbProtocol } : {}),
    subject: {
      ...(ctx.runId ? { runId: ctx.runId } : {}),
      benchmarkId: ctx.benchmark.definition.id,
      tier: ctx.tier,
      endpointId: ctx.endpoint.id,
      ...(ctx.approvalId ? { approvalId: ctx.approvalId } : {}),
    },
  };
}
