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
 *   place.ward          a ward or building named by a word and a number: "transfer to Corliss 2"
 *   place.list          a place joined to one found: "rehab @ Ashcroft vs Hillcrest"
 *   place.dataset       a word strong rules took as a place elsewhere in the dataset (evidence.ts)
 *   place.weak-cue      after "in", "at", "to": a word no vocabulary explains or a known town
 *   place.coordinates   latitude and longitude (patterns.ts)
 * Addresses (streets, PO boxes, city-state, towns around ZIPs) are addresses.ts. States and countries are
 * not identifiers under Safe Harbor and stay.
 */
import { lexicons } from '../lexicons';
import { gap, sentenceInitial, type Token } from '../text';
import { type DatasetEvidence, type Detection, PRIORITY, type SiteCueWords } from '../types';
import { vocabulary, type WordFacts } from '../vocabulary';
import { CLINICAL_DESTINATIONS, CREDENTIALS, EMPLOYER_CUE, FROM_CUE, STRONG_PLACE_CUE, WEAK_PLACE_CUE } from './cues';

export interface PlaceInput {
  text: string;
  tokens: Token[];
  facts: WordFacts[];
  caps: boolean;
  /** Words the dataset's strong rules took as places elsewhere (evidence.ts). */
  dataset?: DatasetEvidence;
  /** The site's place entries that are ordinary words: distinctive after a cue. */
  site?: SiteCueWords;
}

const words = (s: string): Set<string> => new Set(s.trim().split(/\s+/));

/** Words an organisation's name ends with. */
const ORGANISATION_HEADS = words(`hospital hosp hospitals clinic clinics center centre ctr institute associates assoc group partners practice consultants
  services service solutions program programs society foundation court school elementary academy college university church parish temple
  synagogue mosque masjid house home homes apts apartments manor village gardens terrace lodge residence residences shelter hospice rehab
  living rooms towers commons building bldg pavilion wing annex campus vna respite shipyard janitorial
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
  monitor monitoring check recheck follow continue cont draw send obtain repeat trend review consult notify call please plan goal
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
/** Words of work that may stand a few words before an employer's name: a lowercase name is read only after one. */
const WORK_WORDS = words(`work works worked working job jobs employed employer employee retired occupation cashier clerk driver cook
  manager owner worker nurse aide teacher engineer mechanic janitor custodian guard courier mover cleaner`);

/** Words directly before an employer's name without a preposition: "employer Northbrook Title", "Employer: X". */
const EMPLOYER_ENDS = new Set(['employer', 'employed', 'job', 'occupation', 'work', 'workplace', 'formerly', 'plan']);

const WEEKDAYS = words('mon monday tue tues tuesday wed weds wednesday thu thur thurs thursday fri friday sat saturday sun sunday');

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

/** Words after an acronym that make it a measure, a part or a service ("from POD 7", "at the LAA basis", "SCI program"). */
const ACRONYM_AS_THING =
  /^\s(?:basis|site|sites|score|scores|level|levels|rate|ratio|grade|class|stage|drip|gtt|dose|doses|value|values|program|protocol|criteria|positive|negative|pos|neg|sensitive|resistant|count|counts|therapy|trial|study|goal|goals|range|pressure|pressures|gradient|lead|leads|wave|waves|segment|segments|elevation|elevations|depression|depressions|changes|level|line|lines|tube|catheter|cath|port|drain|pump|mode|settings?|monitoring|precautions|isolation|negative|status|panel|titer|titers|infusion|bolus|flush|sweep|support|device)\b/;

/** Words near an acronym after "at" that say a hospital is meant: "in ED at NGR", "intubated at MVH". */
const HOSPITAL_CONTEXT = /\b(?:ed|er|ew|icu|osh|hospital|hosp|admitted|adm|transferred|transfer|presented|seen|taken|intubated|scene|stabilized|found|treated|ct|cath|head\s+ct)\b[^.\n]{0,40}$/i;

/** Labels of fields whose value is a place (a colon after them). */
const PLACE_FIELD =
  /\b(?:sending|receiving|facility|hospital|agency|referring(?:\s+facility)?|transferring(?:\s+facility)?|accepting(?:\s+facility)?|receiving\s+facility|sending\s+facility|location|unit|site|dispo(?:sition)?|destination|pcp\s+practice|practice|home\s+health(?:\s+agency)?|snf|ltac|nh|vna|dialysis(?:\s+unit)?|rehab|shelter|school|outside\s+hospital|osh)\s*:\s*$/i;

/** After an acronym, a department says the acronym is a hospital: "HGH ED", "BMC ICU". */
const DEPARTMENTS = words('ed er ew icu micu sicu ccu cvicu nicu picu or pacu cath clinic clinics floor hospital rehab ltac snf lab labs radiology er/ed');

export class LocationDetector {
  detect(input: PlaceInput): Detection[] {
    return new PlaceScan(input).run();
  }

  /** What the dataset adds to places already found (`found`): its place words where they recur, the new spans only. */
  extend(input: PlaceInput, found: readonly { start: number; end: number }[]): Detection[] {
    return new PlaceScan(input).runEvidence(found);
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

  private readonly dataset: DatasetEvidence | undefined;
  private readonly site: SiteCueWords | undefined;

  constructor(input: PlaceInput) {
    this.dataset = input.dataset;
    this.site = input.site;
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
      if (this.employerAt(i) || this.organisationAt(i) || this.wardAt(i) || this.buildingAt(i) || this.fieldAt(i) || this.cueAt(i)) continue;
      this.cityAt(i);
    }
    this.lists();
    this.recurring();
    return this.out;
  }

  runEvidence(found: readonly { start: number; end: number }[]): Detection[] {
    if (!this.dataset) return [];
    for (let k = 0; k < this.tokens.length; k++) {
      const t = this.t(k);
      if (found.some((s) => s.start < t.end && t.start < s.end)) this.taken[k] = 1;
    }
    this.fromDataset(this.dataset);
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
    if (this.site?.place(t.lower)) return true;
    // a town's name distinguishes, unless it is also an English word ("Likely", "Only", "Hope")
    if (f.city && this.capitalised(i) && !f.english) return true;
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
      // "ST elevation", "ST. CVP 16": ST in capitals is the ECG's segment or sinus tachycardia unless a name follows it
      if (/^ST\b/.test(m[0]) && !this.saintName(m[1] as string)) continue;
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

  /** After "ST": a saint's name is capitalised like one (not an acronym in mixed case) and no clinical word. */
  private saintName(word: string): boolean {
    const bare = word.replace(/['’]s$/, '');
    if (!this.caps && bare === bare.toUpperCase()) return false;
    const f = vocabulary().facts(bare.toLowerCase());
    return !f.clinical && (f.cls === 'name' || f.cls === 'unknown' || (f.cls === 'ambiguous' && f.first));
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
    // in capitals "LIKELY HOME", "TOOK THE SOUP BACK HOME": "home" or "house" alone ends a name only after a word that makes one
    // "Monitor Labs", "FOLLOW LABS": laboratories are named by a distinctive word
    if (/^(?:lab|labs|laboratory|laboratories)$/.test(this.t(last).lower) && !this.distinctive(head, false)) return false;
    if (
      this.caps &&
      head + 1 === last &&
      /^(?:home|homes|house)$/.test(this.t(last).lower) &&
      !/^(?:nursing|rest|group|funeral|foster|boarding|care|retirement|halfway|sober)$/.test(this.t(head).lower)
    )
      return false;
    // "Clinic: PVH Device Clinic": a head before a colon is a label; "Hospital day 5" counts days
    if (/^\s?:|^\s+day\b/i.test(this.text.slice(this.t(last).end, this.t(last).end + 6))) return false;
    const before = this.text.slice(Math.max(0, t.start - 30), t.start);
    // "MD, AGSF Geriatric Medicine": a credential, not an organisation, before a specialty
    if (t.shape === 'upper' && CREDENTIAL_BEFORE.test(before) && ORGANISATION_HEADS.has(this.t(i + 1).lower)) return false;
    if (PAYER_BEFORE.test(before)) return false;
    // capitals say nothing in an ALL-CAPS text: there a word the vocabularies cannot explain is needed
    const allowSafe = !lowercase && !this.caps;
    // in capitals an ordinary word says nothing ("CHEST TUBE CLINIC"); a word that is also a name or a town may ("SIERRA GENERAL HOSPITAL")
    const capsName = (k: number) => this.caps && ((this.f(k).cls === 'ambiguous' && (this.f(k).first || this.f(k).last)) || (this.f(k).city && !this.f(k).english));
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

  /**
   * A ward or building of a hospital named by a word and a number: "transfer to Corliss 2", "report to RN
   * on Fennimore 5", "from Stoneleigh 6", and a note's heading "Aldrich 3 Nursing Admission Note". The word
   * must be one no vocabulary explains, or a name ("Bed 5", "Pod 3", "Trauma 2" are not).
   */
  private wardAt(i: number): boolean {
    const t = this.t(i);
    if (t.shape === 'initial' || t.lower.length < 3 || (t.shape === 'upper' && !this.caps)) return false;
    // a space and a digit after the word, or no ward (most words)
    const digit = this.text.charCodeAt(t.end + 1);
    if (this.text.charCodeAt(t.end) !== 32 || digit < 48 || digit > 57) return false;
    const after = /^ (\d{1,2}[A-Z]?)\b(?!\s*(?:%|mg|mcg|cc|ml|l\b|units?|hrs?|hours?|days?|min|mins|cm|mm|x\b|times|weeks?|wks?|months?|years?|yrs?|y\/?o|pm|am|[:/.]\d|-\d))/.exec(
      this.text.slice(t.end, t.end + 16),
    );
    if (!after) return false;
    const f = this.f(i);
    if (f.clinical || CLINICAL_DESTINATIONS.has(t.lower) || GENERIC.has(t.lower) || !(f.cls === 'name' || f.cls === 'unknown' || f.cls === 'misspelt')) return false;
    if (t.shape === 'lower' && f.cls !== 'unknown' && f.cls !== 'name') return false;
    // "on Rte 3A", "Texas 2A": a road or a state with a number is no ward
    if (/^(?:rte|rt|route|hwy|highway|exit|interstate|i|us|sr|cr|fm)$/.test(t.lower) || this.lex.regions.has(t.lower)) return false;
    const before = this.text.slice(Math.max(0, t.start - 40), t.start);
    const rest = this.text.slice(t.end + after[0].length, t.end + after[0].length + 16);
    // a word of place before it, a label or an arrow, a note's heading, or a kind of unit after it ("Aldrich 3 SICU", "Whitcomb 4 surgical floor", "Stoneleigh 6 bed 14")
    const cued =
      /(?:\b(?:to|on|from|at|of|in|vs\.?|or|then|admit|dispo)|->|→|:|\s-)\s+$/i.test(before) ||
      (/(?:^|\n)[ \t]*$/.test(before) && /^\s*(?:nursing|nsg|npn|admission|admit|transfer|progress|note|rn|md|to|->)\b/i.test(rest)) ||
      /^\s*[(,]?\s*(?:sicu|micu|ccu|cvicu|icu|step-?down|floor|surgical|medical|neuro|bed|rm|room|pod)\b/i.test(rest);
    if (!cued) return false;
    // "seen by Corliss 2 days ago" is caught by the unit check; "per Dr. X 2" never comes here (titles are names)
    const end = t.end + after[0].length;
    this.taken[i] = 1;
    this.out.push({ start: t.start, end, type: 'LOCATION', priority: PRIORITY.LOCATION, source: 'detector', rule: 'place.ward' });
    return true;
  }

  /**
   * The value of a field that holds a place: "Receiving: LMC", "Sending: MVH ICU", "Unit: Fennimore 5",
   * "Agency: North Shore VNA", "Dispo: Aldrich 3 SICU". The value must hold a distinctive word or an
   * acronym no clinical list knows ("Unit: MICU", "Dispo: PACU" name a kind of unit).
   */
  private fieldAt(i: number): boolean {
    const t = this.t(i);
    if (t.shape === 'lower' || t.shape === 'initial' || i === 0) return false;
    // a field's value follows its label's colon
    if (!/:\s*$/.test(this.text.slice(this.t(i - 1).end, t.start)) || !PLACE_FIELD.test(this.text.slice(Math.max(0, t.start - 32), t.start))) return false;
    const last = this.run_(i, 5);
    let found = false;
    for (let k = i; k <= last; k++) {
      const w = this.t(k);
      const f = this.f(k);
      if (CLINICAL_DESTINATIONS.has(w.lower) || SPECIALTY_ACRONYMS.has(w.lower) || GENERIC.has(w.lower) || f.clinical) continue;
      const acronym = w.shape === 'upper' && !this.caps && w.text.length >= 2 && w.text.length <= 6 && !f.english && !FUNCTION_WORD.test(w.lower);
      if (acronym || this.distinctive(k, false)) found = true;
    }
    if (!found || CLINICAL_DESTINATIONS.has(t.lower) || GENERIC.has(t.lower)) return false;
    this.push(i, last, 'place.field');
    const ward = /^ \d{1,2}[A-Z]?\b(?![:/.]\d|-\d)/.exec(this.text.slice(this.t(last).end, this.t(last).end + 6));
    if (ward) (this.out[this.out.length - 1] as Detection).end = this.t(last).end + ward[0].length;
    return true;
  }

  /** "in the Whitcomb building", "Fennimore pavilion": a distinctive capitalised word before a building word in lowercase. */
  private buildingAt(i: number): boolean {
    const n = this.tokens[i + 1];
    if (!n || this.caps || this.t(i).shape !== 'title' || n.shape !== 'lower' || gap(this.text, this.t(i), n) !== ' ') return false;
    if (!/^(?:building|bldg|pavilion|wing|tower|campus|annex)$/.test(n.lower) || !this.distinctive(i, false) || sentenceInitial(this.text, this.t(i))) return false;
    this.push(i, i + 1, 'place.organisation');
    return true;
  }

  /**
   * "rehab @ Ashcroft vs Hillcrest", "SBH or MVH", "Youngstead/Brightwater": a word joined to a place by a
   * word of choice is a place too, when it is distinctive or an acronym.
   */
  private lists(): void {
    const found = [...this.out];
    for (const d of found) {
      const m = /^\s*(?:vs\.?|versus|or|and|\/)\s*/i.exec(this.text.slice(d.end, d.end + 10));
      if (!m) continue;
      const k = this.tokens.findIndex((t) => t.start === d.end + m[0].length);
      if (k < 0 || this.taken[k]) continue;
      const t = this.t(k);
      const f = this.f(k);
      if (f.clinical || CLINICAL_DESTINATIONS.has(t.lower) || GENERIC.has(t.lower) || SPECIALTY_ACRONYMS.has(t.lower)) continue;
      const acronym = t.shape === 'upper' && !this.caps && t.text.length >= 2 && t.text.length <= 6;
      if (!(acronym || (this.capitalised(k) && this.distinctive(k, false)) || (t.shape === 'lower' && f.cls === 'unknown'))) continue;
      // "Taken to NGR and NIHSS 16": a word before a number is a measure
      if (/^\s*[:=]?\s*\d/.test(this.text.slice(t.end, t.end + 4))) continue;
      this.push(k, acronym || t.shape === 'lower' ? k : this.run_(k, 4), 'place.list');
    }
  }

  /** After a word of place: a capitalised run or an acronym that is not a clinical destination. */
  private cueAt(i: number): boolean {
    const t = this.t(i);
    // only a word after a word of place (or "(") can be a place by its cue: test the phrases only there
    if (!this.placeCueBefore(i)) return false;
    if (t.shape === 'lower' && (this.f(i).cls === 'safe' || this.f(i).cls === 'ambiguous') && !this.townPhraseAt(i)) return false;
    // "rehab @ Ashcroft": "@" is "at"
    const before = this.text.slice(Math.max(0, t.start - 40), t.start).replace(/@/g, ' at ');
    const strong =
      STRONG_PLACE_CUE.test(before) ||
      /\b(?:pcp|osh|facility|ltc|snf|nh|rehab|hospice|done|followed|seen|treated|hospitalized|admitted)\s+(?:is\s+|at\s+|in\s+|from\s+)?(?:the\s+)?$/i.test(before) ||
      /\b(?:osh|facility|ltc|snf|nh|rehab|home|hospital)\s*\(\s*$/i.test(before);
    const from = FROM_CUE.test(before);
    const weak = WEAK_PLACE_CUE.test(before);
    const the = /\bthe\s+$/i.test(before);
    // "REHAB FROM: ...": a function word in capitals is no acronym
    const acronym = t.shape === 'upper' && t.text.length >= 2 && t.text.length <= 6 && !this.caps && !FUNCTION_WORD.test(t.lower);
    // an acronym before a department: "HGH ED", "from BMC ICU"
    if (acronym && !CLINICAL_DESTINATIONS.has(t.lower) && !this.f(i).clinical && !SPECIALTY_ACRONYMS.has(t.lower)) {
      const n = this.tokens[i + 1];
      if (n && /^\s$/.test(gap(this.text, t, n)) && DEPARTMENTS.has(n.lower) && (strong || from || weak)) {
        this.push(i, i, strong || from ? 'place.cue' : 'place.weak-cue');
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
      if (/^\s*\d/.test(after) || ACRONYM_AS_THING.test(after)) return false;
      // "in ED at NGR", "intubated at MVH": after "at" an acronym of three letters or more where a hospital is spoken of
      const atHospital = /\bat\s+(?:the\s+)?$/i.test(before) && t.text.length >= 3 && HOSPITAL_CONTEXT.test(this.text.slice(Math.max(0, t.start - 50), t.start));
      if (strong || (from && cls !== 'safe') || (/\bat\s+(?:the\s+)?$/i.test(before) && (cls === 'unknown' || cls === 'name')) || atHospital) {
        this.push(i, i, strong || from ? 'place.cue' : 'place.weak-cue');
        return true;
      }
      return false;
    }
    const lowercase = t.shape === 'lower';
    if (lowercase) return this.lowercaseTown(i, strong || from);
    if (t.shape !== 'title' && !(this.caps && t.shape === 'upper')) return false;
    if (this.lex.regions.has(t.lower)) {
      // "from Jamaica Plain", "in New Mexico": a town whose first word is a country's or a state's name
      const n = this.tokens[i + 1];
      if (!n || gap(this.text, t, n) !== ' ' || !this.lex.cities.has(`${t.lower} ${n.lower}`) || this.lex.regions.has(`${t.lower} ${n.lower}`)) return false;
      this.push(i, i + 1, strong || from ? 'place.cue' : 'place.weak-cue');
      return true;
    }
    let last = this.run_(i, 4);
    while (last > i && WEEKDAYS.has(this.t(last).lower)) last--; // "Riverbend Sat"
    // "LEDGEWOOD LTAC", "Cedar Ridge NH": in capitals the kind of care after a name says nothing of it (it is
    // masked with it)
    let core = last;
    if (this.caps) while (core > i && CLINICAL_DESTINATIONS.has(this.t(core).lower)) core--;
    const span: number[] = [];
    for (let k = i; k <= core; k++) span.push(k);
    const words = span.map((k) => this.t(k).lower);
    if (this.lex.regions.has(words.join(' '))) return false;
    const distinct = span.some((k) => this.distinctive(k, false));
    const capitalSafe = span.every((k) => !GENERIC.has(this.t(k).lower) && !CLINICAL_DESTINATIONS.has(this.t(k).lower));
    // "from the Pines", "at the Meadows": a capitalised word after "the" names a place; so does any word
    // the vocabularies cannot explain after a strong cue; after "in" or "at" it must not start a sentence
    let ok: boolean;
    if (this.caps) ok = strong && span.every((k) => this.distinctive(k, false) || this.placePrefix(k)) && span.some((k) => this.distinctive(k, false));
    else if (strong) {
      // "staying at Kestrel House", "lives at Maple Manor": a capitalised name before an organisation word
      const named = span.length > 1 && ORGANISATION_HEADS.has(words[words.length - 1] as string) && !GENERIC.has(words[0] as string) && !CLINICAL_DESTINATIONS.has(words[0] as string);
      ok = distinct || named || (capitalSafe && (the || span.length > 1));
    } else ok = (distinct && !sentenceInitial(this.text, t)) || (the && capitalSafe && !sentenceInitial(this.text, t));
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
    // a person after "to" or "from" is the name detector's: "from Dr. X" never gets here, "to Ann" does,
    // and so does "spoke to Mark Price": a first name and a surname
    if (!strong && span.length === 1 && (this.f(i).cls === 'name' || this.f(i).first) && !this.f(i).city && /\b(?:to|with|from)\s+$/i.test(before)) return false;
    if (!strong && span.length === 2 && this.f(i).first && this.f(i + 1).last && !ORGANISATION_HEADS.has(words[1] as string) && /\b(?:to|with|from|by)\s+$/i.test(before)) return false;
    this.push(i, last, strong || from ? 'place.cue' : 'place.weak-cue');
    return true;
  }

  /** Whether a town of two or three words the city list knows starts at word i ("new bedford", "fall river"). */
  private townPhraseAt(i: number): boolean {
    let phrase = this.t(i).lower;
    for (let k = i + 1; k < Math.min(this.tokens.length, i + 3); k++) {
      if (gap(this.text, this.t(k - 1), this.t(k)) !== ' ') return false;
      phrase += ' ' + this.t(k).lower;
      if (this.lex.cities.has(phrase) && !this.lex.regions.has(phrase)) return true;
    }
    return false;
  }

  /** "lives in guadalajara", "moved to lawrence", "called from dearborn": a lowercase town after a word of place. */
  private lowercaseTown(i: number, strong: boolean): boolean {
    const f = this.f(i);
    // "from new bedford", "lives in fall river": a town of two or three words the city list knows
    let phraseEnd = -1;
    let phrase = this.t(i).lower;
    for (let k = i + 1; k < Math.min(this.tokens.length, i + 3); k++) {
      if (gap(this.text, this.t(k - 1), this.t(k)) !== ' ') break;
      phrase += ' ' + this.t(k).lower;
      if (this.lex.cities.has(phrase) && !this.lex.regions.has(phrase)) phraseEnd = k;
    }
    if (strong && phraseEnd > i) {
      this.push(i, phraseEnd, 'place.cue');
      return true;
    }
    // "lives in waltham": a town no English word spells, whatever the safe lists hold
    const town = f.city && (f.cls === 'name' || f.cls === 'unknown' || f.cls === 'misspelt' || (strong && !f.english && !f.clinical && f.cls !== 'ambiguous'));
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
    this.push(i, last, strong ? 'place.cue' : 'place.weak-cue');
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

  /** A word of work among the six words before word i ("works part time at", "cashier for", "job at"). */
  private workWordBefore(i: number): boolean {
    for (let k = i - 1; k >= Math.max(0, i - 6); k--) if (WORK_WORDS.has(this.t(k).lower)) return true;
    return false;
  }

  private employerAt(i: number): boolean {
    const t = this.t(i);
    if (!this.placeCueBefore(i) && !EMPLOYER_ENDS.has(i > 0 ? this.t(i - 1).lower : '')) return false;
    // a lowercase word a vocabulary explains starts an employer's name only after a word of work
    // ("lost his job at market basket"): most words after "in" or "to" are none, and need no more reading
    if (t.shape === 'lower' && this.f(i).cls !== 'unknown' && this.f(i).cls !== 'name' && !this.workWordBefore(i)) return false;
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
    if (lowercase && this.f(i).cls !== 'unknown' && this.f(i).cls !== 'name') {
      // "lost his job at market basket", "works part time at stop & shop": after words of work a lowercase
      // name of two or three words, none of them a word of kind or function
      if (!(label || job || EMPLOYER_CUE.test(before)) || !/\b(?:at|for)\s+(?:the\s+)?$/i.test(before) || FUNCTION_WORD.test(t.lower) || GENERIC.has(t.lower)) return false;
      const last = this.run_(i, 3, true);
      if (last === i) return false;
      for (let k = i; k <= last; k++) if (GENERIC.has(this.t(k).lower) || CLINICAL_DESTINATIONS.has(this.t(k).lower) || WEEKDAYS.has(this.t(k).lower)) return false;
      this.push(i, last, 'place.employer');
      return true;
    }
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
    if (places.size > 0) {
      for (let k = 0; k < this.tokens.length; k++) {
        if (this.taken[k] || !places.has(this.t(k).lower)) continue;
        if (this.t(k).shape === 'lower' && this.f(k).cls !== 'unknown') continue;
        this.push(k, k, 'place.recurrence');
      }
    }
    if (this.dataset) this.fromDataset(this.dataset);
  }

  /**
   * Words the dataset's strong rules took as places elsewhere: an acronym in capitals ("back to SBH"), a
   * word no vocabulary explains in any case ("from hillcrest"), a misspelling capitalised; never an English
   * word. A run of place words around it is taken whole ("Hillcrest Rehab").
   */
  private fromDataset(dataset: DatasetEvidence): void {
    for (let k = 0; k < this.tokens.length; k++) {
      if (this.taken[k]) continue;
      const t = this.t(k);
      if (t.lower.length < 3) continue;
      const f = this.f(k);
      if (f.clinical || CLINICAL_DESTINATIONS.has(t.lower) || SPECIALTY_ACRONYMS.has(t.lower)) continue;
      const acronym = t.shape === 'upper' && !this.caps && t.text.length <= 6 && !f.english;
      if (/\d/.test(this.text.charAt(t.end))) continue; // "MLH1" is a gene
      let ok: boolean;
      if (acronym) ok = dataset.place(t.lower, true) || ((f.cls === 'name' || f.cls === 'unknown') && dataset.place(t.lower, false));
      else if (!dataset.place(t.lower, false)) ok = false;
      else if (f.cls === 'name' || f.cls === 'unknown') ok = true;
      else ok = f.cls === 'misspelt' && t.shape !== 'lower';
      if (!ok) continue;
      const last = t.shape === 'lower' ? k : this.run_(k, 4);
      this.push(k, last, 'place.dataset');
      // "Fennimore 5": a ward's number goes with its name
      const ward = /^ \d{1,2}[A-Z]?\b(?!\s*(?:%|mg|mcg|cc|ml|units?|hrs?|days?|min|cm|mm|x\b|[:/.]\d|-\d))/.exec(this.text.slice(this.t(last).end, this.t(last).end + 12));
      if (ward) (this.out[this.out.length - 1] as Detection).end = this.t(last).end + ward[0].length;
    }
  }
}
