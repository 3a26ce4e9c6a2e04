/**
 * What model calls cost, estimated from the price table in the config (USD per million tokens, per
 * endpoint id or per model). Estimates only: the provider's invoice is the truth, and calls that
 * failed, judge calls and tokens an endpoint does not report are not counted.
 */
import type { PriceEntry } from '../config';

/** The endpoint fields a price is looked up by: its id first, then its model or deployment name. */
export interface PricedEndpoint {
  id: string;
  model?: string | null;
  deployment?: string | null;
}

export interface Price {
  inputUsdPerMillion: number;
  outputUsdPerMillion: number;
}

export function priceFor(prices: readonly PriceEntry[], endpoint: PricedEndpoint): Price | undefined {
  const byEndpoint = prices.find((p) => p.endpoint === endpoint.id);
  if (byEndpoint) return byEndpoint;
  const names = [endpoint.model, endpoint.deployment].filter((n): n is string => typeof n === 'string' && n !== '');
  return prices.find((p) => p.model !== undefined && names.includes(p.model));
}

export function costUsd(promptTokens: number, completionTokens: number, price: Price): number {
  return (promptTokens * price.inputUsdPerMillion + completionTokens * price.outputUsdPerMillion) / 1_000_000;
}

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
