/** MedHELM's three access tiers, from least to most sensitive. */
export const TIERS = ['public', 'approval-required', 'private'] as const;
export type Tier = (typeof TIERS)[number];

/** True when data of `tier` may go where at most `ceiling` is allowed. */
export function tierWithin(tier: Tier, ceiling: Tier): boolean {
  return TIERS.indexOf(tier) <= TIERS.indexOf(ceiling);
}

/** EHR-derived tiers: their prompts are de-identified before they leave the process. */
export function requiresDeidentification(tier: Tier): boolean {
  return tier !== 'public';
}
