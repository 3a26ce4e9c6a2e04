/**
 * The access rules for runs, as pure functions. Deny by default; every decision names its rule.
 *   public             any researcher, any allowlisted endpoint
 *   approval-required  an active IRB approval naming the researcher and covering the benchmark (and
 *                      the endpoint, when the approval lists endpoints); the endpoint is inside the VPC;
 *                      prompts are de-identified
 *   private            as above, the endpoint has a BAA and accepts private data, and the run itself is
 *                      approved by a compliance officer who is not the requester
 * The same rules are checked when a run is requested, when it starts, and before every instance, so an
 * approval suspended, expired or narrowed during a run stops it at its next instance.
 */
import type { Endpoint } from '../contracts';
import { allow, type Decision, deny, type RuleId } from '../policy';
import { type Tier, tierWithin } from '../tiers';
import type { Approval } from './approvals';
import { approvalStatusAt } from './coverage';

export { approvalStatusAt };

/** The rules of where data may go, whoever asks. */
export type EndpointRule = Extract<RuleId, `endpoint.${string}`>;

/** Where data of a tier may be sent, whoever asks. */
export function endpointDecision(tier: Tier, endpoint: Endpoint): Decision<EndpointRule> | undefined {
  const c = endpoint.classification;
  if (tier === 'private' && c.development) {
    return deny('endpoint.development-not-private', `endpoint ${endpoint.id} is a development endpoint and never receives private-tier data`);
  }
  if (!tierWithin(tier, c.maxTier)) return deny('endpoint.tier-ceiling', `endpoint ${endpoint.id} accepts at most ${c.maxTier} data, this benchmark is ${tier}`);
  if (tier !== 'public' && !c.inVpc) return deny('endpoint.not-in-vpc', `endpoint ${endpoint.id} is not inside the hospital network; ${tier} data may not go there`);
  if (tier === 'private' && !c.baa) return deny('endpoint.no-baa', `endpoint ${endpoint.id} has no business associate agreement; private data may not go there`);
  return undefined;
}

export interface RunAccessRequest {
  tier: Tier;
  benchmarkId: string;
  endpoint: Endpoint;
  /** The requesting principal and whether it holds the researcher role. */
  principal: string;
  isResearcher: boolean;
  /** Approvals naming the principal (any status); or just the one the run is bound to. */
  approvals: Approval[];
  now: Date;
}

/** Why one approval does not allow this run, or undefined when it does. */
function approvalProblem(a: Approval, req: RunAccessRequest): Decision | undefined {
  const p = `approval ${a.protocolNumber}`;
  if (a.status === 'suspended') return deny('approval.suspended', `${p} is suspended`);
  if (a.status === 'closed') return deny('approval.closed', `${p} is closed`);
  if (Date.parse(a.startsAt) > req.now.getTime()) return deny('approval.not-started', `${p} starts at ${a.startsAt}`);
  if (a.expiresAt && Date.parse(a.expiresAt) <= req.now.getTime()) return deny('approval.expired', `${p} expired at ${a.expiresAt}`);
  if (!a.personnel.includes(req.principal) && a.principalInvestigator !== req.principal) {
    return deny('approval.not-on-personnel', `${req.principal} is not on the personnel of ${p}`);
  }
  // Separation of duties: an approval its recorder is named on was never reviewed by a second person
  // (refused when recording; this catches one stored before that rule or written around it).
  if (a.principalInvestigator === a.createdBy || a.personnel.includes(a.createdBy)) {
    return deny('sod.approval-recorder-is-personnel', `${p} was recorded by ${a.createdBy}, who is named on it; another compliance officer must record it`);
  }
  if (!a.benchmarks.includes(req.benchmarkId) && !a.tiers.includes(req.tier)) {
    return deny('approval.benchmark-not-covered', `${p} does not cover benchmark ${req.benchmarkId} (${req.tier})`);
  }
  if (a.endpoints.length > 0 && !a.endpoints.includes(req.endpoint.id)) {
    return deny('approval.endpoint-not-covered', `${p} does not cover endpoint ${req.endpoint.id}`);
  }
  // A test endpoint claims what the tier rules ask (the private one a BAA) for a loopback stand-in:
  // only an approval written for the smoke test, naming it, lets EHR-tier data reach it.
  if (req.endpoint.test && !a.endpoints.includes(req.endpoint.id)) {
    return deny(
      'approval.test-endpoint-not-named',
      `${p} does not name test endpoint ${req.endpoint.id} (a loopback stand-in, never real data); record a smoke-test approval listing it in --endpoints`,
    );
  }
  return undefined;
}

/** The most telling refusal among approvals that do not fit (benchmark or endpoint first, then status). */
const REFUSAL_ORDER: readonly RuleId[] = [
  'approval.endpoint-not-covered',
  'approval.test-endpoint-not-named',
  'approval.benchmark-not-covered',
  'sod.approval-recorder-is-personnel',
  'approval.suspended',
  'approval.expired',
  'approval.not-started',
  'approval.closed',
  'approval.not-on-personnel',
];

export interface RunAccessDecision extends Decision {
  /** The approval that allows the run (approval-required and private tiers). */
  approval?: Approval;
  /** Private runs wait for a compliance officer's approval of the run itself. */
  needsRunApproval?: boolean;
}

export function decideRunAccess(req: RunAccessRequest): RunAccessDecision {
  if (!req.isResearcher) return deny('rbac.researcher-required', `${req.principal} does not hold the researcher role; only researchers request runs`);
  const endpoint = endpointDecision(req.tier, req.endpoint);
  if (endpoint) return endpoint;
  if (req.tier === 'public') return allow('tier.public', 'public benchmark: any researcher, any allowlisted endpoint');

  const problems: Decision[] = [];
  for (const a of req.approvals) {
    const problem = approvalProblem(a, req);
    if (!problem) {
      // say whether the benchmark is named or only its whole tier: an officer approving the run must see it
      const how = a.benchmarks.includes(req.benchmarkId) ? 'which names the benchmark' : `only through its tier (it covers every ${req.tier} benchmark)`;
      return req.tier === 'private'
        ? { ...allow('tier.private.approval', `covered by approval ${a.protocolNumber}, ${how}; the run waits for a compliance officer's approval`), approval: a, needsRunApproval: true }
        : { ...allow('tier.approval-required.approval', `covered by approval ${a.protocolNumber}, ${how}`), approval: a };
    }
    problems.push(problem);
  }
  if (problems.length === 0) return deny('approval.none', `${req.principal} is named on no IRB approval; ${req.tier} benchmarks need one`);
  problems.sort((x, y) => REFUSAL_ORDER.indexOf(x.rule) - REFUSAL_ORDER.indexOf(y.rule));
  return problems[0] as Decision;
}
