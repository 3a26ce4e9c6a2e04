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
