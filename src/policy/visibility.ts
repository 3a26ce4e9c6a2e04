/**
 * Who sees a run's exact figures (instance counts, scores, aggregates, token usage and cost) as opposed
 * to its metadata (ids, status, benchmark, tier, endpoint, people, timestamps), and what of its
 * instances one by one. Exact figures of EHR data are aggregates over patients that have passed no
 * disclosure control: outside the researcher who ran it and the compliance officers who approve runs
 * and review exports, they leave only through a released export (ranges, k, differencing). Admins
 * operate runs and auditors follow them, and neither needs an exact n or score to do so.
 *
 * Both are rows of the gate's table (gate.ts, actions `run.figures` and `run.instances`); these are
 * its answers under the narrower rule types the run views carry.
 */
import type { Tier } from '../tiers';
import type { Decision } from './decision';
import { decide, type GateCaller } from './gate';

/** The caller, as far as this decision needs: who, and which roles they hold. */
export type Viewer = GateCaller;

/** The run, as far as this decision needs. */
export interface ViewedRun {
  requestedBy: string;
  tier: Tier;
}

export type RunFiguresRule = 'visibility.run-figures.public-tier' | 'visibility.run-figures.requester' | 'visibility.run-figures.compliance' | 'visibility.run-figures.withheld';

/** May `viewer` see the exact figures of `run`? Deny by default: only the public tier, the requester and compliance see them. */
export function runFiguresVisibility(viewer: Viewer, run: ViewedRun): Decision<RunFiguresRule> {
  return decide(viewer, 'run.figures', { requestedBy: run.requestedBy, tier: run.tier }) as Decision<RunFiguresRule>;
}

export type InstancesRule = 'visibility.instances.public-tier' | 'visibility.instances.codes-only' | 'visibility.instances.withheld';

/**
 * What `viewer` may see of `run`'s instances, one by one. A public run's instances are public data: its
 * prompts, predictions, references and scores go to everyone who may read the run. An EHR tier's
 * instances are patient text, even de-identified, and their scores are figures over patients: only
 * the position, state and error code of the instances that failed or were blocked are shown, and only
 * to those who see its figures anyway (the requester and compliance officers), so that they can
 * find out why. Everyone else: withheld. Deny by default: a tier not named here is withheld.
 */
export function instancesVisibility(viewer: Viewer, run: ViewedRun): Decision<InstancesRule> {
  return decide(viewer, 'run.instances', { requestedBy: run.requestedBy, tier: run.tier }) as Decision<InstancesRule>;
}
