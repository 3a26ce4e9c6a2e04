/**
 * The pins a run records when it is requested (contracts/pins.ts says what each means), and the pins
 * of a run from before they were recorded, derived from what its spec does hold.
 */
import { canonicalHash } from '../canonical';
import type { RunPins } from '../contracts';
import { scorerPin } from '../metrics';
import type { RunSpec } from './store';

/** A judge as the judge-set pin sees it: which endpoint, and what it serves. */
export interface PinnedJudge {
  id: string;
  model: string | null;
  deployment: string | null;
}

/** The judge-set pin: the judges asked (endpoint id, model, deployment, in order) and the same-family policy; null without a jury. */
export function judgesPin(jury: RunSpec['jury'], judges: readonly PinnedJudge[]): string | null {
  if (!jury) return null;
  return canonicalHash({ pin: 'ehrbench.judges.v1', sameFamily: jury.sameFamily, floor: jury.floor, judges: judges.map((j) => [j.id, j.model, j.deployment]) });
}

/** The pins a spec states by itself: its data revision and the benchmark's hashes. */
function specPins(spec: Omit<RunSpec, 'pins'>): Pick<RunPins, 'dataset' | 'definition' | 'template'> {
  return { dataset: spec.data?.sha256 ?? 'unknown', definition: spec.benchmark.definitionHash, template: spec.benchmark.templateHash };
}

/** The pins of a run being requested. */
export function pinsForRequest(spec: Omit<RunSpec, 'pins'>, judges: readonly PinnedJudge[]): RunPins {
  return { ...specPins(spec), scorer: scorerPin(spec.benchmark.metrics, spec.scoring), judges: judgesPin(spec.jury, judges) };
}

/** A stored run's pins: as recorded, or (a run from before they were) what its spec holds, "unknown" for the rest. */
export function pinsOf(spec: RunSpec): RunPins {
  return spec.pins ?? { ...specPins(spec), scorer: 'unknown', judges: spec.jury ? 'unknown' : null };
}
