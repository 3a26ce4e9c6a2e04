/** The MedHELM ratings CSV reader: what it accepts, and the one-line errors that never quote a cell. */
import { parseMedhelmRatings } from '../../src/agreement';
import { UserError } from '../../src/errors';

const HEADER = 'username,instance_id,dataset_name,accuracy,completeness,clarity,llm_accuracy,llm_completeness,llm_clarity';
/** A cell standing for patient text: no error may repeat it. */
const PHI = 'Jane Roe MRN 48213';

function errorOf(content: string): UserError {
  try {
    parseMedhelmRatings('ratings.csv', content);
  } catch (err) {
    if (err instanceof UserError) return err;
    throw err;
  }
  throw new Error('no error');
}

describe('the MedHELM ratings CSV', () => {
  it('reads ratings and one jury score per item, in any column order, an empty or 4.0 cell as pandas writes them', () => {
    const csv = [
      'dataset_name,username,instance_id,accuracy,completeness,clarity,llm_accuracy,llm_completeness,llm_clarity',
      'mediqa,dr_a,q1,4.0,,5,4,3.6666666666666665,5',
      'mediqa,dr_b,q1,3,NaN,4,4,3.6666666666666665,5',
      'aci,dr_a,q1,2,2,2,1,1,1',
    ].join('\r\n');
    const input = parseMedhelmRatings('ratings.csv', csv + '\r\n');
    expect(input.criteria).toEqual(['accuracy', 'completeness', 'clarity']);
    expect(input.ratings[0]).toEqual({ rater: 'dr_a', dataset: 'mediqa', item: 'q1', scores: { accuracy: 4, completeness: null, clarity: 5 } });
    expect(input.ratings[1]?.scores.completeness).toBeNull();
    // The same instance_id in two datasets is two items.
    expect(input.jury).toEqual([
      { dataset: 'mediqa', item: 'q1', scores: { accuracy: 4, completeness: 3.6666666666666665, clarity: 5 } },
      { dataset: 'aci', item: 'q1', scores: { accuracy: 1, completeness: 1, clarity: 1 } },
    ]);
  });

  const cases: [string, string, RegExp][] = [
    ['another column (it could carry a comment)', `${HEADER},comment\ndr_a,q1,mediqa,4,4,4,4,4,4,${PHI}`, /line 1, column 10 \(comment\): not a column of the MedHELM ratings file; remove it/],
    ['a header that looks like data', `${HEADER},${PHI}: pain\ndr_a,q1,mediqa,4,4,4,4,4,4,x`, /line 1, column 10: not a column/],
    ['a missing column', HEADER.replace(',clarity,', ',') + '\ndr_a,q1,mediqa,4,4,4,4,4', /line 1: missing column clarity/],
    ['a clinician score out of 1-5', `${HEADER}\ndr_a,q1,mediqa,4,6,4,4,4,4`, /line 2, column completeness: a clinician's score must be a whole number 1-5/],
    ['a half clinician score', `${HEADER}\ndr_a,q1,mediqa,4,3.5,4,4,4,4`, /line 2, column completeness: .*whole number/],
    ['text in a score', `${HEADER}\ndr_a,q1,mediqa,4,4,4,4,4,4\ndr_b,q1,mediqa,"${PHI}",4,4,4,4,4`, /line 3, column accuracy: a clinician's score/],
    ['a jury score missing', `${HEADER}\ndr_a,q1,mediqa,4,4,4,4,,4`, /line 2, column llm_completeness: the jury's score must be a number 1-5/],
    [
      'a jury score that differs between rows of an item',
      `${HEADER}\ndr_a,q1,mediqa,4,4,4,4,4,4\ndr_b,q1,mediqa,4,4,4,4,4,3`,
      /line 3, column llm_clarity: the jury's score of this item differs from line 2/,
    ],
    ['a rater rating an item twice', `${HEADER}\ndr_a,q1,mediqa,4,4,4,4,4,4\ndr_a,q1,mediqa,3,4,4,4,4,4`, /line 3, column username: .*keep one rating per rater and item/],
    ['an empty username', `${HEADER}\n,q1,mediqa,4,4,4,4,4,4`, /line 2, column username: is empty/],
    ['a row with a cell too many', `${HEADER}\ndr_a,q1,mediqa,4,4,4,4,4,4,"${PHI}"`, /line 2: not valid CSV \(CSV_RECORD_INCONSISTENT_FIELDS_LENGTH\)/],
    ['a header only', `${HEADER}\n`, /no ratings; the file has a header only/],
  ];
  it.each(cases)('refuses %s in one line naming the file, line and column, without the cell', (_what, csv, message) => {
    const err = errorOf(csv);
    expect(err.code).toBe('ratings.file-invalid');
    expect(err.message).toMatch(/^ratings\.csv: /);
    expect(err.message).toMatch(message);
    expect(err.message).not.toContain('Jane');
    expect(err.message).not.toContain('\n');
  });
});
