/**
 * The classes the independent measurement found on real ICU nursing notes and on twelve unseen styles
 * (issue 26), each with cases of our own in those shapes: what real notes write that is not an
 * identifier (vital-sign and ventilator values, volumes, saturation phrases, side markers, drug and
 * product shorthand, plan phrases, the ST segment), what they write that is one (facility acronyms and
 * wards after words of place, staff by lowercase first name and initials, month/day dates, two-digit
 * years, seven-digit phones and extensions), and the insiders' shapes (names in other scripts, hosts
 * without a scheme, card numbers, ages in words, coordinates, dates broken by a line wrap, free-text
 * name forms). Every name, number and place is invented.
 */
import { Deidentifier, defaultSettings, type Span } from '../../src/deid';
import { KnownMatcher } from '../../src/deid/known';
import { residualScan } from '../../src/deid/residual';

const deid = new Deidentifier(defaultSettings('/nonexistent/secret'), () => Buffer.alloc(32, 7));

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

describe('values of ICU notes that look like identifiers stay', () => {
  it.each([
    ['a blood-pressure range after an arterial line', 'A-line 110-120/60-70, cuff 100-110/50-60.', '110-120/60-70'],
    ['a blood-pressure range after "P"', 'VS: T 99.1 P 110-120/60-70 RR 18', '110-120/60-70'],
    ['a range after "line"', 'art line reading 100-130/50-70 per flowsheet', '100-130/50-70'],
    ['a volume range with its unit', 'GU: foley, UO 100-200cc/hr after lasix.', '100-200cc'],
    ['a drain range in capitals', 'NGT TO LCS DRAINING 200-300CC BILIOUS.', '200-300CC'],
    ['volume and rate glued by x', 'vent AC 600x12, PEEP 5, FiO2 50%', '600x12'],
    ['a ventilator mode after a volume', 'Currently on AC 500x14/5/40%, ABG 7.36/42/118.', '14/5/40'],
    ['IMV settings', 'RESP: IMV 12/5/40, sx for thick tan.', '12/5/40'],
    ['pressure support after "PS"', 'Vent weaning: PS 12/5/40 since 0900, TV 350s.', '12/5/40'],
    ['a wean written after "to"', 'tolerated, weaned to 8/5 at 1500.', '8/5'],
    ['a spontaneous breathing trial', 'SBT 5/5 for 30 min at 1300, RSBI 60.', '5/5'],
    ['train of four as a range', 'paralyzed, tof 1-2/4, bis 40s.', '2/4'],
    ['a fraction of an ampule', 'FS 62, given 1/2 amp D50, FS 118.', '1/2'],
    ['four extremities', 'Moves 4/4 ext, no new focal deficits.', '4/4'],
    ['"secondary to"', 'hypercarbic resp failure 2/2 COPD flare.', '2/2'],
    ['a pain score in capitals', 'PT C/O CHEST TIGHTNESS 4/10, HR 90S.', '4/10'],
    ['saturation in the mid 90s', 'Resp: 2L NC, sats mid 90s, RR 20s.', 'mid 90s'],
    ['saturation in capitals', '2L NC, SATS MID 90S. NO CP.', 'MID 90S'],
    ['a clock time after "arrived"', 'Arrived 2040 on AC 500x16, FiO2 100%.', '2040'],
    ['a clock time after a word that labels codes', 'NPO for swallow study 0900 tomorrow.', '0900'],
  ])('keeps %s', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });

  it.each([
    ['a side in a list of pupils', 'pupils 3mm R, 2mm L, brisk.', 'L'],
    ['a side before a line', 'Lines: L SC TLC, R radial A-line.', 'R'],
    ['a side after a dash at the end of a line', 'weakness worse on the\n-L', 'L'],
    ['capitalised drug shorthand', 'Pt received on Neo and Levo, weaned Neo to off. Kay given.', 'Kay'],
    ['a charting system after "per"', 'Per Careview, first successful extubation.', 'Careview'],
    ['a charting system in lowercase', 'see carevue for VS and I/O.', 'carevue'],
    ['a service after "per"', 'Avoiding dilaudid per geri. Social: widower.', 'geri'],
    ['a plan to monitor labs', 'Plan: Monitor Labs, wean O2.', 'Labs'],
    ['a plan in capitals', 'PLAN: TO GO HOME TOMORROW. MONITOR LABS.', 'MONITOR LABS'],
    ['"likely rehab" in capitals', 'MONITOR HCT, PT/OT, LIKELY REHAB.', 'LIKELY REHAB'],
    ['the ST segment in capitals', 'T WAVE INVERSIONS V1-V4, NO ST ELEVATION.', 'ST ELEVATION'],
    ['sinus tachycardia before a value', 'HR 100s ST. CVP 16-18.', 'ST. CVP'],
    ['a run of beats in capitals', 'PT HAD 14 BEAT RUN OF VT, ASYMPTOMATIC.', '14 BEAT RUN'],
    ['a repeat CT in capitals', 'NPN 7P-7A REPEAT CT HEAD STABLE.', '7A REPEAT CT'],
    ['an acronym after a relation and a comma', 'asking for his wife, MAE. Kept flat.', 'MAE'],
    ['a score after a relation', 'per neighbor, CIWA w/ ativan prn.', 'CIWA'],
    ['an endearment after a greeting', 'said "hi honey" to dtr.', 'honey'],
    ['a weekday after a relation', 'Last drink per sister was Sunday nite.', 'Sunday'],
    ['a right-atrial pressure after a label', 'Swan placed by fellow: RA 18, PA 58/30.', 'RA'],
    ['an age of a disease with "with"', 'Pt Anna Kerr is a 67F admitted with COPD.', 'COPD'],
  ])('keeps %s', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });
});

describe('identifiers of ICU notes are found', () => {
  it.each([
    ['a facility acronym after "taken to"', 'Taken to NGR, NIHSS 16, CT neg.', 'NGR'],
    ['an acronym after "at" where a hospital is spoken of', 'GCS 14 at scene -> 9 in ED at NGR. CT: SDH.', 'NGR'],
    ['an acronym after "from" before a verb', 'her brother, a surgeon from PVMC called for update.', 'PVMC'],
    ['an acronym after "at" before a verb', 'Bed at HRC offered for Tuesday per CM.', 'HRC'],
    ['a ward after "to"', 'Transfer note: to Corliss 2 this afternoon.', 'Corliss 2'],
    ['a ward after "on"', 'report given to RN on Fennimore 5. VSS.', 'Fennimore 5'],
    ['a ward heading a note', 'Aldrich 3 Nursing Admission Note\nPt arrived intubated.', 'Aldrich 3'],
    ['a ward in lowercase', 'plan: transfer to stoneleigh 6 vs corliss 2 in pm.', 'corliss 2'],
    ['a place joined by "vs"', 'screening for rehab @ Ashcroft vs Hillcrest, pt prefers', 'Hillcrest'],
    ['a facility name ending in House', 'has been staying at Kestrel House on & off since fall.', 'Kestrel House'],
    ['a building', 'SW office is in the Whitcomb building, gave mom directions.', 'Whitcomb building'],
    ['a town of two lowercase words', 'mom called from new bedford, updated.', 'new bedford'],
    ['a lowercase employer after a job', 'since he lost his job at harbor point marine in the fall.', 'harbor point marine'],
    ['an employer with "&"', 'pt works part time at stop & shop in town.', 'stop & shop'],
    ['a street after a crash', 'MVC vs pole on Rt 3 ~0200, extricated.', 'Rt 3'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });

  it.each([
    ['a lowercase first name after a role', 'extubated at 0630 by rt bill to 4l nc.', 'bill'],
    ['a lowercase first name after "RT"', 'RT raj following closely.', 'raj'],
    ['a hyphenated first name after a role', 'then resident jae-won to bedside.', 'jae-won'],
    ['a first name that is a word after a hand-off', 'Report given to will on the floor.', 'will'],
    ['a first name after "reported off to"', 'Reported off to Pat K. Grandson requests call.', 'Pat K'],
    ['a lowercase first name before "rn"', 'aware, per dawn rn in charge, started amio.', 'dawn'],
    ['a first name before a role in parentheses', 'd/w joy (charge rn) re: step down bed.', 'joy'],
    ['a name before "(RN on floor)"', 'Per will (RN on floor) bed ready at 1400.', 'will'],
    ['a relative in parentheses', 'Family: dtr (carol) HCP, updated.', 'carol'],
    ['a relative whose name is an abbreviation', 'Brother (ed) notified. Labs pending.', 'ed'],
    ['a relative after "dtr"', 'dtr kathy in, spoke w/ team.', 'kathy'],
    ['a relative before "cell"', 'Mother Brenda cell 555-0176.', 'Brenda'],
    ['a husband named Will', 'Social: Husband will at bedside, very anxious.', 'will'],
    ['a surname after "Dr." before a specialty', 'Husband updated by Dr. Whitcombe and surgery.', 'Whitcombe'],
    ['an initial after a title', 'per dr k ok to keep clamped.', 'k'],
    ['a priest', 'Fr. Kiely in at 0315, prayers said.', 'Kiely'],
    ['a lowercase title with its dot', "ccu npn mrs. o'leary remained in af.", "o'leary"],
    ['a signature: initials on the last line', 'Plan: cont same.\ndp', 'dp'],
    ['a signature in capitals', 'vent settings sent for backup.\nTW', 'TW'],
    ['a signature with a slash', 'Plan: d/c to rehab when bed available.\n-mc/rn', 'mc'],
    ['a first name and an initial before a credential', 'Plan: call out.\nHope C. RN', 'Hope C'],
    ['the same in lowercase', 'pt gave ok to share info. deb s. rn', 'deb s'],
    ['a first name and an initial before "rrt"', 'PEF 180. Will follow. bill f rrt', 'bill f'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });

  it.each([
    ['month-day after "on"', 'presented to the ED on 1-20 w/ flu-like illness.', '1-20'],
    ['month-day after "adm on"', 'L crani/SDH evac, adm on 3-4. Back from OR 0300.', '3-4'],
    ['a date after "since" near a word of pain', 'painless BRBPR x3 since 3/10 at home.', '3/10'],
    ['a weekday before a date', 'plan RCA stent Friday 6/11 as outpt.', 'Friday 6/11'],
    ['a holiday', 'sx started after Thanksgiving drinking binge.', 'Thanksgiving'],
    ['a holiday of two words', "last drink reportedly New Year's Eve.", "New Year's Eve"],
    ['a month in parentheses', 'last CD4 14 (Feb), p/w cough.', 'Feb'],
    ['a year after a procedure', 'On ASA + plavix (stent 2004).', '2004'],
    ['a year after a procedure and a parenthesis', 's/p AVR (tissue) 2001, MI in 02.', '2001'],
    ['a two-digit year after an acronym', 'PMH: CABG 98, HTN, DM2.', '98'],
    ['seven digits and an extension', 'reachable at 555-3370 x214, will hold his bed.', '555-3370 x214'],
    ['a four-digit pager', 'renal fellow pager 4452 if filter clots.', '4452'],
    ['a beeper in parentheses', 'coordinator (Mo, beeper 7731) met w/ family.', '7731'],
    ['an internal extension after a page', 'page surgery resident Elliot at 4-3321.', '4-3321'],
    ['an extension glued to x', 'Dtr can be reached at work x5521.', 'x5521'],
    ['an extension after "ext"', 'Report called to Fairhaven, ext 214.', '214'],
    ['an age glued to a sex before a parenthesis', 'Pt is a 95M (per chart) from home.', '95'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });
});

describe("the insiders' shapes", () => {
  it.each([
    ['a host without a scheme on a new top-level domain', 'Results at portal.lakeside.ai/x7 for review.', 'portal.lakeside.ai/x7'],
    ['a host of four labels', 'Images on pacs.trust.nhs.uk today.', 'pacs.trust.nhs.uk'],
    ['a payment card after a brand', 'Paid by Visa 4111 1111 1111 1111 exp 04/27.', '4111 1111 1111 1111'],
    ['a payment card passing Luhn', 'card on file 5500 0000 0000 0004, thanks', '5500 0000 0000 0004'],
    ['an age over 89 in words', 'She is a ninety-four-year-old widow.', 'ninety-four'],
    ['an age of a hundred and two', 'aged one hundred and two, lives with niece.', 'one hundred and two'],
    ['coordinates with hemispheres', 'EMS found pt at 42.3601 N, 71.0589 W by the river.', '42.3601 N, 71.0589 W'],
    ['coordinates after GPS', 'GPS 42.36014, -71.05891 per EMS.', '42.36014, -71.05891'],
    ['coordinates in degrees and minutes', 'pin dropped at 42°21\'36"N 71°3\'32"W', '42°21\'36"N 71°3\'32"W'],
    ['a date broken by a line wrap', 'DOB 03/14/\n1931, per daughter.', '03/14/\n1931'],
    ['a name in Cyrillic', 'Son Иван Петров (by phone) updated.', 'Иван Петров'],
    ['a name in Chinese characters', 'Daughter 王伟 at bedside, interpreter used.', '王伟'],
    ['a name in Arabic script', 'Brother حسن called from work.', 'حسن'],
    ['a name in Greek', 'Wife Ζωή Παπαδοπούλου visited.', 'Ζωή Παπαδοπούλου'],
    ['a pair opening a presenting sentence', 'Tavita Mbeki is a 45 yo man with CP.', 'Tavita Mbeki'],
    ['a pair of English words opening one', 'Will Young is a 55M with asthma.', 'Will Young'],
    ['a pair after a weak cue', 'Case discussed with Will Young, who agrees.', 'Will Young'],
    ['a pair in capitals after a weak cue', 'Met with JOHN SMITH at bedside.', 'JOHN SMITH'],
    ['a surname and a given name before an age', 'KERR ANNA 67F\nadmitted overnight.', 'KERR ANNA'],
    ['a first name and a surname after "to"', 'Spoke to Mark Price (son).', 'Mark Price'],
    ['an age and a sex in parentheses', 'Pt (93F) with fall at home.', '93'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });

  it('types a first name and a surname after "to" as a name, not a place', () => {
    const text = 'Spoke to Mark Price (son).';
    expect(deid.find(text).find((s) => s.start === text.indexOf('Mark'))?.type).toBe('NAME');
  });

  it.each([
    ['a Greek letter in notation', 'on a β-blocker, TNF-α high, γδ T cells.'],
    ['an abbreviation with dots', 'take 1 tab p.o. b.i.d., e.g. with food'],
    ['a missing space after a full stop', 'pt.is resting. bed.at lowest.'],
    ['a decimal pair of lab values', 'K 4.1, 3.9 this am; Mg 2.1, 1.8'],
  ])('leaves %s', (_label, text) => {
    expect(deid.find(text)).toEqual([]);
  });

  it('matches a known name written in another script, read in Latin', () => {
    const known = new KnownMatcher({ names: ['KUZNETSOVA, OLGA', 'HASSAN, ALI', 'WANG WEI', 'PAPADOPOULOS, GEORGIOS'] });
    for (const written of ['Ольга', 'Кузнецова', 'حسن', '王伟', 'Γιώργος Παπαδόπουλος']) {
      const text = `Seen with ${written} today.`;
      const found = known.find(text);
      expect({ written, found: found.some((d) => d.start === text.indexOf(written)) }).toEqual({ written, found: true });
    }
  });

  it('matches a known name given in another script when the note writes it in Latin', () => {
    const known = new KnownMatcher({ names: ['Иван Петров'] });
    const text = 'Son Ivan Petrov called.';
    expect(known.find(text).map((d) => text.slice(d.start, d.end))).toEqual(['Ivan', 'Petrov']);
  });

  it('the residual scan refuses each new shape left in a prompt', () => {
    const none = new KnownMatcher(undefined);
    for (const [type, text] of [
      ['URL', 'see pacs.trust.nhs.uk/study/1'],
      ['ACCOUNT', 'card 4111 1111 1111 1111'],
      ['LOCATION', 'found at 42.3601 N, 71.0589 W'],
      ['NAME', 'daughter Ольга called'],
      ['DATE', 'DOB 03/14/\n1931'],
    ] as const) {
      expect({ text, types: residualScan(text, [], none).map((f) => f.type) }).toEqual({ text, types: [type] });
    }
  });
});

describe('the classes of the twelve other styles (triage, SBAR, transfer, pathology, operative...)', () => {
  it.each([
    ['a facility acronym as a field value', 'TRANSFER SUMMARY Sending: MVH ICU, Haverhill MA Receiving: QLMC Stoneleigh 4 CCU', 'QLMC'],
    ['a ward as a field value', 'MRN 5502817 Adm 11/04/2024 Unit: Fennimore 5 Payer: Medicare', 'Fennimore 5'],
    ['a ward after a disposition', 'Dispo: Aldrich 3 SICU overnight. Plan as above.', 'Aldrich 3'],
    ['a ward before a bed', 'S: Asante, Stoneleigh 6 bed 14, vanc trough back', 'Stoneleigh 6'],
    ['an agency ending in VNA', 'Plan: resume North Shore VNA (liaison Tricia).', 'North Shore VNA'],
    ['a street with its floor', 'Home: lives alone at 31 Elm St, 1st fl, Somerville.', '31 Elm St, 1st fl'],
    ['a terrace abbreviated', 'Address: 44 Oak Terr., 2nd fl, Lynn MA 01902', '44 Oak Terr., 2nd fl'],
    ['a unit before its street', 'Home: Unit 5B, Washington St, Dorchester, MA', 'Unit 5B, Washington St'],
    ['a particle surname after a label', 'Patient: bin Tariq, Hamza DOB 08/23/1999', 'bin Tariq, Hamza'],
    ['a particle surname in capitals', 'MEDS-TO-BEDS DE JESUS, ROSALINDA MRN 5587310', 'DE JESUS, ROSALINDA'],
    ['a particle surname after a date', '07/26/2024 de Jesus, Rosalinda Unit 5B', 'de Jesus, Rosalinda'],
    ['a surname and an initial before an MRN', 'FOLLOW-UP Sorokina, V. MRN 6019442 02/13/2024', 'Sorokina, V'],
    ['initials after a role', 'To Pod B, RN JT aware. Pupils equal.', 'JT'],
    ['initials after a role and a colon', 'Triage RN: MH Trauma RN: Will Okafor', 'MH'],
    ['initials after "read by"', 'Impression as above. Read by MK - Martin Kovacs, MD.', 'MK'],
    ['initials after "co-signed"', 'Dispo as above / co-signed SO', 'SO'],
    ['initials after a slash at the end', 'Repeat cx NGTD. /kd', 'kd'],
    ['initials after a slash before "attest"', 'advance diet POD1. /pr attest SO', 'pr'],
    ['a pager after "p"', 'resident paged p 4417, on way to bedside.', '4417'],
    ['a pager in parentheses', 'Please page pharmacy (p 4690) for re-dose.', '4690'],
    ['an age glued to a sex in a header', '04/15/2024 Fennelly, Aloysius J 92M 7 Crescent Ave', '92'],
  ])('finds %s', (_label, text, part) => {
    expect(covered(text, part)).toBe(true);
  });

  it.each([
    ['a catalogue number after REF', 'Stem, cemented, size 3, REF 71331203 LOT 22K0941 SN AX7-3310-88412', 'REF 71331203 LOT 22K0941'],
    ['a catalogue number after "cat #"', 'Modular head 22 mm +0 cat #4312-58, cement x2', '4312-58'],
    ['a fall score named for its author', 'Bed alarm on. Morse fall score 65 (HIGH).', 'Morse'],
    ['a melanoma depth', 'Breslow thickness: 1.3 mm - Clark level: IV', 'Breslow'],
    ['an ulcer class', 'duodenal ulcer with visible vessel (Forrest IIa), clipped', 'Forrest'],
    ['a retractor', 'Technique: 5 ports, Nathanson liver retractor placed.', 'Nathanson'],
    ['a count and its fraction', 'metastatic carcinoma in 2 of 19 (2/19). No extension.', '2/19'],
    ['degrees of flexion', 'trial reduction stable in 90 deg flexion.', '90'],
    ['a side before a line', 'response, R IJ TLC placed in ED and levo started', 'R IJ'],
    ['a side before an amputation', 'PVD s/p R BKA, CHF EF 35%.', 'R BKA'],
    ['a seizure after a verb of witness', 'at 0440 pt had witnessed GTC seizure approx 90 sec', 'GTC'],
    ['a procedure after s/p', 'PMH: HTN, prostate CA s/p XRT, CKD.', 'XRT'],
    ['times, written after x', 'smoker 1ppd x40 yrs, ICP 25-28 x10 min.', 'x40'],
    ['a relative "in"', 'husband jim and dtr in, dtr asking about rehab', 'in,'],
    ['a drug with a dose glued', 'iCa 1.02 -> CaCl 1g. Lactate 2.9.', 'CaCl 1g'],
  ])('keeps %s', (_label, text, part) => {
    expect(untouched(text, part)).toBe(true);
  });
});
