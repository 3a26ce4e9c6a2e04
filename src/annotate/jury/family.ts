/**
 * Model families, for leaving a judge of the evaluated model's own family out of its jury (a model
 * grading its own kind is the bias MedHELM's leaderboard avoided). The endpoint's `family` wins;
 * else the family is read from its model or deployment name.
 */
import type { Endpoint } from '../../contracts';

const FAMILIES: [string, RegExp][] = [
  ['gpt', /(?:^|[^a-z])(?:gpt|o[1-9](?:-|$)|openai|chatgpt)/i],
  ['claude', /claude|anthropic/i],
  ['llama', /llama|meta-/i],
  ['gemini', /gemini|gemma|palm|google/i],
  ['mistral', /mistral|mixtral|ministral|codestral/i],
  ['qwen', /qwen|qwq/i],
  ['deepseek', /deepseek/i],
  ['phi', /(?:^|[^a-z])phi-?\d/i],
];

export function modelFamily(endpoint: Pick<Endpoint, 'family' | 'model' | 'deployment'>): string | undefined {
  if (endpoint.family) return endpoint.family;
  const name = [endpoint.model, endpoint.deployment].filter(Boolean).join(' ');
  return FAMILIES.find(([, re]) => re.test(name))?.[0];
}

/** Same family only when both are known: an endpoint of unknown family is never left out on a guess. */
export function sameFamily(a: Pick<Endpoint, 'family' | 'model' | 'deployment'>, b: Pick<Endpoint, 'family' | 'model' | 'deployment'>): boolean {
  const fa = modelFamily(a);
  return fa !== undefined && fa === modelFamily(b);
}
