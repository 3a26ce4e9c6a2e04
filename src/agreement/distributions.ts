/**
 * The few distribution functions the agreement statistics need, written here rather than taken from a
 * package: the F quantile and survival (ICC intervals and p-values), Student's t survival (Spearman's
 * p-value) and the normal quantile (the sample-size planner). Each is a textbook algorithm whose accuracy
 * (about 1e-13 relative in the range used) is far below the 1e-6 that the fixtures made with scipy check;
 * a dependency such as @stdlib's would bring dozens of packages for four functions.
 *
 *  - log-gamma: Lanczos (g = 7, 9 terms), as in Numerical Recipes 3rd ed. §6.1;
 *  - regularized incomplete beta: Lentz's continued fraction (NR §6.4), on the side where it converges;
 *  - its inverse: bisection on the monotone function, to the last bit of a double;
 *  - regularized incomplete gamma (for the normal CDF): series or continued fraction (NR §6.2);
 *  - normal quantile: Acklam's rational approximation refined by Halley steps on that CDF.
 */

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0. */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let sum = LANCZOS[0] as number;
  for (let i = 1; i < LANCZOS.length; i++) sum += (LANCZOS[i] as number) / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

const TINY = 1e-300;
const EPS = 1e-16;

/** The continued fraction of I_x(a, b) (Lentz), converging fast for x < (a + 1) / (a + b + 2). */
function betaFraction(x: number, a: number, b: number): number {
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 10_000; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < EPS) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1. */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return (front * betaFraction(x, a, b)) / a;
  return 1 - (front * betaFraction(1 - x, b, a)) / b;
}

/** x with I_x(a, b) = p, by bisection (I is increasing in x): slow but never lost. */
export function incompleteBetaInverse(p: number, a: number, b: number): number {
  if (p <= 0) return 0;
  if (p >= 1) return 1;
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 1100; i++) {
    const mid = (lo + hi) / 2;
    if (mid === lo || mid === hi) break;
    if (incompleteBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/** The p quantile of the F distribution with (d1, d2) degrees of freedom (scipy's f.ppf). */
export function fQuantile(p: number, d1: number, d2: number): number {
  const x = incompleteBetaInverse(p, d1 / 2, d2 / 2);
  return (d2 * x) / (d1 * (1 - x));
}

/** P(F > f) for F with (d1, d2) degrees of freedom (scipy's f.sf), computed on the upper side directly. */
export function fSurvival(f: number, d1: number, d2: number): number {
  if (f <= 0) return 1;
  return incompleteBeta(d2 / (d2 + d1 * f), d2 / 2, d1 / 2);
}

/** Two-sided p-value of Student's t with df degrees of freedom: P(|T| >= |t|). */
export function tTwoSided(t: number, df: number): number {
  if (!Number.isFinite(t)) return 0;
  return incompleteBeta(df / (df + t * t), df / 2, 0.5);
}

/** The regularized upper incomplete gamma Q(a, x) (NR §6.2). */
function upperGamma(a: number, x: number): number {
  if (x <= 0) return 1;
  const lnFront = -x + a * Math.log(x) - logGamma(a);
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 10_000; n++) {
      term *= x / (a + n);
      sum += term;
      if (Math.abs(term) < Math.abs(sum) * EPS) break;
    }
    return 1 - sum * Math.exp(lnFront);
  }
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 10_000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < EPS) break;
  }
  return Math.exp(lnFront) * h;
}

/** Φ(z), the standard normal CDF, through erfc(x) = Q(1/2, x²). */
export function normalCdf(z: number): number {
  const q = upperGamma(0.5, (z * z) / 2) / 2;
  return z < 0 ? q : 1 - q;
}

const ACKLAM_A = [-3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1, 2.506628277459239];
const ACKLAM_B = [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
const ACKLAM_C = [-7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968, 2.938163982698783];
const ACKLAM_D = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];

function poly(coefficients: number[], x: number): number {
  return coefficients.reduce((acc, c) => acc * x + c, 0);
}

/** Acklam's approximation of Φ⁻¹(p) (relative error about 1e-9). */
function acklam(p: number): number {
  const low = 0.02425;
  if (p < low) {
    const q = Math.sqrt(-2 * Math.log(p));
    return poly(ACKLAM_C, q) / (poly(ACKLAM_D, q) * q + 1);
  }
  if (p > 1 - low) return -acklam(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (poly(ACKLAM_A, r) * q) / (poly(ACKLAM_B, r) * r + 1);
}

/** Φ⁻¹(p), the standard normal quantile (scipy's norm.ppf), for 0 < p < 1. */
export function normalQuantile(p: number): number {
  if (p <= 0) return -Infinity;
  if (p >= 1) return Infinity;
  let x = acklam(p);
  for (let i = 0; i < 2; i++) {
    const e = normalCdf(x) - p;
    const u = e * Math.sqrt(2 * Math.PI) * Math.exp((x * x) / 2);
    x -= u / (1 + (x * u) / 2);
  }
  return x;
}
