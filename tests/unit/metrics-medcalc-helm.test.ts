/**
 * MedCalc-Bench dates in helm mode, as HELM's MedCalcBenchMetric.check_date reads them, on shipped rows:
 * calendar dates through `datetime.strptime(s, "%m/%d/%Y")` (no ISO dates, nothing after the year,
 * real dates only), gestational ages through `re.match(r"\('(\d+) weeks', '(\d+) days'\)", s)` (exact
 * plural spelling and spacing, anything may follow). Corrected mode keeps its lenient reading.
 * Row 928: due date 09/23/2014. Row 1028: gestational age ('0 weeks', '6 days').
 */
import { inProcessMetric, type ScoringMode } from '../../src/metrics';
import { helmStrptimeDate } from '../../src/metrics/medcalc';
import type { Instance } from '../../src/catalog';
import { instanceByKey } from '../helpers/instances';

function score(prediction: string, instance: Instance, mode: ScoringMode): number | null {
  const m = inProcessMetric('medcalc_bench_accuracy');
  if (!m) throw new Error('no medcalc_bench_accuracy');
  return m.score(prediction, instance, { mode });
}

describe('MedCalc-Bench calendar dates, helm mode (strptime %m/%d/%Y)', () => {
  it('rejects an ISO date, which corrected mode accepts', async () => {
    const row = await instanceByKey('medcalc_bench', '928');
    expect(score('2014-09-23', row, 'helm')).toBe(0);
    expect(score('2014-09-23', row, 'corrected')).toBe(1);
  });

  it('accepts the month and day without leading zeros, and surrounding white space (HELM strips the completion)', async () => {
    const row = await instanceByKey('medcalc_bench', '928');
    for (const p of ['09/23/2014', '9/23/2014', ' 09/23/2014\n']) expect([p, score(p, row, 'helm')]).toEqual([p, 1]);
  });

  it('rejects text after the year ("unconverted data remains") and other dates', async () => {
    const row = await instanceByKey('medcalc_bench', '928');
    for (const p of ['09/23/2014.', '09/23/2014 (EDD)', '09/24/2014', '9/23/14', '23/09/2014']) expect([p, score(p, row, 'helm')]).toEqual([p, 0]);
  });

  it("reads dates as Python's strptime does", () => {
    expect(helmStrptimeDate('01/ 5/2020')).toBe(helmStrptimeDate('1/5/2020')); // %d takes a space-padded day
    expect(helmStrptimeDate('02/29/2020')).toBeDefined();
    for (const bad of ['02/29/2021', '13/01/2020', '00/10/2020', '01/32/2020', '01/01/0000', '01/01/20201', '1/1/2020 ', '']) expect([bad, helmStrptimeDate(bad)]).toEqual([bad, undefined]);
  });
});

describe("MedCalc-Bench gestational age, helm mode (re.match on ('X weeks', 'Y days'))", () => {
  it('rejects singular units and a missing space, which corrected mode accepts', async () => {
    const row = await instanceByKey('medcalc_bench', '1028');
    for (const p of ["('0 week', '6 days')", "('0 weeks', '6 day')", "('0 weeks','6 days')", "( '0 weeks', '6 days')"]) {
      expect([p, score(p, row, 'helm'), score(p, row, 'corrected')]).toEqual([p, 0, 1]);
    }
  });

  it('accepts text after the tuple, as re.match does', async () => {
    const row = await instanceByKey('medcalc_bench', '1028');
    expect(score("('0 weeks', '6 days')", row, 'helm')).toBe(1);
    expect(score("('0 weeks', '6 days') gestational age", row, 'helm')).toBe(1);
    expect(score("('0 weeks', '6 days'),", row, 'helm')).toBe(1);
    expect(score("('0 weeks', '7 days')", row, 'helm')).toBe(0);
  });
});
