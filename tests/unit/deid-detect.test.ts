/**
 * Detection of each Safe Harbor identifier kind, and the clinical look-alikes that must survive.
 * Every name, number and place here is invented.
 */
import { Deidentifier, defaultSettings, type Span, type SpanType } from '../../src/deid';

const deid = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 3));

/** The text of each span found, with its type. */
function found(text: string): [SpanType, string][] {
  return deid.find(text).map((s: Span) => [s.type, text.slice(s.start, s.end)]);
}

/** Whether every letter and digit of `part` (first occurrence) is inside some span. */
function covered(text: string, part: string): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  const spans = deid.find(text);
  for (let i = at; i < at + part.length; i++) {
    if (/[A-Za-z0-9]/.test(text.charAt(i)) && !spans.some((s) => s.start <= i && i < s.end)) return false;
  }
  return true;
}

function untouched(text: string, part: string): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  return !deid.find(text).some((s) => s.start < at + part.length && at < s.end);
}

describe('names', () => {
  it.each([
    ['a title', 'Seen by Dr. Falkenrath this morning.', 'Falkenrath'],
    ['a title without a dot, lowercase shorthand', 'dr petrossian aware of k 3.1', 'petrossian'],
    ['a credential after', 'Note written by R. Sandoval, RN at shift change.', 'R. Sandoval'],
    ['M.D. with dots', 'Electronically signed: Hanna Oyelaran-Birch, M.D.', 'Hanna Oyelaran-Birch'],
    ['a relation before', 'Daughter Prisca will visit tomorrow.', 'Prisca'],
    ['a relation after, in parentheses', 'Wendell (husband) called twice.', 'Wendell'],
    ['a possessive before a relation', "This is Ruth Kessler's son writing.", 'Ruth Kessler'],
    ['a label', 'Attending: Tobias Renwick, MD', 'Tobias Renwick'],
    ['"Last, First M." after a label', 'Patient: Hollis, Marguerite E.    MRN: 00384157', 'Hollis, Marguerite E'],
    ['ALL-CAPS shorthand with a relation', 'FULL CODE PER HCP (SON GIDEON). NO SEDATION.', 'GIDEON'],
    ['ALL-CAPS with a title', 'UPDATED BY DR MCALLISTER. PLAN AS ABOVE.', 'MCALLISTER'],
    ['an initial and a surname before RN in capitals', 'CONT ABX.\nB. OKONKWO RN', 'B. OKONKWO'],
    ['a name from the lexicons without any cue', 'Overnight Marguerite was restless and pulled at her IV.', 'Marguerite'],
    ['a contact verb', 'Spoke with Kwame about the plan.', 'Kwame'],
    ['a role before the name', 'Call HO Kwame with any changes.', 'Kwame'],
    ['a closing', 'Thanks,\nDana Kessler', 'Dana Kessler'],
    ['particles', 'Attending: Sanne van de Berg, MD', 'Sanne van de Berg'],
    // "cell" and "test" are heads of eponyms ("Schwann cell"), but not past a comma or a parenthesis
    ['a label, then a comma and "cell"', 'Daughter: Mary Smith, cell 617-555-0101.', 'Mary Smith'],
    ['a relation, then "(cell"', 'Called daughter Ama Okonkwo (cell 617-555-0101).', 'Ama Okonkwo'],
    ['a relation, then a comma and "test"', 'Wife Ngozi Adeyemi, test results reviewed with her.', 'Ngozi Adeyemi'],
    ['no cue, in capitals, found once before in the note', 'Patient Chidinma Okafor admitted. OKAFOR, CHIDINMA asked about discharge.', 'OKAFOR, CHIDINMA'],
    // a chain: the relation makes "Vanadoz" a name, its recurrence widens to "Qimufev", and that recurs in capitals
    ['in capitals, known only through a recurrence that widened', '98-year-old patient Qimufev Vanadoz admitted. Daughter Vamexez Vanadoz updated. VANADOZ, QIMUFEV asked about discharge.', 'QIMUFEV'],
  ])('finds a name with %s', (_label, text, name) => {
    expect(covered(text, name)).toBe(true);
  });

  it('keeps the title and the possessive outside the span', () => {
    const text = "Dr. Falkenrath's note was reviewed.";
    expect(found(text)).toContainEqual(['NAME', 'Falkenrath']);
  });
});

describe('dates: every element but the year, in clinical forms', () => {
  it.each([
    ['m/d', 'Admitted 7/22 with dyspnea.', '7/22'],
    ['m-d-yyyy', 'DOB 7-22-2104.', '7-22-2104'],
    ['m/d/yy', 'Seen 03/17/87.', '03/17/87'],
    ['ISO', 'Exam date 2091-08-02 14:22', '2091-08-02'],
    ['d Mon', 'Echo on 22 Jul showed EF 30%.', '22 Jul'],
    ['Month d, yyyy', 'Surgery on July 22nd, 2104 went well.', 'July 22nd, 2104'],
    ['d-Mon-yyyy', 'Culture drawn 22-Jul-2104.', '22-Jul-2104'],
    ['Month yyyy', 'Echo Jan 2087 showed EF 30%.', 'Jan 2087'],
    ['the 14th', 'She ran out of torsemide on the 14th.', 'the 14th'],
    ["'92", "Last colonoscopy in '92.", "'92"],
    ['a month alone after "in"', 'Symptoms began in August.', 'August'],
  ])('finds %s', (_form, text, date) => {
    expect(found(text)).toContainEqual(['DATE', date]);
  });

  it('finds both ends of a range such as 3/4-3/6', () => {
    const spans = found('Inpatient 3/4-3/6 for pneumonia.');
    expect(spans).toContainEqual(['DATE', '3/4']);
    expect(spans).toContainEqual(['DATE', '3/6']);
  });
});

describe('look-alikes survive', () => {
  it.each([
    ['a dose', 'Percocet 5/325 one tab q6h prn.', '5/325'],
    ['a pain score', 'Pain 5/10 in the lower back.', '5/10'],
    ['a pain score in words', 'Rates her pain at 7/10 after ambulation.', '7/10'],
    ['a blood pressure', 'BP 120/80, HR 72.', '120/80'],
    ['strength', 'Strength 5/5 throughout.', '5/5'],
    ['a murmur grade', 'A 2/6 systolic murmur at the LUSB.', '2/6'],
    ['half a tablet', 'Takes 1/2 tab of metoprolol.', '1/2'],
    ['a time', 'Labs drawn at 0400, repeat at 1600.', '0400'],
    ['a clock time', 'Discussed at 15:05 by phone.', '15:05'],
    ['lab values', 'Na 139, K 4.4, Cr 1.6, WBC 11.2, plt 245.', 'Cr 1.6'],
    ['an eponym device', 'Foley draining clear yellow urine.', 'Foley'],
    ['MAE', 'Neuro: MAE, PERRLA.', 'MAE'],
    ['a scale', 'Glasgow coma scale 15.', 'Glasgow'],
    ['a sign', "Murphy's sign negative, Homans sign negative.", 'Murphy'],
    ['a syndrome', 'History of Stevens-Johnson syndrome.', 'Stevens-Johnson'],
    ['a syndrome after its abbreviation', 'Known Wolff-Parkinson-White (WPW) syndrome.', 'Wolff-Parkinson-White'],
    ['an eponym of a name found elsewhere in the note', 'Seen by Dr. Fogarty overnight. Fogarty catheter placed.', 'Fogarty catheter'],
    ['an ordinal that is not a day', 'Tenderness at the 5th intercostal space.', 'the 5th'],
    ['ages up to 89', 'A 71 yo woman with CHF.', '71'],
    ['a country', 'She returned from Brazil last week.', 'Brazil'],
    ['a state', 'He moved to Nevada in the spring.', 'Nevada'],
  ])('%s', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });
});

describe('the other identifier kinds', () => {
  it.each([
    ['LOCATION', 'Lives at 214 Pellham Road, Framingham, MA 01702.', '214 Pellham Road'],
    ['LOCATION', 'Lives at 214 Pellham Road, Framingham, MA 01702.', 'Framingham'],
    ['ZIP', 'Lives at 214 Pellham Road, Framingham, MA 01702.', '01702'],
    ['LOCATION', "Presented to the St. Aldric's ED on arrival.", "St. Aldric's"],
    ['LOCATION', 'PCP at Northgate Family Practice.', 'Northgate Family Practice'],
    ['LOCATION', 'Her daughter visits from Leominster.', 'Leominster'],
    ['AGE', 'A 93 yo woman with CHF.', '93'],
    ['AGE', 'PT IS A 91 YO M ADMITTED W/ UROSEPSIS.', '91'],
    ['PHONE', 'Call (508) 555-0187 with results.', '(508) 555-0187'],
    ['PHONE', 'Reach me at 978.555.0112 after 5.', '978.555.0112'],
    ['PHONE', 'HO pager 4-7721.', '4-7721'],
    ['FAX', 'Fax 508-555-0199 to the clinic.', '508-555-0199'],
    ['EMAIL', 'Write to dkessler77@example.net please.', 'dkessler77@example.net'],
    ['SSN', 'SSN 031-44-9182 on file.', '031-44-9182'],
    ['MRN', 'MRN: 00384157', '00384157'],
    ['HEALTH_PLAN', 'Her Medicare number is 1EG4-TE5-MK73.', '1EG4-TE5-MK73'],
    ['ACCOUNT', 'Acct #: V40029318', 'V40029318'],
    ['LICENSE', 'DEA AB1234563 on the prescription.', 'AB1234563'],
    ['VEHICLE', 'Car VIN 1HGCM82633A004352 towed.', '1HGCM82633A004352'],
    ['DEVICE', 'Pacemaker serial # PJN448120 interrogated.', 'PJN448120'],
    ['URL', 'See https://portal.example.org/chart/8812 for results.', 'https://portal.example.org/chart/8812'],
    ['IP', 'Images pushed to 10.42.7.19 overnight.', '10.42.7.19'],
    ['BIOMETRIC', 'Fingerprint template FP-88120034 enrolled.', 'FP-88120034'],
    ['ID', 'Accession: CT-2209-44817', 'CT-2209-44817'],
  ])('finds %s in "%s"', (type, text, part) => {
    expect(found(text)).toContainEqual([type, part]);
  });
});
