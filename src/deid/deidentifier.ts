/**
 * De-identification of one text, in explicit stages:
 *   fold (normalise Unicode variants, keeping the way back) -> words and their vocabulary facts ->
 *   detectors (shapes and labels, dates, names, places, structured extracts) + known identifiers ->
 *   overlapping spans resolved -> offsets mapped back to the original -> replacement -> residual scan.
 * Used by the run pipeline's stage and by `ehrbench deid`. A dataset is read twice: every record is
 * first surveyed (`survey`: the name and place rules alone), so that a name found in one record of a
 * subject is looked for in its others, and a word strong rules took anywhere is looked for everywhere
 * (evidence.ts); then each record is de-identified knowing both (`evidence`, `dataset` on each input).
 */
import { createHash } from 'node:crypto';
import type { KnownIdentifiers } from '../catalog';
import { UserError } from '../errors';
import { defaultDetectors, type Detector, LocationDetector, NameDetector, resolve, type TextInfo, textInfo } from './detect';
import { EvidenceCollector, type RecordSurvey, STRONG_RULES } from './evidence';
import { KnownMatcher } from './known';
import { fold, type Folded, originalRange } from './normalize';
import { replaceAll, SubjectSurrogates } from './replace';
import { SiteLexicons } from './site-lexicons';
import { type Finding, residualScan } from './residual';
import type { DeidSettings } from './settings';
import { type DatasetEvidence, type Detection, type Evidence, type Span, SPAN_TYPES, type SpanType } from './types';
import { sentenceInitial, type Token } from './text';
import type { WordFacts } from './vocabulary';
import { vocabulary } from './vocabulary';

export interface DeidInput {
  text: string;
  known?: KnownIdentifiers;
  /** Whose identifiers these are: one surrogate map and date shift per subject. */
  subject: string;
  /** Name words found in the subject's other records (see `survey`). */
  evidence?: ReadonlySet<string>;
  /** What the whole dataset taught (evidence.ts). */
  dataset?: DatasetEvidence;
}

export interface DeidOutput {
  text: string;
  /** Identifiers found, as end-exclusive offsets into the input text. */
  spans: Span[];
  /** What the residual scan still found in the output (empty when the output may be sent). */
  residual: Finding[];
}

/**
 * What a set of records is read with: `dataset` (every record surveyed; each subject's names and the
 * dataset's strong takes, as `ehrbench deid` and a run do), `subject` (the subject's own records only),
 * `none` (each record alone).
 */
export type EvidenceScope = 'dataset' | 'subject' | 'none';

/** Which evidence a reading used: its scope, and for the dataset its version and how many words of each kind spread (never the words). */
export interface EvidenceInForce {
  scope: EvidenceScope;
  version?: string;
  names?: number;
  places?: number;
  acronyms?: number;
}

/** A record as `findAll` reads it. */
export interface DeidRecord {
  text: string;
  subject: string;
  known?: KnownIdentifiers;
}

export class Deidentifier {
  private readonly detectors: Detector[];
  /** The site's staff, facility, place and street lists, read once. */
  private readonly site: SiteLexicons;

  constructor(
    readonly settings: DeidSettings,
    private readonly secret: () => Buffer,
    /** Tests replace the detectors to show that the residual scan catches what they miss. */
    detectors?: Detector[],
  ) {
    this.detectors = detectors ?? defaultDetectors();
    this.site = SiteLexicons.load(settings.siteLexicons);
  }

  /** The name and place rules alone, for `survey` and for what outside evidence adds (`extend`). */
  private readonly names = new NameDetector();
  private readonly places = new LocationDetector();

  /** Stage one: the known identifiers, the site's lists and every detector over the folded text, unresolved. */
  private readFolded(folded: string, matcher: KnownMatcher): { raw: Detection[]; info: TextInfo } {
    const info = textInfo(folded, this.site.hasCueWords ? { site: this.site.cueWords } : undefined);
    const raw = [...matcher.find(folded, info.tokens), ...this.site.find(folded, info.tokens, info.caps)];
    for (const d of this.detectors) raw.push(...d(folded, info));
    return { raw, info };
  }

  /** Stage two: what the subject's other records and the dataset add to the names and places found (the new spans only). */
  private extend(folded: string, info: TextInfo, raw: readonly Detection[], evidence: Evidence | undefined): Detection[] {
    if (!evidence?.subject && !evidence?.dataset) return [];
    const input = { text: folded, tokens: info.tokens, facts: info.facts, caps: info.caps, evidence: { ...evidence, ...(info.evidence?.site ? { site: info.evidence.site } : {}) } };
    const out = this.names.extend(
      input,
      raw.filter((d) => d.type === 'NAME'),
    );
    if (evidence.dataset)
      out.push(
        ...this.places.extend(
          { ...input, dataset: evidence.dataset },
          raw.filter((d) => d.type === 'LOCATION'),
        ),
      );
    return out;
  }

  /** Both stages, resolved, with offsets into the original text and the folded value of each. */
  private detections(text: string, known: KnownIdentifiers | undefined, evidence: Evidence | undefined, matcher = new KnownMatcher(known)): Detection[] {
    const folded = fold(text);
    const { raw, info } = this.readFolded(folded.text, matcher);
    return backToOriginal(folded, resolve([...raw, ...this.extend(folded.text, info, raw, evidence)]));
  }

  /** The identifiers in a text with the rule that found each (reports and the benchmark; never the text). */
  explain(text: string, known?: KnownIdentifiers, evidence?: Evidence): (Span & { rule: string })[] {
    return this.detections(text, known, evidence).map(({ start, end, type, rule, source }) => ({ start, end, type, rule: rule ?? (source === 'known' ? 'known' : 'other') }));
  }

  /** The identifiers in a text, without replacing them. */
  find(text: string, known?: KnownIdentifiers, evidence?: Evidence): Span[] {
    return this.detections(text, known, evidence).map(({ start, end, type }) => ({ start, end, type }));
  }

  /**
   * What one record teaches the others, read by the name and place rules alone (the other detectors
   * cannot make a name or a place): the name words to look for in the subject's other records, the
   * words strong rules took (for the whole dataset), and how often each candidate word occurred.
   */
  survey(text: string, known?: KnownIdentifiers): RecordSurvey {
    const folded = fold(text).text;
    const info = textInfo(folded, this.site.hasCueWords ? { site: this.site.cueWords } : undefined);
    const input = { text: folded, tokens: info.tokens, facts: info.facts, caps: info.caps, ...(info.evidence ? { evidence: info.evidence } : {}) };
    const raw = [...new KnownMatcher(known).find(folded, info.tokens), ...this.site.find(folded, info.tokens, info.caps), ...this.names.detect(input), ...this.places.detect(input)];
    return surveyOf(folded, info, raw);
  }

  /**
   * The first reading of a record of a dataset (`ehrbench deid`): every detector once, and what the
   * record teaches the others. The detections are kept packed (folded offsets, no text) until the
   * record is read again with the dataset's evidence (`runRead`), so a record is detected once.
   */
  read(text: string, known?: KnownIdentifiers): ReadRecord {
    const folded = fold(text).text;
    const { raw, info } = this.readFolded(folded, new KnownMatcher(known));
    return { found: pack(raw, text, info), survey: surveyOf(folded, info, raw) };
  }

  /**
   * The second reading: the record's detections from `read`, what the evidence adds, replacement and the
   * residual scan. The text must be the one read (checked by its digest): offsets of another text would
   * mask the wrong characters.
   */
  runRead(input: DeidInput, found: PackedDetections): DeidOutput {
    if (digestOf(input.text) !== found.digest) throw new UserError('deid.input-changed', 'the text differs from the one first read; read it again');
    const matcher = new KnownMatcher(input.known);
    const folded = fold(input.text);
    const raw = unpack(found);
    // The words are read again only when the evidence knows one of the record's candidate words: most
    // records of a dataset have none, and reading is the costly part.
    const evidence = evidenceOf(input);
    const extra = teaches(evidence, found.candidates) ? this.extend(folded.text, textInfo(folded.text, this.site.hasCueWords ? { site: this.site.cueWords } : undefined), raw, evidence) : [];
    const detections = backToOriginal(folded, resolve([...raw, ...extra]));
    return this.replaced(input, detections, matcher);
  }

  /**
   * The name words found in a text that should be looked for in the subject's other records (the
   * subject half of `survey`).
   */
  harvest(text: string, known?: KnownIdentifiers): string[] {
    return this.survey(text, known).subjectWords;
  }

  /**
   * The evidence of a set of records read as one dataset: every record surveyed, the subject's names
   * kept per subject, the dataset's strong takes weighed (evidence.ts).
   */
  collect(records: Iterable<DeidRecord>): EvidenceCollector {
    const collector = new EvidenceCollector();
    for (const r of records) collector.add(r.subject, this.survey(r.text, r.known));
    return collector;
  }

  /**
   * The identifiers of several records read as one dataset (as `ehrbench deid` and `deid eval` do): the
   * names found in any record of a subject are looked for in all of them, and, with `dataset` (the
   * default), what strong rules took anywhere is looked for everywhere.
   */
  findAll(records: DeidRecord[], scope: EvidenceScope = 'dataset'): { spans: (Span & { rule: string })[][]; evidence: EvidenceInForce } {
    const collector = scope === 'none' ? new EvidenceCollector() : this.collect(records);
    const dataset = scope === 'dataset' ? collector.dataset() : undefined;
    const spans = records.map((r) => {
      const subject = scope === 'none' ? undefined : collector.subject(r.subject);
      return this.explain(r.text, r.known, { ...(subject ? { subject } : {}), ...(dataset ? { dataset } : {}) });
    });
    return { spans, evidence: { scope, ...(dataset ? { version: dataset.version, ...dataset.counts() } : {}) } };
  }

  run(input: DeidInput): DeidOutput {
    const matcher = new KnownMatcher(input.known);
    return this.replaced(input, this.detections(input.text, input.known, evidenceOf(input), matcher), matcher);
  }

  /** The surrogates of the subjects met last: a subject's records often come together, and its key and draws need not be made again. */
  private readonly surrogates = new Map<string, SubjectSurrogates>();

  private surrogatesOf(input: DeidInput): SubjectSurrogates {
    const avoid = knownWords(input.known);
    const key = `${input.subject}\u0000${avoid.join('\u0000')}`;
    let s = this.surrogates.get(key);
    if (!s) {
      s = new SubjectSurrogates(this.secret(), input.subject, this.settings, avoid);
      if (this.surrogates.size >= 64) this.surrogates.delete(this.surrogates.keys().next().value as string);
      this.surrogates.set(key, s);
    }
    return s;
  }

  private replaced(input: DeidInput, detections: Detection[], matcher: KnownMatcher): DeidOutput {
    let surrogates: SubjectSurrogates | undefined;
    const subject = () => (surrogates ??= this.surrogatesOf(input));
    const replaced = replaceAll(input.text, detections, this.settings, subject);
    return {
      text: replaced.text,
      spans: detections.map(({ start, end, type }) => ({ start, end, type })),
      residual: residualScan(replaced.text, replaced.regions, matcher),
    };
  }
}

function evidenceOf(input: DeidInput): Evidence {
  return { ...(input.evidence ? { subject: input.evidence } : {}), ...(input.dataset ? { dataset: input.dataset } : {}) };
}

/** Detections on the folded text, back on the original's offsets, each with the folded value surrogates derive from. */
function backToOriginal(folded: Folded, found: Detection[]): Detection[] {
  if (!folded.changed) return found;
  return found.map((d) => ({ ...d, ...originalRange(folded, d.start, d.end), value: folded.text.slice(d.start, d.end) }));
}

/**
 * A record's detections between its two readings, six integers each (start, end, type, priority, rule,
 * source), the canonical name parts of known names and what the date rules read of each date apart:
 * about 24 bytes a detection, and a few hundred a date.
 */
export interface PackedDetections {
  cells: Int32Array;
  canonical: Map<number, string[]>;
  /** What the date rules read of each date (and how to write it shifted): a few a record. */
  dates: Map<number, NonNullable<Detection['date']>>;
  /** Of the text read, to refuse another. */
  digest: string;
  /** The words evidence could make identifiers of (no vocabulary explains them, or they are in capitals) and no name or place took, lowercase, one space apart. */
  candidates: string;
}

/** Whether outside evidence knows one of a record's candidate words (then its words are read again). */
function teaches(evidence: Evidence, candidates: string): boolean {
  if (!evidence.subject && !evidence.dataset) return false;
  for (const w of candidates.split(' ')) {
    if (w === '') continue;
    if (evidence.subject?.has(w) || evidence.dataset?.name(w) || evidence.dataset?.place(w, false) || evidence.dataset?.place(w, true)) return true;
  }
  return false;
}

export interface ReadRecord {
  found: PackedDetections;
  survey: RecordSurvey;
}

function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('base64').slice(0, 16);
}

const RULES: string[] = [];
const RULE_INDEX = new Map<string, number>();
function ruleIndex(rule: string | undefined): number {
  if (rule === undefined) return -1;
  let i = RULE_INDEX.get(rule);
  if (i === undefined) {
    i = RULES.push(rule) - 1;
    RULE_INDEX.set(rule, i);
  }
  return i;
}

function pack(raw: Detection[], text: string, info: TextInfo): PackedDetections {
  const cells = new Int32Array(raw.length * 6);
  const canonical = new Map<number, string[]>();
  const dates = new Map<number, NonNullable<Detection['date']>>();
  raw.forEach((d, k) => {
    if (d.date) dates.set(k, d.date);
    cells.set([d.start, d.end, SPAN_TYPES.indexOf(d.type), d.priority, ruleIndex(d.rule), d.source === 'known' ? 1 : 0], k * 6);
    if (d.canonical) canonical.set(k, d.canonical);
  });
  // words already inside a name or a place found need no evidence: only the others are candidates
  const covered = new Uint8Array((info.tokens[info.tokens.length - 1]?.end ?? 0) + 1);
  for (const d of raw) if (d.type === 'NAME' || d.type === 'LOCATION') covered.fill(1, d.start, d.end);
  const candidates = new Set<string>();
  info.tokens.forEach((t, i) => {
    if (t.lower.length >= 3 && !covered[t.start] && ((info.facts[i] as WordFacts).cls !== 'safe' || t.shape === 'upper')) candidates.add(t.lower);
  });
  return { cells, canonical, dates, digest: digestOf(text), candidates: [...candidates].join(' ') };
}

/** The packed detections again. */
function unpack(found: PackedDetections): Detection[] {
  const out: Detection[] = [];
  for (let k = 0; k < found.cells.length / 6; k++) {
    const c = found.cells.subarray(k * 6, k * 6 + 6);
    const d: Detection = { start: c[0] as number, end: c[1] as number, type: SPAN_TYPES[c[2] as number] as SpanType, priority: c[3] as number, source: c[5] === 1 ? 'known' : 'detector' };
    if ((c[4] as number) >= 0) d.rule = RULES[c[4] as number] as string;
    const canonical = found.canonical.get(k);
    if (canonical) d.canonical = canonical;
    const date = found.dates.get(k);
    if (date) d.date = date;
    out.push(d);
  }
  return out;
}

/** What a record teaches, from its raw detections: the subject's name words, the strong takes, the candidate words' uses. */
function surveyOf(folded: string, info: TextInfo, raw: readonly Detection[]): RecordSurvey {
  const v = vocabulary();
  const subjectWords = new Set<string>();
  const takes: RecordSurvey['takes'] = [];
  // a name that overlaps an e-mail address or a street is still the subject's name, so it counts here too
  for (const d of raw) {
    const kind = d.type === 'NAME' ? 'NAME' : d.type === 'LOCATION' ? 'LOCATION' : undefined;
    if (!kind) continue;
    const strong = d.rule !== undefined && STRONG_RULES.has(d.rule);
    for (const t of tokensIn(info.tokens, d.start, d.end)) {
      const f = v.facts(t.lower);
      // an acronym in a mixed-case text may be on a safe list ("DHC") and still name a place
      const acronym = kind === 'LOCATION' && t.shape === 'upper' && !info.caps && t.lower.length <= 6 && !f.english;
      if (t.lower.length < 3 || (f.cls === 'safe' && !acronym) || f.clinical) continue;
      if (kind === 'NAME' && /^[a-z][a-z'-]{2,}$/.test(t.lower)) subjectWords.add(t.lower);
      if (strong) takes.push({ word: t.lower, kind, acronym });
    }
  }
  return { subjectWords: [...subjectWords], takes, seen: candidateUses(folded, info.tokens, info.facts, info.caps) };
}

/** The tokens inside [start, end). */
function tokensIn(tokens: Token[], start: number, end: number): Token[] {
  const out: Token[] = [];
  for (const t of tokens) {
    if (t.start >= end) break;
    if (t.start >= start && t.end <= end) out.push(t);
  }
  return out;
}

/**
 * How often each candidate word occurs: words no vocabulary explains (any use; in capitals inside a
 * mixed-case text, counted apart for acronyms), and names that are English words when capitalised
 * inside a sentence.
 */
function candidateUses(text: string, tokens: Token[], facts: WordFacts[], caps: boolean): Map<string, [number, number, number]> {
  const seen = new Map<string, [number, number, number]>();
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.lower.length < 3) continue;
    const cls = (facts[i] as WordFacts).cls;
    const upper = t.shape === 'upper' && !caps && t.lower.length <= 6 && !(facts[i] as WordFacts).english;
    if (cls === 'safe' && !upper) continue;
    const unexplained = cls !== 'ambiguous' && cls !== 'safe';
    const capitalisedMid = !unexplained && t.shape === 'title' && !caps && !sentenceInitial(text, t);
    if (!unexplained && !capitalisedMid && !upper) continue;
    let c = seen.get(t.lower);
    if (!c) seen.set(t.lower, (c = [0, 0, 0]));
    if (unexplained) c[0] += 1;
    if (capitalisedMid) c[1] += 1;
    if (upper) c[2] += 1;
  }
  return seen;
}

/** Every word of a known identifier: no surrogate may be one of them. */
function knownWords(known: KnownIdentifiers | undefined): string[] {
  if (!known) return [];
  return Object.values(known)
    .flat()
    .filter((v): v is string => typeof v === 'string')
    .flatMap((v) => v.split(/[\s,.]+/))
    .filter((w) => w.length >= 2);
}
