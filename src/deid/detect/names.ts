/**
 * Personal names of patients, relatives, household members and clinicians, found by the
 * safe-vocabulary backstop: every word is classed by the vocabularies (vocabulary.ts: safe, ambiguous,
 * name, misspelt, unknown), and the words around it decide. Evidence, each a named rule:
 *   name.title        after a title: "Dr. Falkenrath", "dr kowal", "Mrs. Hunt"
 *   name.credential   before a credential: "R. Sandoval, RN", "OKONKWO RN"
 *   name.relation     after or before a relation: "wife ann", "son GIDEON", "Wendell (husband)"
 *   name.role         after a care-team role: "HO Kwame", "covering NP kowal", "RN Dana"
 *   name.contact      after a verb of contact: "per Okafor", "d/w halvorsen", "paged Ng"
 *   name.weak-cue     after "by", "with", "to": a capitalised name ("seen by Okafor", "with Will Young")
 *   name.label        after a label: "Patient: Rose Hunt", "Pt Anna Kerr", "Dear Dr", "Thanks, Dana"
 *   name.right-cue    before a word that says a person was meant: "Kowal aware", "okafor updated"
 *   name.inverted     "KERR, ANNA" or "Kerr, Anna 54F" where a header or an age and sex says so
 *   name.lexicon      a capitalised word the name lists know and the safe vocabulary does not
 *   name.backstop     a capitalised word no vocabulary explains, inside a sentence of mixed case
 *   name.signature    a note's closing initials: "-K.", "JS RN"
 *   name.subject      opening a sentence that presents a patient: "Tavita Mbeki is a 45 yo man"
 *   name.recurrence   a word found as a name once is a name wherever it recurs in the note, and in the
 *                     subject's other notes (the evidence the caller passes)
 *   name.dataset      a word strong rules took as a name elsewhere in the dataset (evidence.ts)
 * A name found is widened over adjacent initials, particles and name words ("Marguerite E. Hollis",
 * "van de Berg"). Which words may carry a name depends on the strength of the cue: a title or a
 * relation takes a lowercase word no vocabulary explains, a weak cue ("by", "with") only a
 * capitalised one, and no cue takes a safe word. In ALL-CAPS notes capitalisation says nothing.
 */
import { vocabulary, type WordFacts } from '../vocabulary';
import { gap, sentenceInitial, type Token } from '../text';
import { type DatasetEvidence, type Detection, type Evidence, PRIORITY } from '../types';
import { lexicons } from '../lexicons';
import { nameShape } from '../name-shape';
import {
  CLINICAL_DESTINATIONS,
  CLOSING,
  COMMA_CREDENTIALS,
  CONTACT_CUES,
  CREDENTIALS,
  EPONYM_HEADS,
  FUNCTION_WORDS,
  LABEL_CUES,
  MEDICAL_SUFFIX,
  MONTHS_DAYS,
  NATIONALITIES,
  PARTICLES,
  PERSON_LABELS,
  QUOTED_NAME_CUE,
  RELATIONS,
  RIGHT_CUES,
  ROLES,
  SELF_INTRODUCTION,
  FIRST_PERSON,
  SERVICES,
  STRONG_TITLES,
  TITLES,
  WEAK_PERSON_CUES,
} from './cues';

export const NAME_RULES = [
  'name.title',
  'name.credential',
  'name.relation',
  'name.role',
  'name.contact',
  'name.label',
  'name.right-cue',
  'name.inverted',
  'name.lexicon',
  'name.backstop',
  'name.signature',
  'name.subject',
  'name.recurrence',
  'name.dataset',
  'name.weak-cue',
  'name.widened',
] as const;
export type NameRule = (typeof NAME_RULES)[number];

/** How strongly a cue says "a person follows": what kinds of word it can turn into a name. */
/** `role`: a care-team role or a hand-off ("RT bill", "report given to dawn"), strong, and taking a lowercase first name. */
type Strength = 'title' | 'relation' | 'role' | 'strong' | 'weak';

/** What the name detector reads: the folded text, its words, their facts, and evidence from elsewhere. */
export interface NameInput {
  text: string;
  tokens: Token[];
  facts: WordFacts[];
  caps: boolean;
  /** Name words found in the subject's other records, and what the dataset taught. */
  evidence?: Evidence;
}

/** Slash cues the tokenizer splits: "d/w Okafor", "s/w kowal", "c/w dana". */
const SLASH_CONTACT = /(?:\b[dsc]\/w|\bw\/|\bf\/u\s+w(?:ith|\/)?|\bspoke\s+w\/?|\bper)\s*$/i;
/** "Kerr, Anna 54F", "OKAFOR, CHIDI (DOB ...)": an age and sex, a date of birth or an MRN after an inverted name. */
const AFTER_INVERTED = /^\s*(?:\(?\d{1,3}\s?(?:y\/?o|yo|yrs?)?\s?[MFmf]\b|\(?(?:dob|d\.o\.b|mrn|mr#|#|age|sex|[MF]\/\d)|[,;(]\s*\d)/i;
/** A grade, stage or score after a word makes it a classification: "Clark IV", "Fitzpatrick II", "Breslow 1.3 mm", "Morse 55". */
const CLASSIFICATION_AFTER = /^[\s-]*(?:[IVX]{1,4}[a-c]?\b|[A-D]\d?\b(?![a-z])|\d|\(?grade|\(?class|\(?stage|\(?score|level\b|thickness\b|fall\s+score)/;
/** How name-like an unknown capitalised word must read (name-shape.ts) before the backstop takes it alone. */
const BACKSTOP_SHAPE = 0.3;
/** A dash signature: "-K.", "- dlw", "-will rn", "-m. dacosta rrt", "-Ruth" at the end of a line or before "(". */
const DASH_SIGNATURE =
  /(?:^|\n|[.;!?)]\s+)[-–~]\s?((?:[A-Za-z]\.\s?)?[A-Za-z][A-Za-z'-]*(?:\s[A-Za-z][A-Za-z'-]*)?)\.?(?:\s*[,/]?\s*(RN|rn|MD|md|NP|np|RRT|rrt|LPN|lpn|PT|pt|OT|ot|SLP|slp|CM|cm|SW|sw|PA|pa|MSW|msw|LCSW|lcsw|CNA|cna)\b\.?)?[ \t]*(?=\(|\n|$)/g;
/**
 * The last line of a note, initials alone: "dp", "TW", "B.L.", "jt rn", "KD/RN". A line of two or three
 * letters at the very end is the writer's, unless it is a word or a status ("DNR", "NPO", "OK").
 */
const END_INITIALS = /(?:^|\n)[ \t]*[-–~]?[ \t]*((?:[A-Za-z]\.?[ \t]?){2,3})(?:[ \t]*[,/]?[ \t]*(?:RN|rn|Rn|MD|md|NP|np|RRT|rrt|LPN|lpn|PA|pa)\.?)?[ \t]*\s*$/;
const END_STATUS = new Set([
  'dnr',
  'dni',
  'npo',
  'cmo',
  'ok',
  'yes',
  'no',
  'na',
  'nka',
  'vss',
  'icu',
  'ccu',
  'rn',
  'md',
  'np',
  'pa',
  'tbd',
  'prn',
  'am',
  'pm',
  'bid',
  'tid',
  'qd',
  'end',
  'nkda',
  'amb',
  'ooc',
  'nad',
  'wnl',
  'etc',
]);

/** The verb of a sentence that presents a patient, after the name opening it: "is a 45 yo", "presented with", ", 67F,". */
const SUBJECT_VERB =
  /^(?:\s*,?\s*(?:is|was)\s+an?\s+(?:\d|very\s|pleasant\s|previously\s|otherwise\s|healthy\s|known\s|(?:[a-z]+-)?year)|\s+(?:presents|presented|presenting|comes|came|returns|returned|arrived|re-?presents|is\s+admitted|was\s+admitted|was\s+transferred|is\s+transferred|has\s+a\s+(?:h\/o|hx|history|pmh))\b|\s*,\s*(?:a|an)\s+\d{1,3}|\s*\(\d{1,3}\s?(?:y|[MF]\b)|\s*,\s*\d{1,3}\s?(?:y|[MF]\b)|\s+\d{1,3}\s?(?:y\/?o\s?|yo\s?)?[MF]\b)/i;

/** A hand-off before "to": "report given to", "reported off to", "signed out to", "handed off to". */
const HAND_OFF = /\b(?:report(?:ed)?(?:\s+(?:given|called|off|gvn))?|gave\s+report|called\s+report|sign(?:ed)?\s+out|hand(?:ed)?\s*off|endorsed|handover|passed\s+on)\s+$/i;

/** Words after which two or three capitals are a writer's initials ("read by MK", "co-signed SO"), besides roles and credentials. */
const INITIALS_CUES = new Set(['by', 'attest', 'attested', 'co-signed', 'cosigned', 'signed', 'read', 'reviewed', 'dictated', 'performed', 'verified', 'witnessed', 'transcribed']);

/** Two-letter words that stay words when written in capitals ("OR", "NO", "AT"): never initials. */
const WORDS_IN_CAPITALS = new Set('or on no in to at by am pm us it is as be do go up me my we he an if of ok hi'.split(' '));

/** Words of address after a greeting: "hi honey", "hello dear", "thanks doc". */
const ADDRESS_TERMS = new Set(
  "honey hon sweetie sweetheart sweety darling dear dearie love luv babe baby buddy pal doc doctor nurse everyone everybody all guys folks team friend friends mom mommy dad daddy ma pa sir madam maam ma'am".split(
    ' ',
  ),
);

/** Days of the week: "sister was Sunday" dates something, it names nobody. */
const WEEKDAYS = new Set(['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday', 'mon', 'tue', 'tues', 'wed', 'thu', 'thur', 'thurs', 'fri', 'sat', 'sun']);

/** Which cue lists a word is on, as bits: one lookup per word instead of one per list. */
/** Person labels that head a message, where a department is written as often as a person. */
const HEADER_LABELS = new Set(['to', 'from', 'cc', 'sender', 'recipient']);

const CUE = { title: 1, personLabel: 2, relation: 4, role: 8, contact: 16, label: 32, weak: 64, service: 128, credential: 256, right: 512 } as const;
const CUE_FLAGS = new Map<string, number>();
for (const [lists, bit] of [
  [[TITLES], CUE.title],
  [[PERSON_LABELS], CUE.personLabel],
  [[RELATIONS], CUE.relation],
  [[ROLES], CUE.role],
  [[CONTACT_CUES], CUE.contact],
  [[LABEL_CUES], CUE.label],
  [[WEAK_PERSON_CUES], CUE.weak],
  [[SERVICES], CUE.service],
  [[CREDENTIALS, COMMA_CREDENTIALS], CUE.credential],
  [[RIGHT_CUES], CUE.right],
] as [Set<string>[], number][]) {
  for (const list of lists) for (const w of list) CUE_FLAGS.set(w, (CUE_FLAGS.get(w) ?? 0) | bit);
}
// "M.D.", "R.N.": a credential written letter by letter starts with an initial
for (const c of 'mrdnpl'.split('')) CUE_FLAGS.set(c, (CUE_FLAGS.get(c) ?? 0) | CUE.credential);

/** Last words of a self-introduction ("it's", "this is", "i'm", "goes by", "call me"). */
const INTRODUCTION_ENDS = new Set(["it's", 'its', 'is', 'names', 'by', 'as', 'me', 'am', "i'm", 'im']);
/** Last words of a closing ("thanks", "thank you", "best wishes", "thanks so much", "thanks for everything"). */
const CLOSING_ENDS = new Set([
  'thanks',
  'thank',
  'you',
  'thx',
  'ty',
  'cheers',
  'regards',
  'best',
  'wishes',
  'sincerely',
  'love',
  'xoxo',
  'yours',
  'truly',
  'warmly',
  'blessings',
  'gratefully',
  'atentamente',
  'saludos',
  'gracias',
  'much',
  'again',
  'lot',
  'everything',
  'help',
  'time',
  'do',
  'me',
]);

/** A company after a word makes it a maker, not a person ("Sandoz Corporation", "Alexa Fluor®"). */
const COMPANY_AFTER =
  /^[\s\w-]{0,25}?(?:®|™|\b(?:Inc|Corp|Corporation|Ltd|GmbH|LLC|Co\.|Company|Pharmaceuticals?|Laboratories|Scientific|Medical Systems|Lifesciences|Instruments|Biosciences|Diagnostics)\b)|^\s*et al\b/;

export class NameDetector {
  detect(input: NameInput): Detection[] {
    return new NameScan(input).run();
  }

  /**
   * What outside evidence adds to names already found (`found`, offsets into the same text): the words
   * of the subject's other records and of the dataset wherever they recur, widened as a name is. Only
   * the new spans are returned.
   */
  extend(input: NameInput, found: readonly { start: number; end: number }[]): Detection[] {
    return new NameScan(input).runEvidence(found);
  }
}

/** One text's scan: the marks per word and the rule that made each. */
class NameScan {
  private readonly rule: (NameRule | undefined)[];
  private readonly text: string;
  private readonly tokens: Token[];
  private readonly facts: WordFacts[];
  private readonly caps: boolean;

  /** Words of the site's lists that are ordinary words: names after a cue, never without one. */
  private readonly siteCue: Uint8Array;

  constructor(private readonly input: NameInput) {
    this.text = input.text;
    this.tokens = input.tokens;
    this.caps = input.caps;
    this.rule = new Array(input.tokens.length);
    this.siteCue = new Uint8Array(input.tokens.length);
    const site = input.evidence?.site;
    if (site) {
      // a staff entry that is also a word ("will", "hope") reads, after a cue, as a name-list word would
      this.facts = input.facts.map((f, i) => {
        if (!site.name((input.tokens[i] as Token).lower)) return f;
        this.siteCue[i] = 1;
        return { ...f, cls: 'name' as const };
      });
    } else this.facts = input.facts;
  }

  run(): Detection[] {
    const n = this.tokens.length;
    for (let i = 0; i < n; i++) this.cuesAt(i);
    for (let i = 0; i < n; i++) this.withoutCue(i);
    this.signatures();
    this.slashSignatures();
    // Recurrence and widening feed each other: "Daughter Vamexez Vanadoz" makes the first "Vanadoz" a
    // recurrence, widening takes "Qimufev" beside it, and only then can "VANADOZ, QIMUFEV" recur.
    // Each round marks only unmarked words, so this ends; three rounds cover every chain seen.
    this.widen();
    for (let round = 0; round < 3 && this.recurring() > 0; round++) this.widen();
    return this.spans();
  }

  /** The evidence-only reading: names found before are seeds; recurrence and widening from them, and only the new words out. */
  runEvidence(found: readonly { start: number; end: number }[]): Detection[] {
    const seeded = new Uint8Array(this.tokens.length);
    let k = 0;
    for (const s of [...found].sort((a, b) => a.start - b.start)) {
      while (k < this.tokens.length && this.t(k).end <= s.start) k++;
      for (let j = k; j < this.tokens.length && this.t(j).start < s.end; j++) {
        seeded[j] = 1;
        this.rule[j] = 'name.recurrence';
      }
    }
    for (let round = 0; round < 4 && this.recurring() > 0; round++) this.widen();
    for (let i = 0; i < this.tokens.length; i++) if (seeded[i]) this.rule[i] = undefined;
    return this.spans();
  }

  private t(i: number): Token {
    return this.tokens[i] as Token;
  }

  private f(i: number): WordFacts {
    return this.facts[i] as WordFacts;
  }

  private mark(i: number, rule: NameRule): void {
    if (this.rule[i] === undefined) this.rule[i] = rule;
  }

  /** Capitalised where capitals mean something: a mixed-case text, a word not in lowercase. */
  private capitalised(i: number): boolean {
    const s = this.t(i).shape;
    return s === 'title' || s === 'upper' || s === 'initial';
  }

  /**
   * A word a cue never turns into a name: function words, months and weekdays, the cue words
   * themselves, countries and states. After a title, or inside a name already begun, a surname that is
   * also a cue word may stand ("Ms Ho", "mei-ling ho").
   */
  private reserved(i: number, inside = false): boolean {
    const t = this.t(i);
    const l = t.lower;
    if (FUNCTION_WORDS.has(l) || RIGHT_CUES.has(l) || NATIONALITIES.has(l) || lexicons().regions.has(l)) return true;
    if (/['’]d$/.test(l) && FUNCTION_WORDS.has(l.slice(0, -2))) return true; // "husband ok'd it\"
    // "hi honey", "thanks doc": a word of address in lowercase
    if (t.shape === 'lower' && ADDRESS_TERMS.has(l)) return true;
    if (MONTHS_DAYS.has(l)) return !(inside && t.shape !== 'lower' && this.f(i).first);
    if (TITLES.has(l) || RELATIONS.has(l) || ROLES.has(l) || (CREDENTIALS.has(l) && t.shape === 'upper')) return !(inside && this.f(i).last && !CREDENTIALS.has(l));
    return false;
  }

  /** Whether word i can be (part of) a name after a cue of this strength. */
  private personLike(i: number, strength: Strength, inside = false, header = false): boolean {
    const t = this.t(i);
    const f = this.f(i);
    if (t.shape === 'initial') return strength !== 'weak' || !this.caps;
    if (this.reserved(i, inside || strength === 'title') || this.glued(t)) return false;
    // "MassHealth", "CaringBridge", "SafeLink": a capital inside a word makes a brand, unless a name's prefix
    // puts it there ("McAllister", "DeShawn", "LaToya", "O'Brien", "VanHorn")
    if (/[a-z][A-Z]/.test(t.text) && !/^(?:Mc|Mac|De|Di|Da|Du|La|Le|Van|Von|St|O'|D')[A-Z]/.test(t.text)) return false;
    // "EU-trained", "non-tender": a lowercase word after a hyphen makes a compound word, not a name
    if (
      /-[a-z]/.test(t.text) &&
      !(f.cls === 'name' && f.first) &&
      t.text
        .split('-')
        .slice(1)
        .some((p) => /^[a-z]/.test(p) && vocabulary().isSafe(p))
    )
      return false;
    // a surname that is also a clinical word goes on a name already begun: "Brianna Stokes", "kevin ng" in lowercase
    if (inside && f.last && t.shape !== 'lower' && (!this.caps || t.shape === 'upper')) return true;
    if (inside && f.last && t.shape === 'lower' && i > 0 && this.t(i - 1).shape === 'lower' && ['name', 'unknown'].includes(this.f(i - 1).cls) && !FUNCTION_WORDS.has(t.lower)) return true;
    const cap = this.capitalised(i) && (!this.caps || t.shape === 'title');
    const capsText = this.caps && t.shape === 'upper';
    // In mixed-case text a word in capitals after "per", "to" or a role is an acronym ("per MOLST", "to LIWS")
    // unless a name list knows it or it reads like a name: "RN KOWAL".
    const strong = strength === 'strong' || strength === 'role';
    if (!this.caps && t.shape === 'upper' && (strength === 'weak' || strong || strength === 'relation') && !inside) {
      if (!(f.cls === 'name' && t.text.length >= 3) && !(strong && f.cls === 'unknown' && t.text.length >= 4 && nameShape(t.lower) >= 0.5)) return false;
    }
    // "fellow: RA 18", "wife, MAE": two capitals in mixed-case text are an abbreviation after any cue but a title
    if (!this.caps && t.shape === 'upper' && t.text.length <= 2 && !inside && strength !== 'title') return false;
    switch (f.cls) {
      case 'name':
        return strength !== 'weak' || cap || capsText;
      case 'unknown':
        // after "by", "with", "to" a coinage must at least read like a name ("transferred by Medflight" does not)
        if (strength === 'weak') return cap && (inside || nameShape(t.lower) >= 0.1);
        // "HCP tmrw", "kids, facetimed": shorthand after a relation is not a name either
        if (strength === 'relation' && t.shape === 'lower' && !inside) return nameShape(t.lower) >= 0.2;
        // "discussed paratransit": a lowercase coinage after a verb must at least read like a name
        if (strong && t.shape === 'lower' && !inside) return nameShape(t.lower) >= 0.2;
        return true;
      case 'misspelt':
        if (strength === 'weak') return false;
        // "resident tunde": after a role a lowercase word that reads like a name
        if (strength === 'role' && t.shape === 'lower') return nameShape(t.lower) >= 0.3;
        return cap || capsText || strength === 'title' || strength === 'relation';
      case 'ambiguous':
        // "Dr. Foley", "supervisor Ray": a clinical word that is also a first name, capitalised after a cue
        if (f.clinical) return (strength === 'title' || (strength !== 'weak' && f.first)) && (cap || capsText);
        if (strength === 'weak') return false;
        if (cap || capsText) return true;
        // lowercase: "dr hunt" after a title; after a relation or a role only a first name ("wife rose",
        // "RT bill", "report given to dawn"; not "wife first"), and after a role only where what follows
        // cannot make it a verb ("interpreter read it back")
        if (strength === 'role' && f.first && !inside) return this.nameEndsHere(i);
        return strength === 'title' || (strength === 'relation' && f.first);
      case 'safe':
        if (f.clinical) return strength === 'title' && (cap || capsText);
        // "Dr. Strange", "Patient: Hope": a capitalised common word starts a name after a strong cue; it
        // continues one only after a title ("June Merriweather Subject:" ends before "Subject")
        // After a message header ("To:", "From:") it does not: "To: Pharmacy" is a department.
        return (strength === 'title' || (strength === 'relation' && !inside && !header)) && cap && !this.caps;
    }
  }

  /** "PaCO2", "3Smith": a word glued to digits is a formula or a code, not a name. */
  private glued(t: Token): boolean {
    return /\d/.test(this.text.charAt(t.end)) || /\d/.test(this.text.charAt(t.start - 1));
  }

  private followedByColon(t: Token): boolean {
    const c = this.text.charCodeAt(t.end);
    return c === 58 || (c === 32 && this.text.charCodeAt(t.end + 1) === 58);
  }

  /** The cues at word i and the names they introduce. */
  private cuesAt(i: number): void {
    const t = this.t(i);
    const l = t.lower;
    // one lookup says which lists the word is on; most words are on none, and have only the checks below
    const cue = CUE_FLAGS.get(l) ?? 0;
    if (cue !== 0) this.cueWord(i, cue);
    // (a single letter is a credential's only inside "R.N.": "R IJ", "s/p AVR" are no cues)
    if ((cue & (CUE.role | CUE.credential | CUE.contact | CUE.title) && l.length >= 2) || INITIALS_CUES.has(l)) this.initialsAfter(i);
    const p = i > 0 ? this.t(i - 1).lower : '';
    const quoted = t.start > 0 && (this.text.charCodeAt(t.start - 1) === 34 || (this.text.charCodeAt(t.start - 1) === 32 && this.text.charCodeAt(t.start - 2) === 34));
    // the phrases before a word are matched only where the word before could end one
    if (INTRODUCTION_ENDS.has(p) || CLOSING_ENDS.has(p) || quoted) {
      const before = this.text.slice(Math.max(0, t.start - 40), t.start);
      if (SELF_INTRODUCTION.test(before)) this.introduce(i, 'relation', 'name.label');
      else if (FIRST_PERSON.test(before)) this.introduce(i, 'strong', 'name.label');
      if (CLOSING_ENDS.has(p) && this.closingAt(i, before)) this.introduce(i, 'relation', 'name.signature', true);
      if (quoted && QUOTED_NAME_CUE.test(before.replace(/"\s?$/, ''))) this.quoted(i);
    }
    const next = this.tokens[i + 1];
    if (next && (CUE_FLAGS.get(next.lower) ?? 0) & CUE.relation) {
      if (t.possessive) this.possessor(i);
      else if (l.length >= 4 && l.endsWith('s') && ['name', 'unknown'].includes(this.f(i).cls) && lexicons().firstNames.has(l.slice(0, -1)) && gap(this.text, t, next) === ' ')
        this.mark(i, 'name.relation'); // "annas daughter"
    }
  }

  /**
   * "report given to will on the floor", "husband will at bedside": after a hand-off or a relation a first
   * name that is also a function word or a month, when what follows it cannot continue a verb ("on", "at",
   * "rn", a comma, the end).
   */
  private firstNameAlone(i: number, rule: NameRule): void {
    const j = i + 1;
    const n = this.tokens[j];
    if (!n || this.rule[j] || gap(this.text, this.t(i), n) !== ' ' || n.shape === 'initial' || WEEKDAYS.has(n.lower)) return;
    // of the function words only those that are common first names ("will", "may"); never "in", "so", "an"
    if (!this.siteCue[j] && FUNCTION_WORDS.has(n.lower) && !['will', 'may', 'june', 'april'].includes(n.lower)) return;
    // a first name, or a word the site's staff list holds ("coordinator Mo")
    if (!this.siteCue[j] && (!this.f(j).first || this.f(j).clinical)) return;
    if (!/^(?:\s*(?:[,.;)(]|$)|\s+(?:on|at|in|rn|rrt|np|md|pa|who|for|and|x\d|@)\b)/i.test(this.text.slice(n.end, n.end + 6))) return;
    this.mark(j, rule);
  }

  /**
   * "d/w joy (charge rn)", "per will (RN on floor)", "Mo (coordinator)": a first name just before a role
   * in parentheses. The role opens the parenthesis, or follows one word there ("charge", "night", "floor").
   */
  private roleInParentheses(i: number): void {
    const open = this.text.lastIndexOf('(', this.t(i).start);
    if (open < 0 || !/^\(\s*(?:[A-Za-z]+\s+)?$/.test(this.text.slice(open, this.t(i).start))) return;
    let j = i - 1;
    while (j >= 0 && this.t(j).start > open) j--;
    if (j < 0 || this.rule[j] || !/^\s*$/.test(this.text.slice(this.t(j).end, open))) return;
    const t = this.t(j);
    const f = this.f(j);
    if (t.shape === 'initial' || t.lower.length < 2 || f.clinical || RELATIONS.has(t.lower) || ROLES.has(t.lower) || SERVICES.has(t.lower) || this.glued(t)) return;
    if (FUNCTION_WORDS.has(t.lower) && !f.first) return;
    if (f.first || f.cls === 'name' || (f.cls === 'unknown' && nameShape(t.lower) >= 0.2) || (t.shape === 'title' && (f.last || f.cls === 'misspelt'))) this.mark(j, 'name.role');
  }

  /** What follows word i cannot continue a verb: a punctuation mark, the end, a credential, a preposition of place or a word of awareness. */
  private nameEndsHere(i: number): boolean {
    const t = this.t(i);
    return /^(?:\s*(?:[,.;:)(]|$|\n)|\s+(?:on|at|in|to|rn|rrt|np|md|pa|aware|notified|paged|called|updated|is|was|ok|who|for|and|x\d|@)\b|\s+[A-Z])/.test(this.text.slice(t.end, t.end + 10));
  }

  /**
   * Staff by their initials: "RN JT aware", "Triage RN: MH", "read by MK", "co-signed SO", "attending
   * PH": two or three capitals after a role, a credential, a verb of signing or "by", in a mixed-case
   * text, when they are no abbreviation the vocabularies or the cue lists know ("RN BSN", "by CT", "by PT").
   */
  private initialsAfter(i: number): void {
    const n = this.tokens[i + 1];
    if (!n || this.caps || n.shape !== 'upper' || n.text.length < 2 || n.text.length > 3 || this.rule[i + 1] || this.glued(n)) return;
    if (!/^:?\s{1,2}$/.test(gap(this.text, this.t(i), n))) return;
    if (!this.initialsWord(n.lower)) return;
    // "by CT 3/4", "witnessed GTC seizure": what follows initials ends a signature or names the person
    if (!/^(?:\s*(?:$|\n|[,.;:)(/-]|->)|\s+(?:aware|notified|updated|paged|called|rn|md|np|pa|at\s+bedside|to\s+bedside)\b|\s+[A-Z][a-z])/.test(this.text.slice(n.end, n.end + 14))) return;
    this.mark(i + 1, 'name.credential');
  }

  /** Letters that may be a person's initials: no abbreviation the vocabularies or the cue lists know. */
  private initialsWord(lower: string): boolean {
    const f = vocabulary().facts(lower);
    // "SO", "SD" may be initials; "OR", "NO", "AT" in capitals are words or places of the hospital
    if (f.clinical || (f.english && lower.length > 2) || WORDS_IN_CAPITALS.has(lower)) return false;
    return !(CREDENTIALS.has(lower) || COMMA_CREDENTIALS.has(lower) || ROLES.has(lower) || SERVICES.has(lower) || CLINICAL_DESTINATIONS.has(lower) || TITLES.has(lower) || RELATIONS.has(lower));
  }

  /** "... NGTD. /kd", "/pr attest SO", "/os RA": initials after a slash that follows a space, at a line's end or before a sign-off word. */
  private slashSignatures(): void {
    if (!this.text.includes('/')) return;
    for (const m of this.text.matchAll(/(?:^|[\s(])\/([A-Za-z]{2,4})(?=[ \t]*(?:$|\n|attest|[A-Z]{2}\b|RN\b|rn\b|MD\b|md\b|\)))/gm)) {
      const letters = m[1] as string;
      const start = m.index + m[0].length - letters.length;
      const k = this.tokens.findIndex((t) => t.start === start);
      if (k < 0 || this.rule[k]) continue;
      const lower = letters.toLowerCase();
      if (CREDENTIALS.has(lower) || COMMA_CREDENTIALS.has(lower) || /^(?:day|hr|hrs|wk|min|dose|kg|dl|ml|mg|l|week|month|yr|shift|prn|am|pm|sec|unit|units)$/.test(lower)) continue;
      this.mark(k, 'name.signature');
      // "/os RA": a second writer's initials right after
      const n = this.tokens[k + 1];
      if (n && n.shape === 'upper' && n.text.length <= 3 && /^\s$/.test(gap(this.text, this.t(k), n)) && this.initialsWord(n.lower)) this.mark(k + 1, 'name.signature');
    }
  }

  /** "rt bill", "rn dana": a lowercase two-letter role counts only before a first name. */
  private firstNameAfter(i: number): boolean {
    const n = this.tokens[i + 1];
    return !!n && gap(this.text, this.t(i), n) === ' ' && this.f(i + 1).first && !this.reserved(i + 1) && !this.f(i + 1).clinical;
  }

  /** The rules of a cue word: what it introduces after it, or before it. */
  private cueWord(i: number, cue: number): void {
    const t = this.t(i);
    const l = t.lower;
    if (cue & CUE.title && this.titleUse(i)) {
      this.forward(i, 'title', 'name.title');
      // "per dr k", "Dr. B": one letter after a title is the name's initial
      const n = this.tokens[i + 1];
      if (n && !this.rule[i + 1] && n.text.length === 1 && /^\.?\s{1,2}$/.test(gap(this.text, t, n)) && !/^[A-Za-z]/.test(this.text.slice(n.end, n.end + 1))) this.mark(i + 1, 'name.title');
    } else if (cue & CUE.personLabel && this.followedByColon(t) && !(l === 'pt' && t.shape === 'upper' && !this.caps)) {
      // the field's value first (it may hold words the ordinary rules refuse), then the ordinary rules,
      // which read on past a comma ("Patient: Rousseau, Innocent")
      this.fieldValue(i);
      // a message header ("To: Pharmacy", "From: Billing") names a department as often as a person
      this.forward(i, 'relation', 'name.label', HEADER_LABELS.has(l));
    } else if (cue & CUE.relation) {
      this.forward(i, 'relation', 'name.relation');
      this.firstNameAlone(i, 'name.relation');
      this.relationAfter(i);
    } else if (cue & CUE.role && (t.shape !== 'lower' || l.length > 2 || this.firstNameAfter(i))) {
      this.forward(i, 'role', 'name.role');
      this.firstNameAlone(i, 'name.role');
    } else if (cue & CUE.contact) this.forward(i, 'strong', 'name.contact');
    else if (cue & CUE.label) this.forward(i, l === 'pt' || l === 'patient' ? 'weak' : 'relation', 'name.label');
    else if (l === 'w' && SLASH_CONTACT.test(this.text.slice(Math.max(0, t.end - 12), t.end))) this.forward(i, 'strong', 'name.contact');
    else if (l === 'to' && HAND_OFF.test(this.text.slice(Math.max(0, t.start - 30), t.start))) {
      this.forward(i, 'role', 'name.contact');
      this.firstNameAlone(i, 'name.contact');
    } else if (cue & CUE.weak) this.forward(i, 'weak', 'name.weak-cue');
    if (cue & (CUE.service | CUE.role) && /^\s?\([A-Za-z]/.test(this.text.slice(t.end, t.end + 3)) && i + 1 < this.tokens.length && ['name', 'unknown'].includes(this.f(i + 1).cls))
      this.introduce(i + 1, 'strong', 'name.role');
    if (cue & CUE.credential && this.isCredential(i)) this.backward(i);

    if (cue & (CUE.role | CUE.credential) && i > 0) this.roleInParentheses(i);
    if (cue & CUE.right && i > 0) this.rightCue(i);
  }

  /**
   * "Patient: Will Mark", "pt: rose hunt", "Name: Hope Bush, 71F": the value of a person field, when it
   * is a name and nothing else. Every word of it, up to the end of the line or a comma, a parenthesis
   * or a semicolon, is on a name list (lowercase: and there are two of them), so the words may be
   * English words and even function words ("Will"); a value with one other word ("Pt: will need PT",
   * "To: Pharmacy") is left to the ordinary rules.
   */
  private fieldValue(label: number): void {
    const first = label + 1;
    const words: number[] = [];
    for (let j = first; j < this.tokens.length && words.length <= 4; j++) {
      const g = gap(this.text, this.t(j - 1), this.t(j));
      if (j === first ? !/^\s?:\s{0,3}$/.test(g) : g !== ' ') break;
      words.push(j);
    }
    if (words.length === 0 || words.length > 4) return;
    const last = this.t(words[words.length - 1] as number);
    if (!/^(?:[ \t]*(?:\r?\n|$)|[ \t]*[,;(]| {2,}|\t)/.test(this.text.slice(last.end, last.end + 3))) return;
    const lower = words.every((j) => this.t(j).shape === 'lower');
    if (lower && (words.length < 2 || this.caps)) return;
    const nameWord = (j: number): boolean => {
      const t = this.t(j);
      const f = this.f(j);
      if (this.glued(t) || /[^A-Za-z'’.-]/.test(t.text) || t.shape === 'initial' || f.clinical) return false;
      if (!lower && !this.capitalised(j)) return false;
      return f.first || f.last || (!lower && (f.cls === 'name' || f.cls === 'unknown'));
    };
    if (!words.every(nameWord)) return;
    for (const j of words) this.mark(j, 'name.label');
  }

  /** Word i just after a closing ("thanks so much", "Best,") near the end of the text or of its line. */
  private closingAt(i: number, before: string): boolean {
    if (!CLOSING.test(before)) return false;
    const t = this.t(i);
    const lineEnd = this.text.indexOf('\n', t.end);
    return this.text.length - t.start < 240 || /^[\s\w.'-]{0,40}$/.test(this.text.slice(t.end, lineEnd < 0 ? undefined : lineEnd));
  }

  /** A quoted word after 'name is', 'goes by', 'calling out for': 'name is "Will"', 'wrote "BILL"'. */
  private quoted(i: number): void {
    let j = i;
    for (let count = 0; j < this.tokens.length && count < 3; j++, count++) {
      const t = this.t(j);
      if (count > 0 && !this.nameGap(gap(this.text, this.t(j - 1), t), this.t(j - 1))) break;
      // a quoted word after "name is" is the name, even one that is also a word ("Will", "Mark")
      if (this.glued(t) || (t.shape === 'lower' && !['name', 'unknown'].includes(this.f(j).cls)) || (count > 0 && this.reserved(j, true))) break;
      this.mark(j, 'name.label');
      if (/^["”]/.test(this.text.slice(t.end, t.end + 1))) break;
    }
  }

  /** "Dr." or "dr" before a word; "Father" and "Sister" only capitalised before a capitalised word. */
  private titleUse(i: number): boolean {
    const t = this.t(i);
    const next = this.tokens[i + 1];
    if (!next || /\n/.test(gap(this.text, t, next))) return false;
    // "MR angiography", "MS (Figure)": in mixed-case text a title is written "Dr"/"Mrs" (or "dr" in shorthand)
    if (!this.caps && t.shape === 'upper') return false;
    // "Fr. Kiely" is a priest; "14 Fr catheter" a size: only "Fr." with its dot, after no number, before a capital
    if (t.lower === 'fr')
      return t.text === 'Fr' && this.text.charAt(t.end) === '.' && !/\d\s*$/.test(this.text.slice(Math.max(0, t.start - 4), t.start)) && next.shape === 'title' && !this.f(i + 1).clinical;
    // "mrs. o'leary", "mr. kowal": lowercase shorthand keeps the title's dot
    const dotted = this.text.charAt(t.end) === '.' && ['mr', 'mrs', 'ms'].includes(t.lower);
    if (t.shape === 'lower' && t.lower !== 'dr' && t.lower !== 'dra' && !dotted) return false;
    if (STRONG_TITLES.has(t.lower) || t.lower === 'doctor') return true;
    return t.shape !== 'lower' && next.shape !== 'lower';
  }

  /** Marks up to four name words after a cue at word i. */
  private forward(i: number, strength: Strength, rule: NameRule, header = false): void {
    const cue = this.t(i);
    let j = i + 1;
    const first = this.tokens[j];
    if (!first) return;
    const between = gap(this.text, cue, first);
    if (/\n/.test(between) && rule !== 'name.label') return;
    // "Rev code 0651": a capitalised title takes a lowercase word only if no vocabulary explains it (or a particle: "Dr. van Dijk")
    if (strength === 'title' && cue.shape !== 'lower' && first.shape === 'lower' && !(this.f(j).cls === 'name' || this.f(j).cls === 'unknown') && !PARTICLES.has(first.lower)) return;
    // "MD, FAAFP", "WOUND RN, BLACK": after a role a comma ends the phrase, but for an apposition ("the nurse, Anatole, came")
    if (rule === 'name.role' && between.includes(',') && !(this.capitalised(j) && /^,/.test(this.text.slice(first.end, first.end + 1)) && ['name', 'unknown', 'ambiguous'].includes(this.f(j).cls)))
      return;
    if (!/^[\s.,:;(\-#'"]*$/.test(between) || between.length > 6) return;
    // Only a title's own dot may stand between a cue and the name ("Dr. X"); a sentence end may not ("doctor. After").
    if (between.includes('.') && !(strength === 'title' && /^\.\s{0,2}$/.test(between))) return;
    if (between.includes(',') && strength === 'weak') return;
    // "wife is Ann", "son named Eli", "with Dr. X" (the title takes it from there)
    while (j < this.tokens.length && j - i <= 2 && ['is', 'named', 'name', 'was', 'the', 'her', 'his', 'their', 'a'].includes(this.t(j).lower) && strength === 'relation') j++;
    if (j < this.tokens.length && TITLES.has(this.t(j).lower)) return;
    // "mother is a minor": after "is", "a" only a word no vocabulary explains, or a capitalised one
    if (j > i + 1 && j < this.tokens.length && this.t(j).shape === 'lower' && !['name', 'unknown'].includes(this.f(j).cls)) return;
    if (j > i + 1 && /\n/.test(gap(this.text, this.t(j - 1), this.t(j)))) return;
    if (strength !== 'weak' && this.parenthesised(j, between)) {
      this.mark(j, rule);
      return;
    }
    this.introduce(j, strength, rule, false, header);
  }

  /**
   * "dtr (carol)", "Brother (ed)", "coordinator (Mo, beeper 7731)": one word in parentheses right after a
   * cue, a first name even when it is also a word or an abbreviation.
   */
  private parenthesised(j: number, between: string): boolean {
    if (!/\(\s*$/.test(between) || j >= this.tokens.length) return false;
    const t = this.t(j);
    if (!/^\s*[),]/.test(this.text.slice(t.end, t.end + 2)) || t.shape === 'initial' || t.lower.length < 2 || this.glued(t)) return false;
    const f = this.f(j);
    if (FUNCTION_WORDS.has(t.lower) || RELATIONS.has(t.lower) || ROLES.has(t.lower) || ADDRESS_TERMS.has(t.lower) || (t.shape === 'upper' && !this.caps)) return false;
    return f.first || f.last || f.cls === 'name' || (f.cls === 'unknown' && nameShape(t.lower) >= 0.3);
  }

  /** Marks up to four name words from word j, the first a cue of this strength can take. */
  private introduce(j: number, strength: Strength, rule: NameRule, acrossLine = false, header = false): void {
    if (j >= this.tokens.length) return;
    let count = 0;
    let prev: Token | undefined;
    for (; j < this.tokens.length && count < 4; j++) {
      const t = this.t(j);
      if (prev) {
        const g = gap(this.text, prev, t);
        if (this.followedByColon(t)) break; // "Subject:", "MRN:" start a field
        if (!this.nameGap(g, prev) && !(count === 1 && strength !== 'weak' && /^,\s$/.test(g) && t.shape === prev.shape && t.shape !== 'lower')) break;
      } else if (acrossLine && /\n\s*\n/.test(this.text.slice(Math.max(0, t.start - 3), t.start))) break;
      const ok =
        count === 0
          ? (this.personLike(j, strength, false, header) || this.monthNamed(j, strength) || this.pairAfterWeakCue(j, strength)) &&
            // after a title or a relation a person is meant: "Dr. Whitcombe and surgery", "Mother Brenda cell 555-..."
            (strength === 'title' || strength === 'relation' || !this.eponym(j)) &&
            !this.region(j) &&
            !(t.shape === 'initial' && !this.initialOfName(j) && strength === 'weak')
          : this.personLike(j, strength === 'weak' ? 'weak' : strength, true);
      if (!ok) {
        // "Dr. van den Velde"
        if (count === 0 && strength === 'title' && PARTICLES.has(t.lower)) this.particlesAfterTitle(j, rule);
        break;
      }
      this.mark(j, rule);
      count++;
      prev = t;
      if (t.possessive) break;
    }
  }

  /**
   * "patient Tavatok Bemexok": after a weak cue, a word that does not read like a name still starts one
   * when another capitalised word no vocabulary explains follows it (a first name and a surname).
   */
  private pairAfterWeakCue(j: number, strength: Strength): boolean {
    if (strength !== 'weak' || this.caps) return false;
    if (this.givenAndSurname(j)) return true;
    const t = this.t(j);
    const n = this.tokens[j + 1];
    const unexplained = (k: number) => this.f(k).cls === 'unknown' || this.f(k).cls === 'name';
    if (!n || gap(this.text, t, n) !== ' ' || !unexplained(j) || !unexplained(j + 1) || this.reserved(j) || this.reserved(j + 1) || this.glued(n)) return false;
    if (t.shape === 'title' && n.shape === 'title') return true;
    // "pt ximena oyelaran admitted": in lowercase, two words no vocabulary explains that both read like names
    // (shorthand after "pt" is one word, or reads like none: "pt sob tachy")
    const nameLike = (k: number) => this.f(k).cls === 'name' || (this.t(k).lower.length >= 4 && nameShape(this.t(k).lower) >= 0.3);
    return t.shape === 'lower' && n.shape === 'lower' && nameLike(j) && nameLike(j + 1);
  }

  /**
   * "seen by Will Young", "met with JOHN SMITH", "reviewed by Grace Cook": in mixed-case text a first name
   * and a surname written alike (both capitalised, or both in capitals), even when both are also English
   * words. Neither may be a clinical word ("Foley") or a word a cue never takes.
   */
  private givenAndSurname(j: number): boolean {
    if (this.caps) return false;
    const t = this.t(j);
    const n = this.tokens[j + 1];
    if (!n || gap(this.text, t, n) !== ' ' || this.glued(n) || this.glued(t)) return false;
    if (!((t.shape === 'title' && n.shape === 'title') || (t.shape === 'upper' && n.shape === 'upper' && t.text.length >= 3 && n.text.length >= 3))) return false;
    const given = this.f(j);
    const surname = this.f(j + 1);
    if (!given.first || !(surname.last || surname.cls === 'name' || surname.cls === 'unknown') || given.clinical || surname.clinical) return false;
    // a given name that is also a function word ("Will Young") may open the pair
    return (!this.reserved(j) || given.first) && !this.reserved(j + 1) && !this.eponym(j + 1);
  }

  /** "From: June Merriweather", "this is april": a month that is a first name, before a surname or after a strong cue. */
  private monthNamed(j: number, strength: Strength): boolean {
    const t = this.t(j);
    if (!MONTHS_DAYS.has(t.lower) || WEEKDAYS.has(t.lower) || !this.f(j).first || strength === 'weak') return false;
    const n = this.tokens[j + 1];
    const surname = n && gap(this.text, t, n) === ' ' && n.shape === t.shape && (this.f(j + 1).cls === 'name' || this.f(j + 1).cls === 'unknown' || this.f(j + 1).last);
    return !!surname || (strength === 'relation' && t.shape !== 'upper');
  }

  private particlesAfterTitle(j: number, rule: NameRule): void {
    let k = j;
    while (k < this.tokens.length && PARTICLES.has(this.t(k).lower)) k++;
    const after = this.tokens[k];
    if (after && after.shape !== 'lower' && after.start - this.t(j).end < 12) for (let x = j; x <= k; x++) this.mark(x, rule);
  }

  /** Gaps allowed inside one name: a space, an initial's dot, a hyphen. */
  private nameGap(g: string, prev: Token): boolean {
    if (g === ' ' || g === '  ') return true;
    if (prev.shape === 'initial' && /^\.\s?$/.test(g)) return true;
    if (/^\.\s$/.test(g) && prev.text.length <= 2) return true;
    return false;
  }

  /** "Wendell (husband)", "Colette, her daughter", "Joanne - sister", "ann (wife)". */
  private relationAfter(i: number): void {
    const rel = this.t(i);
    let j = i - 1;
    let prev = this.tokens[j];
    if (prev && ['her', 'his', 'their', 'the', 'pt', 'pts', 'patient', 'patients', 'a', 'our', 'my'].includes(prev.lower) && /^\s+$/.test(gap(this.text, prev, rel))) {
      j--;
      const before = this.tokens[j];
      if (!before || !/^\s*[,(-]\s*$/.test(gap(this.text, before, prev))) return;
      prev = before;
    } else if (!prev || !/^,\s*$|^\s*\($|^\s+-\s+$|^\s*\/\s*$/.test(gap(this.text, prev, rel))) return;
    let right: Token | undefined;
    for (let count = 0; j >= 0 && count < 3; j--, count++) {
      const t = this.t(j);
      if (right && !this.nameGap(gap(this.text, t, right), t)) break;
      if (!this.personLike(j, 'strong') || (t.shape === 'initial' && count === 0)) break;
      // "called from Puerto Rico, partner to call": a country or a state before the comma
      if (count === 0 && j > 0 && lexicons().regions.has(`${this.t(j - 1).lower} ${t.lower}`)) break;
      this.mark(j, 'name.relation');
      right = t;
    }
  }

  /** "Ruth Kessler's son": the possessor of a relation is a person. */
  private possessor(i: number): void {
    let right: Token | undefined;
    for (let j = i, count = 0; j >= 0 && count < 3; j--, count++) {
      const t = this.t(j);
      if (right && !this.nameGap(gap(this.text, t, right), t)) break;
      if (!this.personLike(j, 'strong') || ['pt', 'patient', 'the', 'his', 'her'].includes(t.lower)) break;
      this.mark(j, 'name.relation');
      right = t;
    }
  }

  /** Word i a credential after a name: "RN", "M.D." (tokenised letter by letter), "PT" only after a comma. */
  private isCredential(i: number): boolean {
    const t = this.t(i);
    if (t.shape === 'lower' && !['md', 'rn', 'np', 'rrt', 'lpn', 'cna', 'msw'].includes(t.lower)) return false;
    const prev = this.tokens[i - 1];
    if (!prev) return false;
    const g = gap(this.text, prev, t);
    let word = t.lower;
    if (t.shape === 'initial' && this.text.charAt(t.end) === '.') {
      const n = this.tokens[i + 1];
      if (n && n.shape === 'initial' && this.text.charAt(t.end + 1) === n.text) word = (t.text + n.text).toLowerCase();
    }
    if (COMMA_CREDENTIALS.has(word) && !/^,\s*$/.test(g)) return false;
    if (!CREDENTIALS.has(word) && !COMMA_CREDENTIALS.has(word)) return false;
    // "Refill RN: Pilar" is a label; "Outback, MA plate" and "Q8H, DO NOT" are not credentials
    const after = this.text.slice(t.end, t.end + 12);
    if (/^\s?:/.test(after)) return false;
    if (
      COMMA_CREDENTIALS.has(word) &&
      !/^\s*(?:$|[,.;)\n])/.test(after) &&
      !(/^\s*[,/]?\s*([A-Za-z]{2,6})\b/.test(after) && CREDENTIALS.has((/^\s*[,/]?\s*([A-Za-z]{2,6})/.exec(after)?.[1] ?? '').toLowerCase()))
    )
      return false;
    // "Hope C. RN": an initial's dot before the credential
    return /^,?\s{1,2}$|^\s*\($|^\/$/.test(g) || (prev.text.length === 1 && /^\.,?\s{1,2}$/.test(g));
  }

  /** Name words before a credential: "R. Sandoval, RN", "B. OKONKWO RN", "dana rn". */
  private backward(i: number): void {
    let right = this.t(i);
    for (let j = i - 1, count = 0; j >= 0 && count < 4; j--, count++) {
      const t = this.t(j);
      const g = gap(this.text, t, right);
      // "Deb S. RN", "bill f rrt": an initial, with or without its dot, may stand before the credential
      const initial = t.shape === 'initial' || (t.text.length === 1 && count === 0 && j > 0 && this.f(j - 1).first);
      // "Will O. RN", "Hope C. RN": a first name that is also a word, before an initial and a credential
      if (count === 1 && this.t(j + 1).text.length === 1 && this.f(j).first && t.shape !== 'lower' && !this.f(j).clinical && this.nameGap(g, t) && !RELATIONS.has(t.lower) && !ROLES.has(t.lower)) {
        this.mark(j, 'name.credential');
        break;
      }
      if (count === 0 ? !(/^,?\s{1,2}$|^\s*\($|^\/$/.test(g) || (initial && /^\.,?\s{1,2}$/.test(g))) : !this.nameGap(g, t)) break;
      if (['by', 'this', 'the', 'your', 'per', 'pt', 'patient', 'and', 'or', 'to', 'with', 'primary', 'charge', 'night', 'day'].includes(t.lower)) break;
      // "To Pod B, RN", "Handoff ED RN": a place in the unit or an abbreviation in capitals is no name
      if (/^(?:pod|bed|bay|room|rm|station|cubicle|area|side|zone|suite|track)$/.test(t.lower) || (!this.caps && t.shape === 'upper' && t.text.length <= 2 && count === 0)) break;
      if (t.shape === 'initial' && j > 0 && /^(?:pod|bed|bay|room|rm|station|cubicle|area|side|zone|suite|track|unit|wing|floor)$/.test(this.t(j - 1).lower)) break;
      if (initial && t.shape !== 'initial') {
        this.mark(j, 'name.credential');
        right = t;
        continue;
      }
      // "dawn rn", "bill f rrt": a first name in lowercase before a credential
      if (t.shape === 'lower' && this.f(j).first && this.f(j).cls === 'ambiguous' && !this.reserved(j) && !this.f(j).clinical) {
        this.mark(j, 'name.credential');
        right = t;
        continue;
      }
      if (this.reserved(j, count > 0)) break;
      // "ABACI, RN": the word just before a comma and a credential is a name, whatever else it is
      const beforeComma = count === 0 && /^,\s*$/.test(g) && t.shape !== 'lower' && !this.f(j).clinical && !this.reserved(j);
      if (!this.personLike(j, 'strong', count > 0) && !(t.shape !== 'lower' && (this.f(j).cls === 'ambiguous' || this.f(j).cls === 'misspelt')) && !beforeComma) break;
      this.mark(j, 'name.credential');
      right = t;
    }
  }

  /** "Kowal aware", "okafor updated", "Dana (daughter) called": the words before a right cue. */
  private rightCue(i: number): void {
    let j = i - 1;
    let right = this.t(i);
    // "Kowal is aware", "okafor was updated"
    if (['is', 'was', 'were', 'has', 'been', 'made', 'also', 'now'].includes(this.t(j).lower) && /^\s+$/.test(gap(this.text, this.t(j), right))) {
      right = this.t(j);
      j--;
    }
    for (let count = 0; j >= 0 && count < 3; j--, count++) {
      const t = this.t(j);
      const g = gap(this.text, t, right);
      if (count === 0 ? !/^\s{1,2}$/.test(g) : !this.nameGap(g, t)) break;
      const f = this.f(j);
      // "OPO notified", "ICU aware": an acronym, unless it is long and reads like a name ("OKAFOR called")
      if (!this.caps && t.shape === 'upper' && f.cls !== 'name' && !(t.text.length >= 4 && f.cls === 'unknown' && nameShape(t.lower) >= 0.3)) break;
      const ok =
        f.cls === 'name' || f.cls === 'unknown'
          ? !this.reserved(j) && !this.glued(t) && (count > 0 || t.lower.length >= 3)
          : (f.cls === 'ambiguous' || f.cls === 'misspelt') && this.capitalised(j) && !this.caps && !sentenceInitial(this.text, t) && !this.reserved(j);
      if (!ok || this.eponym(j)) break;
      this.mark(j, 'name.right-cue');
      right = t;
    }
  }

  /** Evidence without a cue: the name lists, the backstop, and inverted "SURNAME, Given" headers. */
  private withoutCue(i: number): void {
    if (this.rule[i] || this.siteCue[i]) return;
    const t = this.t(i);
    if (t.shape === 'lower' || t.shape === 'initial' || this.glued(t)) return;
    if (this.sentenceSubject(i) || this.reserved(i)) return;
    const f = this.f(i);
    if (this.inverted(i)) return;
    if (this.region(i)) return;
    if (f.cls === 'name') this.lexicon(i);
    else if (f.cls === 'unknown' && !this.caps && t.shape === 'title' && t.text.length >= 3) this.backstop(i);
  }

  /**
   * "Tavita Mbeki is a 45 yo man", "Rose Hunt is an 80 yo with CHF", "Will Young presented with CP": one
   * or two name words opening a sentence whose verb presents a patient. The words must be on a name
   * list or unexplained (not "Chest Pain is a"), and capitalised alike.
   */
  private sentenceSubject(i: number): boolean {
    const t = this.t(i);
    if (!sentenceInitial(this.text, t) || (t.shape !== 'title' && t.shape !== 'upper')) return false;
    // in a pair, a first name that is also a function word may open it ("Will Young is a 55M")
    const nameWord = (k: number, pair: boolean) => {
      const f = this.f(k);
      if (f.clinical || this.glued(this.t(k)) || (this.reserved(k) && !(pair && f.first && k === i))) return false;
      return f.first || f.last || f.cls === 'name' || f.cls === 'unknown' || (pair && f.cls === 'misspelt');
    };
    const n = this.tokens[i + 1];
    const pair = !!n && gap(this.text, t, n) === ' ' && n.shape === t.shape && nameWord(i, true) && nameWord(i + 1, true);
    if (!pair && !nameWord(i, false)) return false;
    const last = pair ? i + 1 : i;
    const after = this.text.slice(this.t(last).end, this.t(last).end + 40);
    if (!SUBJECT_VERB.test(after)) return false;
    // a single word must be a name (a surname alone: "Kowalczyk is a 67 yo"), not a word that is also English
    if (last === i && !(this.f(i).cls === 'name' || this.f(i).cls === 'unknown')) return false;
    for (let k = i; k <= last; k++) this.mark(k, 'name.subject');
    return true;
  }

  /** A name-list word, capitalised: in mixed case alone, in capitals only as first name + surname. */
  private lexicon(i: number): void {
    const t = this.t(i);
    const f = this.f(i);
    if (t.text.length < 3 || this.eponym(i) || this.company(t) || this.classification(t)) return;
    if (this.caps || t.shape === 'upper') {
      if (t.text.length < 4) return;
      // In capitals a lone surname is too often a drug or a device; in mixed-case text a word in capitals
      // is an acronym (ALTA, TIMI). A first name followed by a surname is needed (or a cue).
      const n = this.tokens[i + 1];
      const pair = n && gap(this.text, t, n) === ' ' && n.shape === t.shape && this.f(i + 1).last && (this.f(i + 1).cls === 'name' || this.f(i + 1).cls === 'unknown');
      if ((this.caps && f.first) || (f.first && pair)) {
        this.mark(i, 'name.lexicon');
        if (pair) this.mark(i + 1, 'name.lexicon');
      }
      return;
    }
    this.mark(i, 'name.lexicon');
  }

  /**
   * The backstop: a capitalised word no vocabulary explains, inside a sentence of a mixed-case text, is
   * taken as a name (or a place, which the place detector types). At the start of a sentence
   * capitals say nothing, so there it needs a name word next to it.
   */
  private backstop(i: number): void {
    const t = this.t(i);
    if (this.eponym(i) || this.company(t) || this.classification(t)) return;
    if (nameShape(t.lower) < BACKSTOP_SHAPE) return;
    if (/^[\s(]*[-+=<>~/\\]/.test(this.text.slice(t.end, t.end + 3)) && !/^\s*-\s*[A-Z]/.test(this.text.slice(t.end, t.end + 4))) return; // "Xyz-> 5", "Abc/Def" are shorthand
    if (sentenceInitial(this.text, t)) {
      const n = this.tokens[i + 1];
      const nextName = n && gap(this.text, t, n) === ' ' && n.shape === 'title' && (this.f(i + 1).cls === 'name' || this.f(i + 1).cls === 'unknown');
      if (!nextName) return;
    }
    this.mark(i, 'name.backstop');
  }

  /** "KERR, ANNA", "Kerr, Anna 54F", "Re: OKAFOR, Chidi": a surname, a comma, a given name, where a header or an age says so. */
  private inverted(i: number): boolean {
    const t = this.t(i);
    const n = this.tokens[i + 1];
    if (!n || !/^,\s?$/.test(gap(this.text, t, n)) || n.shape === 'lower') return false;
    // "Sorokina, V. MRN ...": an initial with its dot may stand for the given name
    if (n.shape === 'initial' && !(this.text.charAt(n.end) === '.' && (this.f(i).cls === 'name' || this.f(i).cls === 'unknown') && t.text.length >= 3)) return false;
    if (!(t.shape === n.shape || (t.shape === 'upper' && n.shape === 'title') || n.shape === 'initial')) return false;
    const surname = this.f(i);
    const given = this.f(i + 1);
    const nameish = (f: WordFacts) => f.cls === 'name' || f.cls === 'unknown' || f.cls === 'misspelt' || (f.cls === 'ambiguous' && (f.first || f.last));
    if (!nameish(surname) || !(nameish(given) || n.shape === 'initial') || this.reserved(i) || (n.shape !== 'initial' && this.reserved(i + 1))) return false;
    // "Best, Henrietta", "Atentamente, Hector": a closing, not a surname
    if (CLOSING.test(t.text)) return false;
    // in capitals a word that is also a common word is not a surname without more ("SHELTER, WINTER COAT")
    if ((this.caps || t.shape === 'upper') && surname.cls === 'ambiguous' && given.cls === 'ambiguous') return false;
    if (!(surname.cls === 'name' || given.first || surname.cls === 'unknown')) return false;
    const before = this.text.slice(Math.max(0, t.start - 12), t.start);
    const atHead = /(?:^|\n)[ \t]*$|:\s*$|\bre\s*:?\s*$|\bpatient\s*$|\bpt\s*$|\bname\s*$/i.test(before);
    let k = i + 2;
    while (k < this.tokens.length && this.t(k).shape === 'initial' && !this.glued(this.t(k)) && k - i < 4) k++;
    const lastGiven = this.t(k - 1);
    const afterText = this.text.slice(lastGiven.end, lastGiven.end + 24).replace(/^\./, '');
    // in a mixed-case sentence, two capitalised words no vocabulary explains around a comma are a name by themselves
    const unexplained = (f: WordFacts) => f.cls === 'name' || f.cls === 'unknown';
    const capitalPair = !this.caps && t.shape === 'upper' && n.shape === 'upper' && unexplained(surname) && unexplained(given) && t.text.length >= 3 && n.text.length >= 3;
    if (!atHead && !AFTER_INVERTED.test(afterText) && !capitalPair) return false;
    for (let x = i; x < k; x++) this.mark(x, 'name.inverted');
    return true;
  }

  /** Dash signatures: "-K.", "- dlw", "-will rn", "-m. dacosta rrt" at the end of a line or before "(". */
  private signatures(): void {
    const end = END_INITIALS.exec(this.text.slice(-24));
    if (end) {
      const letters = (end[1] as string).replace(/[^A-Za-z]/g, '');
      const offset = this.text.length - Math.min(24, this.text.length) + end.index + end[0].indexOf(end[1] as string);
      const dotted = /\./.test(end[1] as string);
      const l = letters.toLowerCase();
      if (!END_STATUS.has(l) && (dotted || !(vocabulary().isSafe(l) && lexicons().english.has(l)))) {
        for (let k = 0; k < this.tokens.length; k++) if (this.t(k).start >= offset && this.t(k).end <= offset + (end[1] as string).length) this.mark(k, 'name.signature');
      }
    }
    for (const m of this.text.matchAll(DASH_SIGNATURE)) {
      let value = m[1] as string;
      let credential = m[2] !== undefined;
      // "-K. RN": the word after the initial is the credential
      const tail = /\s+([A-Za-z]{2,5})$/.exec(value);
      if (tail && (CREDENTIALS.has((tail[1] as string).toLowerCase()) || COMMA_CREDENTIALS.has((tail[1] as string).toLowerCase()))) {
        value = value.slice(0, value.length - tail[0].length).replace(/\.$/, '');
        credential = true;
      }
      const start = m.index + m[0].indexOf(value);
      const first = this.tokens.findIndex((t) => t.start === start);
      if (first < 0) continue;
      const words: number[] = [];
      for (let k = first; k < this.tokens.length && this.t(k).end <= start + value.length; k++) words.push(k);
      const initials = value.replace(/[^A-Za-z]/g, '').length <= 3 && words.length === 1;
      // "-L", "-R" without a dot: a side, not a writer ("-K." signs)
      if (/^[LR]$/.test(value) && !/^[LR]\./.test(m[0].slice(m[0].indexOf(value))) && !credential) continue;
      const ok = words.every((k) => {
        const f = this.f(k);
        if (this.t(k).shape === 'initial') return true;
        if (FUNCTION_WORDS.has(this.t(k).lower) && !credential) return false;
        // "- major.": a lowercase English word after a dash is a comment's end, not a writer, without a credential
        if (this.t(k).shape === 'lower' && f.english && !credential && !initials) return false;
        return credential || initials || f.cls === 'name' || f.cls === 'unknown' || (f.cls === 'ambiguous' && f.first);
      });
      if (ok) for (const k of words) this.mark(k, 'name.signature');
    }
  }

  /** "Murphy's sign", "Brown-Sequard syndrome", "Swan catheter", "anti-Jo". */
  private eponym(i: number): boolean {
    const t = this.t(i);
    // "Post-masectomy", "Non-Hodgkin": a prefix, not a double-barrelled name
    if (/^(?:post|pre|non|anti|semi|sub|co|re|mid|pseudo|para|peri|hyper|hypo|intra|inter|extra|trans|ultra|multi|bi|tri)-/i.test(t.text)) return true;
    // in capitals every word looks alike: there the head must follow the name directly ("MURPHY'S SIGN")
    const reach = this.caps || t.shape === 'upper' ? 2 : 5;
    for (let k = i + 1; k < Math.min(this.tokens.length, i + reach); k++) {
      const n = this.t(k);
      // Past a clause break or just inside a parenthesis a head word belongs to something else:
      // "Daughter: Mary Smith, cell 617-..." is a person; "Wolff-Parkinson-White (WPW) syndrome" an eponym.
      const g = gap(this.text, this.t(k - 1), n);
      if (/[.;:,\n]/.test(g)) break;
      if (!g.includes('(') && (EPONYM_HEADS.has(n.lower) || (n.shape === 'lower' && MEDICAL_SUFFIX.test(n.lower)))) return true;
      if (n.shape === 'lower' && !['and', 'or', 'of', "'s"].includes(n.lower)) break;
    }
    const p = this.tokens[i - 1];
    return !!p && /^anti$/i.test(p.lower) && t.start - p.end <= 2;
  }

  /** "T. Corsten": an initial followed by a capitalised word, or by another initial. */
  private initialOfName(j: number): boolean {
    const t = this.t(j);
    const n = this.tokens[j + 1];
    if (t.shape !== 'initial' || !n) return false;
    return (/^\.\s?$/.test(gap(this.text, t, n)) && n.shape !== 'lower' && n.shape !== 'initial') || n.shape === 'initial';
  }

  private classification(t: Token): boolean {
    return CLASSIFICATION_AFTER.test(this.text.slice(t.end, t.end + 8));
  }

  /** A country, continent or state of two or three words ("El Salvador", "South Africa"): Safe Harbor lets these stay. */
  private region(i: number): boolean {
    const { regions, regionFirstWords } = lexicons();
    if (!regionFirstWords.has(this.t(i).lower)) return false;
    let phrase = this.t(i).lower;
    for (let n = 1; n < 3 && i + n < this.tokens.length; n++) {
      phrase += ' ' + this.t(i + n).lower;
      if (regions.has(phrase)) return true;
    }
    return false;
  }

  private company(t: Token): boolean {
    return COMPANY_AFTER.test(this.text.slice(t.end, t.end + 40));
  }

  /**
   * A name found once is a name wherever it recurs in the text, in any case ("Patient Chidinma Okafor
   * ... OKAFOR, CHIDINMA asked"), and so are the subject's names found in its other records. Only words
   * of three letters or more pass it on, and a safe word only where it is capitalised: "Rose" found
   * after "wife" does not take "rose" in "BP rose" with it.
   */
  private recurring(): number {
    const names = new Set<string>(this.input.evidence?.subject ?? []);
    for (let i = 0; i < this.tokens.length; i++) {
      const t = this.t(i);
      if (this.rule[i] && t.shape !== 'initial' && t.lower.length >= 3 && !this.f(i).clinical && !this.reserved(i)) names.add(t.lower);
    }
    const dataset = this.input.evidence?.dataset;
    if (names.size === 0 && !dataset) return 0;
    let marked = 0;
    for (let i = 0; i < this.tokens.length; i++) {
      if (this.rule[i]) continue;
      const t = this.t(i);
      if (!names.has(t.lower)) {
        if (dataset && this.fromDataset(i, dataset)) {
          this.mark(i, 'name.dataset');
          marked++;
        }
        continue;
      }
      if (this.reserved(i) || this.eponym(i)) continue;
      const f = this.f(i);
      const lowerOk = f.cls === 'name' || f.cls === 'unknown';
      if (t.shape === 'lower' && !lowerOk) continue;
      if (t.shape === 'upper' && !this.caps && (f.cls === 'safe' || f.cls === 'ambiguous') && (t.lower.length < 4 || f.english)) continue;
      // in capitals every word looks alike: a word that is also an English word recurs only where a cue took it
      if (this.caps && (f.cls === 'safe' || f.cls === 'ambiguous') && f.english) continue;
      this.mark(i, 'name.recurrence');
      marked++;
    }
    return marked;
  }

  /**
   * A word the dataset's strong rules took as a name elsewhere: in any case if no vocabulary explains it
   * ("okafor aware", "report to siobhan", "resident tunde"); capitalised inside a sentence if it is also an English word
   * ("Hope called", not "hope he improves"); never a clinical word, a cue word or an eponym's.
   */
  private fromDataset(i: number, dataset: DatasetEvidence): boolean {
    const t = this.t(i);
    if (t.lower.length < 3 || t.shape === 'initial' || !dataset.name(t.lower)) return false;
    const f = this.f(i);
    if (f.clinical || this.reserved(i) || this.glued(t) || this.eponym(i) || this.classification(t)) return false;
    if (f.cls === 'name' || f.cls === 'unknown') return !(t.shape === 'upper' && !this.caps && t.lower.length < 4);
    // a word one edit from an English word, taken by strong rules in a quarter of its uses, is a name
    if (f.cls === 'misspelt') return true;
    return f.cls === 'ambiguous' && t.shape === 'title' && !this.caps && !sentenceInitial(this.text, t);
  }

  /** Widens every marked run over adjacent initials, particles and name words on the same line. */
  private widen(): void {
    const joinable = (j: number, from: number) => {
      const t = this.t(j);
      const s = this.t(from);
      if (t.shape === 'initial') return !(/^[AI]$/.test(t.text) && this.text.charAt(t.end) !== '.');
      if (this.reserved(j) || this.glued(t) || this.f(j).clinical) return false;
      // case must agree: "Hollis" does not take "CXR", "OKAFOR" does not take "Stable"
      if (t.shape === 'lower' && s.shape !== 'lower') return false;
      if ((t.shape === 'upper') !== (s.shape === 'upper') && !this.caps && s.shape !== 'initial') return false;
      const f = this.f(j);
      if (f.cls === 'name' || f.cls === 'unknown') return true;
      if (f.cls === 'ambiguous' || f.cls === 'misspelt') return t.shape !== 'lower' && (f.first || f.last || f.cls === 'misspelt') && !sentenceInitial(this.text, t);
      return false;
    };
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < this.tokens.length; i++) {
        if (!this.rule[i]) continue;
        const t = this.t(i);
        const n = this.tokens[i + 1];
        if (n && !this.rule[i + 1] && !t.possessive && this.nameGap(gap(this.text, t, n), t) && joinable(i + 1, i)) this.rule[i + 1] = 'name.widened';
        const p = this.tokens[i - 1];
        if (p && !this.rule[i - 1] && !p.possessive && this.nameGap(gap(this.text, p, t), p) && joinable(i - 1, i)) this.rule[i - 1] = 'name.widened';
        // "bin Tariq, Hamza", "de Jesus", "da Silva": particles just before a surname found (one to three of them)
        if (p && !this.rule[i - 1] && PARTICLES.has(p.lower) && gap(this.text, p, t) === ' ' && t.shape !== 'lower' && p.lower !== 'st') {
          let k = i - 1;
          while (k - 1 >= 0 && i - k < 3 && PARTICLES.has(this.t(k - 1).lower) && gap(this.text, this.t(k - 1), this.t(k)) === ' ') k--;
          for (let x = k; x < i; x++) this.rule[x] = 'name.widened';
        }
        // "Sanne van Dijk", "Maria de la Cruz": particles between name words
        if (n && !this.rule[i + 1] && PARTICLES.has(n.lower) && gap(this.text, t, n) === ' ') {
          let k = i + 1;
          while (k + 1 < this.tokens.length && PARTICLES.has(this.t(k + 1).lower) && gap(this.text, this.t(k), this.t(k + 1)) === ' ') k++;
          const after = this.tokens[k + 1];
          if (after && gap(this.text, this.t(k), after) === ' ' && after.shape !== 'lower' && joinable(k + 1, i)) for (let x = i + 1; x <= k + 1; x++) this.rule[x] = 'name.widened';
        }
        // "Hollis, Marguerite": a surname, a comma and a first name of the same case
        if (
          n &&
          !this.rule[i + 1] &&
          /^,\s$/.test(gap(this.text, t, n)) &&
          n.shape === t.shape &&
          n.shape !== 'initial' &&
          this.f(i + 1).first &&
          (this.f(i + 1).cls === 'name' || this.f(i + 1).cls === 'ambiguous') &&
          !this.reserved(i + 1)
        )
          this.rule[i + 1] = 'name.widened';
      }
    }
  }

  private spans(): Detection[] {
    const out: Detection[] = [];
    let i = 0;
    while (i < this.tokens.length) {
      if (!this.rule[i]) {
        i++;
        continue;
      }
      const first = this.t(i);
      let last = first;
      let j = i + 1;
      // one name runs over spaces, an initial's dot and a comma ("Hollis, Marguerite"), never over a sentence's end
      while (
        j < this.tokens.length &&
        this.rule[j] &&
        !last.possessive &&
        this.t(j).start - last.end <= 3 &&
        !/\n/.test(gap(this.text, last, this.t(j))) &&
        !(/\./.test(gap(this.text, last, this.t(j))) && last.shape !== 'initial' && last.text.length > 2)
      ) {
        last = this.t(j);
        j++;
      }
      // A lone initial is a name only where a signature or a cue put it.
      const lone = first === last && first.shape === 'initial';
      const rule = this.rule[i] as NameRule;
      if (!lone || rule === 'name.signature' || rule === 'name.credential' || rule === 'name.title')
        out.push({ start: first.start, end: last.end, type: 'NAME', priority: PRIORITY.NAME, source: 'detector', rule });
      i = j;
    }
    return out;
  }
}
