/**
 * How many items a rating study needs for its ICC to be estimated with a given precision: Zou (2012),
 * "Sample size formulas for estimating intraclass correlation coefficients with precision and assurance",
 * Stat Med 31:3972, as MedHELM planned its clinician study, with the finite-population correction for a
 * dataset that has fewer items than that.
 *
 * With ρ the expected ICC, k raters, w the full width of the (1 - α) interval and assurance 1 - β (the
 * probability that the interval obtained is no wider than w):
 *   A = (1 - ρ)(1 + (k - 1)ρ),  B = dA/dρ = k - 2 + 2ρ - 2kρ,
 *   u = (z_{1-α/2} A + sqrt(z²_{1-α/2} A² + 2 w z_{1-α/2} z_{1-β} A |B|)) / w,
 *   n = 1 + 2u² / (k(k - 1)).
 * Without assurance (z_{1-β} = 0) this is Zou's precision formula n = 1 + 8 z² A² / (k(k - 1) w²); the
 * assurance term widens A by |B| z_{1-β} times the ICC's standard error, sqrt(2/(k(k-1)(n-1))) A.
 * Finite population of N items: n' = N n / (N + n - 1), with n first rounded up (as MedHELM's planning
 * script did). Both are rounded up.
 *
 * Check: ρ = 0.75, w = 0.3, k = 2, assurance 0.8 gives n = 47, and with the correction 36 of MEDIQA's 150
 * and 34 of ACI-Bench's 120 items: MedHELM's planned numbers for those datasets.
 */
import { UserError } from '../errors';
import { normalQuantile } from './distributions';

export interface PlanRequest {
  expectedIcc: number;
  /** Full width of the interval (upper - lower). */
  width: number;
  raters: number;
  assurance: number;
  alpha?: number;
  /** Items in the dataset, for the finite-population correction. */
  population?: number;
}

export interface Plan {
  /** Items needed from an infinite population (ceil). */
  instances: number;
  /** Items needed from `population` items (ceil), when it is given. */
  corrected: number | null;
  /** The formula's value before rounding up. */
  exact: number;
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new UserError('cli.usage', what);
}

/** Zou's n for the expected ICC, width, raters and assurance; see the header. */
export function planInstances(req: PlanRequest): Plan {
  const { expectedIcc: rho, width: w, raters: k, assurance } = req;
  const alpha = req.alpha ?? 0.05;
  check(rho > 0 && rho < 1, '--icc must be between 0 and 1 (exclusive), the ICC you expect');
  check(w > 0 && w < 2, '--width must be between 0 and 2: the full width of the interval you want (e.g. 0.3)');
  check(Number.isInteger(k) && k >= 2, '--raters must be a whole number of at least 2');
  check(assurance >= 0.5 && assurance < 1, '--assurance must be at least 0.5 and below 1 (e.g. 0.8)');
  check(alpha > 0 && alpha < 1, 'alpha must be between 0 and 1');
  check(req.population === undefined || (Number.isInteger(req.population) && req.population >= 1), '--population must be a whole number of items, at least 1');
  const za = normalQuantile(1 - alpha / 2);
  const zb = normalQuantile(assurance);
  const a = (1 - rho) * (1 + (k - 1) * rho);
  const b = k - 2 + 2 * rho - 2 * k * rho;
  const u = (za * a + Math.sqrt(za * za * a * a + 2 * w * za * zb * a * Math.abs(b))) / w;
  const exact = 1 + (2 * u * u) / (k * (k - 1));
  const instances = Math.ceil(exact);
  const n = req.population;
  return { instances, corrected: n === undefined ? null : Math.ceil((n * instances) / (n + instances - 1)), exact };
}
