/**
 * Dates: every element of a date but the year (45 CFR 164.514(b)(2)(i)(C)) in the forms clinical text
 * uses: 7/22, 7-22-2104, 2104-07-22, 22 Jul, July 22nd, 2104, 22-Jul-04, Jan 2087, the 14th, '92,
 * ranges such as 3/4-3/6 (each end is a date). Each detection carries the parts read and a renderer
 * that writes a shifted date in the same form, so surrogate dates look like the original.
 *
 * Bare m/d is the hard case: pain 5/10, strength 5/5, a 2/6 murmur, 1/2 tab are not dates. They are
 * refused by the words around them, not by the numbers alone.
 */
import { type DateParts, type Detection, PRIORITY } from '../types';

const MONTH_NAMES = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH_ALT = 'jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?';

export function monthNumber(word: string): number | undefined {
  const w = word.toLowerCase().replace(/\.$/, '');
  if (w.length < 3) return undefined;
  const i = MONTH_NAMES.findIndex((m) => m.startsWith(w.slice(0, 3)) && (w.length === 3 || m.startsWith(w) || (w === 'sept' && m === 'september')));
  return i >= 0 ? i + 1 : undefined;
}

/** Writes a month in the style of the original token: full or abbreviated, case kept, dot kept. */
function monthStyle(original: string): (m: number) => string {
  const dot = original.endsWith('.');
  const word = dot ? original.slice(0, -1) : original;
  const full = MONTH_NAMES.includes(word.toLowerCase());
  const len = full ? 0 : word.length;
  return (m) => {
    const name = MONTH_NAMES[m - 1] as string;
    let out = full ? name : name.slice(0, len === 4 && m === 9 ? 4 : 3);
    if (!full && len === 4 && m !== 9) out = name.slice(0, 3);
    return caseLike(word, out) + (dot && !full ? '.' : '');
  };
}

export function caseLike(model: string, word: string): string {
  if (model.length > 1 && model === model.toUpperCase()) return word.toUpperCase();
  if (model[0] && model[0] === model[0].toUpperCase()) return word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
  return word.toLowerCase();
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** A month or day written like the original: zero-padded only if the original was ("07", not "12"). */
function padLike(original: string, n: number): string {
  return original.length === 2 && original.startsWith('0') ? pad(n, 2) : String(n);
}

function ordinal(n: number): string {
  const mod100 = n % 100;
  if (mod100 >= 11 && mod100 <= 13) return 'th';
  return ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
}

function suffixLike(model: string, n: number): string {
  const s = ordinal(n);
  return model === model.toUpperCase() && model !== '' ? s.toUpperCase() : s;
}

function fullYear(text: string): number {
  const n = Number(text);
  if (text.length === 4) return n;
  return n > 30 ? 1900 + n : 2000 + n;
}

function yearLike(model: string, y: number): string {
  return model.length === 2 ? pad(y % 100, 2) : String(y);
}

const validDay = (d: number) => d >= 1 && d <= 31;
const validMonth = (m: number) => m >= 1 && m <= 12;
const validYear = (y: number) => y >= 1800 && y <= 2199;

function detection(start: number, text: string, parts: DateParts, render: (p: Required<DateParts>) => string, priority = PRIORITY.DATE): Detection {
  return { start, end: start + text.length, type: 'DATE', priority, source: 'detector', rule: 'date', date: { parts, render } };
}

// Words that make m/d a score, a grade, a ratio or a dose rather than a date.
const BEFORE_NOT_DATE =
  /\b(?:pain|scale|score[sd]?|rated?|rates|rating|strength|motor|power|grade[sd]?|gcs|apgar|bp|sbp|dbp|pressure|ratio|murmur|pulses?|reflexes|dtrs?|vision|acuity|fio2?|o2|peep|vent|tv|ie|i:e|sem|hsm|holosystolic|systolic|diastolic|dose|tabs?|x|of|out of|level|lvl|stage|class|tanner|gravida|para|ps|cpap|bipap|settings?|psv|epap|ipap|abg|vbg|pupils?|perrla?|fraction|approx|about|around|nodes?|took|takes|take|day|tof|bcx|cx|ucx|crackles|rales|rails|names|fingers|ha|headache|cp|tender(?:ness)?|sore(?:ness)?|weak|weakness|bottles?|sbt|trial|trialed|imv|mae|moves?|moving|ext|extrems?|extremities|sirs|qsofa|mmse|moca|slums|bestest|test|=)\s*[:=]?\s*$/i;
/** A ventilator's settings just before: "weaned to 8/5", "AC 500x14/5/40", "IMV 12/5/40%", "changed to 10/5". */
const VENT_BEFORE =
  /(?:\b(?:ac|a\/c|simv|imv|ps|psv|cpap|bipap|prvc|cmv|peep|fio2|vent|settings?|mode)\b[^\n]{0,12}|\b(?:weaned|wean|weaning|down|up|increased|decreased|changed|titrated|placed|back|dropped|turned)\s+(?:down\s+|up\s+|back\s+)?(?:to|on)\s*|\d\s?x\s?)$/i;
/** "last dose 2/2", "first dose 4/2": a dose with a word of time before it is dated, not measured. */
const DATED_DOSE = /\b(?:last|first|next|final|prior|previous|loading|most\s+recent)\s+(?:clinic\s+)?dose\s*[:=]?\s*$/i;
const AFTER_NOT_DATE =
  /^\s*(?:pain|murmur|sem|hsm|systolic|diastolic|holosystolic|strength|scale|ratio|tabs?|tablets?|caps?|capsules?|pills?|doses?|ns|normal|mg|mcg|g|gm|ml|cc|l|units?|inch(?:es)?|cm|mm|miles?|blocks?|flights?|hours?|hrs?|days?|cups?|glass(?:es)?|ppd|packs?|of|bottles?|pulses?|reflexes|times|vision|mmhg|mm hg|bilat|bilaterally|throughout|x|\+|th|strength|power|motor|lobes?|nodes?|brisk|sluggish|nrb|nc|strength|teaspoons?|tsp|tbsp|sliding|ss|saline|str|concentration|up|rails|objects|words|bottles|sets|amps?|ampules?|vials?|bags?)\b/i;
/** What may follow a date: a time (13:05, 0900, 2pm, 1:30 pm), a range to another date, a comma or the end. */
const TIME_AFTER = /^\s*(?:@\s*)?(?:\d{1,2}:\d{2}|[01]\d[0-5]\d|2[0-3][0-5]\d|\d{1,2}\s?(?:am|pm|a|p)\b)/i;
const RANGE_AFTER = /^\s*(?:-|–|to|thru|through|until|till)\s*\d{1,2}\/\d{1,2}\b/i;

/** Words before a date that say it dates something. */
const DATE_CUE_BEFORE =
  /\b(?:on|since|from|until|till|til|by|of|dated|adm(?:itted)?|admission|d\/c(?:'d)?|discharged?|seen|last|next|before|after|thru|through|due|starting|started|stopped|held|ended|until|through|effective|dos|dob|born)\s*:?\s*$/i;

/** m/d without a year, unless the words around it say it is a measurement. */
function bareMonthDay(text: string, out: Detection[]): void {
  const re = /(?<![\d/.:+])(\d{1,2})\/(\d{1,2})(?![\d/]|\.\d|\+)/g;
  for (const m of text.matchAll(re)) {
    const month = Number(m[1]);
    const day = Number(m[2]);
    if (!validMonth(month) || !validDay(day)) continue;
    const start = m.index;
    const end = start + m[0].length;
    const before = text.slice(Math.max(0, start - 30), start);
    const after = text.slice(end, end + 20);
    if (BEFORE_NOT_DATE.test(before) && !/\b(?:on|of)\s*$/i.test(before) && !DATED_DOSE.test(before)) continue;
    if (AFTER_NOT_DATE.test(after)) continue;
    if (VENT_BEFORE.test(before) && !/\b(?:on|since|from|until|of|dated)\s*$/i.test(before)) continue;
    // "1-2/4" (train of four), "3-4/5": the end of a range of counts, not a date
    if (/\d\s?-\s?$/.test(text.slice(Math.max(0, start - 2), start)) && !/\d\/\d{1,2}\s?-\s?$/.test(text.slice(Math.max(0, start - 8), start))) continue;
    // "2/2 COPD", "failure 2/2 sepsis": 2/2 is "secondary to" unless a word of time says it dates
    if (month === 2 && day === 2 && /^\s+[A-Za-z]/.test(after) && !DATE_CUE_BEFORE.test(before)) continue;
    if (/^\s*(?:ext|extrems?|extremities|limbs|ue|le)\b/i.test(after)) continue;
    // "metastatic carcinoma in 2 of 19 (2/19)": the fraction a count just wrote
    if (new RegExp(`\\b${month}\\s+of\\s+${day}\\b`).test(text.slice(Math.max(0, start - 30), start))) continue;
    // "x/10" is a score when pain or rating words are near, and "5/5" when strength words are.
    const near = text.slice(Math.max(0, start - 60), Math.min(text.length, end + 30)).toLowerCase();
    const dated = DATE_CUE_BEFORE.test(before);
    if (day === 10 && month <= 10 && !dated && /pain|scale|rate|score|discomfort|ache|tight|pressure|nausea|anxiety|tender|sore|\bha\b|headache|\bcp\b|hurt|cramp|burn|itch|dyspnea|sob\b/.test(near))
      continue;
    if (day === 5 && month <= 5 && /strength|motor|power|grip|ue|le|extremit|weak|\bx4\b|bue|ble|rue|lue|rle|lle/.test(near)) continue;
    if ((day === 4 || day === 6) && /murmur|pulse|sem|hsm|grade/.test(near)) continue;
    if (day <= 4 && month <= 4 && /\b(?:tabs?|tablets?|pills?|caps?|strength|ns|saline|nodes?|lobes?|way)\b/.test(near) && !DATED_DOSE.test(before)) continue;
    // "1/2 - 1 tab", "1/2 2 tabs": a fraction of a dose. A time or another date may follow a date.
    if (/^\s*-?\s*\d/.test(after) && !TIME_AFTER.test(after) && !RANGE_AFTER.test(after)) continue;
    const [mText, dText] = [m[1] as string, m[2] as string];
    out.push(detection(start, m[0], { month, day }, (p) => `${padLike(mText, p.month)}/${padLike(dText, p.day)}`));
  }
}

function numericDates(text: string, out: Detection[]): void {
  // ISO and year-first: 2104-07-22, 2104/7/22
  for (const m of text.matchAll(/(?<![\d/.-])(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?![\d/]|\.\d)/g)) {
    const [y, sep, mo, d] = [m[1] as string, m[2] as string, m[3] as string, m[4] as string];
    if (!validYear(+y) || !validMonth(+mo) || !validDay(+d)) continue;
    // year-first dates are written zero-padded by the systems that write them
    out.push(detection(m.index, m[0], { year: +y, month: +mo, day: +d }, (p) => `${p.year}${sep}${pad(p.month, mo.length)}${sep}${pad(p.day, d.length)}`));
  }
  // With a year, month first (7/22/2104, 7-22-04, 07.22.2104) or day first (22/07/2104, 14.03.1946): a
  // first number above 12 says day first; otherwise the US order is read (either way it is a date).
  // A line wrap may fall after a separator ("03/14/" at the end of a line, "1931" on the next): kept as written.
  for (const m of text.matchAll(/(?<![\w/.-])(\d{1,2})([-/.])((?:[ \t]*\n[ \t]*)?)(\d{1,2})\2((?:[ \t]*\n[ \t]*)?)(\d{4}|\d{2})(?![\d/%]|\.\d|-\d)/g)) {
    const [a, sep, wrap1, b, wrap2, y] = [m[1] as string, m[2] as string, m[3] as string, m[4] as string, m[5] as string, m[6] as string];
    const dayFirst = +a > 12 && validMonth(+b);
    const [mo, d] = dayFirst ? [b, a] : [a, b];
    if (!validMonth(+mo) || !validDay(+d)) continue;
    if (sep === '.' && y.length === 2) continue; // 1.5.20 is more often a version or a dose
    // a two-digit "year" on the next line is a count or a value as often as not
    if (wrap2 && y.length === 2) continue;
    // "IMV 12/5/40", "PS 10/5/35": a ventilator's rate, pressure and oxygen, not a date of birth
    if (y.length === 2 && sep === '/' && VENT_BEFORE.test(text.slice(Math.max(0, m.index - 24), m.index))) continue;
    const year = fullYear(y);
    out.push(
      detection(m.index, m[0], { year, month: +mo, day: +d }, (p) =>
        dayFirst
          ? `${padLike(d, p.day)}${sep}${wrap1}${padLike(mo, p.month)}${sep}${wrap2}${yearLike(y, p.year)}`
          : `${padLike(mo, p.month)}${sep}${wrap1}${padLike(d, p.day)}${sep}${wrap2}${yearLike(y, p.year)}`,
      ),
    );
  }
  // Month and year: 12/2023, 4/2024, 2026-11
  for (const m of text.matchAll(/(?<![\d/.-])(0?[1-9]|1[0-2])([/-])((?:19|20)\d\d)(?![\d/-])/g)) {
    const [mo, sep, y] = [m[1] as string, m[2] as string, m[3] as string];
    out.push(detection(m.index, m[0], { year: +y, month: +mo }, (p) => `${padLike(mo, p.month)}${sep}${p.year}`));
  }
  for (const m of text.matchAll(/(?<![\d/.-])((?:19|20)\d\d)-(0[1-9]|1[0-2])(?![\d/-])/g)) {
    const [y, mo] = [m[1] as string, m[2] as string];
    out.push(detection(m.index, m[0], { year: +y, month: +mo }, (p) => `${p.year}-${pad(p.month, 2)}`));
  }
  bareMonthDay(text, out);
  hyphenMonthDay(text, out);
  years(text, out);
  eventYears(text, out);
}

/**
 * m-d after a word that dates ("adm on 3-4", "presented on 1-20", "since 12-24"): without that word a
 * hyphen makes a range ("3-4 L", "1-2 tabs"), so the word is required, and the month and day must be
 * valid and followed by nothing that measures.
 */
function hyphenMonthDay(text: string, out: Detection[]): void {
  for (const m of text.matchAll(/(?<![\w/.:+-])(\d{1,2})-(\d{1,2})(?![\w/]|[-.]\d)/g)) {
    const [mText, dText] = [m[1] as string, m[2] as string];
    if (!validMonth(+mText) || !validDay(+dText)) continue;
    const before = text.slice(Math.max(0, m.index - 24), m.index);
    if (!HYPHEN_DATE_CUE.test(before)) continue;
    const after = text.slice(m.index + m[0].length, m.index + m[0].length + 20);
    if (!/^(?:\s*(?:$|[,.;:)]|\n)|\s+(?:@|w\/|->|-\s)|\s+(?:at|with|and|for|to|by|when|after|before|from|until|\d{3,4}|\d{1,2}:\d\d|am|pm|[a-z]+day)\b)/i.test(after)) continue;
    out.push(detection(m.index, m[0], { month: +mText, day: +dText }, (p) => `${padLike(mText, p.month)}-${padLike(dText, p.day)}`));
  }
}
const HYPHEN_DATE_CUE =
  /\b(?:on|since|from|until|till|til|dated|adm(?:itted)?|admission|d\/c(?:'d)?|discharged|seen|last|next|thru|through|due|started|stopped|held|ended|effective|dos|dob|born|of|by|before|after)\s*:?\s*$/i;

/** Clinical events a year may follow without "in": "stent 2004", "CABG 98", "s/p AVR 2001", "MI 2003". */
const EVENT_YEAR = new RegExp(
  String.raw`\b(${[
    'stents?',
    'cabg',
    'mi',
    'nstemi',
    'stemi',
    'cva',
    'tia',
    'stroke',
    'avr',
    'mvr',
    'tavr',
    'tah',
    'tka',
    'tha',
    'orif',
    'ptca',
    'pci',
    'aaa',
    'lami',
    'laminectomy',
    'fusion',
    'bypass',
    'repair',
    'replacement',
    'transplant',
    'resection',
    'surgery',
    'fx',
    'fracture',
    'cath',
    'ablation',
    'ppm',
    'pacer',
    'pacemaker',
    'icd',
    'aicd',
    'dx',
    'diagnosed',
    'hysterectomy',
    'mastectomy',
    'lumpectomy',
    'colectomy',
    'chole',
    'cholecystectomy',
    'appy',
    'appendectomy',
    'turp',
    'cea',
    'endarterectomy',
    'amputation',
    'bka',
    'aka',
    'c-section',
    'csection',
    'sah',
    'dvt',
    'pe',
    'chemo',
    'xrt',
    'radiation',
    'biopsy',
    'colonoscopy',
    'egd',
    'echo',
    'intubation',
    'intubated',
    'admission',
    'hospitalization',
    'hospitalized',
  ].join('|')})(?:\s*\([^()\n]{1,20}\))?(?:\s+(?:in|on|of|was|done))?[\s:,(]{1,3}((?:19|20)\d\d|\d\d)(?![\d/:+%-]|[.,]\d|\s*(?:x\b|%|mg|cc|ml|units?|beats?|mmhg))`,
  'gi',
);
/** Events written as acronyms, after which two digits are a year ("CABG 98", "MI 02"), not a value. */
const TWO_DIGIT_EVENTS = new Set(['cabg', 'mi', 'cva', 'tia', 'avr', 'mvr', 'tah', 'tka', 'tha', 'orif', 'ptca', 'pci', 'aaa', 'stent', 'stents', 'turp', 'cea', 'bka', 'aka', 'sah']);

function eventYears(text: string, out: Detection[]): void {
  for (const m of text.matchAll(EVENT_YEAR)) {
    const [event, y] = [(m[1] as string).toLowerCase(), m[2] as string];
    if (y.length === 2 && !TWO_DIGIT_EVENTS.has(event)) continue;
    const start = m.index + m[0].length - y.length;
    const after = text.slice(start + y.length, start + y.length + 14);
    if (NOT_YEAR_AFTER.test(after)) continue;
    out.push(detection(start, y, { year: fullYear(y) }, (p) => yearLike(y, p.year)));
  }
}

/** Words before a year that say it dates an event: "in 2009", "since 98", "quit in 89", "(2021)". */
const YEAR_CUE =
  /(?:\b(?:in|since|circa|ca\.?|during|from|until|till|til|by|quit|retired|diagnosed|dx|dx'd|implanted|placed|born|married|widowed|moved|divorced|immigrated|arrived|graduated|year|yr|back\s+in|as\s+of|summer|winter|spring|fall|autumn|early|late|mid|mid-|before|after|prior\s+to|last|molst|polst|ecog)(?:\s+(?:of|the|in))?\s*|\(\s*)$/i;
/** The last word of every YEAR_CUE phrase. */
const YEAR_CUE_WORDS = new Set(
  "in since circa ca ca. during from until till til by quit retired diagnosed dx dx'd implanted placed born married widowed moved divorced immigrated arrived graduated year yr back of as summer winter spring fall autumn early late mid mid- before after to last molst polst ecog the".split(
    ' ',
  ),
);

/** Words just before "in 87" that make it a value: "sats in 98", "HR in 90s", "K in 4". */
const VALUE_BEFORE =
  /\b(?:hr|rr|bp|sbp|dbp|map|sats?|spo2|o2|temp|t|fs|bs|glucose|sugars?|k|na|cr|bun|hgb|hct|plt|wbc|inr|ph|pco2|po2|peep|fio2|tv|vt|ve|rate|rates|range|ranging|pressures?|values?|levels?|numbers?|counts?|output|uo|i\/o|weight|wt|score|gcs|rass|cpot|cvp|pap|icp|cpp|pain|lactate|goals?|mid|high|low|upper|lower|the)\s+(?:in|since|from|of|to)\s*(?:the\s+)?$/i;
/** After a year: not a unit, a decimal, a percentage, a time or "s" (the 90s are values). */
const NOT_YEAR_AFTER =
  /^(?:['’]?s\b|\.\d|%|\s*(?:%|mg|mcg|ml|cc|l\b|units?|hrs?|hours?|h\b|min|mins|minutes|kg|lbs?|cm|mm|bpm|beats|breaths|mmhg|x\b|times|pack|pk|meq|mmol|-\d|:\d|\/\d|cal|kcal|calories|steps|ft|feet|meters|m\b|yo\b|y\/o|years?\s+old|year-old|deg\b|degrees?|°))/i;

const VEHICLE_AFTER =
  /^\s+(?:toyota|honda|subaru|ford|chevy|chevrolet|nissan|hyundai|kia|mazda|volkswagen|vw|bmw|mercedes|audi|lexus|jeep|dodge|ram|gmc|buick|cadillac|tesla|volvo|harley|harley-davidson|yamaha|kawasaki|ducati|acura|infiniti|chrysler|mitsubishi|porsche|jaguar|mini|fiat|suzuki|triumph|pontiac|saturn|scion|genesis|lincoln)\b/i;

/** A year alone, where the words before it say it dates an event. Four digits 1900-2099, or two after "in"/"since". */
function years(text: string, out: Detection[]): void {
  // decades: "in the 1950s", "since the 90s"
  for (const m of text.matchAll(/\b(?:in|since|during|from|by)\s+(?:the\s+)?(?:early\s+|late\s+|mid-?\s*)?((?:19|20)\d0)['’]?s\b/gi)) {
    const y = m[1] as string;
    const start = m.index + m[0].indexOf(y);
    out.push(detection(start, text.slice(start, m.index + m[0].length), { year: +y }, (p) => `${p.year - (p.year % 10)}s`));
  }
  for (const m of text.matchAll(/(?<![\d/.,:'’-])((?:19|20)\d\d|\d\d)(?![\d/.,:-]\d|\d)/g)) {
    const y = m[1] as string;
    // most numbers are values: only one after a word of time, "(" or an acronym can be a year
    const last = /(?:([A-Za-z'’-]+)|(\())\s*$/.exec(text.slice(Math.max(0, m.index - 16), m.index));
    if (!last || !(last[2] || YEAR_CUE_WORDS.has((last[1] as string).toLowerCase()) || (y.length === 4 && /^[A-Z]{2,6}$/.test(last[1] as string)))) continue;
    const before = text.slice(Math.max(0, m.index - 24), m.index);
    const after = text.slice(m.index + y.length, m.index + y.length + 14);
    if (NOT_YEAR_AFTER.test(after)) continue;
    // "(2014 Honda Civic)": a model year names a car, not a day of the patient's life
    if (VEHICLE_AFTER.test(after)) continue;
    // "TKA 2011)", "SVD 2019 at 38w", "LSIL 2022,": a year after a procedure or finding written as an acronym
    const afterAcronym =
      y.length === 4 &&
      /\b[A-Z]{2,6}\s$/.test(before) &&
      !/\b(?:AT|PER|BY|ON|TO|UOP|UO|IO|OUT|IN|HR|BP|TV|VT|RR|PEEP|FIO2|WBC|PLT|HCT|HGB|BNP|LDH|CK)\s$/.test(before) &&
      /^(?:\s*[,;.)]|\s+(?:at|in|and|on|with|w\/|\(|\d+(?:\.\d+)?\s?(?:cm|mm)))/.test(after) &&
      !/(?:00|30)$/.test(y);
    if ((!YEAR_CUE.test(before) && !afterAcronym) || VALUE_BEFORE.test(before)) continue;
    if (y.length === 2) {
      // two digits only after "in", "since", "quit (in)", "retired (in)", "widowed (in)": "in 87", "since 02"
      if (!/\b(?:in|since|quit(?:\s+in)?|retired(?:\s+in)?|widowed(?:\s+in)?|married(?:\s+in)?|back\s+in)\s*$/i.test(before)) continue;
      if (/^\s*(?:\w+\s+)?(?:min|minutes|hours?|hrs?|days?|weeks?|wks?|months?|mos?|years?|yrs?)\b/i.test(after)) continue;
    } else if (/\bat\s*$|@\s*$/.test(before))
      continue; // "at 2000" is a time
    else if (/\b(?:from|until|till|til|by|before|after|since|last)\s*$/i.test(before) && /(?:00|15|30|45)$/.test(y))
      continue; // "until 1900", "since 2000": a clock
    else if (/^\s*(?:-|to|until)\s*\d{4}\b/.test(after) && /[0-5]0$/.test(y))
      continue; // "2000-0800" is a shift
    else if (+y > 2030 && /^(?:[01]\d|2[0-3])[0-5]\d$/.test(y)) continue; // "arrived 2040": a clock, not a year to come
    out.push(detection(m.index, y, { year: fullYear(y) }, (p) => yearLike(y, p.year)));
  }
}

const ORD = '(?:st|nd|rd|th)';
/** Month d[, yyyy] and Month d-d */
const MONTH_DAY = new RegExp(`\\b(${MONTH_ALT})(\\.?)(\\s+)(\\d{1,2})(${ORD})?(?:(\\s*[-–]\\s*)(\\d{1,2})(${ORD})?)?\\b(?:(,?\\s*)(\\d{4}\\b|['’]\\d{2}\\b))?`, 'gi');
/** d Month [yyyy], 22nd of July, 22-Jul-2104 */
const DAY_MONTH = new RegExp(`\\b(\\d{1,2})(${ORD})?(\\s+of\\s+|\\s+|-)(${MONTH_ALT})(\\.?)(?:(-|,?\\s+)(\\d{4}|\\d{2}(?=\\b)|['’]\\d{2}))?\\b`, 'gi');
/** Month yyyy, Month 'yy */
const MONTH_YEAR = new RegExp(`\\b(${MONTH_ALT})(\\.?)(,?\\s+(?:of\\s+)?)(\\d{4}|['’]\\d{2})\\b`, 'gi');
/** a month on its own */
const MONTH_ALONE = new RegExp(`\\b(${MONTH_ALT})(\\.?)(?![\\w'’])`, 'gi');

/** Whether a month name may be in the text at all (most notes write none): the four month patterns are skipped otherwise. */
const ANY_MONTH = /\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)/i;

function monthNameDates(text: string, out: Detection[], caps: boolean): void {
  if (!ANY_MONTH.test(text)) return;
  // "may" and "march" are verbs; in mixed-case text they are months only when capitalised.
  const isMonth = (word: string) => {
    const lower = word.toLowerCase().replace(/\.$/, '');
    if ((lower === 'may' || lower === 'march' || lower === 'mar') && !caps && word[0] !== word[0]?.toUpperCase()) return false;
    if (lower === 'may' && !caps && word === 'MAY') return false;
    return monthNumber(word) !== undefined;
  };
  // Month d[, yyyy]  and  Month d-d
  const md = MONTH_DAY;
  for (const m of text.matchAll(md)) {
    const [mon, dot, sep, d, suf, rangeSep, d2, suf2, ysep, y] = [m[1] as string, m[2] as string, m[3] as string, m[4] as string, m[5] ?? '', m[6] ?? '', m[7], m[8] ?? '', m[9] ?? '', m[10]];
    // "on may 2", "til may 10": a lowercase "may" is a month after a word of time
    const cued = /\b(?:on|by|til|till|until|since|from|before|after|around|of|thru|through|next|last|this|due|is|in)\s+$/i.test(text.slice(Math.max(0, m.index - 10), m.index));
    if (!(isMonth(mon) || (cued && monthNumber(mon) !== undefined)) || !validDay(+d)) continue;
    const end = m.index + m[0].length;
    if (!y && /^\s*(?:mg|mcg|ml|cc|units?|kg|lbs?|%)/i.test(text.slice(end, end + 6))) continue;
    const style = monthStyle(mon + dot);
    const year = y ? fullYear(y.replace(/^['’]/, '')) : undefined;
    const width = d2 && validDay(+d2) ? +d2 - +d : undefined;
    const parts: DateParts = { month: monthNumber(mon) as number, day: +d, ...(year ? { year } : {}) };
    out.push(
      detection(m.index, m[0], parts, (p) => {
        let s = `${style(p.month)}${sep}${suf ? p.day + suffixLike(suf, p.day) : pad(p.day, d.length)}`;
        if (width !== undefined) s += `${rangeSep}${p.day + width}${suf2 ? suffixLike(suf2, p.day + width) : ''}`;
        if (y) s += `${ysep}${/^['’]/.test(y) ? y[0] + pad(p.year % 100, 2) : yearLike(y, p.year)}`;
        return s;
      }),
    );
  }
  // d Month [yyyy], 22nd of July, 22-Jul-2104
  const dm = DAY_MONTH;
  for (const m of text.matchAll(dm)) {
    const [d, suf, sep, mon, dot, ysep, y] = [m[1] as string, m[2] ?? '', m[3] as string, m[4] as string, m[5] as string, m[6] ?? '', m[7]];
    if (!isMonth(mon) || !validDay(+d)) continue;
    if (y && y.length === 2 && ysep !== '-' && /^\s*(?:mg|mcg|ml|cc|units?|kg|lbs?|%|x\b|tabs?|doses?)/i.test(text.slice(m.index + m[0].length, m.index + m[0].length + 8))) continue; // "22 Jul 45 mg" is not a year
    if (sep === '-' && !y && !/^\s/.test(text.slice(m.index + m[0].length, m.index + m[0].length + 1) || ' ')) continue;
    const style = monthStyle(mon + dot);
    const year = y ? fullYear(y.replace(/^['’]/, '')) : undefined;
    out.push(
      detection(m.index, m[0], { month: monthNumber(mon) as number, day: +d, ...(year ? { year } : {}) }, (p) => {
        let s = `${suf ? p.day + suffixLike(suf, p.day) : pad(p.day, d.length)}${sep}${style(p.month)}`;
        if (y) s += `${ysep}${/^['’]/.test(y) ? y[0] + pad(p.year % 100, 2) : yearLike(y, p.year)}`;
        return s;
      }),
    );
  }
  // Month yyyy, Month 'yy
  const my = MONTH_YEAR;
  for (const m of text.matchAll(my)) {
    const [mon, dot, sep, y] = [m[1] as string, m[2] as string, m[3] as string, m[4] as string];
    if (!isMonth(mon)) continue;
    const year = fullYear(y.replace(/^['’]/, ''));
    if (y.length === 4 && !validYear(year)) continue;
    const style = monthStyle(mon + dot);
    out.push(detection(m.index, m[0], { month: monthNumber(mon) as number, year }, (p) => `${style(p.month)}${sep}${/^['’]/.test(y) ? y[0] + pad(p.year % 100, 2) : p.year}`));
  }
  // A month on its own: "in July", "since Oct." (a name like April or June keeps its NAME type: lower priority)
  const alone = MONTH_ALONE;
  for (const m of text.matchAll(alone)) {
    const [mon, dot] = [m[1] as string, m[2] as string];
    if (!isMonth(mon)) continue;
    const lower = mon.toLowerCase();
    const before = text.slice(Math.max(0, m.index - 25), m.index).toLowerCase();
    const full = MONTH_NAMES.includes(lower);
    const cue =
      /\b(?:in|since|until|till|by|during|early|late|mid|last|next|this|of|from|through|thru|before|after|around|since early|since late|beginning of|end of)\s*-?\s*$|\(\s*$/.test(before) &&
      !(/\(\s*$/.test(before) && !/^\.?\s*\)/.test(text.slice(m.index + m[0].length, m.index + m[0].length + 3)));
    const ambiguous = ['may', 'march', 'april', 'june', 'august', 'jan', 'mar', 'jun', 'aug'].includes(lower);
    if (!cue && (!full || ambiguous)) continue;
    // lowercase only a full month name after a word of time ("til end of june"), never "may" or "march"
    if (!caps && mon[0] !== mon[0]?.toUpperCase() && !(cue && full && lower !== 'may' && lower !== 'march')) continue;
    // "in August." ends a sentence: the dot belongs to an abbreviation only ("since Oct.")
    const keepDot = dot && !full;
    const style = monthStyle(mon + (keepDot ? dot : ''));
    out.push(detection(m.index, keepDot ? m[0] : mon, { month: monthNumber(mon) as number }, (p) => style(p.month), PRIORITY.NAME - 1));
  }
}

// Nouns after "the 5th" that make it a rib, a space or a dose rather than a day of the month.
const ORDINAL_NOT_DAY =
  /^\s*(?:-|\s)?(?:intercostal|ics|rib|ribs|metatarsal|metacarpal|digit|finger|toe|percentile|ventricle|nerve|cranial|floor|grade|dose|doses|day|days|week|weeks|month|months|year|years|time|times|degree|lumbar|cervical|thoracic|sacral|vertebra|cycle|generation|trimester|birthday|decade|visit|attempt|session|line|place|position|edition|street|st|avenue|ave|division|stage|lobe|segment|hour|round|course|admission|episode|pregnancy|child|sibling|grader|fraction|interspace|costal|gestational|postoperative|post-operative|postop|hospital|pod|life|minute|second|breath|beat|cm|mm|toe|centile|percent)\b/i;

const WEEKDAY = '(?:mon|tues?|wed|weds|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday)?\\.?';
/** monday 18th, thurs the 14th */
const WEEKDAY_ORDINAL = new RegExp(`\\b(${WEEKDAY},?\\s+(?:the\\s+)?)(\\d{1,2})(${ORD})\\b`, 'gi');
/** the 14th */
const THE_ORDINAL = new RegExp(`\\b(the\\s+)(\\d{1,2})(${ORD})\\b`, 'gi');
/** ... of July */
const OF_MONTH = new RegExp(`^\\s+of\\s+(?:${MONTH_ALT})\\b`, 'i');

function ordinalDays(text: string, out: Detection[]): void {
  // "monday 18th", "thurs the 14th": a weekday with a day of the month
  const withDay = WEEKDAY_ORDINAL;
  for (const m of text.matchAll(withDay)) {
    const [head, d, suf] = [m[1] as string, m[2] as string, m[3] as string];
    if (!validDay(+d)) continue;
    out.push(detection(m.index, m[0], { day: +d }, (p) => `${head}${p.day}${suffixLike(suf, p.day)}`));
  }
  const re = THE_ORDINAL;
  for (const m of text.matchAll(re)) {
    const [the, d, suf] = [m[1] as string, m[2] as string, m[3] as string];
    if (!validDay(+d)) continue;
    const after = text.slice(m.index + m[0].length, m.index + m[0].length + 20);
    if (ORDINAL_NOT_DAY.test(after)) continue;
    if (OF_MONTH.test(after)) continue; // "the 22nd of July" is found whole by the month forms
    // "the 3rd and 4th metacarpals", "the 20th, 25th, and 50th percentiles": a list of ordinals is a count
    if (/^\s*(?:,|and|or|-|to|through)\s*(?:and\s+)?\d{1,3}(?:st|nd|rd|th)\b/i.test(after)) continue;
    out.push(detection(m.index, m[0], { day: +d }, (p) => `${the}${p.day}${suffixLike(suf, p.day)}`));
  }
}

/** '92: a two-digit year written with an apostrophe (often "Jul '92", found whole above). */
function apostropheYears(text: string, out: Detection[]): void {
  for (const m of text.matchAll(/(?<![\w'’])(['’])(\d{2})\b(?!['’\d])/g)) {
    const [q, y] = [m[1] as string, m[2] as string];
    // 5'10" is a height, not a year
    if (/\d\s*$/.test(text.slice(Math.max(0, m.index - 2), m.index))) continue;
    out.push(detection(m.index, m[0], { year: fullYear(y) }, (p) => `${q}${pad(p.year % 100, 2)}`));
  }
}

/** Holidays date an event as much as a day does: "after Thanksgiving", "last drink New Year's Eve". */
const HOLIDAY =
  /\b(?:thanksgiving|christmas(?:\s+(?:eve|day))?|xmas|new\s+year['’]?s(?:\s+(?:eve|day))?|easter(?:\s+sunday)?|good\s+friday|memorial\s+day|labor\s+day|labour\s+day|independence\s+day|(?:the\s+)?(?:4th|fourth)\s+of\s+july|halloween|valentine['’]?s\s+day|mother['’]?s\s+day|father['’]?s\s+day|veterans\s+day|columbus\s+day|presidents['’]?\s+day|mlk\s+day|martin\s+luther\s+king\s+day|hanukkah|chanukah|passover|yom\s+kippur|rosh\s+hashanah|ramadan|eid(?:\s+al-(?:fitr|adha))?|diwali|kwanzaa|(?:lunar|chinese)\s+new\s+year|super\s+bowl\s+sunday)\b/gi;

function holidays(text: string, out: Detection[]): void {
  for (const m of text.matchAll(HOLIDAY)) {
    // "eid" alone is also a name and an abbreviation: only capitalised and followed by nothing that makes it a code
    if (/^eid$/i.test(m[0]) && m[0] !== 'Eid') continue;
    out.push({ start: m.index, end: m.index + m[0].length, type: 'DATE', priority: PRIORITY.DATE, source: 'detector', rule: 'date.holiday' });
  }
}

const WEEKDAY_BEFORE = /\b(?:mon|tue|tues|wed|weds|thu|thur|thurs|fri|sat|sun)(?:day|sday|nesday|rsday|urday)?\.?,?\s{1,2}$/i;

/** "Friday 6/11", "Tues, March 4": the weekday before a date belongs to it (a shifted date is written without it). */
function withWeekdays(text: string, out: Detection[]): void {
  for (const d of out) {
    if (!d.date || d.date.parts.month === undefined) continue;
    const w = WEEKDAY_BEFORE.exec(text.slice(Math.max(0, d.start - 12), d.start));
    if (w) d.start -= w[0].length;
  }
}

export function detectDates(text: string, caps: boolean): Detection[] {
  const out: Detection[] = [];
  numericDates(text, out);
  monthNameDates(text, out, caps);
  ordinalDays(text, out);
  apostropheYears(text, out);
  withWeekdays(text, out);
  holidays(text, out);
  return out;
}
