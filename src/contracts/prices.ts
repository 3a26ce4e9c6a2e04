/**
 * What model calls cost, estimated from the price table in the config (USD per million tokens, per
 * endpoint id or per model): the gateway's budget and the export's cost column read the same prices.
 * Estimates only: the provider's invoice is the truth.
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
