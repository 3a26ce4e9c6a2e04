/**
 * HealthBench's meta-evaluation (the grader against physicians): the pairwise figures checked against
 * simple-evals' own test case (healthbench_meta_eval_test.py) and against the reference's arithmetic
 * written again here, independently, with its flat string keys; the meta-eval line's refusals (line
 * and field, never a value); the grader prompt filled as the reference fills it. The fixture is made
 * up here; physician ids are fake.
 */
import { GRADER_TEMPLATE, metaEvalGraderPrompt, metaEvalRow, metaEvaluation, raterAgreement, type Agreement, type MetaEvalRow } from '../../src/annotate';
import { UserError } from '../../src/errors';

type Flat = Record<string, { n: number; value: number | null }>;

/** compute_metrics_for_rater_by_class as the reference writes it: lists of agreements under string keys, then f1 and balanced by key replacement. */
function referenceMetrics(self: boolean[], others: boolean[][], clusters: string[], who: string): Flat {
  const lists: Record<string, boolean[]> = {};
  const push = (k: string, v: boolean) => (lists[k] ??= []).push(v);
  self.forEach((s, i) => {
    for (const o of others[i]!) {
      const p = `pairwise_${who}_precision_${s ? 'pos' : 'neg'}`;
      const r = `pairwise_${who}_recall_${o ? 'pos' : 'neg'}`;
      for (const k of [p, `${clusters[i]}: ${p}`, r, `${clusters[i]}: ${r}`]) push(k, s === o);
    }
  });
  const m: Flat = {};
  for (const [k, l] of Object.entries(lists)) m[k] = { n: l.length, value: l.filter(Boolean).length / l.length };
  const f1s: Flat = {};
  for (const k of Object.keys(m)) {
    if (!k.includes('precision')) continue;
    const p = m[k]!;
    const r = m[k.replace('precision', 'recall')];
    if (!r) continue;
    const tp = p.value! * p.n;
    f1s[k.replace('precision', 'f1')] = p.value === 0 && r.value === 0 ? { n: p.n + r.n - tp, value: 0 } : { n: p.n + r.n - tp, value: (2 * p.value! * r.value!) / (p.value! + r.value!) };
  }
  Object.assign(m, f1s);
  const bal: Flat = {};
  for (const k of Object.keys(m)) {
    if (!k.includes('pos')) continue;
    const neg = m[k.replace('pos', 'neg')];
    if (!neg) continue;
    bal[k.replace('pos', 'balanced')] = { n: m[k]!.n + neg.n, value: (m[k]!.value! + neg.value!) / 2 };
  }
  return { ...m, ...bal };
}

/** Our structured figures under the reference's keys; a null (no pair) has no key, as in the reference. */
function flatten(a: Agreement, who: string): Flat {
  const out: Flat = {};
  const put = (prefix: string, f: Agreement['overall']) => {
    for (const cls of ['pos', 'neg', 'balanced'] as const)
      for (const metric of ['precision', 'recall', 'f1'] as const) {
        const r = f[cls][metric];
        if (r.value !== null) out[`${prefix}pairwise_${who}_${metric}_${cls}`] = r;
      }
  };
  put('', a.overall);
  for (const [c, f] of Object.entries(a.byCategory)) put(`${c}: `, f);
  return out;
}

function expectSameFigures(ours: Flat, ref: Flat) {
  expect(Object.keys(ours).sort()).toEqual(Object.keys(ref).sort());
  for (const k of Object.keys(ref)) {
    expect(ours[k]!.n).toBeCloseTo(ref[k]!.n, 9);
    expect(ours[k]!.value).toBeCloseTo(ref[k]!.value!, 12);
  }
}

describe('pairwise agreement of one rater', () => {
  // simple-evals' own case: self [T, F, T], others [[T, T, F], [T, F], [F]], clusters a, a, b
  const rows = [
    { self: true, others: [true, true, false], category: 'a' },
    { self: false, others: [true, false], category: 'a' },
    { self: true, others: [false], category: 'b' },
  ];
  const a = raterAgreement(rows);

  it('counts ratios over pairs, per class, as the reference test expects', () => {
    expect(a.overall.pos.precision).toEqual({ n: 4, value: 2 / 4 });
    expect(a.overall.neg.precision).toEqual({ n: 2, value: 1 / 2 });
    expect(a.overall.pos.recall).toEqual({ n: 3, value: 2 / 3 });
    expect(a.overall.neg.recall).toEqual({ n: 3, value: 1 / 3 });
    const f1pos = (2 * (1 / 2) * (2 / 3)) / (1 / 2 + 2 / 3);
    const f1neg = (2 * (1 / 2) * (1 / 3)) / (1 / 2 + 1 / 3);
    expect(a.overall.pos.f1.value).toBeCloseTo(f1pos, 12);
    expect(a.overall.neg.f1.value).toBeCloseTo(f1neg, 12);
    expect(a.overall.balanced.f1.value).toBeCloseTo((f1pos + f1neg) / 2, 12);
    expect(a.byCategory.a!.pos.precision).toEqual({ n: 3, value: 2 / 3 });
    expect(a.byCategory.a!.neg.precision).toEqual({ n: 2, value: 1 / 2 });
    expect(a.byCategory.a!.pos.recall).toEqual({ n: 3, value: 2 / 3 });
    expect(a.byCategory.a!.neg.recall).toEqual({ n: 2, value: 1 / 2 });
  });

  it('gives null, not 0, for a class with no pair (category b never says "negative"), and nulls what is built on it', () => {
    expect(a.byCategory.b!.neg.precision).toEqual({ n: 0, value: null });
    expect(a.byCategory.b!.neg.f1.value).toBeNull();
    expect(a.byCategory.b!.balanced.f1.value).toBeNull();
    expect(a.byCategory.b!.balanced.precision.value).toBeNull();
    // recall of neg does have a pair: the other said negative, the rater did not
    expect(a.byCategory.b!.neg.recall).toEqual({ n: 1, value: 0 });
    // pos: precision 0/1, recall has no pair
    expect(a.byCategory.b!.pos.precision).toEqual({ n: 1, value: 0 });
    expect(a.byCategory.b!.pos.recall).toEqual({ n: 0, value: null });
  });

  it('matches the reference arithmetic on its own case and on a larger one with several categories and total disagreement', () => {
    expectSameFigures(flatten(a, 'model'), referenceMetrics([true, false, true], [[true, true, false], [true, false], [false]], ['a', 'a', 'b'], 'model'));
    const self = [true, true, false, false, true, false, true, false];
    const others = [[true, false, true], [true, true], [false, false, true], [true], [true, true, true], [false, true], [false], [true]];
    const cats = ['hedging', 'hedging', 'emergency', 'emergency', 'context', 'context', 'global', 'global'];
    // "global": the rater says pos where the other says neg and the reverse: precision and recall 0 for both classes, f1 0 (not null)
    const ours = raterAgreement(self.map((s, i) => ({ self: s, others: others[i]!, category: cats[i]! })));
    expect(ours.byCategory.global!.pos.f1).toEqual({ n: 2, value: 0 });
    expect(ours.byCategory.global!.balanced.f1.value).toBe(0);
    expectSameFigures(flatten(ours, 'model'), referenceMetrics(self, others, cats, 'model'));
  });
});

const row = (over: Partial<MetaEvalRow> & Pick<MetaEvalRow, 'binaryLabels' | 'physicianIds' | 'category'>): MetaEvalRow => ({
  prompt: [{ role: 'user', content: 'Synthetic question.' }],
  completion: 'Synthetic answer.',
  rubric: 'Synthetic criterion.',
  ...over,
});

describe('the meta-evaluation of graded rows', () => {
  const rows = [
    row({ binaryLabels: [true, true, false], physicianIds: ['p1', 'p2', 'p3'], category: 'a' }),
    row({ binaryLabels: [false, false], physicianIds: ['p1', 'p3'], category: 'a' }),
    row({ binaryLabels: [true, false], physicianIds: ['p2', 'p3'], category: 'b' }),
  ];

  it('pairs the model with every physician label, and each physician with the others, then averages the physicians', () => {
    const m = metaEvaluation([
      { row: rows[0]!, graderLabel: true },
      { row: rows[1]!, graderLabel: false },
      { row: rows[2]!, graderLabel: true },
    ]);
    expect(m).toMatchObject({ rows: 3, ungraded: 0, physicians: 3 });
    expectSameFigures(
      flatten(m.model, 'model'),
      referenceMetrics(
        [true, false, true],
        [
          [true, true, false],
          [false, false],
          [true, false],
        ],
        ['a', 'a', 'b'],
        'model',
      ),
    );
    // Physicians by hand: p1 rows (T vs [T,F]), (F vs [F]); p2 (T vs [T,F]), (T vs [F]); p3 (F vs [T,T]), (F vs [F]), (F vs [T]).
    const p1 = referenceMetrics([true, false], [[true, false], [false]], ['a', 'a'], 'physician');
    const p2 = referenceMetrics([true, true], [[true, false], [false]], ['a', 'b'], 'physician');
    const p3 = referenceMetrics([false, false, false], [[true, true], [false], [true]], ['a', 'a', 'b'], 'physician');
    const key = 'pairwise_physician_f1_balanced';
    const present = [p1, p2, p3].filter((p) => p[key]).map((p) => p[key]!.value!);
    // p2 never says negative and p3 never says positive: only p1 has a balanced F1
    expect(present).toHaveLength(1);
    expect(m.physicianMean.overall.balanced.f1).toEqual({ n: 1, value: expect.closeTo(present[0]!, 12) });
    const recallPos = [p1, p2, p3].map((p) => p.pairwise_physician_recall_pos!.value!);
    expect(m.physicianMean.overall.pos.recall.value).toBeCloseTo((recallPos[0]! + recallPos[1]! + recallPos[2]!) / 3, 12);
    expect(m.physicianMean.overall.pos.recall.n).toBe(3);
  });

  it('leaves a row whose grade stayed malformed out of the model figures, never as a label', () => {
    const m = metaEvaluation([
      { row: rows[0]!, graderLabel: true },
      { row: rows[1]!, graderLabel: undefined },
      { row: rows[2]!, graderLabel: true },
    ]);
    expect(m).toMatchObject({ rows: 3, ungraded: 1 });
    expect(m.model.overall.pos.precision).toEqual({ n: 5, value: 3 / 5 });
    expect(m.model.overall.neg.precision).toEqual({ n: 0, value: null });
  });

  it('reports no physician id, only figures', () => {
    const m = metaEvaluation(rows.map((r) => ({ row: r, graderLabel: true })));
    expect(JSON.stringify(m)).not.toMatch(/p[123]"/);
  });
});

describe('a meta-eval line', () => {
  const good = {
    prompt: [
      { role: 'system', content: 'S.' },
      { role: 'user', content: 'Q?' },
    ],
    completion: 'A.',
    rubric: 'Mentions X.',
    binary_labels: [true, false],
    anonymized_physician_ids: ['x1', 'x2'],
    category: 'cluster_demo',
  };

  it('is read, and its grader prompt is GRADER_TEMPLATE with the completion as the last turn and the rubric text as is', () => {
    const r = metaEvalRow(good, 'meta.jsonl: line 1');
    const prompt = metaEvalGraderPrompt(r);
    expect(prompt).toBe(GRADER_TEMPLATE.replace('<<conversation>>', 'system: S.\n\nuser: Q?\n\nassistant: A.').replace('<<rubric_item>>', 'Mentions X.'));
  });

  it.each([
    [{ binary_labels: [true, 'yes'] }, 'binary_labels'],
    [{ anonymized_physician_ids: ['x1'] }, 'anonymized_physician_ids'],
    [{ rubric: 7 }, 'rubric'],
    [{ prompt: [{ role: 'user' }] }, 'prompt[0]'],
    [{ category: '' }, 'category'],
  ])('is refused naming the line and the field, never a value (%j)', (change, field) => {
    let err: unknown;
    try {
      metaEvalRow({ ...good, ...change }, 'meta.jsonl: line 3');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('dataset.bad-column');
    expect((err as Error).message).toContain(`meta.jsonl: line 3: field "${field}"`);
    expect((err as Error).message).not.toMatch(/Q\?|Mentions|x1|yes/);
  });
});
