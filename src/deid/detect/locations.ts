/**
 * Names of places and organisations smaller than a state: hospitals, clinics, practices, nursing homes
 * and rehabs, schools, churches and courts; employers; towns. Found, like names, by words the
 * vocabularies cannot explain and the words around them. Each a named rule:
 *   place.organisation  a capitalised name ending in an organisation word: "Dutchess Rheumatology",
 *                       "TAUNTON RIVER SKILLED NURSING & REHAB", "Blue Ridge Urology", "tri-county medical center"
 *   place.saint         "St. Aldric's", "Saint Agnes"
 *   place.cue           after a word of place: "transferred from HGH", "from the Pines", "lives in Bayview",
 *                       "PCP at NSHC", "OSH (Nauset Regional)", an acronym before a department ("BMC ED")
 *   place.employer      after a word of work: "works as a roofer for Castellan Roofing", "Employer: Okonjo & Pratt"
 *   place.city          a town the US city list knows, after a word of place or distinctive on its own
 *   place.recurrence    a place found once is a place wherever it recurs in the note
 * Addresses (streets, PO boxes, city-state, towns around ZIPs) are addresses.ts. States and countries are
 * not identifiers under Safe Harbor and stay.
 */
import { lexicons } from '../lexicons';
import { gap, sentenceInitial, type Token } from '../text';
import { type Detection, PRIORITY } from '../types';
import type { WordFacts } from '../vocabulary';
import { CLINICAL_DESTINATIONS, CREDENTIALS, EMPLOYER_CUE, FROM_CUE, STRONG_PLACE_CUE, WEAK_PLACE_CUE } from './cues';

export interface PlaceInput {
  text: string;
  tokens: Token[];
  facts: WordFacts[];
  caps: boolean;
}

const words = (s: string): Set<string> => new Set(s.trim().split(/\s+/));

/** Words an organisation's name ends with. */
const ORGANISATION_HEADS = words(`hospital hosp hospitals clinic clinics center centre ctr institute associates assoc group partners practice consultants
  services service solutions program programs society foundation court school elementary academy college university church parish temple
  synagogue mosque masjid house home homes apts apartments manor village gardens terrace lodge residence residences shelter hospice rehab
  living rooms towers commons
  rehabilitation pharmacy labs laboratory laboratories imaging radiology dialysis infusion medicine health healthcare care medical physicians
  rheumatology urology dermatology endocrinology endocrine gastroenterology cardiology oncology neurology nephrology orthopaedics orthopedics
  orthopaedic orthopedic pediatrics paediatrics psychiatry ophthalmology otolaryngology pulmonology pulmonary neuro cardio ent ob obgyn gyn gi
  management oxygen respiratory supply supplies heart eye eyes retina kidney cancer digestive vascular spine joint dental dentistry orthodontics
  chiropractic podiatry audiology recovery counseling behavioral transitional regional general memorial infirmary sanatorium
  vamc va dept department pd fd police fire ems ambulance funeral mortuary cemetery parlor hall chapel cathedral congregation ministries
  systems inc llc ltd co corp corporation company industries logistics transit authority district agency bureau office offices market
  bakery cafe coffee restaurant diner grill pub tavern bar store stores shop salon spa gym fitness club studio farm farms factory mill mills
  works plant warehouse distributors distribution trucking freight roofing electric electrical plumbing construction builders landscaping
  motors automotive auto salvage garage dealership insurance bank credit union realty properties hotel inn motel suites outlet outfitters
  brewing brewery winery airlines aerospace diagnostics biosciences pharmaceuticals technologies tech labs cpas accounting law legal firm
  consulting media news press publishing printing childcare daycare preschool kindergarten highschool`);

/** Organisation words that name a facility without a capital ("kenmore general pulmonary associates", "tri-county medical center"). */
const STRONG_HEADS = words('hospital hosp clinic center centre associates rehab rehabilitation hospice manor infirmary practice institute');

/**
 * Words that do not make an organisation's name distinctive: "Internal Medicine", "Primary Care",
 * "Wound Care", "Social Services", "Renal Team" name a kind of care, not a place.
 */
const GENERIC = words(`the a an our your his her their this that other another same new old outside osh local nearby area community general regional
  county state city university medical memorial academic teaching veterans va family health care senior assisted skilled long-term acute
  subacute heart cancer eye ear kidney transplant trauma burn stroke spine sleep pain wound dialysis infusion cardiac cardiology oncology neurology
  surgery surgical emergency primary urgent ambulatory outpatient inpatient behavioral mental rehabilitation rehab nursing home private public
  group practice clinic hospital center to at from in for with and or of by on was is be been transferred transfer admitted sent returned
  discharged discharge called went go going back readmitted via per see seen f/u follow followup up nh snf ltach ltac icu ed er or pacu floor
  unit pt patient attending resident physician nurse md dr team service services department dept division program office lab laboratory imaging
  radiology pharmacy retail mail order internal physical occupational speech respiratory social protective elder child children's childrens
  women's womens men's pediatric paediatric adult geriatric palliative comfort hospice infectious disease critical intensive step-down
  progressive mouth oral trach skin peri foot hair nail catheter line port stoma ostomy foley central spiritual pastoral music art pet case
  management nutrition dietary transport security environmental home-health visiting durable equipment supply supplies oxygen vent
  ventilator cath catheterization interventional diagnostic therapeutic vascular pulmonary renal hepatic gastro gi gu ob gyn neuro psych
  behavioral addiction substance recovery counseling wellness preventive lifestyle weight bariatric endocrine diabetes diabetic thyroid breast
  prostate bone joint sports spine hand plastic cosmetic dermatology ophthalmology urology rheumatology nephrology hematology endocrinology
  gastroenterology pulmonology psychiatry neurosurgery orthopedics orthopaedics podiatry audiology dental oncology radiation medical
  medicine therapy therapeutics health healthcare clinics centers hospitals systems programs solutions consultants partners associates
  infirmary imaging labs i ii iii iv v st saint mt mount north south east west northern southern eastern western upper lower inner outer
  greater metro metropolitan national international american united global world first second third main fracture falls fall transition
  transitions device devices remote memory movement headache seizure epilepsy continence lipid lipids anticoagulation coumadin warfarin inr
  arrhythmia pacemaker failure advanced complex chronic coordinated integrated comprehensive specialty specialist specialized multidisciplinary
  research clinical telehealth virtual same-day walk-in express after-hours weekend night day evening magnetic resonance nuclear positron
  emission tomography computed college association institutes society academy board federation council commission committee ethics`);

/** An occupation before "at", "for", "with": "accountant at Lam & Chu CPAs", "roofer for Castellan Roofing". */
const OCCUPATION_BEFORE = new RegExp(
  String.raw`\b(?:${`accountant assistant associate attorney baker barista bartender cashier chef clerk consultant contractor cook dentist designer
  developer director dispatcher driver electrician employee engineer farmer firefighter hygienist janitor laborer labourer lawyer librarian
  machinist manager mechanic officer operator owner painter paralegal pharmacist plumber programmer professor receptionist roofer salesman
  saleswoman salesperson scientist secretary server supervisor teacher technician trucker waiter waitress welder worker writer analyst aide
  carpenter custodian guard instructor coach caretaker nanny housekeeper landscaper miner fisherman longshoreman stocker courier dishwasher
  hostess realtor banker broker trader pilot attendant technologist phlebotomist coordinator administrator executive founder volunteer
  intern foreman dockworker warehouseman forklift mover cleaner maid nurse aide cna paramedic emt hairdresser stylist barber tailor
  butcher machinist builder framer mason bricklayer drywaller inspector adjuster underwriter auditor bookkeeper cook sous line`
    .trim()
    .split(/\s+/)
    .join('|')})s?(?:\s+(?:\w+\s+){0,2}years?)?\s+(?:for|at|with)\s+(?:the\s+)?$`,
  'i',
);

/** Last words of a place or employer phrase: "transferred from", "lives in", "works at", "PCP at", "OSH (". */
const PLACE_CUE_ENDS = new Set([
  'in',
  'from',
  'to',
  'at',
  'near',
  'outside',
  'osh',
  'is',
  'for',
  'with',
  'by',
  'formerly',
  'of',
  'owns',
  'pcp',
  'facility',
  'ltc',
  'snf',
  'nh',
  'rehab',
  'hospice',
  'done',
  'followed',
  'seen',
  'treated',
  'hospitalized',
  'admitted',
]);
/** Words directly before an employer's name without a preposition: "employer Northbrook Title", "Employer: X". */
const EMPLOYER_ENDS = new Set(['employer', 'employed', 'job', 'occupation', 'work', 'workplace', 'formerly', 'plan']);

/** Words that never continue a lowercase organisation's name. */
const FUNCTION_WORD =
  /^(?:a|an|the|to|for|and|or|but|with|about|asked|likely|maybe|possible|possibly|will|would|should|could|may|might|is|was|be|been|has|had|have|not|no|if|then|so|as|by|from|in|into|at|on|of|her|his|their|our|my|your|its|this|that|these|those|pt|patient|family|we|he|she|they|it|i)$/;

/** Credentials and the like before a specialty: "MD, AGSF Geriatric Medicine", "MB BCh, MRCPI Gastroenterology". */
const CREDENTIAL_BEFORE = /\b(?:MD|DO|RN|NP|PA|PA-C|PhD|MB\s?BCh|MBBS|FACP|FACS|FACC|FRCP|FRCS|MRCP|DNP|APRN|CDCES|CDE|MPH|MSW|LICSW|RRT)\b\.?,?\s*$/;

/** Words before a company that say it pays, insures or carries: not a place ("insurer Pacific Mutual Auto"). */
const PAYER_BEFORE = /\b(?:insurer|insurance|carrier|payer|payor|plan|policy|ins)\s*:?\s*(?:is\s+)?$/i;

/** Acronyms of specialties and services: "from HF clinic", "to GI", "at EP lab" name a kind of care, not a place. */
const SPECIALTY_ACRONYMS = words(`hf chf gi id ep ir ent ob gyn obgyn pt ot slp sw cm rt er ed icu ccu micu sicu nicu picu cvicu tsicu nsicu or pacu
  pm&r pmr ms als ckd esrd copd ild cf sci tbi hiv aids onc heme bmt sot vad lvad ecmo psych neuro nsgy cts ct pulm renal uro derm endo rheum
  geri ortho plastics vasc ems ama dnr`);

/** After an acronym, a department says the acronym is a hospital: "HGH ED", "BMC ICU". */
const DEPARTMENTS = words('ed er ew icu micu sicu ccu cvicu nicu picu or pacu cath clinic clinics floor hospital rehab ltac snf lab labs radiology er/ed');

export class LocationDetector {
  detect(input: PlaceInput): Detection[] {
    return new PlaceScan(input).run();
  }
}

class PlaceScan {
  private readonly lex = lexicons();
  private readonly out: Detection[] = [];
  private readonly text: string;
  private readonly tokens: Token[];
  private readonly facts: WordFacts[];
  private readonly caps: boolean;
  /** Token index -> already inside a place span. */
  private readonly taken: Uint8Array;

  constructor(input: PlaceInput) {
    this.text = input.text;
    this.tokens = input.tokens;
    this.facts = input.facts;
    this.caps = input.caps;
    this.taken = new Uint8Array(input.tokens.length);
  }

  /** For each word, the index of the nearest organisation word at or after it (organisation names end in one). */
  private nextHead: Int32Array = new Int32Array(0);

  run(): Detection[] {
    const n = this.tokens.length;
    this.nextHead = new Int32Array(n + 1).fill(2 ** 30);
    for (let k = n - 1; k >= 0; k--) this.nextHead[k] = ORGANISATION_HEADS.has(this.t(k).lower) ? k : (this.nextHead[k + 1] as number);
    this.saints();
    for (let i = 0; i < this.tokens.length; i++) {
      if (this.taken[i]) continue;
      if (this.employerAt(i) || this.organisationAt(i) || this.cueAt(i)) continue;
      this.cityAt(i);
    }
    this.recurring();
    return this.out;
  }

  private t(i: number): Token {
    return this.tokens[i] as Token;
  }

  private f(i: number): WordFacts {
    return this.facts[i] as WordFacts;
  }

  private push(first: number, last: number, rule: string): void {
    const start = this.t(first).start;
    let end = this.t(last).end;
    if (this.t(last).possessive) end += 2;
    for (let k = first; k <= last; k++) this.taken[k] = 1;
    this.out.push({ start, end, type: 'LOCATION', priority: PRIORITY.LOCATION, source: 'detector', rule });
  }

  private capitalised(i: number): boolean {
    const s = this.t(i).shape;
    return s === 'title' || s === 'upper';
  }

  /**
   * A word that makes a place name distinctive: one the vocabularies cannot explain or a name (not a
   * common word that is also one), a town written with its capital; with allowSafe, any capitalised
   * word that is not generic ("Blue Ridge Urology").
   */
  private distinctive(i: number, allowSafe: boolean): boolean {
    const t = this.t(i);
    const f = this.f(i);
    if (GENERIC.has(t.lower) || (f.clinical && !f.city) || CLINICAL_DESTINATIONS.has(t.lower)) return false;
    if (f.cls === 'name' || f.cls === 'unknown' || f.cls === 'misspelt') return true;
    if (f.city && this.capitalised(i)) return true;
    return allowSafe && this.capitalised(i);
  }

  /** The words of a capitalised run starting at i on one line, joined by spaces, "&", "of", "the", "-" (at most `max` words). */
  private run_(i: number, max: number, lowercase = false): number {
    let last = i;
    for (let k = i + 1; k < this.tokens.length && k - i < max; k++) {
      const g = gap(this.text, this.t(k - 1), this.t(k));
      // a space, "&" or a possessive joins ("Children's Diabetes Program"); a dot only after an initial or
      // "St."/"Mt." (a sentence ends there otherwise)
      const dotOk = /^\.\s?$/.test(g) && (this.t(k - 1).shape === 'initial' || ['st', 'mt', 'ft'].includes(this.t(k - 1).lower));
      if (!/^(?:\s|\s?&\s?|['’][sS]\s)$/.test(g) && !dotOk) break;
      const t = this.t(k);
      const connector = ['of', 'the', 'and', 'de', 'del', 'la', 'da', 'on', 'at'].includes(t.lower) && t.shape === 'lower';
      if (connector) {
        // a connector only inside a name: "Clinica Familiar del Valle", "Walden Pond Nursing & Rehabilitation"
        const n = this.tokens[k + 1];
        if (!n || !(n.shape !== 'lower' || lowercase) || !/^\s$/.test(gap(this.text, t, n))) break;
        if (t.lower === 'on' || t.lower === 'at') break;
        continue;
      }
      if (!(this.capitalised(k) || t.shape === 'initial' || (lowercase && t.shape === 'lower' && !FUNCTION_WORD.test(t.lower)))) break;
      // "ANNA KERR WAS SEEN IN CLINIC": in capitals a verb or a preposition ends a name
      if (t.shape === 'upper' && (FUNCTION_WORD.test(t.lower) || /^(?:seen|was|were|is|are|been|being|per|via|from|into)$/.test(t.lower))) break;
      // in mixed-case text a word in capitals does not continue a name in Title case ("DOWNLOAD Home"), nor
      // the reverse, but for an acronym: "PVH Device Clinic", "MLH Bone & Joint"
      const p = this.t(k - 1);
      if (!this.caps && !lowercase && ((t.shape === 'title' && p.shape === 'upper' && p.text.length > 5) || (t.shape === 'upper' && p.shape === 'title' && t.text.length > 4))) break;
      last = k;
    }
    return last;
  }

  /** "St. Aldric's", "Saint Agnes": a saint's name is a place in a note (St. John's wort is not). */
  private saints(): void {
    for (const m of this.text.matchAll(/\b(?:St|Saint|ST|SAINT|st)\.?\s+([A-Z][A-Za-z]+(?:['’]s)?|[a-z]+['’]s)(?!\s+(?:wort|WORT)\b)/g)) {
      if (/\d\s*$/.test(this.text.slice(Math.max(0, m.index - 6), m.index))) continue;
      if (m[0].startsWith('st') && !/['’]s$/.test(m[1] as string)) continue;
      const first = this.tokens.findIndex((t) => t.start === m.index);
      if (first < 0) continue;
      let last = first + 1;
      if (last >= this.tokens.length) continue;
      // "St. Hedwig's parish", "st brigid's hall": the organisation word after it
      const n = this.tokens[last + 1];
      if (n && /^(?:['’][sS])?\s$/.test(gap(this.text, this.t(last), n)) && ORGANISATION_HEADS.has(n.lower)) last++;
      this.push(first, last, 'place.saint');
    }
  }

  /** An organisation: distinctive capitalised words, then organisation words ("Capital Kidney Associates"). */
  private organisationAt(i: number): boolean {
    if ((this.nextHead[i] as number) - i > 8) return false;
    const t = this.t(i);
    const lowercase = t.shape === 'lower';
    if (lowercase) {
      // lowercase names are short and start with a word the vocabularies do not explain: "tri-county medical center"
      const f = this.f(i);
      if (!(f.cls === 'name' || f.cls === 'unknown' || (f.city && f.cls !== 'safe' && f.cls !== 'ambiguous')) && !/^tri-|^st$/.test(t.lower)) return false;
    } else if (!this.capitalised(i)) return false;
    const end = this.run_(i, lowercase ? 5 : 8, lowercase);
    if (end === i) return false;
    // the name ends at the last organisation word of the run ("Peachtree Endocrine & Diabetes Center" in
    // "... Center Patient:"), with a distinctive word before its organisation words
    let last = end;
    while (last > i && !ORGANISATION_HEADS.has(this.t(last).lower)) last--;
    if (last === i) return false;
    let head = last;
    while (head > i && ORGANISATION_HEADS.has(this.t(head).lower)) head--;
    if (head === last || !ORGANISATION_HEADS.has(this.t(head + 1).lower)) return false;
    if (lowercase && !STRONG_HEADS.has(this.t(last).lower) && !STRONG_HEADS.has(this.t(head + 1).lower)) return false;
    // "Clinic: PVH Device Clinic": a head before a colon is a label; "Hospital day 5" counts days
    if (/^\s?:|^\s+day\b/i.test(this.text.slice(this.t(last).end, this.t(last).end + 6))) return false;
    const before = this.text.slice(Math.max(0, t.start - 30), t.start);
    // "MD, AGSF Geriatric Medicine": a credential, not an organisation, before a specialty
    if (t.shape === 'upper' && CREDENTIAL_BEFORE.test(before) && ORGANISATION_HEADS.has(this.t(i + 1).lower)) return false;
    if (PAYER_BEFORE.test(before)) return false;
    // capitals say nothing in an ALL-CAPS text: there a word the vocabularies cannot explain is needed
    const allowSafe = !lowercase && !this.caps;
    // in capitals an ordinary word says nothing ("CHEST TUBE CLINIC"); a word that is also a name or a town may ("SIERRA GENERAL HOSPITAL")
    const capsName = (k: number) => this.caps && (this.f(k).cls === 'ambiguous' || this.f(k).city);
    const nameWord = (k: number) => !ORGANISATION_HEADS.has(this.t(k).lower) && (this.distinctive(k, allowSafe) || this.placePrefix(k) || capsName(k));
    let first = i;
    while (first <= head && !nameWord(first)) first++;
    if (first > head) return false;
    let strong = 0;
    let plain = 0;
    let words = 0;
    for (let k = first; k <= last; k++) {
      if (this.t(k).shape === 'lower' && !lowercase) continue;
      words++;
      if (k > head) continue;
      if (this.distinctive(k, false)) strong++;
      else if (nameWord(k)) plain++;
    }
    // one common capitalised word before a head is a kind of service ("Fracture Service", "Falls Clinic"); two
    // make a name ("Blue Ridge Urology"), and so does one in a name of three words or more ("Sierra General Hospital")
    if (strong === 0 && plain < 2 && !(plain === 1 && words >= 3)) return false;
    // the words of the name before its first distinctive one: "Polish Hill Family Medicine"
    while (first > i && !GENERIC.has(this.t(first - 1).lower) && !CREDENTIALS.has(this.t(first - 1).lower) && this.t(first - 1).shape === this.t(first).shape) first--;
    // "de Nijs Medical Center", "van der Meulen Rehabilitation Hospital": particles before the name
    while (first > 0 && /^(?:de|van|von|der|den|la|le|du|del|da|di)$/.test(this.t(first - 1).lower) && this.t(first - 1).shape === 'lower' && gap(this.text, this.t(first - 1), this.t(first)) === ' ')
      first--;
    this.push(first, last, 'place.organisation');
    return true;
  }

  private placePrefix(i: number): boolean {
    return (
      /^(?:north|south|east|west|new|old|port|fort|lake|mount|mt|saint|st|glen|point|grand|little|big|upper|lower|great|palm|spring|cedar|oak|pine|rock|sandy|white|green|red|black|silver|golden|royal|bay|river|beach|union|central|three|twin|blue|first)$/.test(
        this.t(i).lower,
      ) && this.capitalised(i)
    );
  }

  /** After a word of place: a capitalised run or an acronym that is not a clinical destination. */
  private cueAt(i: number): boolean {
    const t = this.t(i);
    // only a word after a word of place (or "(") can be a place by its cue: test the phrases only there
    if (t.shape === 'lower' && (this.f(i).cls === 'safe' || this.f(i).cls === 'ambiguous')) return false;
    if (!this.placeCueBefore(i)) return false;
    const before = this.text.slice(Math.max(0, t.start - 40), t.start);
    const strong =
      STRONG_PLACE_CUE.test(before) ||
      /\b(?:pcp|osh|facility|ltc|snf|nh|rehab|hospice|done|followed|seen|treated|hospitalized|admitted)\s+(?:is\s+|at\s+|in\s+|from\s+)?(?:the\s+)?$/i.test(before) ||
      /\b(?:osh|facility|ltc|snf|nh|rehab|home|hospital)\s*\(\s*$/i.test(before);
    const from = FROM_CUE.test(before);
    const weak = WEAK_PLACE_CUE.test(before);
    const the = /\bthe\s+$/i.test(before);
    const acronym = t.shape === 'upper' && t.text.length >= 2 && t.text.length <= 6 && !this.caps;
    // an acronym before a department: "HGH ED", "from BMC ICU"
    if (acronym && !CLINICAL_DESTINATIONS.has(t.lower) && !this.f(i).clinical && !SPECIALTY_ACRONYMS.has(t.lower)) {
      const n = this.tokens[i + 1];
      if (n && /^\s$/.test(gap(this.text, t, n)) && DEPARTMENTS.has(n.lower) && (strong || from || weak)) {
        this.push(i, i, 'place.cue');
        return true;
      }
    }
    if (!strong && !from && !weak) return false;
    if (CLINICAL_DESTINATIONS.has(t.lower) || this.f(i).clinical) return false;
    if (acronym) {
      const cls = this.f(i).cls;
      // "from POD 7", "at the LAA basis", "visit from SCI program": a measure, a part or a service, not a place
      const after = this.text.slice(t.end, t.end + 16);
      if (SPECIALTY_ACRONYMS.has(t.lower)) return false;
      if (/^\s*\d/.test(after) || (/^\s[a-z]+/.test(after) && !/^\s(?:now|today|yesterday|per|x|w|in|on|for|since|until|and|or|ed|er|icu|hospital|clinic|rehab|er\/ed)\b/.test(after))) return false;
      if (strong || (from && cls !== 'safe') || (/\bat\s+(?:the\s+)?$/i.test(before) && (cls === 'unknown' || cls === 'name'))) {
        this.push(i, i, 'place.cue');
        return true;
      }
      return false;
    }
    const lowercase = t.shape === 'lower';
    if (lowercase) return this.lowercaseTown(i, strong || from);
    if (t.shape !== 'title' && !(this.caps && t.shape === 'upper')) return false;
    if (this.lex.regions.has(t.lower)) return false;
    const last = this.run_(i, 4);
    const span: number[] = [];
    for (let k = i; k <= last; k++) span.push(k);
    const words = span.map((k) => this.t(k).lower);
    if (this.lex.regions.has(words.join(' '))) return false;
    const distinct = span.some((k) => this.distinctive(k, false));
    const capitalSafe = span.every((k) => !GENERIC.has(this.t(k).lower) && !CLINICAL_DESTINATIONS.has(this.t(k).lower));
    // "from the Pines", "at the Meadows": a capitalised word after "the" names a place; so does any word
    // the vocabularies cannot explain after a strong cue; after "in" or "at" it must not start a sentence
    let ok: boolean;
    if (this.caps) ok = strong && span.every((k) => this.distinctive(k, false) || this.placePrefix(k)) && span.some((k) => this.distinctive(k, false));
    else if (strong) ok = distinct || (capitalSafe && (the || span.length > 1));
    else ok = (distinct && !sentenceInitial(this.text, t)) || (the && capitalSafe && !sentenceInitial(this.text, t));
    if (!ok) return false;
    // "at Impella site", "to Lasix drip": a device or a drug before a lowercase noun is not a place
    const next = this.tokens[last + 1];
    if (
      !strong &&
      next &&
      next.shape === 'lower' &&
      /^\s$/.test(gap(this.text, this.t(last), next)) &&
      !FUNCTION_WORD.test(next.lower) &&
      !['now', 'area', 'yesterday', 'today', 'tomorrow', 'tonight', 'last', 'next', 'since', 'until', 'where', 'when', 'per', 'x', 'w'].includes(next.lower)
    )
      return false;
    // a person after "to" or "from" is the name detector's: "from Dr. X" never gets here, "to Ann" does
    if (!strong && span.length === 1 && (this.f(i).cls === 'name' || this.f(i).first) && !this.f(i).city && /\b(?:to|with|from)\s+$/i.test(before)) return false;
    this.push(i, last, 'place.cue');
    return true;
  }

  /** "lives in guadalajara", "moved to lawrence", "called from dearborn": a lowercase town after a word of place. */
  private lowercaseTown(i: number, strong: boolean): boolean {
    const f = this.f(i);
    const town = f.city && (f.cls === 'name' || f.cls === 'unknown' || f.cls === 'misspelt');
    if (!(town || (strong && (f.cls === 'unknown' || f.cls === 'name') && this.t(i).lower.length >= 4))) return false;
    let last = i;
    while (
      last + 1 < this.tokens.length &&
      last - i < 2 &&
      gap(this.text, this.t(last), this.t(last + 1)) === ' ' &&
      this.lex.cities.has(
        this.tokens
          .slice(i, last + 2)
          .map((x) => x.lower)
          .join(' '),
      )
    )
      last++;
    this.push(i, last, 'place.cue');
    return true;
  }

  /** After a word of work: the employer's name, whatever its words ("Blue Heron Coffee", "the Rusty Anchor"). */
  /** Whether the word before i (or the one before "the") is one a place phrase ends with. */
  private placeCueBefore(i: number): boolean {
    if (i === 0) return false;
    let p = this.t(i - 1);
    if (p.lower === 'the' && i > 1) p = this.t(i - 2);
    return PLACE_CUE_ENDS.has(p.lower) || /[(:]\s*$/.test(this.text.slice(Math.max(0, this.t(i).start - 3), this.t(i).start));
  }

  private employerAt(i: number): boolean {
    const t = this.t(i);
    if (t.shape === 'lower' && this.f(i).cls !== 'unknown' && this.f(i).cls !== 'name') return false;
    if (!this.placeCueBefore(i) && !EMPLOYER_ENDS.has(i > 0 ? this.t(i - 1).lower : '')) return false;
    const before = this.text.slice(Math.max(0, t.start - 50), t.start);
    // "Employer: X" with a colon; "employer X" without one only in mixed case before a name ("Pt employer Northbrook Title")
    const label =
      /\b(?:employer|employed\s+by|work(?:place)?|job|occupation)\s*:\s*$|\bemployed\s+by\s+$|\bformerly\s+$|\bemployer\s+plan,\s*$/i.test(before) ||
      (/\bemployer\s+(?:is\s+)?$/i.test(before) && !this.caps && t.shape === 'title');
    const job = OCCUPATION_BEFORE.test(before);
    if (
      !label &&
      !job &&
      !EMPLOYER_CUE.test(before) &&
      !/\b(?:owns|owner\s+of|starts\s+at|started\s+at|call\s+out\s+from|sales\s+for|teach(?:es)?\s+(?:\w+\s+){0,2}at|(?:he|she)'?s\s+with|job\s+at\s+the\s+\w+\s+\()\s*(?:the\s+)?$/i.test(before)
    )
      return false;
    if (CLINICAL_DESTINATIONS.has(t.lower) || ['home', 'work', 'school', 'night', 'nights', 'night shift', 'retired', 'unemployed', 'disabled', 'none', 'self'].includes(t.lower)) return false;
    const lowercase = t.shape === 'lower';
    if (lowercase && this.f(i).cls !== 'unknown' && this.f(i).cls !== 'name') return false;
    if (!lowercase && !this.capitalised(i)) return false;
    const last = this.run_(i, 6);
    this.push(i, last, 'place.employer');
    return true;
  }

  /** A town on the US city list: after a word of place (cueAt), or distinctive on its own ("Leominster PD"). */
  private cityAt(i: number): boolean {
    const t = this.t(i);
    if (t.shape !== 'title' || this.caps) return false;
    const { cities, placeFirstWords, regions } = this.lex;
    if (!placeFirstWords.has(t.lower)) return false;
    let best = -1;
    let phrase = t.lower;
    for (let k = i; k < Math.min(this.tokens.length, i + 3); k++) {
      if (k > i) {
        const n = this.t(k);
        if (gap(this.text, this.t(k - 1), n) !== ' ' || n.shape === 'lower') break;
        phrase += ' ' + n.lower;
      }
      if (cities.has(phrase)) best = k;
    }
    if (best < 0 || regions.has(phrase)) return false;
    const span = this.tokens.slice(i, best + 1);
    if (span.some((w, k) => this.f(i + k).clinical || this.f(i + k).cls === 'safe' || this.f(i + k).cls === 'ambiguous')) {
      // a town that is also a word or a name: only before a word that says it is a place ("Leominster PD")
      const n = this.tokens[best + 1];
      if (!(n && /^\s$/.test(gap(this.text, this.t(best), n)) && /^(?:pd|fd|police|fire|station|area|neighborhood|resident)$/i.test(n.lower))) return false;
    } else if (sentenceInitial(this.text, t) || t.lower.length < 5 || this.f(i).first || this.f(i).last) return false;
    this.push(i, best, 'place.city');
    return true;
  }

  /** A place found once is a place wherever it recurs in the text (capitalised as it was, or as an acronym). */
  private recurring(): void {
    const places = new Set<string>();
    for (const d of this.out) {
      for (let k = 0; k < this.tokens.length; k++) {
        const t = this.t(k);
        if (t.start < d.start || t.end > d.end) continue;
        if (t.lower.length >= 3 && this.distinctive(k, false) && !ORGANISATION_HEADS.has(t.lower) && !this.lex.regions.has(t.lower)) places.add(t.lower);
      }
    }
    if (places.size === 0) return;
    for (let k = 0; k < this.tokens.length; k++) {
      if (this.taken[k] || !places.has(this.t(k).lower)) continue;
      if (this.t(k).shape === 'lower' && this.f(k).cls !== 'unknown') continue;
      this.push(k, k, 'place.recurrence');
    }
  }
}
