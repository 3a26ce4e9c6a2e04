/**
 * Metrics on hand-checked rows of the shipped data. Expected values were worked out by hand from the
 * rows' Ground Truth Answer / Lower Limit / Upper Limit (MedCalc-Bench), final_decision (PubMedQA)
 * and Error Flag / Error Sentence ID (MEDEC).
 */
import { inProcessMetric, type ScoringMode } from '../../src/metrics';
import type { Instance } from '../../src/catalog';
import { instanceByKey } from '../helpers/instances';

function score(metric: string, prediction: string, instance: Instance, mode: ScoringMode = 'corrected'): number | null {
  const m = inProcessMetric(metric);
  if (!m) throw new Error(`no metric ${metric}`);
  return m.score(prediction, instance, { mode });
}

describe('exact match on PubMedQA (multiple choice, letters map back to options)', () => {
  // 21645374: final_decision "yes" -> option A; 16418930: "no" -> option B.
  it('credits the letter of the right option only', async () => {
    const yes = await instanceByKey('pubmed_qa', '21645374');
    const no = await instanceByKey('pubmed_qa', '16418930');
    expect(yes.choices).toEqual(['yes', 'no', 'maybe']);
    expect(score('exact_match', 'A', yes)).toBe(1);
    expect(score('exact_match', ' A\n', yes)).toBe(1);
    expect(score('exact_match', 'B', yes)).toBe(0);
    expect(score('exact_match', 'B', no)).toBe(1);
  });

  it('gives nothing for a letter with extra characters or the option text, as HELM does', async () => {
    const yes = await instanceByKey('pubmed_qa', '21645374');
    expect(score('exact_match', 'A.', yes)).toBe(0);
    expect(score('exact_match', 'yes', yes)).toBe(0);
    expect(score('quasi_exact_match', 'A)', yes)).toBe(0);
    expect(score('exact_match', 'D', yes)).toBe(0);
  });
});

describe('quasi exact match normalisation', () => {
  const free: Instance = { key: 'x', vars: {}, references: ['The Hepatitis A virus'] };
  it('ignores case, punctuation and articles', () => {
    expect(score('exact_match', 'hepatitis a virus', free)).toBe(0);
    expect(score('quasi_exact_match', 'hepatitis a virus.', free)).toBe(1);
    expect(score('prefix_exact_match', 'The Hepatitis A virus, probably', free)).toBe(1);
  });
});

describe('MedCalc-Bench accuracy on real rows', () => {
  it("range-checks a lab value (row 1: Cockcroft-Gault 25.238, limits 23.9761-26.4999) and fixes HELM's lab bug", async () => {
    const row = await instanceByKey('medcalc_bench', '1');
    expect(row.extra?.category).toBe('lab');
    expect(score('medcalc_bench_accuracy', '25.238', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '24.0', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '26.5', row)).toBe(0);
    expect(score('medcalc_bench_accuracy', '25 mL/min', row)).toBe(0);
    // HELM never credits the lab category: the published behaviour is reproduced in helm mode.
    expect(score('medcalc_bench_accuracy', '25.238', row, 'helm')).toBe(0);
  });

  it('scores dosage conversions (row 948: 53.093, limits 50.43835-55.74765); HELM does not', async () => {
    const row = await instanceByKey('medcalc_bench', '948');
    expect(row.extra?.category).toBe('dosage');
    expect(score('medcalc_bench_accuracy', '55', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '56', row)).toBe(0);
    expect(score('medcalc_bench_accuracy', '53.093', row, 'helm')).toBe(0);
  });

  it('range-checks physical values in both modes (row 61: MAP 100, limits 95-105)', async () => {
    const row = await instanceByKey('medcalc_bench', '61');
    expect(score('medcalc_bench_accuracy', '104.9', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '104.9', row, 'helm')).toBe(1);
    expect(score('medcalc_bench_accuracy', '94', row)).toBe(0);
  });

  it('needs the exact score for rule-based calculators (row 41: CHA2DS2-VASc 4; row 447: FeverPAIN 3)', async () => {
    const risk = await instanceByKey('medcalc_bench', '41');
    expect(score('medcalc_bench_accuracy', '4', risk)).toBe(1);
    expect(score('medcalc_bench_accuracy', '5', risk)).toBe(0);
    expect(score('medcalc_bench_accuracy', '4', risk, 'helm')).toBe(1);
    // HELM compares strings: "4.0" is not "4". The corrected mode compares the score's value.
    expect(score('medcalc_bench_accuracy', '4.0', risk, 'helm')).toBe(0);
    expect(score('medcalc_bench_accuracy', '4.0', risk)).toBe(1);
    const diagnosis = await instanceByKey('medcalc_bench', '447');
    expect(score('medcalc_bench_accuracy', '3', diagnosis)).toBe(1);
    expect(score('medcalc_bench_accuracy', '3.5', diagnosis)).toBe(0);
  });

  it('range-checks decimal risk scores (row 120: Wells PE 1.5, limits 1.425-1.575)', async () => {
    const row = await instanceByKey('medcalc_bench', '120');
    expect(score('medcalc_bench_accuracy', '1.5', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '2', row)).toBe(0);
  });

  it('compares dates as dates (row 928: due date 09/23/2014)', async () => {
    const row = await instanceByKey('medcalc_bench', '928');
    expect(score('medcalc_bench_accuracy', '09/23/2014', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '9/23/2014', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '2014-09-23', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '09/24/2014', row)).toBe(0);
    expect(score('medcalc_bench_accuracy', '02/30/2014', row)).toBe(0);
  });

  it('compares gestational age as weeks and days (row 1028: 0 weeks, 6 days)', async () => {
    const row = await instanceByKey('medcalc_bench', '1028');
    expect(score('medcalc_bench_accuracy', "('0 weeks', '6 days')", row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '0 weeks, 6 days', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '(0, 6)', row)).toBe(1);
    expect(score('medcalc_bench_accuracy', '1 week', row)).toBe(0);
    // HELM requires the tuple format exactly.
    expect(score('medcalc_bench_accuracy', "('0 weeks', '6 days')", row, 'helm')).toBe(1);
    expect(score('medcalc_bench_accuracy', '0 weeks, 6 days', row, 'helm')).toBe(0);
  });
});

describe('MEDEC on real rows', () => {
  // ms-test-0: Error Flag 1, Error Sentence ID 10. ms-test-1: Error Flag 0.
  it('scores the error flag: CORRECT means no error, anything else flags one', async () => {
    const erroneous = await instanceByKey('medec', 'ms-test-0');
    const correct = await instanceByKey('medec', 'ms-test-1');
    expect(score('medec_error_flag_accuracy', 'CORRECT', correct)).toBe(1);
    expect(score('medec_error_flag_accuracy', '3 Something else.', correct)).toBe(0);
    expect(score('medec_error_flag_accuracy', '10 The symptoms are due to Schistosoma mansoni.', erroneous)).toBe(1);
    expect(score('medec_error_flag_accuracy', 'CORRECT.', erroneous)).toBe(1); // "CORRECT." flags an error, as in HELM
    expect(score('medec_error_flag_accuracy', 'CORRECT', erroneous)).toBe(0);
  });

  it('scores the sentence id, which HELM never credits on erroneous notes', async () => {
    const erroneous = await instanceByKey('medec', 'ms-test-0');
    expect(erroneous.references[0]).toMatch(/^10 /);
    expect(score('medec_error_sentence_accuracy', '10 corrected sentence', erroneous)).toBe(1);
    expect(score('medec_error_sentence_accuracy', '9 corrected sentence', erroneous)).toBe(0);
    expect(score('medec_error_sentence_accuracy', '10 corrected sentence', erroneous, 'helm')).toBe(0);
  });
});
