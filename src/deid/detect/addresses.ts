/**
 * Addresses: street addresses with and without a house number ("214 Pellham Road", "on Mercer St",
 * "Route 9"), PO boxes, the city before a state ("Framingham, MA"), and the town around a ZIP code on
 * an address line ("Dover 03820", "81675 Muenchen"). Patterns over the text; the names of places and
 * organisations are locations.ts.
 */
import { lexicons } from '../lexicons';
import type { Token } from '../text';
import { type Detection, PRIORITY } from '../types';
import { STATE_RE_SOURCE } from './patterns';

/** Street suffixes: the common ones of USPS Publication 28, Appendix C1, with their abbreviations. */
const STREET_SUFFIX = [
  'Street|St|Avenue|Ave|Av|Road|Rd|Lane|Ln|Drive|Dr|Boulevard|Blvd|Court|Ct|Courts|Place|Pl|Way|Ways|Terrace|Terr|Ter|Circle|Cir|Circles|Parkway|Pkwy',
  'Highway|Hwy|Route|Rte|Square|Sq|Trail|Trl|Pike|Turnpike|Tpke|Alley|Aly|Row|Path|Crescent|Close|Loop|Run|Plaza|Plz|Heights|Hts|Commons?',
  'Green|Grove|Hill|Hills|Landing|Park|Ridge|Ridges|View|Views|Walk|Wharf|Crossing|Xing|Expressway|Expy|Causeway|Mall|Pass|Point|Points|Pt',
  'Bay|Bayou|Beach|Bend|Bluffs?|Bottom|Branch|Bridge|Brooks?|Burgs?|Bypass|Camp|Canyon|Cape|Centers?|Cliffs?|Club|Corners?|Course|Coves?',
  'Creek|Crest|Crossroads?|Curve|Dale|Dam|Divide|Estates?|Falls|Ferry|Fields?|Flats?|Fords?|Forest|Forges?|Forks?|Fort|Freeway|Fwy|Gardens?',
  'Gateway|Glens?|Harbors?|Haven|Hollow|Inlet|Island|Islands|Isle|Junctions?|Keys?|Knolls?|Lakes?|Land|Lights?|Locks?|Lodge|Manors?',
  'Meadows?|Mews|Mills?|Missions?|Motorway|Mountains?|Mount|Neck|Orchard|Oval|Overpass|Pines?|Plains?|Ports?|Prairie|Radial|Ramp|Ranch',
  'Rapids?|Rest|Rivers?|Shoals?|Shores?|Skyway|Springs?|Spurs?|Stations?|Stravenue|Streams?|Streets|Summit|Throughway|Trace|Track|Trafficway',
  'Tunnel|Underpass|Unions?|Valleys?|Viaduct|Villas?|Villages?|Ville|Vista|Walls?|Wells?|Trails|Terraces|Routes|Roads|Lanes|Drives|Avenues',
].join('|');
// "Apt 3", "#4", and the floor as notes write it: "2nd fl", "3rd floor"
const UNIT = String.raw`(?:,?\s*(?:(?:Apt|Apartment|Unit|Suite|Ste|Fl|Floor|Rm|Room|#)\.?\s*#?\s*[A-Za-z0-9-]{1,6}\b|\d{1,2}(?:st|nd|rd|th)\s*(?:fl|floor)\b\.?))?`;

/** Street words a street name ends with when no house number says it is one ("on Mercer St", "Haywood Rd"). */
const NAMED_STREET_SUFFIX = 'Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|Terrace|Ter|Parkway|Pkwy|Highway|Hwy|Square|Sq|Circle|Cir|Turnpike|Tpke|Pike';

const PLACE_PREFIX =
  /^(?:north|south|east|west|new|old|port|fort|lake|mount|mt\.?|saint|st\.?|glen|point|grand|little|big|upper|lower|great|palm|spring|cedar|oak|pine|rock|sandy|white|green|red|black|silver|golden|royal|bay|river|beach|union|central|central)$/;

type Push = (start: number, end: number, rule: string, type?: 'LOCATION' | 'ZIP') => void;

/** Street words, lowercase: an address pattern is tried only on a text holding one. */
const STREET_WORDS = new Set(
  STREET_SUFFIX.toLowerCase()
    .split('|')
    .flatMap((w) => (w.endsWith('?') ? [w.slice(0, -2), w.slice(0, -1)] : [w, `${w}s`])),
);
const NAMED_STREET_WORDS = new Set(NAMED_STREET_SUFFIX.toLowerCase().split('|'));
const STATE_WORDS = new Set(
  STATE_RE_SOURCE.replace(/^\(\?:|\)$/g, '')
    .toLowerCase()
    .split('|')
    .map((s) => s.split(' ')[0] as string),
);

export function detectAddresses(text: string, caps: boolean, tokens: Token[]): Detection[] {
  const out: Detection[] = [];
  const push: Push = (start, end, rule, type = 'LOCATION') => {
    if (end > start) out.push({ start, end, type, priority: PRIORITY[type], source: 'detector', rule });
  };
  const a = new Addresses(text, caps, push);
  // each pattern needs a word it cannot do without: a street word, a state, a route, a five-digit number
  const has = (set: Set<string>) => tokens.some((t) => set.has(t.lower));
  if (has(STREET_WORDS)) a.streets();
  if (has(NAMED_STREET_WORDS) || /\b(?:route|rte|hwy|highway|interstate|rt|i)[ -]?\d/i.test(text)) a.namedStreets();
  if (has(STATE_WORDS)) a.cityState();
  if (/\d{5}/.test(text)) a.aroundZip();
  return out;
}

// The patterns, in the two case modes (ALL CAPS text says nothing by case). Bounded word lengths keep
// every pattern linear in the text, whatever it holds.
const streetPattern = (word: string) =>
  String.raw`\b\d{1,6}[A-Za-z]?\s+(?:(?:[NSEW]|North|South|East|West|NORTH|SOUTH|EAST|WEST)\.?\s+)?(?:${word}|\d{1,3}(?:st|nd|rd|th|ST|ND|RD|TH))(?:\s+${word}){0,3}\s+(?:${STREET_SUFFIX})s?\b\.?${UNIT}`;
const STREET_CAPS = new RegExp(streetPattern("[A-Za-z][A-Za-z'’.-]{0,30}"), 'gi');
const STREET_MIXED = new RegExp(streetPattern("[A-Z][A-Za-z'’.-]{0,30}"), 'g');
const townPattern = (word: string) => `^,\\s*(${word}(?:[ -]${word}){0,2})\\b`;
const TOWN_CAPS = new RegExp(townPattern("[A-Za-z][A-Za-z'’]{0,30}"));
const TOWN_MIXED = new RegExp(townPattern("[A-Z][a-z'’]{1,30}"));
const WHOLE_STATE = new RegExp(`^${STATE_RE_SOURCE}$`, 'i');
// no hyphen inside a city word: it is the separator, and letting both take it makes the pattern backtrack
const cityStatePattern = (word: string) => String.raw`\b(${word}(?:[ -]${word}){0,2}),\s*(${STATE_RE_SOURCE})\b\.?(\s*\d{5})?`;
const CITY_STATE_CAPS = new RegExp(cityStatePattern("[A-Z][A-Za-z'’.]{0,30}"), 'dg');
const CITY_STATE_MIXED = new RegExp(cityStatePattern("[A-Z][a-z'’.]{1,30}"), 'dg');
const namedStreetPattern = (word: string) => String.raw`\b((?:${word}\s+){0,2}${word})\s+(?:${NAMED_STREET_SUFFIX})\b\.?(?!\s*(?:[A-Z][a-z]|\d))`;
const NAMED_STREET_CAPS = new RegExp(namedStreetPattern("[A-Z][A-Za-z'’.-]{1,30}"), 'g');
const NAMED_STREET_MIXED = new RegExp(namedStreetPattern("[A-Z][a-z'’.-]{1,30}"), 'g');

class Addresses {
  private readonly lex = lexicons();
  constructor(
    private readonly text: string,
    private readonly caps: boolean,
    private readonly add: Push,
  ) {}

  streets(): void {
    const { text, caps } = this;
    const push = (s: number, e: number) => this.add(s, e, 'place.street');
    const re = caps ? STREET_CAPS : STREET_MIXED;
    for (const m of text.matchAll(re)) {
      // "2 Dr" or "5 Pt" are counts, not addresses: the suffix must follow a street name
      const words = m[0].trim().split(/\s+/);
      if (words.length < 3) continue;
      // "0/14 LN. Course", "0400 PER SURG HO DR": a ratio, a sentence break or a clock time is not a house number
      if (/[/.:]$/.test(text.slice(Math.max(0, m.index - 1), m.index)) || /\.\s/.test(m[0])) continue;
      if (/^(?:[01]\d|2[0-3])[0-5]\d\s/.test(m[0]) && /\s(?:per|by|ho|md|rn|np|pa|pt|with|to|and|for|from|at)\s/i.test(m[0])) continue;
      if (/^\d+\s+(?:mg|mcg|ml|cc|units?|x|times|days?|weeks?|hours?|mins?|tabs?|of|to|and|or|in|at|on|the|a|pt|pts|patients?)\b/i.test(m[0])) continue;
      // "14 BEAT RUN" of VT, "7A REPEAT CT HEAD": a count or an order, not a house and its street
      if (
        /^\d+[A-Za-z]?\s+(?:beats?|runs?|repeat|head|chest|abd|abdomen|pelvis|spine|neck|sinus|beat|hr|hour|day|week|month|yr|year|pack|point|lead|view|slice|cut|sec|second|min|minute|step|stair|flight|block|foot|ft|inch|cm|mm)\b/i.test(
          m[0],
        )
      )
        continue;
      if (/\s(?:CT|Ct|ct)\.?$/.test(m[0].trim()) && /\b(?:repeat|head|chest|abd|abdomen|pelvis|spine|neck|sinus|cta|noncon|non-contrast|contrast)\s+ct\.?$/i.test(m[0].trim())) continue;
      const end = m.index + m[0].replace(/[.,]$/, '').length;
      push(m.index, end);
      // "88 ORCHARD HILL LANE, AMESBURY": the town after the street
      const town = (caps ? TOWN_CAPS : TOWN_MIXED).exec(text.slice(end, end + 60));
      if (town) {
        const words = (town[1] as string).split(/[ -]/).map((w) => w.toLowerCase());
        const isState = WHOLE_STATE.test(town[1] as string);
        if (!isState && !this.lex.regions.has(words.join(' ')) && !words.some((w) => this.lex.clinical.has(w))) push(end + town[0].length - (town[1] as string).length, end + town[0].length);
      }
    }
    for (const m of text.matchAll(/\bP\.?\s?O\.?\s*Box\s+\d+/gi)) push(m.index, m.index + m[0].length);
  }

  /** "Framingham, MA 01702", "Leominster, Massachusetts": the city before a state. */
  cityState(): void {
    const { text, caps } = this;
    const push = (s: number, e: number) => this.add(s, e, 'place.city-state');
    const re = caps ? CITY_STATE_CAPS : CITY_STATE_MIXED;
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
      // "Boston brace" and "Miami J" are devices, but a state after the word makes it the town
      if ((this.lex.clinical.has(lowerCity) && !this.lex.cities.has(lowerCity)) || this.lex.regions.has(lowerCity)) continue;
      // a town no list knows, without a ZIP, must be a word no vocabulary explains ("Honda Odyssey, NJ" is a car)
      if (!zip && !this.lex.cities.has(lowerCity) && kept.split(/[ -]/).some((w) => this.lex.safe.has(w.toLowerCase()))) continue;
      if (caps && !this.lex.cities.has(lowerCity) && !zip) continue;
      const offset = city.length - kept.length;
      push(at[0] + offset, at[1]);
    }
  }

  /** "on Mercer St", "at Lake St", "Haywood Rd", "Route 9", "Hwy 99", "I-95": a street named without a house number. */
  namedStreets(): void {
    const { text, caps } = this;
    const re = caps ? NAMED_STREET_CAPS : NAMED_STREET_MIXED;
    for (const m of text.matchAll(re)) {
      const name = m[1] as string;
      const lower = name.toLowerCase();
      const words = lower.split(/\s+/);
      // "Dr" after a capitalised word is usually a name followed by a title ("Smith Dr" is rare); "St" before a
      // capitalised word is a saint. A street needs a word of place before it ("on", "at", "near", "off", a comma).
      const before = text.slice(Math.max(0, m.index - 12), m.index);
      if (!/\b(?:on|at|near|off|of|from|to|along|corner|cross|and|&)\s+(?:the\s+)?$|,\s*$|^\s*$|\n\s*$/i.test(before)) continue;
      if (words.some((w) => this.lex.clinical.has(w) || STREET_STOPWORDS.has(w))) continue;
      if (/\bDr\.?$/.test(m[0]) && !/\bDrive\b/.test(m[0])) continue;
      // "Unit 5B, Washington St": the unit written before the street belongs to the address
      const unit = /(?:Apt|Apartment|Unit|Suite|Ste|#)\.?\s*#?\s*[A-Za-z0-9-]{1,6},\s*$/.exec(before);
      this.add(unit ? m.index - unit[0].length : m.index, m.index + m[0].replace(/[.,]$/, '').length, 'place.street');
    }
    for (const m of text.matchAll(/\b(?:Route|Rte|Rt|Hwy|Highway|Interstate|RT|ROUTE|HWY|I)[ -]?(\d{1,3}[A-Z]?)\b(?!\s*(?:mg|ml|cc|%|units?|cm|mm|x\b|times|fingers?|toes?|ribs?|digits?))/g)) {
      if (m[0].startsWith('I') && !/^I-\d/.test(m[0]) && !/^Interstate/.test(m[0])) continue;
      // "Rt" and "RT" are also "right": a road only after a word of place ("MVC on Rt 3", "off RT 128")
      if (/^R[Tt]\b/.test(m[0]) && !/\b(?:on|off|along|near|from|to|at|via|take|took|exit|crossing|cross|of)\s+$/i.test(text.slice(Math.max(0, m.index - 12), m.index))) continue;
      this.add(m.index, m.index + m[0].length, 'place.street');
    }
  }

  /**
   * The town around a ZIP code on an address line: "Apt 9, Boston 02111", "Rd, Dover 03820", and before
   * it in European addresses "48, 81675 Muenchen". Only on a line that reads as an address.
   */
  /** "lives in Framingham 01702", "Leominster, 01453": a town the city list knows, capitalised, right before the number. */
  private knownTownBefore(before: string): boolean {
    const m = /(?:^|[^A-Za-z'’.-])((?:[A-Z][A-Za-z'’.-]*\s){0,2}[A-Z][A-Za-z'’.-]*),?\s$/.exec(before);
    if (!m) return false;
    const words = (m[1] as string).toLowerCase().split(/\s+/);
    // the longest tail of the words that is a town: "in Fall River 02720", "Lives in Framingham 01702"
    for (let k = 0; k < words.length; k++) if (this.lex.cities.has(words.slice(k).join(' '))) return true;
    return false;
  }

  aroundZip(): void {
    const { text } = this;
    for (const m of text.matchAll(/(?<![\w-])\d{5}(?:-\d{4})?(?![\w-]|\.\d)/g)) {
      const lineStart = text.lastIndexOf('\n', m.index) + 1;
      const before = text.slice(Math.max(lineStart, m.index - 80), m.index);
      if (!ADDRESS_BEFORE.test(before) && !this.knownTownBefore(before)) continue;
      if (/^\s*(?:mg|mcg|ml|cc|units?|%|kg|lbs?|steps|cal)\b/i.test(text.slice(m.index + m[0].length, m.index + m[0].length + 8))) continue;
      this.add(m.index, m.index + m[0].length, 'place.zip', 'ZIP');
      const town = /(?:^|,\s*|\s)((?:[A-Za-z][A-Za-z.'’-]*\s){0,2}[A-Za-z][A-Za-z.'’-]*),?\s+$/.exec(before);
      const name = town?.[1];
      if (name && !WHOLE_STATE.test(name) && !/\d/.test(name)) {
        const words = name.toLowerCase().split(/\s+/);
        const kept = words.filter((w) => !STREET_STOPWORDS.has(w));
        if (kept.length === words.length && !words.some((w) => this.lex.regions.has(w))) {
          const start = m.index - before.length + (before.length - (town?.[0].length ?? 0)) + (town?.[0].indexOf(name) ?? 0);
          this.add(start, start + name.length, 'place.zip-town');
        }
      }
      const after = /^\s+([A-Z][A-Za-z'’-]+(?:\s[A-Z][A-Za-z'’-]+)?)/.exec(text.slice(m.index + m[0].length, m.index + m[0].length + 40));
      if (after && /,\s*$/.test(before)) {
        const start = m.index + m[0].length + (after[0].length - (after[1] as string).length);
        if (!this.lex.regions.has((after[1] as string).toLowerCase())) this.add(start, start + (after[1] as string).length, 'place.zip-town');
      }
    }
  }
}

/** Words that end an address part rather than name a town: "Apt", "Unit", "Suite", "Ph", "Phone". */
const STREET_STOPWORDS = new Set(
  'apt apartment unit suite ste fl floor rm room ph phone tel cell mobile fax home work the a an and or of at on in to from for with by dr mr mrs ms pt patient addr address'.split(' '),
);

/** An address before a ZIP on its line: a house number and a street word, or a PO box. */
const ADDRESS_BEFORE = new RegExp(
  String.raw`\b\d{1,6}[A-Za-z]?\s+(?:[A-Za-z][\w'.-]*\s+){0,4}(?:${['St', 'Street', 'Ave', 'Avenue', 'Rd', 'Road', 'Dr', 'Drive', 'Ln', 'Lane', 'Blvd', 'Boulevard', 'Ct', 'Court', 'Way', 'Pl', 'Place', 'Ter', 'Terrace', 'Cir', 'Circle', 'Pkwy', 'Hwy', 'Highway', 'Route', 'Rte', 'Sq', 'Trl', 'Trail', 'Pike', 'Row', 'Loop', 'Plaza', 'Ridge', 'Hill', 'Park', 'Path', 'Walk', 'Run', 'Crossing', 'Commons'].join('|')}|[a-z]*(?:strasse|straße|gasse|weg|platz|laan|straat))\b\.?|\bP\.?\s?O\.?\s*Box\s+\d+|\b[A-Za-z]+(?:strasse|straße|gasse|weg|platz)\s+\d{1,4}\b`,
  'i',
);
