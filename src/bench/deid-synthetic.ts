/**
 * The seeded synthetic corpus of `npm run bench:deid`: discharge summaries, ICU nursing notes in ALL-CAPS
 * shorthand, radiology reports and patient-portal messages with planted surrogate PHI of every Safe
 * Harbor kind and the look-alikes that must survive (doses, pain scores, blood pressures, labs, times,
 * eponyms). Its names, places and companies come from @faker-js/faker's locales, not from the
 * detector's lexicons, and its sentences were written apart from the detector's cue lists. It is still
 * the detector measured against one idea of a note: the realistic sets in tests/fixtures/deid-dev and
 * deid-heldout are the better guide.
 */
import { allFakers, type Faker } from '@faker-js/faker';
import type { KnownIdentifiers } from '../catalog';
import type { GoldRecord } from '../deid';
import type { Span, SpanType } from '../deid';

type Piece = string | { type: SpanType | 'LOOKALIKE'; text: string };

interface Note {
  style: string;
  text: string;
  gold: Span[];
  lookalikes: { start: number; end: number }[];
  known: KnownIdentifiers;
}

/** Builds a note from text and marked pieces, recording where each marked piece lands. */
function assemble(style: string, pieces: Piece[], known: KnownIdentifiers, upper = false): Note {
  let text = '';
  const gold: Span[] = [];
  const lookalikes: { start: number; end: number }[] = [];
  for (const p of pieces) {
    if (typeof p === 'string') {
      text += p;
      continue;
    }
    const start = text.length;
    text += p.text;
    if (p.type === 'LOOKALIKE') lookalikes.push({ start, end: text.length });
    else gold.push({ start, end: text.length, type: p.type });
  }
  // ASCII only, so upper-casing keeps every offset
  return { style, text: upper ? text.toUpperCase() : text, gold, lookalikes, known };
}

/** A tagged template: `t\`Seen by ${name(x)}\`` keeps the marks of interpolated pieces. */
function t(strings: TemplateStringsArray, ...values: (Piece | Piece[] | number)[]): Piece[] {
  const out: Piece[] = [];
  strings.forEach((s, i) => {
    out.push(s);
    const v = values[i];
    if (v === undefined) return;
    if (Array.isArray(v)) out.push(...v);
    else if (typeof v === 'number') out.push(String(v));
    else out.push(v);
  });
  return out;
}

const TRANSLIT: Record<string, string> = { Đ: 'D', đ: 'd', Ł: 'L', ł: 'l', ß: 'ss', Ø: 'O', ø: 'o', ı: 'i', Æ: 'AE', æ: 'ae', Œ: 'OE', œ: 'oe', Þ: 'Th', þ: 'th' };
/** Names as a US record system writes them: ASCII, diacritics dropped, letters transliterated. */
const ascii = (s: string) =>
  s
    .replace(/[ĐđŁłßØøıÆæŒœÞþ]/g, (c) => TRANSLIT[c] ?? '')
    .normalize('NFD')
    .replace(/[^\x20-\x7e]/g, '');
const mark = (type: SpanType | 'LOOKALIKE', text: string): Piece => ({ type, text: ascii(text) });

class Generator {
  private readonly f: Faker;
  private readonly locales: Faker[];
  constructor(seed: number) {
    this.f = allFakers.en_US;
    this.f.seed(seed);
    // US patients and staff carry names from many languages; faker's locales supply them.
    this.locales = [
      allFakers.en_US,
      allFakers.en_US,
      allFakers.en_US,
      allFakers.es_MX,
      allFakers.de,
      allFakers.fr,
      allFakers.it,
      allFakers.pl,
      allFakers.vi,
      allFakers.nl,
      allFakers.pt_BR,
      allFakers.tr,
    ];
    this.locales.forEach((l, i) => l.seed(seed * 31 + i));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.f.number.int({ min: 0, max: xs.length - 1 })] as T;
  }
  int(min: number, max: number): number {
    return this.f.number.int({ min, max });
  }
  chance(p: number): boolean {
    return this.f.number.float({ min: 0, max: 1 }) < p;
  }
  person(): { first: string; last: string } {
    const l = this.pick(this.locales);
    return { first: ascii(l.person.firstName()).replace(/\s.*$/, ''), last: ascii(l.person.lastName()) };
  }
  city(): string {
    return ascii(this.f.location.city());
  }
  street(): string {
    return ascii(this.f.location.streetAddress());
  }
  zip(): string {
    return this.f.location.zipCode('#####');
  }
  state(): string {
    return this.f.location.state({ abbreviated: true });
  }
  hospital(): string {
    const name = this.person();
    return this.pick([
      `${name.last} Memorial Hospital`,
      `${this.city()} General Hospital`,
      `St. ${name.first}'s Hospital`,
      `${name.last} Medical Center`,
      `${this.city()} Regional Medical Center`,
      `${name.last} Rehabilitation Hospital`,
      `${this.city()} Nursing Home`,
      `${ascii(this.f.company.name().split(/[ ,]/)[0] as string)} Health Center`,
    ]);
  }
  phone(): string {
    const a = this.int(201, 989);
    const b = this.int(200, 999);
    const c = String(this.int(0, 9999)).padStart(4, '0');
    return this.pick([`(${a}) ${b}-${c}`, `${a}-${b}-${c}`, `${a}.${b}.${c}`, `${a} ${b} ${c}`, `+1 ${a} ${b} ${c}`]);
  }
  date(): { y: number; m: number; d: number } {
    return { y: this.int(1990, 2130), m: this.int(1, 12), d: this.int(1, 28) };
  }
  dateText(form?: number): string {
    const { y, m, d } = this.date();
    const mon = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'][m - 1] as string;
    const month = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'][m - 1] as string;
    const forms = [
      `${m}/${d}/${y}`,
      `${String(m).padStart(2, '0')}/${String(d).padStart(2, '0')}/${y}`,
      `${m}/${d}`,
      `${m}-${d}-${y}`,
      `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`,
      `${d} ${mon}`,
      `${mon} ${d}`,
      `${month} ${d}, ${y}`,
      `${d}-${mon}-${y}`,
      `${m}/${d}/${String(y % 100).padStart(2, '0')}`,
      `${month} ${y}`,
      `the ${d}${d === 1 || d === 21 ? 'st' : d === 2 || d === 22 ? 'nd' : d === 3 || d === 23 ? 'rd' : 'th'}`,
      `${mon} '${String(y % 100).padStart(2, '0')}`,
    ];
    return forms[form ?? this.int(0, forms.length - 1)] as string;
  }
  vin(): string {
    return this.f.vehicle.vin();
  }
  digits(n: number): string {
    return Array.from({ length: n }, () => this.int(0, 9)).join('');
  }
  letters(n: number): string {
    return Array.from({ length: n }, () => String.fromCharCode(65 + this.int(0, 25))).join('');
  }
  mrn(): string {
    return this.pick([this.digits(7), this.digits(8), `${this.digits(3)}-${this.digits(2)}-${this.digits(2)}`, `${this.letters(1)}${this.digits(7)}`]);
  }
  email(p: { first: string; last: string }): string {
    return `${p.first.toLowerCase()}.${p.last.toLowerCase().replace(/[^a-z]/g, '')}${this.int(1, 99)}@${this.pick(['gmail.com', 'yahoo.com', 'comcast.net', 'outlook.com', 'aol.com'])}`;
  }
}

/** The look-alikes of clinical text that must not be masked. */
function lookalikes(g: Generator): Piece[][] {
  return [
    t`Percocet ${mark('LOOKALIKE', '5/325')} 1-2 tabs q4h prn.`,
    t`Pain ${mark('LOOKALIKE', `${g.int(2, 9)}/10`)}, improved with dilaudid.`,
    t`BP ${mark('LOOKALIKE', `${g.int(95, 170)}/${g.int(50, 95)}`)}, HR ${g.int(55, 120)}, RR ${g.int(12, 28)}, SpO2 ${g.int(90, 100)}% on 2L.`,
    t`Na ${g.int(128, 146)}, K ${g.int(3, 5)}.${g.int(0, 9)}, Cr ${g.int(0, 3)}.${g.int(1, 9)}, WBC ${g.int(3, 22)}.${g.int(0, 9)}, Hct ${g.int(22, 45)}.${g.int(0, 9)}.`,
    t`Next dose due at ${mark('LOOKALIKE', this_time(g))}.`,
    t`${mark('LOOKALIKE', 'Foley')} draining clear yellow urine.`,
    t`Neuro: ${mark('LOOKALIKE', 'MAE')}, PERRLA, ${mark('LOOKALIKE', 'Glasgow')} coma scale 15.`,
    t`Strength ${mark('LOOKALIKE', '5/5')} throughout, ${mark('LOOKALIKE', '2/6')} systolic murmur at LUSB.`,
    t`Negative ${mark('LOOKALIKE', 'Homans')} sign, ${mark('LOOKALIKE', 'Murphy')}'s sign negative.`,
    t`Takes ${mark('LOOKALIKE', '1/2')} tab of metoprolol 25 mg.`,
    t`Placed in ${mark('LOOKALIKE', 'Trendelenburg')} for line placement; ${mark('LOOKALIKE', 'Swan')}-Ganz removed.`,
    t`INR ${g.int(1, 3)}.${g.int(0, 9)}, PTT ${g.int(25, 90)}, plt ${g.int(90, 400)}.`,
    t`Seen at ${mark('LOOKALIKE', '1430')}, labs drawn at ${mark('LOOKALIKE', '0600')}.`,
  ];
}

function this_time(g: Generator): string {
  return `${String(g.int(0, 23)).padStart(2, '0')}${g.pick(['00', '15', '30', '45'])}`;
}

interface Cast {
  patient: { first: string; last: string };
  relative: { first: string; last: string; rel: string };
  doctor: { first: string; last: string };
  nurse: { first: string; last: string };
  hospital: string;
  mrn: string;
  dob: string;
  street: string;
  city: string;
  zip: string;
  state: string;
  phone: string;
}

function cast(g: Generator): Cast {
  const patient = g.person();
  const rel = g.pick(['wife', 'husband', 'daughter', 'son', 'sister', 'brother', 'mother', 'niece', 'friend', 'neighbor', 'partner']);
  const relative = { ...g.person(), rel };
  if (g.chance(0.5)) relative.last = patient.last;
  return {
    patient,
    relative,
    doctor: g.person(),
    nurse: g.person(),
    hospital: g.hospital(),
    mrn: g.mrn(),
    dob: `${g.int(1920, 2010)}-${String(g.int(1, 12)).padStart(2, '0')}-${String(g.int(1, 28)).padStart(2, '0')}`,
    street: g.street(),
    city: g.city(),
    zip: g.zip(),
    state: g.state(),
    phone: g.phone(),
  };
}

function knownOf(c: Cast): KnownIdentifiers {
  return {
    names: [`${c.patient.first} ${c.patient.last}`, `${c.relative.first} ${c.relative.last}`, `${c.doctor.first} ${c.doctor.last}`, `${c.nurse.first} ${c.nurse.last}`],
    mrns: [c.mrn],
    dates: [c.dob],
    addresses: [`${c.street}, ${c.city}, ${c.state} ${c.zip}`],
    facilities: [c.hospital],
    phones: [c.phone],
  };
}

const N = (text: string) => mark('NAME', text);
const D = (text: string) => mark('DATE', text);
const L = (text: string) => mark('LOCATION', text);

function dobText(dob: string): string {
  const [y, m, d] = dob.split('-').map(Number) as [number, number, number];
  return `${m}/${d}/${y}`;
}

function discharge(g: Generator, c: Cast): Note {
  const age = g.chance(0.35) ? g.int(90, 104) : g.int(25, 89);
  const ageP: Piece = age > 89 ? mark('AGE', String(age)) : String(age);
  const admit = g.dateText(g.pick([0, 1, 4]));
  const pieces: Piece[] = t`DISCHARGE SUMMARY
Patient: ${N(`${c.patient.last}, ${c.patient.first}`)}   MRN: ${mark('MRN', c.mrn)}   DOB: ${D(dobText(c.dob))}
Admission Date: ${D(admit)}   Discharge Date: ${D(g.dateText(g.pick([0, 1, 4])))}
Attending: ${N(`${c.doctor.first} ${c.doctor.last}`)}, MD   Service: Medicine

HISTORY OF PRESENT ILLNESS: Mr. ${N(c.patient.last)} is a ${ageP} year old with CHF and COPD who presented to the ${L(c.hospital)} emergency department on ${D(g.dateText(g.pick([2, 5, 6])))} with two days of dyspnea. He lives with his ${c.relative.rel} ${N(c.relative.first)} in ${L(c.city)}. `;
  pieces.push(...g.pick(lookalikes(g)), ' ');
  pieces.push(
    ...t`He was last admitted ${D(g.dateText(10))} for a COPD flare.

HOSPITAL COURSE: Diuresed with IV furosemide. `,
    ...g.pick(lookalikes(g)),
    ' ',
    ...g.pick(lookalikes(g)),
    ...t` Seen by cardiology (Dr. ${N(g.person().last)}), who recommended an echo on ${D(g.dateText(11))}. Echo ${D(g.dateText(2))}-${D(g.dateText(2))} showed EF 35%.

DISPOSITION: Home with VNA. Follow up with ${N(`${c.doctor.first} ${c.doctor.last}`)} at ${L(c.street)}, ${L(c.city)}, ${c.state} ${mark('ZIP', c.zip)}, phone ${mark('PHONE', c.phone)}, fax ${mark('FAX', g.phone())}.
${N(`${c.relative.first} ${c.relative.last}`)} (${c.relative.rel}) can be reached at ${mark('PHONE', g.phone())}.
Insurance: Medicare ID ${mark('HEALTH_PLAN', `${g.int(1, 9)}${g.letters(1)}${g.letters(1)}${g.int(0, 9)}-${g.letters(1)}${g.int(0, 9)}${g.int(0, 9)}-${g.letters(2)}${g.digits(2)}`)}. Acct # ${mark('ACCOUNT', `${g.letters(1)}${g.digits(8)}`)}.
SSN on file: ${mark('SSN', `${g.digits(3)}-${g.digits(2)}-${g.digits(4)}`)}.
Dictated by: ${N(`${c.doctor.first.charAt(0)}. ${c.doctor.last}`)}  Job #: ${mark('ID', g.digits(6))}
`,
  );
  return assemble('discharge', pieces, knownOf(c));
}

function icuCaps(g: Generator, c: Cast): Note {
  const age = g.chance(0.5) ? g.int(90, 101) : g.int(40, 89);
  const pieces: Piece[] = t`MICU NURSING NOTE 0700-1900
PT IS ${age > 89 ? mark('AGE', String(age)) : String(age)} YO ${g.pick(['M', 'F'])} ADMITTED ${D(g.dateText(2))} W/ UROSEPSIS. FULL CODE PER ${c.relative.rel.toUpperCase()} ${N(c.relative.first)}.
NEURO: ALERT, ORIENTED X2. `;
  pieces.push(...g.pick(lookalikes(g)), '\nCV: ');
  pieces.push(...g.pick(lookalikes(g)), ' ', ...g.pick(lookalikes(g)));
  pieces.push(
    ...t`
RESP: LS COARSE, SUCTIONED FOR THICK TAN SPUTUM. ABG AT ${mark('LOOKALIKE', this_time(g))}.
GU: `,
    ...g.pick(lookalikes(g)),
    ...t`
SOCIAL: ${c.relative.rel.toUpperCase()} ${N(`${c.relative.first} ${c.relative.last}`)} CALLED X2, UPDATED BY RN. DR ${N(c.doctor.last)} AWARE OF K ${g.int(2, 3)}.${g.int(0, 9)}, REPLETED. PT'S FRIEND ${N(g.person().first)} VISITING FROM ${L(g.city())}. PLAN FOR TRANSFER TO ${L(c.hospital)} ON ${D(g.dateText(6))}.
HCP PHONE ${mark('PHONE', g.phone())}. PACER SERIAL # ${mark('DEVICE', `${g.letters(3)}${g.digits(6)}`)}.
${N(`${c.nurse.first.charAt(0)}. ${c.nurse.last}`)}, RN
`,
  );
  return assemble('icu-caps', pieces, knownOf(c), true);
}

function radiology(g: Generator, c: Cast): Note {
  const pieces: Piece[] = t`EXAM: CT CHEST WITHOUT CONTRAST
ACCESSION: ${mark('ID', `${g.letters(2)}${g.digits(7)}`)}
DATE: ${D(g.dateText(4))} ${mark('LOOKALIKE', `${g.int(10, 23)}:${g.pick(['05', '20', '47'])}`)}
PATIENT: ${N(`${c.patient.first.toUpperCase()} ${c.patient.last.toUpperCase()}`)}, MRN ${mark('MRN', c.mrn)}
REFERRING: ${N(`${c.doctor.first} ${c.doctor.last}`)}, MD, ${L(c.hospital)}
COMPARISON: ${D(g.dateText(0))} (outside study from ${L(g.hospital())}).
FINDINGS: `;
  pieces.push(...g.pick(lookalikes(g)), ' ');
  pieces.push(
    ...t`There is a 1.4 x 1.1 cm spiculated nodule in the right upper lobe. No pleural effusion. Pacemaker leads in place (device serial ${mark('DEVICE', `${g.letters(2)}${g.digits(7)}`)}). Images transferred to PACS at ${mark('IP', g.chance(0.7) ? `${g.int(10, 223)}.${g.int(0, 255)}.${g.int(0, 255)}.${g.int(1, 254)}` : `2001:db8:${g.int(10, 99)}a::${g.int(1, 9)}f`)}.
IMPRESSION: Spiculated RUL nodule, suspicious for malignancy. Findings discussed with Dr. ${N(c.doctor.last)} at ${mark('LOOKALIKE', `${g.int(10, 23)}:${g.pick(['05', '20', '47'])}`)} on ${D(g.dateText(6))}.
Report available at ${mark(
      'URL',
      `https://pacs.${
        c.hospital
          .split(' ')[0]
          ?.toLowerCase()
          .replace(/[^a-z]/g, '') || 'hosp'
      }.org/studies/${g.digits(6)}`,
    )}
Electronically signed: ${N(`${g.person().first} ${g.person().last}`)}, MD, license ${mark('LICENSE', `${g.letters(2)}${g.digits(6)}`)}
`,
  );
  return assemble('radiology', pieces, knownOf(c));
}

function portal(g: Generator, c: Cast): Note {
  const age = g.int(90, 99);
  const rel = c.relative;
  const pieces: Piece[] = t`Subject: question about my ${g.pick(['mother', 'father', 'dad', 'mom'])}'s medications

Hello Dr. ${N(c.doctor.last)},

My name is ${N(`${rel.first} ${rel.last}`)} and I am writing about ${N(`${c.patient.first} ${c.patient.last}`)}, who is ${mark('AGE', String(age))} now. Since the fall on ${D(g.dateText(6))} she has been more confused in the evenings. `;
  pieces.push(...g.pick(lookalikes(g)));
  pieces.push(
    ...t` Her neighbor ${N(g.person().first)} checks on her every day. We moved her to ${L(c.street)} in ${L(c.city)} last month.
Could the visiting nurse, ${N(c.nurse.first)}, come on ${D(g.dateText(5))} instead? Her appointment at ${L(c.hospital)} is ${D(g.dateText(7))}.
You can reach me at ${mark('PHONE', c.phone)} or ${mark('EMAIL', g.email(rel))}. Her insurance member ID is ${mark('HEALTH_PLAN', `${g.letters(3)}${g.digits(9)}`)}; her car (VIN ${mark('VEHICLE', g.vin())}) is still in the garage.
The pharmacy's site ${mark(
      'URL',
      `www.${g
        .city()
        .toLowerCase()
        .replace(/[^a-z]/g, '')}rx.com`,
    )} shows her refill. She used the fingerprint check-in (template ${mark('BIOMETRIC', `FP-${g.digits(8)}`)}).
Thank you,
${N(rel.first)}
`,
  );
  return assemble('portal', pieces, knownOf(c));
}

function corpus(seed: number, count: number): Note[] {
  const g = new Generator(seed);
  const styles = [discharge, icuCaps, radiology, portal];
  return Array.from({ length: count }, (_, i) => (styles[i % styles.length] as (g: Generator, c: Cast) => Note)(g, cast(g)));
}

/** The corpus as gold records, for src/deid/evaluate. */
export function syntheticCorpus(seed: number, count: number): GoldRecord[] {
  return corpus(seed, count).map((n, i) => ({ id: `synthetic-${i + 1}`, text: n.text, spans: n.gold, lookalikes: n.lookalikes, known: n.known, style: n.style }));
}
