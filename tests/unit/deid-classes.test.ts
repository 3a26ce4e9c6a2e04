/**
 * The classes of identifier the independent measurement found missed (real ICU notes, a second set in
 * five styles, an insider's attacks), each with cases of our own: dates as real notes write them,
 * names in capitals and lowercase, clinicians after role words, places as acronyms and nicknames,
 * phones as bare digits, free-text forms after cue words, old ages in structured text, pasted
 * extracts, Unicode variants for the detectors, the known identifiers and the residual scan, and the
 * subject's other records. Every name, number and place is invented.
 */
import { Deidentifier, defaultSettings, type Span } from '../../src/deid';

const deid = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 5));

/** Whether every letter and digit of `part` (its first occurrence) lies inside some span: strict recall. */
function covered(text: string, part: string, spans: Span[] = deid.find(text)): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  for (let i = at; i < at + part.length; i++) {
    if (/[\p{L}\p{N}]/u.test(text.charAt(i)) && !spans.some((s) => s.start <= i && i < s.end)) return false;
  }
  return true;
}

function untouched(text: string, part: string): boolean {
  const at = text.indexOf(part);
  if (at < 0) throw new Error(`test text lacks ${part}`);
  return !deid.find(text).some((s) => s.start < at + part.length && at < s.end);
}

describe('dates as real notes write them, beside the look-alikes', () => {
  it.each([
    ['month/day without a year', 'Pt adm 10/16 w/ SOB, extubated 10/19.', '10/16'],
    ['month/day before a time', 'last BM 3/4 0600, K 3.4 repleted', '3/4'],
    ['a dated dose', 'vanc last dose 2/2, trough pending', '2/2'],
    ['a range of dates', 'Held 2/1 - 2/4 for procedure', '2/4'],
    ['m-d-yy', 'Prior echo 7-22-04 EF 35%', '7-22-04'],
    ['day first with a four-digit year', 'DOB 14/03/1946 per chart', '14/03/1946'],
    ['dotted, day first', 'Implanted 03.07.2019 at OSH', '03.07.2019'],
    ['a bare day of the month', 'ran out of lasix on the 12th', 'the 12th'],
    ['a two-digit year in prose', 'h/o CABG in 87, stents x2', '87'],
    ['a four-digit year after a procedure', 'PMH: TKA 2011, HTN', '2011'],
    ['a month and year', 'last colonoscopy 11/2023 wnl', '11/2023'],
    ['day, month name and a two-digit year', 'Device implant 26 Feb 24, normal function', '26 Feb 24'],
    ['a lowercase month after a word of time', 'we are away til end of june', 'june'],
    ['a weekday with a day of the month', 'can we move it to monday 18th?', 'monday 18th'],
  ])('finds %s', (_label, text, date) => {
    expect(covered(text, date)).toBe(true);
  });

  it.each([
    ['a pain score', 'c/o HA 7/10, given tylenol', '7/10'],
    ['a blood pressure', 'BP 120/80 HR 72', '120/80'],
    ['positive nodes', '2/3 nodes positive on path', '2/3'],
    ['half a tablet', 'takes 1/2 tab at hs', '1/2'],
    ['train-of-four', 'TOF 2/4 on vec gtt', '2/4'],
    ['culture bottles', 'BCx 1/2 GPC in clusters', '1/2'],
    ['strength', 'weak 3/5 x4 extremities', '3/5'],
    ['pressure support', 'PS 10/5, FiO2 40%', '10/5'],
    ['a day of a course', 'ceftriaxone day 4/7', '4/7'],
    ['a vital-sign range', 'HR 100s-120s ST', '100s-120s'],
    ['a temperature range', 'T 98.4-99.4, sats 96%', '98.4-99.4'],
    ['a clock time', 'meds given at 2000, turned', '2000'],
  ])('keeps %s', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });
});

describe('names as real notes write them', () => {
  it.each([
    ['lowercase after a relation', 'wife ann in to visit, updated', 'ann'],
    ['lowercase after a title', 'dr kowal aware of K 3.1', 'kowal'],
    ['in capitals, before a credential', 'CONT ABX, TURN Q2H. OKAFOR RN', 'OKAFOR'],
    ['a bare surname after a role', 'covering MD Halvorsen notified', 'Halvorsen'],
    ['after "per"', 'per Quintanilla hold heparin', 'Quintanilla'],
    ['after d/w', 'd/w halvorsen re: plan', 'halvorsen'],
    ['before a word that says a person', 'Zhelezniak aware of BP', 'Zhelezniak'],
    ['a nurse signing with an initial', 'Plan: cont abx, monitor uo.\n-K.', 'K'],
    ['a signature with initials after a dash', 'reconciled 3/29. -pkh', 'pkh'],
    ['initials before a credential', 'will follow. -m. dacosta rrt', 'm. dacosta'],
    ['a relative in capitals', 'FAMILY: WIFE HALINA AT BEDSIDE', 'HALINA'],
    ['a name that is a month after a label', 'From: June Merriweather\nSubject: refill', 'June Merriweather'],
    ['a quoted name after "name is"', 'States his name is "Will", oriented x1', 'Will'],
    ['a self-introduction in a portal message', 'hi dr bramwell, its rose again, the swelling is back', 'rose'],
    ['a closing in a portal message', 'can you call me back? thanks so much jo', 'jo'],
  ])('finds a name %s', (_label, text, name) => {
    expect(covered(text, name)).toBe(true);
  });

  it.each([
    ['"Pt" before a name', 'Pt Anna Kerr admitted overnight with CAP.', 'Anna Kerr'],
    ['SURNAME, Given with an age and sex', 'Kerr, Anna 54F referred for iron deficiency', 'Kerr, Anna'],
    ['a name in capitals in a mixed-case note', 'ANNA KERR WAS SEEN IN CLINIC today.', 'ANNA KERR'],
    ['a label before names that are English words', 'Patient: Rose Hunt', 'Rose Hunt'],
    ['an inverted header with an uncommon surname', 'RE: QUILLFEATHER, Dymphna\nDear colleague,', 'QUILLFEATHER, Dymphna'],
    ['SURNAME, GIVEN in capitals, both uncommon', 'OYELARAN, XIMENA 54F referred', 'OYELARAN, XIMENA'],
    ['"Pt" before a lowercase name no list knows', 'Pt ximena oyelaran admitted overnight.', 'ximena oyelaran'],
    ['a label before a first name that is a function word', 'Patient: Will Mark', 'Will Mark'],
    ['a label before a lowercase name of English words', 'pt: rose hunt', 'rose hunt'],
    ['a label before a name, then an age', 'Name: Hope Bush, 71F', 'Hope Bush'],
  ])('finds a free-text form: %s', (_label, text, name) => {
    expect(covered(text, name)).toBe(true);
  });

  it.each([
    ['an acronym after "to"', 'NGT to LIWS, 300cc bilious', 'LIWS'],
    ['a brand with an inner capital', 'switched to MassHealth plan', 'MassHealth'],
    ['a language', 'speaks Cantonese, some English, grandson interprets', 'English'],
    ['shorthand after a relation', 'will readdress w/ pt and HCP tmrw', 'tmrw'],
    ['a common word after a relation', 'niece has POA; wife first, then daughter', 'first'],
    ['a fellowship after MD', 'Ruth Delacourt, MD, FACR', 'FACR'],
    ['a car', 'pt drives (2014 Honda Civic)', 'Honda Civic'],
    ['a label before a sentence that starts with a name word', 'Pt: will need PT in am', 'will need'],
    ['a label before a department', 'To: Pharmacy', 'Pharmacy'],
    ['shorthand after "pt"', 'pt sob tachy overnight', 'sob tachy'],
  ])('leaves %s alone', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });
});

describe('places as real notes write them', () => {
  it.each([
    ['a hospital acronym after "transferred from"', 'Transferred from BMC ED after intubation', 'BMC'],
    ['an acronym before a department', 'seen at MWMC ED last week', 'MWMC'],
    ['a nickname after "from the"', '93 yo F from the Pines (LTC) w/ fever', 'Pines'],
    ['a common word as a place name', 'she lives at Maple Crest assisted living', 'Maple Crest'],
    ['an employer', 'Works as a roofer for Castellan Roofing, no insurance', 'Castellan Roofing'],
    ['an employer after an occupation', 'accountant at Lam & Chu CPAs, prefers email', 'Lam & Chu CPAs'],
    ['an organisation with a head word', 'f/u with Dutchess Rheumatology in 2 wks', 'Dutchess Rheumatology'],
    ['an organisation in capitals', 'SIERRA GENERAL HOSPITAL - TRAUMA SERVICE', 'SIERRA GENERAL HOSPITAL'],
    ['a town after "in" in a patient message', "we're staying in Millbrook for the summer", 'Millbrook'],
    ['a lowercase town after "lives in"', 'son lives in guadalajara, calls weekly', 'guadalajara'],
    ['a lowercase town in a first-person message', 'im in pemberwick now with my sister', 'pemberwick'],
    ['a street named without a number', 'found in his apartment on Mercer St, agonal', 'Mercer St'],
  ])('finds %s', (_label, text, place) => {
    expect(covered(text, place)).toBe(true);
  });

  it.each([
    ['a clinical destination', 'transferred to MICU, then to CT', 'MICU'],
    ['a kind of care', 'referred to the Falls Clinic for gait', 'Falls Clinic'],
    ['a specialty acronym before "clinic"', 'admitted from HF clinic w/ Cr 3.1', 'HF'],
    ['a measure after "from"', 'trending down from POD 7', 'POD'],
    ['a state of the writer in a first-person message', "i'm in pain and cant sleep", 'pain'],
  ])('leaves %s alone', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });
});

describe('numbers as notes write them', () => {
  it.each([
    ['PHONE', 'a bare extension after "x"', 'reach the team at x4567 overnight', '4567'],
    ['PHONE', 'a pager after "beeper"', 'resident beeper 12345', '12345'],
    ['PHONE', 'a page with a dash', 'cards fellow aware, page 4-7731 if needed', '4-7731'],
    ['PHONE', 'slashes', 'daughter cell 617/555-0186', '617/555-0186'],
    ['PHONE', 'a number split by a line wrap', 'guarantor phone 828-555-\n0106 on file', '828-555-\n0106'],
    ['PHONE', 'an international number', 'my uk mobile is +44 7700 900482', '+44 7700 900482'],
    ['PHONE', 'a country code written 00', 'or my mobile 0049 151 5550 4418', '0049 151 5550 4418'],
    ['SSN', 'spaces', 'SSN 014 22 6198 on file', '014 22 6198'],
    ['SSN', 'dots', 'SSN: 221.58.9043', '221.58.9043'],
    ['SSN', 'slashes', 'SSN on file: 378/40/1926', '378/40/1926'],
    ['SSN', 'a line wrap', 'SSN 512-66-\n4407 per form', '512-66-\n4407'],
    ['EMAIL', 'an address spelled out', 'email is jo dot kerr22 at fastpost dot co dot uk thanks', 'jo dot kerr22 at fastpost dot co dot uk'],
    ['ZIP', 'a ZIP right after the town', 'Addr: 27 Piscataqua Rd, Dover 03820', '03820'],
    ['ZIP', 'a ZIP right after a known town, without a state or a street', 'lives in Framingham 01702', '01702'],
    ['VEHICLE', 'a licence plate', 'Pt vehicle: MA reg 4KX-9P2, towed', '4KX-9P2'],
    ['VEHICLE', 'a plate with a space', 'motorcycle (MA plate 3KT 922) towed', '3KT 922'],
    ['DEVICE', 'a UDI', 'UDI: (01)00763000412298(17)270831(21)VTR604418K', '(01)00763000412298(17)270831(21)VTR604418K'],
    ['HEALTH_PLAN', 'a member id with a letter prefix', 'member id AMG 38817702 11 verified', 'AMG 38817702 11'],
  ])('%s: %s', (_type, _label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });
});

describe('ages over 89 in structured text', () => {
  it.each([
    ['JSON', '{"name": "x", "age": 93, "sex": "F"}', '93'],
    ['an XML element', '<patient><age>96</age></patient>', '96'],
    ['an attribute', '<pt name="X" age="91" dob="x"/>', '91'],
    ['a table row', '| Age | 94 | Sex | F |', '94'],
    ['sex then age', 'St. Pierre, Marguerite, F, 91, MRN ML00429918', '91'],
    ['age and sex in parentheses', 'Dunleavy, Hamish (92M), resident of Glenview', '92'],
    ['a CSV column', 'name,dob,age,mrn\n"DUNLEAVY, HAMISH",1931-04-25,92,GV-0071183', '92'],
  ])('in %s', (_label, text, age) => {
    expect(deid.find(text).some((s) => s.type === 'AGE' && text.slice(s.start, s.end) === age)).toBe(true);
  });

  it('keeps an age of 89 or less, and a temperature in Fahrenheit', () => {
    expect(untouched('{"age": 85}', '85')).toBe(true);
    expect(untouched('Temperature is 36.7 C (98 F), BP 120/70', '98')).toBe(true);
  });
});

describe('extracts pasted into a note are read by their field names', () => {
  const csv = 'Extract pasted from census:\nname,dob,mrn,phone\n"OYAMA, KENJI",1939-02-14,GV-0072290,781-555-0146\n"BRISBOIS, GENEVIEVE",1933-08-08,GV-0071847,781.555.0146\nEnd of extract.';
  it.each([['OYAMA, KENJI'], ['1939-02-14'], ['GV-0072290'], ['BRISBOIS, GENEVIEVE'], ['781.555.0146']])('CSV: %s', (part) => {
    expect(covered(csv, part)).toBe(true);
  });
  it('XML elements and attributes', () => {
    const xml = '<referral><patient><name>ELLERY, RUTH A</name><dob>1930-06-04</dob><mrn>PVM-0018840</mrn></patient><event t="2023-10-14" user="SLC"/></referral>';
    for (const part of ['ELLERY, RUTH A', '1930-06-04', 'PVM-0018840', 'SLC']) expect({ part, covered: covered(xml, part) }).toEqual({ part, covered: true });
  });
});

describe('Unicode variants hide nothing', () => {
  const variants: [string, string, string][] = [
    ['decomposed accents (NFD)', 'Seen by Dr. Jose\u0301 Nun\u0303ez today.', 'Jose\u0301 Nun\u0303ez'],
    ['full-width digits in an MRN', 'MRN \uff10\uff10\uff13\uff18\uff14\uff11\uff15\uff17 verified', '\uff10\uff10\uff13\uff18\uff14\uff11\uff15\uff17'],
    ['full-width letters in a name', 'Attending: \uff2f\uff4b\uff41\uff46\uff4f\uff52, MD', '\uff2f\uff4b\uff41\uff46\uff4f\uff52'],
    ['zero-width characters inside an MRN', 'MRN 00\u200b38\u200b41\u200b57 verified', '00\u200b38\u200b41\u200b57'],
    ['no-break spaces in a phone number', 'call (508)\u00a0555\u00a00187 tonight', '(508)\u00a0555\u00a00187'],
    ['zero-width separators in an SSN', 'SSN 031\u200b44\u200b9182', '031\u200b44\u200b9182'],
    ['a Cyrillic letter inside a Latin name', 'Patient: \u0410nna Kerr', '\u0410nna Kerr'],
    ['combining marks on a date', 'admitted 3\u0301/11/2087', '3\u0301/11/2087'],
    ['digits of another script', 'DOB \u0663/\u0661\u0661/\u0662\u0660\u0668\u0667', '\u0663/\u0661\u0661/\u0662\u0660\u0668\u0667'],
  ];
  it.each(variants)('the detectors find %s', (_label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });

  it.each(variants)('offsets point into the original text (%s): the span covers the whole variant', (_label, text, part) => {
    const at = text.indexOf(part);
    const spans = deid.find(text);
    expect(spans.some((s) => s.start <= at + 1 && s.end >= at + part.length - 1)).toBe(true);
    for (const s of spans) expect(s.end).toBeLessThanOrEqual(text.length);
  });

  it('replacement leaves none of the variant characters of an identifier behind', () => {
    const text = 'MRN \uff10\uff10\uff13\uff18\uff14\uff11\uff15\uff17 and SSN 031\u200b44\u200b9182 for Jose\u0301 Nun\u0303ez';
    const out = deid.run({ text, subject: 's1' });
    expect(out.text).not.toMatch(/[\uff10-\uff19\u200b\u0301\u0303]/);
    expect(out.text).not.toContain('0038');
    expect(out.residual).toEqual([]);
  });

  it.each([
    ['decomposed accents', { names: ['José Núñez'] }, 'Seen: Jose\u0301 Nun\u0303ez', 'Jose\u0301 Nun\u0303ez'],
    ['full-width letters', { names: ['Anna Kerr'] }, 'family: \uff2b\uff45\uff52\uff52 at bedside', '\uff2b\uff45\uff52\uff52'],
    ['a zero-width MRN', { mrns: ['00384157'] }, 'chart 0038\u200b4157 reviewed', '0038\u200b4157'],
    ['full-width digits', { mrns: ['00384157'] }, 'MR \uff10\uff10\uff13\uff18\uff14\uff11\uff15\uff17', '\uff10\uff10\uff13\uff18\uff14\uff11\uff15\uff17'],
    ['a day-first birth date', { dates: ['1946-03-14'] }, 'born 14/03/1946 in Lodz', '14/03/1946'],
    ['a dotted day-first birth date', { dates: ['1946-03-14'] }, 'DOB 14.03.1946', '14.03.1946'],
  ])('known identifiers are found in variants: %s', (_label, known, text, part) => {
    // the detectors alone may find some of these; the known identifiers must find all of them
    const onlyKnown = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 5), []);
    expect(covered(text, part, onlyKnown.find(text, known))).toBe(true);
  });
});

describe('the residual scan reads the shapes the detectors might miss', () => {
  const scanOnly = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 5), []);
  it.each([
    ['SSN', 'an SSN with spaces', 'SSN 123 45 6789 on file'],
    ['SSN', 'an SSN split by a line wrap', 'ss# 123-45-\n6789'],
    ['PHONE', 'a phone with slashes', 'call 617/555-0199'],
    ['PHONE', 'a phone with full-width digits', 'call \uff16\uff11\uff17-555-0199'],
    ['PHONE', 'an international number', 'whatsapp +27 82 555 0417'],
    ['DATE', 'a dotted date', 'seen 14.03.2024'],
    ['DATE', 'a day-first date', 'seen 22/09/1969'],
    ['DATE', 'a day and month name', 'seen 7 March 2024'],
    ['EMAIL', 'a spelled-out address', 'write to jo dot kerr at mailbox dot com'],
    ['MRN', 'an MRN with zero-width characters', 'MRN 12\u200b34\u200b567'],
  ])('%s: %s is refused even with every detector off', (type, _label, text) => {
    const out = scanOnly.run({ text, subject: 's' });
    expect(out.residual.map((f) => f.type)).toContain(type);
    for (const f of out.residual) expect(f.end).toBeLessThanOrEqual(out.text.length);
  });

  it('stays quiet on clinical text', () => {
    const text = 'BP 120/80, pain 5/10, K 3.4 repleted, PS 10/5, TOF 2/4, 1.5 mg, I/O +500, RR 12-20, T 98.4-99.4';
    expect(scanOnly.run({ text, subject: 's' }).residual).toEqual([]);
  });
});

describe("a subject's records share evidence", () => {
  it('a name found with a cue in one record is found without one in the other records of the subject, and only theirs', () => {
    const records = [
      { text: 'NPN: wife Zorbanna called, updated on plan.', subject: 'p1' },
      { text: 'Zorbanna brought clothes from home.', subject: 'p1' },
      { text: 'Zorbanna brought clothes from home.', subject: 'p2' },
    ];
    // the subject's own evidence alone (dataset-wide evidence spreads it further: deid-dataset-evidence.test.ts)
    const [first, second, other] = deid.findAll(records, 'subject').spans;
    expect(covered(records[0]!.text, 'Zorbanna', first)).toBe(true);
    expect(covered(records[1]!.text, 'Zorbanna', second)).toBe(true);
    expect(covered(records[2]!.text, 'Zorbanna', other)).toBe(false);
  });
});
