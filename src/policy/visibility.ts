/**
 * Who sees a run's exact figures (instance counts, scores, aggregates, token usage and cost) as opposed
 * to its metadata (ids, status, benchmark, tier, endpoint, people, timestamps). Exact figures of EHR
 * data are aggregates over patients that have passed no disclosure control: outside the researcher
 * who ran it and the compliance officers who approve runs and review exports, they leave only through
 * a released export (ranges, k, differencing). Admins operate runs and auditors follow them, and
 * neither needs an exact n or score to do so.
 */
import type { Tier } from '../tiers';
import { allow, type Decision, deny } from './decision';

/** The caller, as far as this decision needs: who, and which roles they hold. */
export interface Viewer {
  id: string;
  roles: readonly string[];
}

/** The run, as far as this decision needs. */
export interface ViewedRun {
  requestedBy: string;
  tier: Tier;
}

export type RunFiguresRule = 'visibility.run-figures.public-tier' | 'visibility.run-figures.requester' | 'visibility.run-figures.compliance' | 'visibility.run-figures.withheld';

/** May `viewer` see the exact figures of `run`? Deny by default: only the three cases below see them. */
export function runFiguresVisibility(viewer: Viewer, run: ViewedRun): Decision<RunFiguresRule> {
  if (run.tier === 'public') return allow('visibility.run-figures.public-tier', 'public data');
  if (run.requestedBy === viewer.id) return allow('visibility.run-figures.requester', 'the requester of the run');
  if (viewer.roles.includes('compliance')) return allow('visibility.run-figures.compliance', 'a compliance officer');
  return deny('visibility.run-figures.withheld', `${run.tier} run of ${run.requestedBy}: metadata only for ${viewer.id}`);
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
  if (run.tier === 'public') return allow('visibility.instances.public-tier', 'public data: prompts, predictions, references and scores');
  const ehr = run.tier === 'approval-required' || run.tier === 'private';
  if (ehr && (run.requestedBy === viewer.id || viewer.roles.includes('compliance'))) {
    return allow('visibility.instances.codes-only', `${run.tier} run: the position, state and error code of failed and blocked instances only, never text or scores`);
  }
  return deny('visibility.instances.withheld', `${run.tier} run of ${run.requestedBy}: its instances are shown to its requester and compliance officers only`);
}
