/**
 * Personal names of patients, relatives, household members and clinicians. Evidence, strongest first:
 *   - a title before ("Dr. Falkenrath", "Mrs. Hollis", "dr smith")
 *   - a credential after ("R. Sandoval, RN", "Tobias Renwick, MD")
 *   - a relation or role before or after ("wife Mary", "Wendell (husband)", "HO Kwame", "son GIDEON")
 *   - a label or a verb of contact ("Attending:", "Patient:", "spoke with", "per", "Dear", "This is")
 *   - the name lexicons (SSA first names, Census surnames) with capitalisation, where the word is not
 *     also a common English word or clinical term (Foley, Glasgow and MAE stay)
 * A name found by any of these is widened over neighbouring initials and capitalised name words
 * ("Marguerite E. Hollis", "Abernathy-Quist"). In ALL-CAPS notes capitalisation says nothing, so
 * lexicon evidence alone must be stronger there.
 */
import { lexicons } from '../lexicons';
import { gap, sentenceInitial, type Token, tokenize } from '../text';
import { type Detection, PRIORITY } from '../types';

const TITLES = new Set(['dr', 'doctor', 'mr', 'mrs', 'ms', 'miss', 'mx', 'prof', 'professor', 'rev', 'reverend', 'nurse', 'sister', 'father', 'pastor', 'rabbi', 'chaplain', 'judge', 'officer', 'det', 'detective', 'capt', 'captain']);
const CREDENTIALS = new Set([
  'rn', 'md', 'np', 'pa', 'pa-c', 'pac', 'cnm', 'crna', 'lpn', 'lvn', 'phd', 'pharmd', 'rph', 'msw', 'licsw', 'lcsw', 'lmhc', 'rrt', 'dpt',
  'dds', 'dmd', 'facp', 'facs', 'facc', 'mph', 'aprn', 'fnp', 'anp', 'acnp', 'cns', 'cna', 'rd', 'ldn', 'slp', 'ccc-slp', 'od', 'dpm', 'bsn', 'msn', 'do',
]);
/** Credentials that are also ordinary abbreviations: only after a comma ("Lee, PT", not "PT IS"). */
const COMMA_CREDENTIALS = new Set(['pt', 'ot', 'do', 'ma', 'np', 'pa']);
const RELATIONS = new Set([
  'wife', 'husband', 'son', 'daughter', 'mother', 'mom', 'father', 'dad', 'brother', 'sister', 'sibling', 'aunt', 'uncle', 'niece', 'nephew',
  'cousin', 'grandson', 'granddaughter', 'grandmother', 'grandfather', 'grandma', 'grandpa', 'grandchild', 'partner', 'fiance', 'fiancee',
  'fiancé', 'fiancée', 'boyfriend', 'girlfriend', 'spouse', 'friend', 'neighbor', 'neighbour', 'roommate', 'caregiver', 'caretaker', 'hcp', 'proxy',
  'poa', 'guardian', 'stepson', 'stepdaughter', 'stepmother', 'stepfather', 'dil', 'sil', 'son-in-law', 'daughter-in-law', 'sister-in-law',
  'brother-in-law', 'mother-in-law', 'father-in-law', 'companion', 'housemate', 'landlord', 'employer', 'boss', 'coworker', 'sponsor', 'godmother',
  'godfather', 'stepbrother', 'stepsister', 'ex-wife', 'ex-husband', 'widow', 'widower', 'twin', 'child', 'kids', 'children', 'sons', 'daughters',
]);
const ROLES = new Set([
  'attending', 'resident', 'intern', 'fellow', 'pcp', 'ho', 'np', 'pa', 'rn', 'nurse', 'md', 'physician', 'surgeon', 'doctor', 'provider', 'covering',
  'hospitalist', 'intensivist', 'cardiologist', 'nephrologist', 'oncologist', 'neurologist', 'consultant', 'therapist', 'pharmacist', 'sw',
  'cm', 'chaplain', 'midwife', 'interpreter', 'translator', 'anesthesiologist', 'radiologist', 'pathologist', 'psychiatrist', 'psychologist',
  'dentist', 'podiatrist', 'optometrist', 'counselor', 'coordinator', 'manager', 'aide', 'pca', 'cna', 'tech', 'technician', 'dietitian',
  'nutritionist', 'vna', 'rep', 'representative', 'scribe', 'preceptor', 'student', 'clinician', 'oncall', 'moonlighter',
]);
/** Verbs and labels after which a lexicon name is a name even if it is also an English word. */
const CONTACT_CUES = new Set([
  'called', 'paged', 'spoke', 'discussed', 'notified', 'informed', 'updated', 'per', 'seen', 'evaluated', 'examined', 'signed', 'dictated',
  'transcribed', 'cosigned', 'reviewed', 'contacted', 'met', 'accompanied', 'visited', 'cc', 'attn', 'dear', 'hi', 'hello', 'thanks', 'regards',
  'sincerely', 'name', 'patient', 'pt', 'author', 'from', 'to', 'contact', 'referring', 'ordering', 'referred', 'requested', 'reported', 'read',
  'surgeon', 'assistant', 'anesthesia', 'this', 'signature', 'cosigner', 'talked', 'consulted', 'phoned', 'texted', 'emailed', 'messaged',
]);
/** Cues strong enough to take an unknown capitalised word as a name ("Attending: Okonkwo"). */
const LABEL_CUES = new Set(['name', 'patient', 'attending', 'pcp', 'author', 'signed', 'dictated', 'cosigned', 'ordering', 'referring', 'dear', 'hi', 'hello', 'surgeon', 'cc', 'signature', 'cosigner', 'provider', 'physician', 'resident', 'fellow', 'nurse', 'contact', 'guardian', 'interpreter', 'consultant']);
/** Lowercase words that follow "dr" in shorthand and are not names. */
const FUNCTION_WORDS = new Set([
  'a', 'an', 'the', 'to', 'at', 'in', 'on', 'and', 'or', 'is', 'was', 'has', 'had', 'will', 'would', 'can', 'may', 'be', 'by', 'for', 'from', 'of',
  'with', 'who', 'that', 'this', 'aware', 'notified', 'called', 'paged', 'here', 'office', 'note', 'ordered', 'said', 'says', 'wants', 'recs',
  're', 'regarding', 'team', 'service', 'saw', 'seen', 'came', 'did', 'does', 'gave', 'placed', 'ok', 'okd', 'agrees', 'agreed', 'not', 'no',
  'also', 'then', 'please', 'pls', 'order', 'orders', 'visit', 'in', 'out', 'up', 'as', 'if', 'so', 'but', 'all', 'any', 'his', 'her', 'their',
  'our', 'my', 'your', 'its', 'it', 'he', 'she', 'they', 'we', 'you', 'me', 'him', 'them', 'us', 'am', 'pm', 'hospital', 'clinic', 'patient',
  'could', 'should', 'must', 'shall', 'were', 'are', 'have', 'went', 'left', 'there', 'visited', 'visiting', 'brought', 'bring', 'brings',
  'states', 'stated', 'reports', 'reported', 'present', 'updated', 'spoke', 'feels', 'felt', 'asked', 'asks', 'given', 'took', 'took', 'both',
  'each', 'every', 'some', 'many', 'more', 'most', 'much', 'very', 'well', 'just', 'only', 'now', 'today', 'tonight', 'tomorrow', 'yesterday',
  'again', 'still', 'yet', 'per', 'via', 'into', 'onto', 'over', 'under', 'after', 'before', 'since', 'until', 'while', 'when', 'where', 'why',
  'how', 'what', 'which', 'about', 'above', 'below', 'near', 'off', 'than', 'too', 'plan', 'home', 'bedside', 'phone', 'call', 'number',
]);
/** Verbs after which "with" or "about" introduces a person: "follow up with", "writing about". */
const PERSON_VERBS = new Set(['up', 'f/u', 'fu', 'spoke', 'speak', 'discussed', 'discuss', 'met', 'meet', 'talked', 'talk', 'appointment', 'appt', 'visit', 'consulted', 'conferred', 'writing', 'calling', 'asking', 'emailing', 'messaging', 'concerned', 'worried']);
const PARTICLES = new Set(['van', 'von', 'de', 'der', 'den', 'la', 'le', 'da', 'di', 'du', 'del', 'della', 'dos', 'das', 'ter', 'ten', 'bin', 'ibn', 'al', 'el', 'y', 'zu', 'vander', 'st']);
const MONTHS_DAYS = new Set([
  'january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december',
  'jan', 'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec',
  'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday', 'mon', 'tue', 'tues', 'wed', 'thu', 'thur', 'thurs', 'fri', 'sat', 'sun',
]);

/** Nouns after which a capitalised word is an eponym ("Brown-Sequard syndrome", "Murphy's sign"), not a person. */
const EPONYM_HEADS = new Set(
  `syndrome syndromes disease sign signs test tests score scale criteria fracture malformation reflex maneuver manoeuvre position catheter drain
  tube classification procedure operation repair node nodes lesion lesions cell cells body bodies phenomenon palsy ulcer triad law equation formula
  index stain staining hernia cyst tumor tumour sarcoma lymphoma anomaly deformity contracture neuroma neuralgia aneurysm effect rule method
  technique approach incision shunt valve canal duct space pouch membrane gland glands nodule nodules spots ring rings grade grading stage staging
  type variant block encephalopathy psychosis dementia ataxia dystrophy thyroiditis anemia granulomatosis arteritis tenosynovitis purpura
  coma collar filter mask boots stockings device pump clamp forceps retractor needle solution agar medium media sphincter ligament muscle nerve
  artery vein fissure fossa foramen loop tract pathway zone phase cycle disorder deficiency anomaly plexus crisis angina esophagus diverticulum
  class rod plate visual field system lens cannula scan view projection procedure fixation frame splint cast traction`.split(/\s+/),
);

/** Lowercase medical words after a capitalised one make it an eponym: "Bruton agammaglobulinemia", "Mohs surgery". */
const MEDICAL_SUFFIX = /(?:emia|aemia|itis|osis|oma|pathy|ectomy|plasty|otomy|ostomy|scopy|graphy|gram|plasia|trophy|algia|ism|reflexes|exercises|surgery|smear|curve|stain|procedure)$/;

interface Facts {
  first: boolean;
  last: boolean;
  english: boolean;
  clinical: boolean;
  city: boolean;
}

export class NameDetector {
  private readonly lex = lexicons();
  private readonly cache = new Map<string, Facts>();

  /** McAllister, MacArthur, O'Rourke: the shape alone says surname. */
  private static readonly SURNAME_SHAPE = /^(?:Mc|Mac|O['’])[A-Z][a-z]+$|^(?:MC|MAC|O['’])[A-Z]{3,}$/;

  factsOf(t: Token): Facts {
    const f = this.facts(t.lower);
    return !f.last && NameDetector.SURNAME_SHAPE.test(t.text) ? { ...f, last: true } : f;
  }

  facts(lower: string): Facts {
    let f = this.cache.get(lower);
    if (f) return f;
    const { firstNames, surnames, english, clinical, cities } = this.lex;
    const parts = lower.includes('-') ? lower.split('-') : [lower];
    const any = (set: ReadonlySet<string>) => set.has(lower) || (parts.length > 1 && parts.some((p) => p.length > 1 && set.has(p)));
    f = {
      first: any(firstNames),
      last: any(surnames),
      english: english.has(lower) || (parts.length > 1 && parts.every((p) => english.has(p))),
      clinical: clinical.has(lower) || MONTHS_DAYS.has(lower) || (parts.length > 1 && parts.some((p) => clinical.has(p))),
      city: cities.has(lower),
    };
    if (this.cache.size < 50_000) this.cache.set(lower, f);
    return f;
  }

  detect(text: string, caps: boolean, tokens: Token[] = tokenize(text)): Detection[] {
    const marked = new Uint8Array(tokens.length);
    const mark = (i: number) => {
      marked[i] = 1;
    };
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i] as Token;
      const lower = t.lower;
      const colon = /^\s?:/.test(text.slice(t.end, t.end + 3));
      if (colon && (ROLES.has(lower) || LABEL_CUES.has(lower) || CONTACT_CUES.has(lower) || RELATIONS.has(lower))) this.forward(text, tokens, i, 'label', caps, mark);
      else if (TITLES.has(lower) && this.titleUse(text, tokens, i, caps)) this.forward(text, tokens, i, 'title', caps, mark);
      else if (RELATIONS.has(lower)) {
        this.forward(text, tokens, i, 'relation', caps, mark);
        this.relationAfter(text, tokens, i, caps, mark);
      } else if (ROLES.has(lower) && (t.shape !== 'lower' || lower.length > 2)) this.forward(text, tokens, i, 'role', caps, mark);
      else if (lower === 'you' && i > 0 && (tokens[i - 1] as Token).lower === 'thank') this.forward(text, tokens, i, 'label', caps, mark);
      else if (['thanks', 'regards', 'sincerely'].includes(lower)) this.forward(text, tokens, i, 'label', caps, mark);
      else if ((lower === 'with' || lower === 'about') && i > 0 && PERSON_VERBS.has((tokens[i - 1] as Token).lower)) this.forward(text, tokens, i, 'contact', caps, mark);
      else if (CONTACT_CUES.has(lower) && !(['from', 'to', 'name', 'patient', 'pt', 'author', 'contact', 'read'].includes(lower) && !/^\s*:/.test(text.slice(t.end, t.end + 3)))) this.forward(text, tokens, i, LABEL_CUES.has(lower) && /^\s*:/.test(text.slice(t.end, t.end + 3)) ? 'label' : 'contact', caps, mark);
      else if (LABEL_CUES.has(lower)) this.forward(text, tokens, i, /^\s*:/.test(text.slice(t.end, t.end + 3)) ? 'label' : 'contact', caps, mark);
      if (this.isCredential(text, tokens, i)) this.backward(text, tokens, i, caps, mark);
      if (t.possessive && i + 1 < tokens.length && RELATIONS.has((tokens[i + 1] as Token).lower)) this.possessiveRelation(text, tokens, i, caps, mark);
    }
    this.lexiconCores(text, tokens, caps, mark);
    this.recurring(text, tokens, marked);
    this.widen(text, tokens, marked, caps);
    return this.spans(tokens, marked);
  }

  /**
   * A name found once is a name wherever it recurs in the same text, in any case: "Patient Chidinma
   * Okafor ... OKAFOR, CHIDINMA asked" (the second mention has no cue, and in capitals no lexicon
   * evidence counts). Only capitalised words of four letters or more found as names pass it on, and
   * only if they are neither English nor clinical words: "Rose" or "Mark" do not take the words
   * elsewhere with them, nor does an acronym once misread as a name (EDS, ECMO); an eponym stays one.
   */
  private recurring(text: string, tokens: Token[], marked: Uint8Array): void {
    const names = new Set<string>();
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i] as Token;
      if (!marked[i] || t.shape !== 'title' || t.lower.length < 4) continue;
      const f = this.factsOf(t);
      if (!f.english && !f.clinical && !FUNCTION_WORDS.has(t.lower)) names.add(t.lower);
    }
    if (names.size === 0) return;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i] as Token;
      if (!marked[i] && (t.shape === 'title' || t.shape === 'upper') && names.has(t.lower) && !this.eponym(text, tokens, i)) marked[i] = 1;
    }
  }

  /** "Dr." or "dr" followed by a word; "Father" and "Sister" only when capitalised before a capitalised word. */
  private titleUse(text: string, tokens: Token[], i: number, caps: boolean): boolean {
    const t = tokens[i] as Token;
    const next = tokens[i + 1];
    if (!next || /\n/.test(gap(text, t, next))) return false;
    // "MR angiography", "ms (Figure)": in mixed-case text a title is written "Dr"/"Mrs" (or "dr" in shorthand)
    if (!caps && t.shape === 'upper') return false;
    if (t.shape === 'lower' && t.lower !== 'dr') return false;
    if (['dr', 'doctor', 'mr', 'mrs', 'ms', 'prof', 'rev', 'capt', 'det', 'mx'].includes(t.lower)) return true;
    return t.shape !== 'lower' && next.shape !== 'lower';
  }

  private nameLike(t: Token, caps: boolean, strength: 'strong' | 'lexicon'): boolean {
    const f = this.factsOf(t);
    if (t.shape === 'initial') return true;
    if (t.shape === 'lower') return false;
    if (FUNCTION_WORDS.has(t.lower)) return false;
    if (f.clinical && !(f.first || f.last)) return false;
    if (f.clinical && strength === 'lexicon') return false;
    if (caps || t.shape === 'upper') {
      // In capitals a word says nothing by its case: it must not be a plain English word unless a lexicon knows it.
      if (f.english && !(f.first || f.last)) return false;
      if (t.text.length < 2) return false;
      return true;
    }
    if (strength === 'strong') return !(f.english && !(f.first || f.last));
    return f.first || f.last || !f.english;
  }

  /** Marks up to four name words after a cue at index i. */
  private forward(text: string, tokens: Token[], i: number, cue: 'title' | 'relation' | 'role' | 'label' | 'contact', caps: boolean, mark: (i: number) => void): void {
    let j = i + 1;
    const cueToken = tokens[i] as Token;
    // Skip the short connective text a cue allows: "Dr.", "wife,", "son (", "name is", "wife - "
    const first = tokens[j];
    if (!first) return;
    const between = gap(text, cueToken, first);
    const closing = ['thanks', 'regards', 'sincerely', 'you', 'best'].includes(cueToken.lower);
    if (/\n/.test(between) && cue !== 'label' && !closing) return;
    if (!/^[\s.,:;(\-#'’"]*$/.test(between) || between.length > 6) return;
    // Only a title's own dot may stand between a cue and the name ("Dr. X"); a sentence end may not ("doctor. After").
    if (between.includes('.') && !(cue === 'title' && ['dr', 'mr', 'mrs', 'ms', 'prof', 'rev', 'capt', 'det', 'mx', 'st'].includes(cueToken.lower) && /^\.\s{0,2}$/.test(between))) return;
    let k = j;
    if (cue === 'relation' || cue === 'contact' || cue === 'label') {
      while (k < tokens.length && ['is', 'named', 'name', 'was', 'with', 'by', 'to', 'dr', 'mr', 'mrs', 'ms', 'the'].includes((tokens[k] as Token).lower) && k - j < 2) {
        if (['dr', 'mr', 'mrs', 'ms'].includes((tokens[k] as Token).lower)) break;
        k++;
      }
      j = k;
    }
    let count = 0;
    let prev = cueToken;
    for (; j < tokens.length && count < 4; j++) {
      const t = tokens[j] as Token;
      const g = gap(text, prev, t);
      if (count > 0 && !this.nameGap(g, prev) && !(count === 1 && (cue === 'label' || cue === 'title') && /^,\s$/.test(g) && t.shape === prev.shape && t.shape !== 'lower')) break;
      if (count === 0 && /\n/.test(g) && cue !== 'label' && !closing) break;
      const f = this.factsOf(t);
      let ok: boolean;
      if (cue === 'title') {
        ok = t.shape !== 'lower' ? !(f.english && !(f.first || f.last) && (caps || t.shape === 'upper')) && !MONTHS_DAYS.has(t.lower) && !(FUNCTION_WORDS.has(t.lower) && (caps || t.shape === 'upper')) : count === 0 && cueToken.shape === 'lower' && !FUNCTION_WORDS.has(t.lower) && (f.last || f.first || !f.english) && !f.clinical;
      } else if (cue === 'relation' || cue === 'label') {
        ok = this.nameLike(t, caps, 'strong') && (t.shape === 'initial' ? count > 0 || this.initialOfName(text, tokens, j) : true) && !TITLES.has(t.lower);
        if (ok && count === 0 && (this.eponym(text, tokens, j) || this.region(tokens, j) || this.glued(text, t))) ok = false;
      } else {
        // roles and verbs of contact: the word must be known as a name (or be an initial inside one)
        // roles and verbs of contact: a word known as a name, an initial of one, or a capitalised word no lexicon knows
        const known = f.first || f.last || !f.english;
        ok = t.shape !== 'lower' && !f.clinical && !FUNCTION_WORDS.has(t.lower) && (t.shape === 'initial' ? count > 0 || this.initialOfName(text, tokens, j) : known) && !RELATIONS.has(t.lower) && !TITLES.has(t.lower) && !ROLES.has(t.lower);
        if (ok && t.shape !== 'initial' && f.english && !caps && sentenceInitial(text, t)) ok = false;
        if (ok && count === 0 && (this.eponym(text, tokens, j) || this.region(tokens, j))) ok = false;
        if (ok && (caps || t.shape === 'upper') && f.english) ok = false;
      }
      if (!ok && t.shape === 'lower' && PARTICLES.has(t.lower) && count === 0 && cue === 'title') {
        // "Dr. van den Velde"
        let k = j;
        while (k < tokens.length && PARTICLES.has((tokens[k] as Token).lower)) k++;
        const after = tokens[k];
        if (after && after.shape !== 'lower' && after.start - t.end < 12) {
          for (let x = j; x <= k; x++) mark(x);
          return;
        }
      }
      if (!ok) break;
      mark(j);
      count++;
      prev = t;
      if (t.possessive) break;
    }
  }

  /** Gaps allowed inside one name: a space, an initial's dot, a hyphen, "Last, First". */
  private nameGap(g: string, prev: Token): boolean {
    if (g === ' ' || g === '  ') return true;
    if (prev.shape === 'initial' && /^\.\s?$/.test(g)) return true;
    if (/^\.\s$/.test(g) && prev.text.length <= 2) return true;
    return false;
  }

  /** "Wendell (husband)", "Colette, her daughter", "Joanne - sister" */
  private relationAfter(text: string, tokens: Token[], i: number, caps: boolean, mark: (i: number) => void): void {
    const rel = tokens[i] as Token;
    let j = i - 1;
    let prev = tokens[j];
    if (prev && ['her', 'his', 'their', 'the', 'pt', 'pts', 'patient', 'patients', 'a', 'our', 'my'].includes(prev.lower) && /^\s+$/.test(gap(text, prev, rel))) {
      j--;
      const before = tokens[j];
      if (!before || !/^\s*[,(-]\s*$/.test(gap(text, before, prev))) return;
      prev = before;
    } else if (!prev || !/^,\s*$|^\s+\($|^\s+-\s+$/.test(gap(text, prev, rel))) return;
    let count = 0;
    let right: Token | undefined;
    for (; j >= 0 && count < 3; j--) {
      const t = tokens[j] as Token;
      if (right && !this.nameGap(gap(text, t, right), t)) break;
      if (!this.nameLike(t, caps, 'strong') || t.shape === 'initial' && count === 0) break;
      if (!caps && t.shape === 'title' && this.facts(t.lower).english && !this.facts(t.lower).first && !this.facts(t.lower).last) break;
      mark(j);
      count++;
      right = t;
    }
  }

  /** "Ruth Kessler's son": the possessor of a relation is a person. */
  private possessiveRelation(text: string, tokens: Token[], i: number, caps: boolean, mark: (i: number) => void): void {
    let right: Token | undefined;
    for (let j = i, count = 0; j >= 0 && count < 3; j--, count++) {
      const t = tokens[j] as Token;
      if (right && !this.nameGap(gap(text, t, right), t)) break;
      if (!this.nameLike(t, caps, 'strong') || t.shape === 'lower') break;
      if (['pt', 'patient', 'the', 'his', 'her'].includes(t.lower)) break;
      mark(j);
      right = t;
    }
  }

  private isCredential(text: string, tokens: Token[], i: number): boolean {
    const t = tokens[i] as Token;
    if (t.shape === 'lower' && t.lower !== 'md') return false;
    const prev = tokens[i - 1];
    if (!prev) return false;
    const g = gap(text, prev, t);
    let word = t.lower;
    // M.D., R.N., D.O. are tokenised letter by letter
    if (t.shape === 'initial' && text.charAt(t.end) === '.') {
      const n = tokens[i + 1];
      if (n && n.shape === 'initial' && text.charAt(t.end + 1) === n.text) word = (t.text + n.text).toLowerCase();
    }
    if (COMMA_CREDENTIALS.has(word) && !/^,\s*$/.test(g)) return false;
    if (!CREDENTIALS.has(word) && !COMMA_CREDENTIALS.has(word)) return false;
    return /^,?\s{1,2}$|^\s*\($/.test(g);
  }

  /** Name words before a credential: "R. Sandoval, RN", "B. OKONKWO RN", "Hanna Oyelaran-Birch, M.D." */
  private backward(text: string, tokens: Token[], i: number, caps: boolean, mark: (i: number) => void): void {
    let right = tokens[i] as Token;
    for (let j = i - 1, count = 0; j >= 0 && count < 4; j--, count++) {
      const t = tokens[j] as Token;
      const g = gap(text, t, right);
      if (count === 0 ? !/^,?\s{1,2}$|^\s*\($/.test(g) : !this.nameGap(g, t)) break;
      const f = this.factsOf(t);
      if (t.shape === 'lower') break;
      if (!caps && t.shape !== 'upper' && f.english && !(f.first || f.last)) break;
      if ((caps || t.shape === 'upper') && f.english && !(f.first || f.last)) break;
      if (f.clinical && !(f.first || f.last)) break;
      if (['by', 'this', 'the', 'your', 'per', 'pt', 'patient'].includes(t.lower)) break;
      mark(j);
      right = t;
    }
  }

  /** Names known to the lexicons, without a cue. */
  private lexiconCores(text: string, tokens: Token[], caps: boolean, mark: (i: number) => void): void {
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i] as Token;
      if (t.shape === 'lower' || t.shape === 'initial') continue;
      const f = this.factsOf(t);
      if (f.clinical || f.english) {
        // A first name that is also a word ("Rose", "Mark") counts when a surname follows it.
        if (!caps && !f.clinical && f.first && t.shape === 'title' && !sentenceInitial(text, t)) {
          const n = tokens[i + 1];
          if (n && gap(text, t, n) === ' ' && n.shape === 'title') {
            const nf = this.facts(n.lower);
            if (nf.last && !nf.english && !nf.clinical) {
              mark(i);
              mark(i + 1);
            }
          }
        }
        continue;
      }
      if (!(f.first || f.last)) continue;
      if (t.text.length < 3 || this.eponym(text, tokens, i) || this.region(tokens, i)) continue;
      if (this.glued(text, t) || this.company(text, t)) continue;
      if (caps || t.shape === 'upper') {
        if (t.text.length < 4) continue;
        // In capitals a lone surname is too often a drug or a device; in mixed-case text a word in capitals
        // is an acronym (ALTA, TIMI). A first name followed by a surname is needed (or a cue, above).
        const n = tokens[i + 1];
        const pair = n && gap(text, t, n) === ' ' && n.shape === t.shape && this.facts(n.lower).last && !this.facts(n.lower).english && !this.facts(n.lower).clinical;
        if ((caps && f.first) || (f.first && pair)) {
          mark(i);
          if (pair) mark(i + 1);
        }
        continue;
      }
      mark(i);
    }
  }

  /** "Murphy's sign", "Brown-Sequard syndrome", "Stevens-Johnson", "anti-Jo", "Kaplan Meier curve" */
  private eponym(text: string, tokens: Token[], i: number): boolean {
    const t = tokens[i] as Token;
    // "Post-masectomy", "Non-Hodgkin": a prefix, not a double-barrelled name
    if (/-[a-z]/.test(t.text) || /^(?:post|pre|non|anti|semi|sub|co|re|mid|pseudo|para|peri|hyper|hypo)-/i.test(t.text)) return true;
    for (let k = i + 1; k < Math.min(tokens.length, i + 5); k++) {
      const n = tokens[k] as Token;
      // The head of an eponym follows its name in the same phrase. Past a clause break (a comma too) or
      // just inside a parenthesis, a head word belongs to something else: "Daughter: Mary Smith, cell
      // 617-..." and "daughter Ama Okonkwo (cell ...)" are people, not eponyms (the PHI canary sent both
      // names to the model). "Wolff-Parkinson-White (WPW) syndrome" still finds its head after the ")".
      const g = gap(text, tokens[k - 1] as Token, n);
      if (/[.;:,\n]/.test(g)) break;
      if (!g.includes('(') && (EPONYM_HEADS.has(n.lower) || (n.shape === 'lower' && MEDICAL_SUFFIX.test(n.lower)))) return true;
      if (n.shape === 'lower' && !['and', 'or', 'of'].includes(n.lower)) break;
    }
    const p = tokens[i - 1];
    if (p && /^anti$/i.test(p.lower) && t.start - p.end <= 2) return true;
    return false;
  }

  /** "T. Corsten": an initial followed by a capitalised word. */
  private initialOfName(text: string, tokens: Token[], j: number): boolean {
    const t = tokens[j] as Token;
    const n = tokens[j + 1];
    return t.shape === 'initial' && !!n && /^\.\s?$/.test(gap(text, t, n)) && n.shape !== 'lower' && n.shape !== 'initial' ? true : t.shape === 'initial' && !!n && n.shape === 'initial';
  }

  /** "PaCO2", "3Smith": a word glued to digits is a formula or a code, not a name. */
  private glued(text: string, t: Token): boolean {
    return /\d/.test(text.charAt(t.end)) || /\d/.test(text.charAt(t.start - 1));
  }

  /** "Sandoz Corporation", "Varian Instruments Inc", "Alexa Fluor®": makers, not people. */
  private company(text: string, t: Token): boolean {
    return /^[\s\w-]{0,25}?(?:®|™|\b(?:Inc|Corp|Corporation|Ltd|GmbH|LLC|Co\.|Company|Pharmaceuticals?|Laboratories|Scientific|Medical Systems|Lifesciences|Instruments|Biosciences|Diagnostics)\b)/.test(text.slice(t.end, t.end + 40)) || /\bet al\b/.test(text.slice(t.end, t.end + 12));
  }

  /** A country, continent or state (Safe Harbor lets these stay), possibly of two or three words. */
  private region(tokens: Token[], i: number): boolean {
    const { regions, placeFirstWords } = this.lex;
    for (let k = Math.max(0, i - 2); k <= i; k++) {
      if (!placeFirstWords.has((tokens[k] as Token).lower)) continue;
      let phrase = '';
      for (let n = 0; n < 3 && k + n < tokens.length; n++) {
        phrase += (n ? ' ' : '') + (tokens[k + n] as Token).lower;
        if (k + n >= i && regions.has(phrase)) return true;
      }
    }
    return false;
  }

  /** Widens every marked run over adjacent initials and capitalised name words on the same line. */
  private widen(text: string, tokens: Token[], marked: Uint8Array, caps: boolean): void {
    const joinable = (t: Token) => {
      if (t.shape === 'lower') return false;
      if (t.shape === 'initial') return true;
      const f = this.factsOf(t);
      if (this.lex.regions.has(t.lower)) return false;
      if (f.clinical || FUNCTION_WORDS.has(t.lower) || TITLES.has(t.lower) || CREDENTIALS.has(t.lower) || RELATIONS.has(t.lower) || ROLES.has(t.lower)) return false;
      if (caps || t.shape === 'upper') return (f.first || f.last || !f.english) && t.text.length >= 2;
      return f.first || f.last || !f.english;
    };
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < tokens.length; i++) {
        if (!marked[i]) continue;
        const t = tokens[i] as Token;
        const n = tokens[i + 1];
        if (n && !marked[i + 1] && !t.possessive && this.nameGap(gap(text, t, n), t) && joinable(n) && !(n.shape === 'initial' && /^[AI]$/.test(n.text) && text.charAt(n.end) !== '.')) {
          if (!(n.shape === 'upper' && t.shape === 'title') && !(n.shape === 'title' && t.shape === 'upper')) marked[i + 1] = 1;
        }
        const p = tokens[i - 1];
        if (p && !marked[i - 1] && !p.possessive && this.nameGap(gap(text, p, t), p) && joinable(p)) {
          if (!(p.shape === 'upper' && t.shape === 'title') && !(p.shape === 'title' && t.shape === 'upper')) {
            const pf = this.facts(p.lower);
            if (p.shape === 'initial' || !sentenceInitial(text, p) || pf.first || pf.last) marked[i - 1] = 1;
          }
        }
        // "Sanne van Dijk", "Maria de la Cruz": particles between name words
        if (n && !marked[i + 1] && PARTICLES.has(n.lower) && gap(text, t, n) === ' ') {
          let k = i + 1;
          while (k + 1 < tokens.length && PARTICLES.has((tokens[k + 1] as Token).lower) && gap(text, tokens[k] as Token, tokens[k + 1] as Token) === ' ') k++;
          const after = tokens[k + 1];
          if (after && gap(text, tokens[k] as Token, after) === ' ' && after.shape !== 'lower' && joinable(after)) for (let x = i + 1; x <= k + 1; x++) marked[x] = 1;
        }
        // "... van de Berg": particles before a name word, after a capitalised one
        if (p && !marked[i - 1] && PARTICLES.has(p.lower) && p.shape === 'lower' && gap(text, p, t) === ' ') {
          let k = i - 1;
          while (k - 1 >= 0 && PARTICLES.has((tokens[k - 1] as Token).lower) && gap(text, tokens[k - 1] as Token, tokens[k] as Token) === ' ') k--;
          const head = tokens[k - 1];
          if (head && gap(text, head, tokens[k] as Token) === ' ' && head.shape !== 'lower' && joinable(head)) for (let x = k - 1; x < i; x++) marked[x] = 1;
        }
        // "Hollis, Marguerite": a surname, a comma and a first name
        if (n && !marked[i + 1] && /^,\s$/.test(gap(text, t, n)) && n.shape === t.shape && n.shape !== 'initial' && this.facts(n.lower).first && !this.facts(n.lower).english && !this.facts(n.lower).clinical) marked[i + 1] = 1;
        if (p && !marked[i - 1] && /^,\s$/.test(gap(text, p, t)) && p.shape === t.shape && p.shape !== 'initial' && this.facts(t.lower).first && (this.facts(p.lower).last || !this.facts(p.lower).english) && !this.facts(p.lower).clinical) {
          // only when the pair stands alone as a name (a label or line start before it)
          const pp = tokens[i - 2];
          if (!pp || /[:\n]\s*$/.test(gap(text, pp, p)) || LABEL_CUES.has(pp.lower)) marked[i - 1] = 1;
        }
      }
    }
  }

  private spans(tokens: Token[], marked: Uint8Array): Detection[] {
    const out: Detection[] = [];
    let i = 0;
    while (i < tokens.length) {
      if (!marked[i]) {
        i++;
        continue;
      }
      const first = tokens[i] as Token;
      let last = first;
      let j = i + 1;
      while (j < tokens.length && marked[j] && !last.possessive && (tokens[j] as Token).start - last.end <= 3) {
        last = tokens[j] as Token;
        j++;
      }
      // A lone initial is not a name.
      if (!(first === last && first.shape === 'initial')) out.push({ start: first.start, end: last.end, type: 'NAME', priority: PRIORITY.NAME, source: 'detector' });
      i = j;
    }
    return out;
  }
}
