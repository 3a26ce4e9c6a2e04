/**
 * MedHELM's validation of an LLM jury against clinicians (arXiv 2505.23802: ICC between the jury's and
 * the clinicians' ratings after z-score normalisation), computed per dataset and pooled as `ALL`.
 *
 * The method, for one selection of datasets (the figures of dataset D are those of the selection {D}, the
 * `ALL` figures those of every dataset given or of `datasets`):
 *  1. A rating's composite is the mean of its criteria (a missing criterion is skipped, as pandas' mean
 *     skips NaN; a rating with none is left out). The jury's composite is the mean of its criteria.
 *  2. The items compared are those of the selection with a jury score and at least one rating.
 *  3. Each clinician's composites are z-scored over that clinician's own ratings of those items; the
 *     jury (one rater) over its composites of those items. A clinician with fewer than two ratings or one
 *     score for everything cannot be z-scored and is left out (listed with the reason).
 *  4. Per item: the clinicians' mean of z-scored composites. ICC(3,k), k = 2 (that mean and the jury's
 *     z-score), its interval, and Spearman's rho between the two; quadratic-weighted kappa between the
 *     clinicians' mean raw composite and the jury's raw composite, each rounded half to even to 1-5.
 *  5. The clinician-clinician baseline: the two clinicians with the most items in common, ICC(3,k) of
 *     their z-scores on those items.
 *  6. Beyond MedHELM: each judge of the jury alone, and ROUGE-L, against the clinicians' mean (ICC and
 *     Spearman, each z-scored over its own items).
 * Pure: no I/O; a statistic the data cannot give is null with its reason.
 */
import { UserError } from '../errors';
import { type Correlation, type Icc, icc3k, kendallTau, LIKERT_LABELS, type Maybe, quadraticKappa, roundHalfEven, spearman, zScore } from './statistics';

export interface ClinicianRating {
  rater: string;
  dataset: string;
  item: string;
  scores: Record<string, number | null>;
}

export interface JuryScore {
  dataset: string;
  item: string;
  scores: Record<string, number>;
}

export interface JudgeScore extends JuryScore {
  judge: string;
}

export interface RougeScore {
  dataset: string;
  item: string;
  value: number;
}

export interface AgreementInput {
  ratings: readonly ClinicianRating[];
  jury: readonly JuryScore[];
  judges?: readonly JudgeScore[];
  rouge?: readonly RougeScore[];
  criteria: readonly string[];
}

export interface AgreementOptions {
  /** Only these datasets (filtered before anything is z-scored); default all. */
  datasets?: readonly string[];
  /** The sd's delta degrees of freedom in z-scores: 1 (pandas' default, ours) or 0 (scipy's zscore). */
  ddof?: 0 | 1;
  /** 1 - the intervals' confidence (default 0.05). */
  alpha?: number;
}

/** ICC(3,k) and Spearman of one source of scores against the clinicians' mean. */
export interface Comparison {
  items: number;
  icc: Maybe<Icc>;
  spearman: Maybe<Correlation>;
}

export interface SelectionAgreement {
  datasets: string[];
  items: number;
  raters: number;
  ratings: number;
  /** Clinicians left out of the z-scoring (and so of every figure), with why. */
  excludedRaters: { rater: string; reason: string }[];
  jury: Comparison & { kappa: Maybe<number> };
  clinicians: { pair: [string, string] | null; items: number; icc: Maybe<Icc> };
  judges: Record<string, Comparison>;
  rouge: Comparison | null;
}

export interface AgreementReport {
  criteria: string[];
  zScoreDdof: 0 | 1;
  alpha: number;
  byDataset: Record<string, SelectionAgreement>;
  ALL: SelectionAgreement;
}

const key = (dataset: string, item: string) => `${dataset}\u0000${item}`;

function mean(values: readonly number[]): number {
  return values.reduce((s, v) => s + v, 0) / values.length;
}

/** Mean of the criteria given (null skipped); undefined when none is. */
export function composite(scores: Record<string, number | null | undefined>, criteria: readonly string[]): number | undefined {
  const given = criteria.map((c) => scores[c]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  return given.length ? mean(given) : undefined;
}

interface Selection {
  datasets: Set<string>;
  ddof: 0 | 1;
  alpha: number;
}

/** One clinician's composite of one item, raw and z-scored. */
interface Scored {
  rater: string;
  item: string;
  raw: number;
  z: number;
}

/** Per item, one source's composite (jury, a judge, ROUGE-L), over the items compared. */
type ItemValues = Map<string, number>;

function juryComposites(scores: readonly JuryScore[], criteria: readonly string[], sel: Selection): ItemValues {
  const out: ItemValues = new Map();
  for (const s of scores) {
    if (!sel.datasets.has(s.dataset)) continue;
    const c = composite(s.scores, criteria);
    if (c === undefined) continue;
    const k = key(s.dataset, s.item);
    if (out.has(k)) throw new UserError('ratings.invalid', `the jury scores item ${s.item} of dataset ${s.dataset} twice; give one score per item`);
    out.set(k, c);
  }
  return out;
}

/** Each clinician's ratings of the compared items, z-scored per clinician; those that cannot be, listed. */
function scoreClinicians(input: AgreementInput, jury: ItemValues, sel: Selection): { scored: Scored[]; excluded: { rater: string; reason: string }[]; ratings: number } {
  const byRater = new Map<string, { item: string; raw: number }[]>();
  const seen = new Set<string>();
  let ratings = 0;
  for (const r of input.ratings) {
    if (!sel.datasets.has(r.dataset)) continue;
    const item = key(r.dataset, r.item);
    const raw = composite(r.scores, input.criteria);
    if (raw === undefined || !jury.has(item)) continue;
    const once = `${r.rater}\u0000${item}`;
    if (seen.has(once)) throw new UserError('ratings.invalid', `rater ${r.rater} rates item ${r.item} of dataset ${r.dataset} twice; keep one rating per rater and item`);
    seen.add(once);
    ratings++;
    const list = byRater.get(r.rater) ?? [];
    list.push({ item, raw });
    byRater.set(r.rater, list);
  }
  const scored: Scored[] = [];
  const excluded: { rater: string; reason: string }[] = [];
  for (const [rater, list] of [...byRater].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const z = zScore(
      list.map((l) => l.raw),
      sel.ddof,
    );
    if (z.value === null) excluded.push({ rater, reason: z.reason });
    else list.forEach((l, i) => scored.push({ rater, item: l.item, raw: l.raw, z: z.value[i] as number }));
  }
  return { scored, excluded, ratings };
}

/** A source's values z-scored over the items it shares with `items`. */
function zOver(values: ItemValues, items: readonly string[], ddof: 0 | 1): { items: string[]; z: Maybe<number[]> } {
  const shared = items.filter((i) => values.has(i));
  return {
    items: shared,
    z: zScore(
      shared.map((i) => values.get(i) as number),
      ddof,
    ),
  };
}

/** ICC(3,k) and Spearman of a source (z-scored over its items) against the clinicians' mean z-score. */
function compare(values: ItemValues, clinicians: Map<string, number>, sel: Selection): Comparison {
  const { items, z } = zOver(values, [...clinicians.keys()], sel.ddof);
  if (z.value === null) return { items: items.length, icc: z, spearman: z };
  const ours = items.map((i) => clinicians.get(i) as number);
  const theirs = z.value;
  return {
    items: items.length,
    icc: icc3k(
      ours.map((c, i) => [c, theirs[i] as number]),
      sel.alpha,
    ),
    spearman: spearman(ours, theirs),
  };
}

/** The two clinicians with the most items in common (ties: the first pair in name order), and their ICC. */
function clinicianPair(scored: readonly Scored[], sel: Selection): SelectionAgreement['clinicians'] {
  const byRater = new Map<string, Map<string, number>>();
  for (const s of scored) byRater.set(s.rater, (byRater.get(s.rater) ?? new Map()).set(s.item, s.z));
  const raters = [...byRater.keys()].sort();
  let best: { pair: [string, string]; items: string[] } | undefined;
  for (let a = 0; a < raters.length; a++)
    for (let b = a + 1; b < raters.length; b++) {
      const x = byRater.get(raters[a] as string) as Map<string, number>;
      const y = byRater.get(raters[b] as string) as Map<string, number>;
      const items = [...x.keys()].filter((i) => y.has(i));
      if (!best || items.length > best.items.length) best = { pair: [raters[a] as string, raters[b] as string], items };
    }
  if (!best) return { pair: null, items: 0, icc: { value: null, reason: 'fewer than 2 clinicians' } };
  const [x, y] = best.pair.map((r) => byRater.get(r) as Map<string, number>) as [Map<string, number>, Map<string, number>];
  return {
    pair: best.pair,
    items: best.items.length,
    icc: icc3k(
      best.items.map((i) => [x.get(i) as number, y.get(i) as number]),
      sel.alpha,
    ),
  };
}

function judgeComparisons(input: AgreementInput, clinicians: Map<string, number>, sel: Selection): Record<string, Comparison> {
  const judges = [...new Set((input.judges ?? []).map((j) => j.judge))].sort();
  const scoresOf = (judge: string) => (input.judges ?? []).filter((j) => j.judge === judge);
  // fromEntries, not assignment: a judge or dataset named __proto__ stays an entry, not a prototype.
  return Object.fromEntries(judges.map((judge) => [judge, compare(juryComposites(scoresOf(judge), input.criteria, sel), clinicians, sel)]));
}

function rougeComparison(input: AgreementInput, clinicians: Map<string, number>, sel: Selection): Comparison | null {
  if (!input.rouge) return null;
  const values: ItemValues = new Map();
  for (const r of input.rouge) if (sel.datasets.has(r.dataset) && Number.isFinite(r.value)) values.set(key(r.dataset, r.item), r.value);
  return compare(values, clinicians, sel);
}

function selectionAgreement(input: AgreementInput, sel: Selection): SelectionAgreement {
  const jury = juryComposites(input.jury, input.criteria, sel);
  const { scored, excluded, ratings } = scoreClinicians(input, jury, sel);
  const perItem = new Map<string, { z: number[]; raw: number[] }>();
  for (const s of scored) {
    const e = perItem.get(s.item) ?? { z: [], raw: [] };
    e.z.push(s.z);
    e.raw.push(s.raw);
    perItem.set(s.item, e);
  }
  const clinicians = new Map([...perItem].map(([item, e]) => [item, mean(e.z)]));
  const items = [...perItem.keys()];
  const juryComparison = compare(jury, clinicians, sel);
  const kappa = quadraticKappa(
    items.map((i) => roundHalfEven(mean((perItem.get(i) as { raw: number[] }).raw))),
    items.map((i) => roundHalfEven(jury.get(i) as number)),
    LIKERT_LABELS,
  );
  return {
    datasets: [...sel.datasets].sort(),
    items: items.length,
    raters: new Set(scored.map((s) => s.rater)).size,
    ratings,
    excludedRaters: excluded,
    jury: { ...juryComparison, kappa },
    clinicians: clinicianPair(scored, sel),
    judges: judgeComparisons(input, clinicians, sel),
    rouge: rougeComparison(input, clinicians, sel),
  };
}

/** The agreement of the jury (and its judges, and ROUGE-L) with the clinicians, per dataset and `ALL`. */
export function agreement(input: AgreementInput, options: AgreementOptions = {}): AgreementReport {
  if (input.criteria.length === 0) throw new UserError('ratings.invalid', 'no criteria named; name the criteria the ratings score (e.g. accuracy, completeness, clarity)');
  const present = [...new Set(input.ratings.map((r) => r.dataset))].sort();
  const unknown = (options.datasets ?? []).filter((d) => !present.includes(d));
  if (unknown.length) throw new UserError('ratings.unknown-dataset', `no rating of dataset ${unknown.join(', ')}; the ratings cover ${present.join(', ') || 'no dataset'}`);
  const chosen = options.datasets?.length ? [...new Set(options.datasets)].sort() : present;
  const base = { ddof: options.ddof ?? 1, alpha: options.alpha ?? 0.05 } as const;
  const byDataset: Record<string, SelectionAgreement> = Object.fromEntries(chosen.map((d) => [d, selectionAgreement(input, { ...base, datasets: new Set([d]) })]));
  return {
    criteria: [...input.criteria],
    zScoreDdof: base.ddof,
    alpha: base.alpha,
    byDataset,
    ALL: selectionAgreement(input, { ...base, datasets: new Set(chosen) }),
  };
}

export interface ModelScore {
  model: string;
  judge: string;
  item: string;
  value: number;
}

export interface Ranking {
  models: { model: string; score: number; rank: number }[];
}

export interface RankStability {
  judges: string[];
  full: Ranking;
  /** The ranking without each judge, and Kendall's tau-b between its scores and the full ranking's. */
  leaveOneOut: { judge: string; ranking: Ranking; tau: Maybe<number> }[];
}

/** Models by mean jury score (mean over the judges given per item, then over items), best first; ties by name. */
function rankModels(scores: readonly ModelScore[]): Ranking {
  const byModel = new Map<string, Map<string, number[]>>();
  for (const s of scores) {
    if (!Number.isFinite(s.value)) continue;
    const items = byModel.get(s.model) ?? new Map<string, number[]>();
    items.set(s.item, [...(items.get(s.item) ?? []), s.value]);
    byModel.set(s.model, items);
  }
  const rows = [...byModel].map(([model, items]) => ({ model, score: mean([...items.values()].map(mean)) }));
  rows.sort((a, b) => b.score - a.score || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  return { models: rows.map((r, i) => ({ ...r, rank: i + 1 })) };
}

/**
 * How much the leaderboard depends on any one judge: the ranking with all judges and with each left
 * out, and Kendall's tau-b between the models' scores in the two (models present in both).
 */
export function rankStability(scores: readonly ModelScore[]): RankStability {
  const judges = [...new Set(scores.map((s) => s.judge))].sort();
  const full = rankModels(scores);
  const fullScore = new Map(full.models.map((m) => [m.model, m.score]));
  const leaveOneOut = judges.map((judge) => {
    const ranking = rankModels(scores.filter((s) => s.judge !== judge));
    const shared = ranking.models.filter((m) => fullScore.has(m.model));
    const tau: Maybe<number> =
      judges.length < 2
        ? { value: null, reason: 'one judge only: nothing is left when it is left out' }
        : kendallTau(
            shared.map((m) => fullScore.get(m.model) as number),
            shared.map((m) => m.score),
          );
    return { judge, ranking, tau };
  });
  return { judges, full, leaveOneOut };
}
