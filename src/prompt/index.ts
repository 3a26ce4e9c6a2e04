/**
 * Sendable prompts: the only text the outbound gateway (src/calls) sends. A prompt minted by the
 * de-identification stage, or a plain prompt of a tier that needs no de-identification. A class, not a
 * string, so the check holds at run time too: a bare string cannot reach the gateway's `complete`.
 */
import { requiresDeidentification, type Tier } from '../tiers';

const MINT = Symbol('sendable-prompt');

export class SendablePrompt {
  /** Callable only with this module's key: use deidentifiedPrompt or plainPrompt. */
  constructor(
    key: symbol,
    /** What the endpoint receives. */
    readonly text: string,
    /** True when it came out of the de-identification stage (residual scan passed). */
    readonly deidentified: boolean,
  ) {
    if (key !== MINT) throw new Error('SendablePrompt is minted by deidentifiedPrompt or plainPrompt only');
  }
}

/**
 * A prompt that passed de-identification and its residual scan. Only the de-identification stage
 * calls this (the boundary test fails on any other caller in src/).
 */
export function deidentifiedPrompt(text: string): SendablePrompt {
  return new SendablePrompt(MINT, text, true);
}

/**
 * A prompt sent as built: only when its data is not EHR-derived, i.e. the run does not de-identify
 * (a run's `deidentify` is fixed at request from its benchmark's data tier: never for EHR tiers).
 */
export function plainPrompt(dataTier: Tier, text: string): SendablePrompt {
  if (requiresDeidentification(dataTier)) throw new Error(`a ${dataTier}-tier prompt is sent only after de-identification`);
  return new SendablePrompt(MINT, text, false);
}
