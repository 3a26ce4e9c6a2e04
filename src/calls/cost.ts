/**
 * What a call is charged for (the prices themselves are in src/contracts, shared with the export).
 * Calls that failed are not counted. Usage an endpoint does not report truthfully is charged at the
 * call's worst case (chargedUsage), never at what it says.
 */

/** Tokens a chat request adds around the prompt (role markers, template): generous for every provider. */
const CHAT_OVERHEAD_TOKENS = 16;

/**
 * An upper bound on a prompt's tokens without a tokenizer: every token of a byte-level BPE or a
 * SentencePiece vocabulary with byte fallback covers at least one UTF-8 byte, so bytes + the chat
 * overhead is never below the real count (typically about four times above it for English).
 */
export function promptTokenBound(prompt: string): number {
  return Buffer.byteLength(prompt, 'utf8') + CHAT_OVERHEAD_TOKENS;
}

/** Why a call's reported usage was not taken: its worst case was charged instead. */
export type UsageProblem = 'missing' | 'invalid' | 'over-request' | 'implausibly-low';

export interface ReportedUsage {
  promptTokens: number | null;
  completionTokens: number | null;
  reasoningTokens: number | null;
}

export interface UsageBounds {
  /** The prompt's token upper bound (promptTokenBound) and the request's output cap (max tokens). */
  promptTokens: number;
  completionTokens: number;
  /** UTF-8 bytes of the prompt and of the answer's text, for the lower bounds. */
  promptBytes: number;
  answerBytes: number;
}

/**
 * The fewest tokens a text can be: no vocabulary of the models ehrbench calls has ordinary tokens over
 * 64 bytes, so fewer than bytes/64 is not a count but a way to spend without paying. A heuristic floor:
 * crossing it only charges the worst case and says so.
 */
const MAX_BYTES_PER_TOKEN = 64;

/**
 * The tokens a call is charged: what the endpoint reported when each figure is a whole number between
 * the lower bound of its text and what the request allows; else the call's worst case, both figures
 * (the budget hold): an endpoint that says one thing untrue is not believed on the other. A figure
 * missing (several OpenAI-compatible servers leave usage out), negative, beyond the request or
 * implausibly low never lowers the spend. `problem` names what was wrong with the first such figure.
 */
export function chargedUsage(reported: ReportedUsage, bounds: UsageBounds): ReportedUsage & { problem?: UsageProblem } {
  const problem =
    problemOf(reported.promptTokens, bounds.promptTokens, Math.ceil(bounds.promptBytes / MAX_BYTES_PER_TOKEN)) ??
    problemOf(reported.completionTokens, bounds.completionTokens, Math.ceil(bounds.answerBytes / MAX_BYTES_PER_TOKEN));
  if (problem) return { promptTokens: bounds.promptTokens, completionTokens: bounds.completionTokens, reasoningTokens: null, problem };
  const { promptTokens, completionTokens, reasoningTokens: r } = reported as { promptTokens: number; completionTokens: number; reasoningTokens: number | null };
  // Reasoning tokens are part of the completion tokens: kept only when they fit inside them.
  const reasoningTokens = r !== null && Number.isSafeInteger(r) && r >= 0 && r <= completionTokens ? r : null;
  return { promptTokens, completionTokens, reasoningTokens };
}

function problemOf(reported: number | null, most: number, least: number): UsageProblem | undefined {
  if (reported === null || reported === undefined) return 'missing';
  if (!Number.isSafeInteger(reported) || reported < 0) return 'invalid';
  if (reported > most) return 'over-request';
  if (reported < Math.min(least, most)) return 'implausibly-low';
  return undefined;
}
