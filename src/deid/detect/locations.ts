/**
 * Geographic units smaller than a state: street addresses, PO boxes, cities (by the US city list with
 * a state, a ZIP or a word of place before them), and the names of hospitals, clinics, practices and
 * homes ("St. Aldric's", "Northgate Family Practice", "HEBREW REHAB"). States and countries are not
 * identifiers under Safe Harbor and stay.
 */
import { lexicons } from '../lexicons';
import { gap, sentenceInitial, type Token, tokenize } from '../text';
import { type Detection, PRIORITY } from '../types';
import { STATE_RE_SOURCE } from './patterns';

/** Street suffixes: the common ones of USPS Publication 28, Appendix C1, with their abbreviations. */
const STREET_SUFFIX = [
  'Street|St|Avenue|Ave|Av|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Courts|Place|Pl|Way|Ways|Terrace|Ter|Circle|Cir|Circles|Parkway|Pkwy',
  'Highway|Hwy|Route|Rte|Square|Sq|Trail|Trl|Pike|Turnpike|Tpke|Alley|Aly|Row|Path|Crescent|Close|Loop|Run|Plaza|Plz|Heights|Hts|Commons?',
  'Green|Grove|Hill|Hills|Landing|Park|Ridge|Ridges|View|Views|Walk|Wharf|Crossing|Xing|Expressway|Expy|Causeway|Mall|Pass|Point|Points|Pt',
  'Bay|Bayou|Beach|Bend|Bluffs?|Bottom|Branch|Bridge|Brooks?|Burgs?|Bypass|Camp|Canyon|Cape|Centers?|Cliffs?|Club|Corners?|Course|Coves?',
  'Creek|Crest|Crossroads?|Curve|Dale|Dam|Divide|Estates?|Falls|Ferry|Fields?|Flats?|Fords?|Forest|Forges?|Forks?|Fort|Freeway|Fwy|Gardens?',
  'Gateway|Glens?|Harbors?|Haven|Hollow|Inlet|Island|Islands|Isle|Junctions?|Keys?|Knolls?|Lakes?|Land|Lights?|Locks?|Lodge|Manors?',
  'Meadows?|Mews|Mills?|Missions?|Motorway|Mountains?|Mount|Neck|Orchard|Oval|Overpass|Pines?|Plains?|Ports?|Prairie|Radial|Ramp|Ranch',
  'Rapids?|Rest|Rivers?|Shoals?|Shores?|Skyway|Springs?|Spurs?|Stations?|Stravenue|Streams?|Streets|Summit|Throughway|Trace|Track|Trafficway',
  'Tunnel|Underpass|Unions?|Valleys?|Viaduct|Villas?|Villages?|Ville|Vista|Walls?|Wells?|Trails|Terraces|Routes|Roads|Lanes|Drives|Avenues',
].join('|');
const UNIT = String.raw`(?:,?\s*(?:Apt|Apartment|Unit|Suite|Ste|Fl|Floor|Rm|Room|#)\.?\s*#?\s*[A-Za-z0-9-]{1,6}\b)?`;

const FACILITY_WORDS =
  "Hospital|Hosp|Medical Center|Med Ctr|Medical Ctr|Health Center|Health Centre|Healthcare|Health Care|Health System|Clinic|Clinics|Rehab|Rehabilitation|Rehabilitation Center|Nursing Home|Nursing Facility|Nursing Center|Care Center|Infirmary|Hospice|Imaging|Radiology|Family Practice|Family Medicine|Medical Group|Medical Associates|Associates|Urgent Care|Pharmacy|Manor|Institute|University|College|School|Church|Memorial|Center|Centre|Lodge|Residence|Assisted Living|Senior Living|Laboratories|Laboratory|Labs|Surgery Center|Surgical Center|Dialysis|Physicians|Partners|Practice|Cancer Center|Heart Institute|Health|Medical|VA|VAMC|Shelter|Correctional Facility|Prison|Jail";

const FACILITY_TAIL = new RegExp(`^\\s+(?:${FACILITY_WORDS})\\b`, 'i');

/** Words that do not make a facility name distinctive on their own. */
const GENERIC = new Set(
  `the a an our your his her their this that other another same new old outside osh local nearby area community general regional county state city
  university medical memorial academic teaching veterans va family health care senior assisted skilled long-term acute subacute heart cancer eye ear
  women's children's womens childrens kidney transplant trauma burn stroke spine sleep pain wound dialysis infusion cardiac cardiology oncology
  neurology surgery surgical emergency primary urgent ambulatory outpatient inpatient behavioral mental rehabilitation rehab nursing home private
  public group practice clinic hospital center to at from in for with and or of by on was is be been transferred transfer admitted sent returned
  discharged discharge called went go going back readmitted via per see seen f/u follow followup up nh snf ltach ltac icu ed er or pacu floor unit
  pt patient attending resident physician nurse md dr team service department dept division program office lab laboratory imaging radiology
  pharmacy retail mail order the`.split(/\s+/),
);

export class LocationDetector {
  private readonly lex = lexicons();

  detect(text: string, caps: boolean, tokens: Token[] = tokenize(text)): Detection[] {
    const out: Detection[] = [];
    const push = (start: number, end: number) => {
      if (end > start) out.push({ start, end, type: 'LOCATION', priority: PRIORITY.LOCATION, source: 'detector' });
    };
    this.streets(text, caps, push);
    this.cityState(text, caps, push);
    this.facilities(text, caps, push);
    this.cityWords(text, caps, tokens, push);
    return out;
  }

  private streets(text: string, caps: boolean, push: (s: number, e: number) => void): void {
    // bounded word lengths keep every pattern linear in the text, whatever it holds
    const word = caps ? "[A-Za-z][A-Za-z'’.-]{0,30}" : "[A-Z][A-Za-z'’.-]{0,30}";
    const re = new RegExp(
      String.raw`\b\d{1,6}[A-Za-z]?\s+(?:(?:[NSEW]|North|South|East|West|NORTH|SOUTH|EAST|WEST)\.?\s+)?(?:${word}|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))(?:\s+${word}){0,3}\s+(?:${STREET_SUFFIX})s?\b\.?${UNIT}`,
      caps ? 'gi' : 'g',
    );
    for (const m of text.matchAll(re)) {
      // "2 Dr" or "5 Pt" are counts, not addresses: the suffix must follow a street name
      const words = m[0].trim().split(/\s+/);
      if (words.length < 3) continue;
      if (/^\d+\s+(?:mg|mcg|ml|cc|units?|x|times|days?|weeks?|hours?|mins?|tabs?|of|to|and|or|in|at|on|the|a|pt|pts|patients?)\b/i.test(m[0])) continue;
      const end = m.index + m[0].replace(/[.,]$/, '').length;
      push(m.index, end);
      // "88 ORCHARD HILL LANE, AMESBURY": the town after the street
      const townWord = caps ? "[A-Za-z][A-Za-z'’]{0,30}" : "[A-Z][a-z'’]{1,30}";
      const town = new RegExp(`^,\\s*(${townWord}(?:[ -]${townWord}){0,2})\\b`).exec(text.slice(end, end + 60));
      if (town) {
        const words = (town[1] as string).split(/[ -]/).map((w) => w.toLowerCase());
        const isState = new RegExp(`^${STATE_RE_SOURCE}$`, 'i').test(town[1] as string);
        if (!isState && !this.lex.regions.has(words.join(' ')) && !words.some((w) => this.lex.clinical.has(w))) push(end + town[0].length - (town[1] as string).length, end + town[0].length);
      }
    }
    for (const m of text.matchAll(/\bP\.?\s?O\.?\s*Box\s+\d+/gi)) push(m.index, m.index + m[0].length);
  }

  /** "Framingham, MA 01702", "Leominster, Massachusetts": the city before a state. */
  private cityState(text: string, caps: boolean, push: (s: number, e: number) => void): void {
    // no hyphen inside a word: it is the separator, and letting both take it makes the pattern backtrack
    const cityWord = caps ? "[A-Z][A-Za-z'’.]{0,30}" : "[A-Z][a-z'’.]{1,30}";
    const re = new RegExp(String.raw`\b(${cityWord}(?:[ -]${cityWord}){0,2}),\s*(${STATE_RE_SOURCE})\b\.?(\s*\d{5})?`, 'dg');
    const ambiguous = new Set(['MD', 'PA', 'ME', 'IN', 'OR', 'OK', 'HI', 'ID', 'OH', 'DE', 'CO', 'LA', 'AL', 'MA', 'DO', 'NP', 'PT']);
    for (const m of text.matchAll(re)) {
      const city = m[1] as string;
      const state = m[2] as string;
      const zip = m[3];
      const at = m.indices?.[1];
      if (!at) continue;
      const words = city.split(/[ -]/);
      // Keep the last words that could be the city (a sentence can run into it: "Lives in Framingham, MA")
      let startWord = 0;
      for (let w = 0; w < words.length; w++) {
        const lw = (words[w] as string).toLowerCase();
        if (this.lex.english.has(lw) && !PLACE_PREFIX.test(lw) && !this.lex.cities.has(words.slice(w).join(' ').toLowerCase()) && w < words.length - 1) startWord = w + 1;
      }
      const kept = words.slice(startWord).join(' ');
      const lowerCity = kept.toLowerCase();
      if (ambiguous.has(state) && !zip && !this.lex.cities.has(lowerCity)) continue;
      if ((state === 'MD' || state === 'PA' || state === 'DO' || state === 'NP' || state === 'PT') && !zip) continue;
      if (this.lex.clinical.has(lowerCity) || this.lex.regions.has(lowerCity)) continue;
      if (caps && !this.lex.cities.has(lowerCity) && !zip) continue;
      const offset = city.length - kept.length;
      push(at[0] + offset, at[1]);
    }
  }

  private facilities(text: string, caps: boolean, push: (s: number, e: number) => void): void {
    const name = "[A-Z][A-Za-z'’.&-]{0,30}";
    const re = new RegExp(String.raw`((?:\b(?:van|von|de|del|la|le|da|di|du|der|den)\s+)*\b(?:(?:St|Saint|Mt|Mount|ST|SAINT|MT|MOUNT)\.?\s+)?${name}(?:\s+(?:of|the|and|&|OF|THE|AND)?\s*${name}){0,4})\s+(${FACILITY_WORDS})\b`, caps ? 'dgi' : 'dg');
    for (const m of text.matchAll(re)) {
      const at = m.indices?.[1];
      if (!at) continue;
      const words = (m[1] as string).split(/\s+/);
      const distinctive = (w: string) => {
        const lw = w.toLowerCase().replace(/['’]s$/, '');
        if (GENERIC.has(lw) || this.lex.clinical.has(lw)) return false;
        return !this.lex.english.has(lw) || this.lex.firstNames.has(lw) || this.lex.surnames.has(lw) || this.lex.cities.has(lw);
      };
      // Drop the words before the name ("plan for transfer to", "the outside"); keep "St." and "Mount".
      let first = 0;
      while (first < words.length && !distinctive(words[first] as string) && !(PLACE_PREFIX.test((words[first] as string).toLowerCase()) && first + 1 < words.length && distinctive(words[first + 1] as string))) first++;
      if (first === words.length || !words.slice(first).some(distinctive)) continue;
      const facilityWord = m[2] as string;
      if (!caps && facilityWord === facilityWord.toLowerCase()) continue;
      let offset = at[0];
      for (let w = 0; w < first; w++) offset = text.indexOf(words[w] as string, offset) + (words[w] as string).length;
      const start = text.indexOf(words[first] as string, offset);
      // "Memorial Hospital", "Medical Center": take every facility word that follows
      let end = m.index + m[0].length;
      for (let more = FACILITY_TAIL.exec(text.slice(end, end + 40)); more; more = FACILITY_TAIL.exec(text.slice(end, end + 40))) end += more[0].length;
      push(start, end);
    }
    // "St. Aldric's", "Saint Agnes": a saint's name is a place in a note (St. John's wort is not)
    for (const m of text.matchAll(/\b(?:St|Saint|ST|SAINT)\.?\s+([A-Z][A-Za-z]+(?:['’]s)?)(?!\s+(?:wort|WORT)\b)/g)) {
      if (/^\d/.test(text.slice(Math.max(0, m.index - 6), m.index).trim().slice(-1))) continue;
      push(m.index, m.index + m[0].length);
    }
  }

  /** US cities after a word of place ("lives in Leominster", "visit from Amesbury") or distinctive on their own. */
  private cityWords(text: string, caps: boolean, tokens: Token[], push: (s: number, e: number) => void): void {
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i] as Token;
      if (t.shape === 'lower' || t.shape === 'initial') continue;
      if (!caps && t.shape === 'upper') continue;
      const before = text.slice(Math.max(0, t.start - 30), t.start);
      const end = this.knownCity(text, caps, tokens, i, before) ?? this.unknownTown(text, caps, tokens, i, before);
      if (end === undefined) continue;
      push(t.start, (tokens[end] as Token).end);
      i = end;
    }
  }

  /** A name on the US city list; returns the index of its last word. */
  private knownCity(text: string, caps: boolean, tokens: Token[], i: number, before: string): number | undefined {
    const { cities, english, clinical, firstNames, surnames, regions, placeFirstWords } = this.lex;
    const t = tokens[i] as Token;
    if (!placeFirstWords.has(t.lower)) return undefined;
    let best = -1;
    let phrase = t.lower;
    for (let k = i; k < Math.min(tokens.length, i + 3); k++) {
      if (k > i) {
        const n = tokens[k] as Token;
        if (gap(text, tokens[k - 1] as Token, n) !== ' ' || n.shape === 'lower') break;
        phrase += ' ' + n.lower;
      }
      if (cities.has(phrase)) best = k;
    }
    if (best < 0) return undefined;
    const words = tokens.slice(i, best + 1).map((w) => w.lower);
    if (words.some((w) => clinical.has(w)) || regions.has(words.join(' '))) return undefined;
    if (/^\s+heart\s+association/i.test(text.slice((tokens[best] as Token).end, (tokens[best] as Token).end + 25))) return undefined; // NYHA class
    const allEnglish = words.every((w) => english.has(w));
    const multi = best > i;
    let ok: boolean;
    if (PLACE_CUE.test(before)) ok = !allEnglish;
    else if (caps) ok = false;
    else if (multi) ok = !allEnglish && !sentenceInitial(text, t);
    else ok = !english.has(t.lower) && !firstNames.has(t.lower) && !surnames.has(t.lower) && !sentenceInitial(text, t) && t.lower.length >= 5;
    return ok ? best : undefined;
  }

  /**
   * A town no list knows ("visiting from Bednarfort", "lives in South Trudieboro", "in Kayleyhaven"): after a
   * word of place, capitalised words the lexicons do not know at all. Returns the index of the last word.
   */
  private unknownTown(text: string, caps: boolean, tokens: Token[], i: number, before: string): number | undefined {
    const { english, clinical, firstNames, surnames, regions } = this.lex;
    const strong = STRONG_PLACE_CUE.test(before);
    if (!strong && !WEAK_PLACE_CUE.test(before)) return undefined;
    const t = tokens[i] as Token;
    if (caps ? t.shape !== 'upper' : t.shape !== 'title') return undefined;
    let k = i;
    while (k + 1 < tokens.length && k < i + 2 && gap(text, tokens[k] as Token, tokens[k + 1] as Token) === ' ' && (tokens[k + 1] as Token).shape === t.shape) k++;
    const words = tokens.slice(i, k + 1).map((w) => w.lower);
    const last = words[words.length - 1] as string;
    if (regions.has(words.join(' ')) || regions.has(last) || words.some((w) => clinical.has(w))) return undefined;
    if (english.has(last) || last.length < (strong ? 3 : 5) || words.some((w) => w.includes('-'))) return undefined;
    // after a weak cue ("in", "at") the word must be unknown as a name too, and not start a sentence
    if (!strong && (firstNames.has(last) || surnames.has(last) || sentenceInitial(text, t))) return undefined;
    if (/\d/.test(text.charAt((tokens[k] as Token).end))) return undefined;
    return k;
  }
}

/** First words of place names that are also English words: North Adams, Port Angeles, Fort Wayne, New Bedford. */
const PLACE_PREFIX = /^(?:north|south|east|west|new|old|port|fort|lake|mount|mt\.?|saint|st\.?|glen|point|grand|little|big|upper|lower|great|palm|spring|cedar|oak|pine|rock|sandy|white|green|red|black|silver|golden|royal|bay|river|beach|union|central|central)$/;
const PLACE_CUE = /\b(?:lives?|living|resides?|residing|moved|relocated|born|raised|grew up|visiting|visit|visits|transferred|transfer|came|coming|returned|home|travel(?:l?ed)?|trip|vacation|from|in|at|to|near|outside|of|drove|flew|works?|worked|retired)\s+(?:in|from|to|at|near|of)?\s*$/i;
const WEAK_PLACE_CUE = /\b(?:in|at|near|to)\s+$/i;
const STRONG_PLACE_CUE = /\b(?:lives?\s+in|living\s+in|resides?\s+in|residing\s+in|moved\s+(?:to|from)|relocated\s+(?:to|from)|born\s+in|raised\s+in|grew\s+up\s+in|visiting\s+from|visit\s+from|transferred\s+(?:to|from)|transfer\s+(?:to|from)|home\s+in|travel(?:l?ed)?\s+to|trip\s+to|vacation\s+in|from|drove\s+(?:to|from)|flew\s+(?:to|from)|works?\s+in|worked\s+in|retired\s+to)\s+$/i;
