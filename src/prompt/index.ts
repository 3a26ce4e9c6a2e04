/**
 * Sendable prompts: the only text the outbound gateway (src/calls) sends. A prompt minted by the
 * de-identification stage, or a plain prompt of a tier that needs no de-identification. A class, not a
 * string, so the check holds at run time too: a bare string cannot reach the gateway's `complete`.
 *
 * A prompt is one text (sent as one user message) or a conversation (HealthBench: system, user and
 * assistant turns, sent as they are). Both go the same way: de-identification mints either, and the
 * gateway decides, budgets, audits and sends either.
 */
import { requiresDeidentification, type Tier } from '../tiers';

const MINT = Symbol('sendable-prompt');

export type ChatRole = 'system' | 'user' | 'assistant';

/** One turn of a conversation. Its content is instance text: PHI wherever the data is EHR-derived. */
export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string;
}

/** What the prompt stage builds: one text, or a conversation's turns in order. */
export type PromptContent = string | readonly ChatMessage[];

export const CHAT_ROLES: readonly ChatRole[] = ['system', 'user', 'assistant'];

export function isConversation(prompt: PromptContent): prompt is readonly ChatMessage[] {
  return typeof prompt !== 'string';
}

/**
 * The one string a prompt is measured, hashed and bounded by (request bytes, the audit's
 * requestSha256, the budget's token bound): the text itself, or the conversation's turns as JSON,
 * which holds every turn's role and content (so its bytes bound every turn's tokens and their markers).
 */
export function promptPayload(prompt: PromptContent): string {
  return isConversation(prompt) ? JSON.stringify(prompt.map((m) => ({ role: m.role, content: m.content }))) : prompt;
}

export class SendablePrompt {
  /** Callable only with this module's key: use deidentifiedPrompt or plainPrompt. */
  constructor(
    key: symbol,
    /** What the endpoint receives: the prompt, or for a conversation its turns as JSON (promptPayload). */
    readonly text: string,
    /** True when it came out of the de-identification stage (residual scan passed). */
    readonly deidentified: boolean,
    /** The turns sent, for a conversation; absent for one text (sent as one user message). */
    readonly messages?: readonly ChatMessage[],
  ) {
    if (key !== MINT) throw new Error('SendablePrompt is minted by deidentifiedPrompt or plainPrompt only');
  }
}

function minted(prompt: PromptContent, deidentified: boolean): SendablePrompt {
  if (!isConversation(prompt)) return new SendablePrompt(MINT, prompt, deidentified);
  // A copy: the caller's array cannot change what was checked.
  const messages = Object.freeze(prompt.map((m) => Object.freeze({ role: m.role, content: m.content })));
  return new SendablePrompt(MINT, promptPayload(messages), deidentified, messages);
}

/**
 * A prompt that passed de-identification and its residual scan (every turn of a conversation). Only
 * the de-identification stage calls this (the boundary test fails on any other caller in src/).
 */
export function deidentifiedPrompt(prompt: PromptContent): SendablePrompt {
  return minted(prompt, true);
}

/**
 * A prompt sent as built: only when its data is not EHR-derived, i.e. the run does not de-identify
 * (a run's `deidentify` is fixed at request from its benchmark's data tier: never for EHR tiers).
 */
export function plainPrompt(dataTier: Tier, prompt: PromptContent): SendablePrompt {
  if (requiresDeidentification(dataTier)) throw new Error(`a ${dataTier}-tier prompt is sent only after de-identification`);
  return minted(prompt, false);
}
