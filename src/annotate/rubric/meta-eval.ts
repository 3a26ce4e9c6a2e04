/**
 * HealthBench's meta-evaluation: how well the grader agrees with physicians, as simple-evals'
 * healthbench_meta_eval.py computes it. A row of the official meta-eval JSONL holds a conversation
 * (`prompt`), a `completion`, one rubric criterion (`rubric`, plain text: no "[points]"), the
 * physicians' labels (`binary_labels`) with their `anonymized_physician_ids`, and a `category`. The
 * grader is asked GRADER_TEMPLATE about the conversation with the completion as its last turn.
 *
 * Agreement is counted over PAIRS (one rater's label against one other label), per class:
 *  - precision of class c: over the pairs where the rater said c, the share where the other agrees;
 *  - recall of class c: over the pairs where the other said c, the share where the rater agrees;
 *  - f1 of c from those two; balanced = the mean of pos and neg.
 * The model is paired with every physician label of its row; each physician with the other physicians
 * of the row. Figures overall and per category.
 *
 * Where the reference has no key (a class that got no pair), this reports value null with n 0, and an
 * f1 or balanced figure built from a null is null, as the reference's own None branches would give.
 * The reference builds per-category keys by string replacement ("pos" -> "balanced"), which would
 * mangle a category whose name contains "pos" or "precision"; categories here are map keys, so no
 * such collision. Physician ids are data: they group the pairs and never leave this module; only
 * the mean over physicians is reported.
 */
import type { MetaEvalRow } from '../../catalog';

export type { MetaEvalRow };

/** One figure: `value` is a ratio over `n` pairs, null when there was no pair to count. */
export interface Ratio {
  n: number;
  value: number | null;
}

export interface ClassFigures {
  precision: Ratio;
  recall: Ratio;
  f1: Ratio;
}

export interface RaterFigures {
  pos: ClassFigures;
  neg: ClassFigures;
  balanced: ClassFigures;
}

export interface Agreement {
  overall: RaterFigures;
  byCategory: Record<string, RaterFigures>;
}

/** A rated row: one rater's label and the labels it is compared with. */
export interface RatedRow {
  self: boolean;
  others: readonly boolean[];
  category: string;
}

/** Pair counts of one class: agreements and pairs, for precision and for recall. */
interface Counts {
  precisionAgree: number;
  precisionPairs: number;
  recallAgree: number;
  recallPairs: number;
}

const noCounts = (): Counts => ({ precisionAgree: 0, precisionPairs: 0, recallAgree: 0, recallPairs: 0 });

function ratio(agree: number, pairs: number): Ratio {
  return { n: pairs, value: pairs > 0 ? agree / pairs : null };
}

/** F1 as compute_f1_metric: n counts TP + FP + FN once (TP is the precision's agreements). */
function f1(c: Counts): Ratio {
  const p = ratio(c.precisionAgree, c.precisionPairs);
  const r = ratio(c.recallAgree, c.recallPairs);
  if (p.value === null || r.value === null) return { n: p.n + r.n, value: null };
  const n = p.n + r.n - c.precisionAgree;
  if (p.value === 0 && r.value === 0) return { n, value: 0 };
  return { n, value: (2 * p.value * r.value) / (p.value + r.value) };
}

/** compute_balanced_metric: the mean of both classes, null if either is; n adds both (the reference notes it overcounts). */
function balanced(pos: Ratio, neg: Ratio): Ratio {
  return { n: pos.n + neg.n, value: pos.value === null || neg.value === null ? null : (pos.value + neg.value) / 2 };
}

function figuresOf(pos: Counts, neg: Counts): RaterFigures {
  const cls = (c: Counts): ClassFigures => ({ precision: ratio(c.precisionAgree, c.precisionPairs), recall: ratio(c.recallAgree, c.recallPairs), f1: f1(c) });
  const p = cls(pos);
  const q = cls(neg);
  return { pos: p, neg: q, balanced: { precision: balanced(p.precision, q.precision), recall: balanced(p.recall, q.recall), f1: balanced(p.f1, q.f1) } };
}

/** compute_metrics_for_rater_by_class: one rater's pairwise agreement, overall and per category. */
export function raterAgreement(rows: readonly RatedRow[]): Agreement {
  const overall = { pos: noCounts(), neg: noCounts() };
  const perCategory = new Map<string, { pos: Counts; neg: Counts }>();
  for (const row of rows) {
    let cat = perCategory.get(row.category);
    if (!cat) perCategory.set(row.category, (cat = { pos: noCounts(), neg: noCounts() }));
    for (const other of row.others) {
      const agree = row.self === other ? 1 : 0;
      for (const bucket of [overall, cat]) {
        const said = row.self ? bucket.pos : bucket.neg;
        said.precisionPairs += 1;
        said.precisionAgree += agree;
        const truth = other ? bucket.pos : bucket.neg;
        truth.recallPairs += 1;
        truth.recallAgree += agree;
      }
    }
  }
  const byCategory: Record<string, RaterFigures> = {};
  for (const [name, c] of [...perCategory].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) byCategory[name] = figuresOf(c.pos, c.neg);
  return { overall: figuresOf(overall.pos, overall.neg), byCategory };
}

/** A row with the grader's label; undefined when the grade stayed malformed (the row is left out, never read as a label). */
export interface GradedRow {
  /** What the figures read of a row: its physicians' labels and ids and its category. */
  row: Pick<MetaEvalRow, 'binaryLabels' | 'physicianIds' | 'category'>;
  graderLabel: boolean | undefined;
}

export interface MetaEvaluation {
  rows: number;
  ungraded: number;
  physicians: number;
  model: Agreement;
  /** The mean over physicians of each figure, over the physicians that have one (n: how many). */
  physicianMean: Agreement;
}

/** Each physician against the other physicians of the same rows, grouped by (anonymised) physician. */
function physicianAgreements(rows: readonly GradedRow['row'][]): Agreement[] {
  const byPhysician = new Map<string, RatedRow[]>();
  for (const row of rows)
    row.binaryLabels.forEach((label, i) => {
      const id = row.physicianIds[i] as string;
      const list = byPhysician.get(id) ?? [];
      list.push({ self: label, others: [...row.binaryLabels.slice(0, i), ...row.binaryLabels.slice(i + 1)], category: row.category });
      byPhysician.set(id, list);
    });
  return [...byPhysician.values()].map(raterAgreement);
}

function meanRatio(values: readonly Ratio[]): Ratio {
  const present = values.map((r) => r.value).filter((v): v is number => v !== null);
  return { n: present.length, value: present.length > 0 ? present.reduce((a, b) => a + b, 0) / present.length : null };
}

function meanFigures(all: readonly (RaterFigures | undefined)[]): RaterFigures {
  const pick = (k: keyof RaterFigures, m: keyof ClassFigures) => meanRatio(all.filter((f): f is RaterFigures => f !== undefined).map((f) => f[k][m]));
  const cls = (k: keyof RaterFigures): ClassFigures => ({ precision: pick(k, 'precision'), recall: pick(k, 'recall'), f1: pick(k, 'f1') });
  return { pos: cls('pos'), neg: cls('neg'), balanced: cls('balanced') };
}

function meanAgreement(all: readonly Agreement[]): Agreement {
  const categories = [...new Set(all.flatMap((a) => Object.keys(a.byCategory)))].sort();
  const byCategory: Record<string, RaterFigures> = {};
  for (const c of categories) byCategory[c] = meanFigures(all.map((a) => a.byCategory[c]));
  return { overall: meanFigures(all.map((a) => a.overall)), byCategory };
}

/**
 * The meta-evaluation of graded rows: the model against every physician label, and each physician
 * against the others, averaged. The physicians' figures use every row (their labels do not depend on
 * the grader); the model's use the rows it graded.
 */
export function metaEvaluation(graded: readonly GradedRow[]): MetaEvaluation {
  const rated = graded.filter((g): g is { row: GradedRow['row']; graderLabel: boolean } => g.graderLabel !== undefined);
  const physicians = physicianAgreements(graded.map((g) => g.row));
  return {
    rows: graded.length,
    ungraded: graded.length - rated.length,
    physicians: physicians.length,
    model: raterAgreement(rated.map((g) => ({ self: g.graderLabel, others: g.row.binaryLabels, category: g.row.category }))),
    physicianMean: meanAgreement(physicians),
  };
}
