/**
 * De-identification of one text, in explicit stages:
 *   fold (normalise Unicode variants, keeping the way back) -> words and their vocabulary facts ->
 *   detectors (shapes and labels, dates, names, places, structured extracts) + known identifiers ->
 *   overlapping spans resolved -> offsets mapped back to the original -> replacement -> residual scan.
 * Used by the run pipeline's stage and by `ehrbench deid`. The records of one subject share evidence:
 * a name found in one of them is looked for in the others (`harvest`, then `evidence` on each input).
 */
import type { KnownIdentifiers } from '../catalog';
import { defaultDetectors, detect, type Detector, NameDetector, textInfo } from './detect';
import { KnownMatcher } from './known';
import { fold, originalRange } from './normalize';
import { replaceAll, SubjectSurrogates } from './replace';
import { SiteLexicons } from './site-lexicons';
import { type Finding, residualScan } from './residual';
import type { DeidSettings } from './settings';
import type { Detection, Span } from './types';
import { vocabulary } from './vocabulary';

export interface DeidInput {
  text: string;
  known?: KnownIdentifiers;
  /** Whose identifiers these are: one surrogate map and date shift per subject. */
  subject: string;
  /** Name words found in the subject's other records (see `harvest`). */
  evidence?: ReadonlySet<string>;
}

export interface DeidOutput {
  text: string;
  /** Identifiers found, as end-exclusive offsets into the input text. */
  spans: Span[];
  /** What the residual scan still found in the output (empty when the output may be sent). */
  residual: Finding[];
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

  /** The name rules alone, for `harvest`. */
  private readonly names = new NameDetector();

  /** Detections with offsets into the original text and the folded value of each. */
  private detections(text: string, known: KnownIdentifiers | undefined, evidence: ReadonlySet<string> | undefined, matcher = new KnownMatcher(known)): Detection[] {
    const folded = fold(text);
    const info = textInfo(folded.text, evidence);
    const found = detect(folded.text, this.detectors, info, [...matcher.find(folded.text, info.tokens), ...this.site.find(folded.text, info.tokens, info.caps)]);
    if (!folded.changed) return found;
    return found.map((d) => ({ ...d, ...originalRange(folded, d.start, d.end), value: folded.text.slice(d.start, d.end) }));
  }

  /** The identifiers in a text with the rule that found each (reports and the benchmark; never the text). */
  explain(text: string, known?: KnownIdentifiers, evidence?: ReadonlySet<string>): (Span & { rule: string })[] {
    return this.detections(text, known, evidence).map(({ start, end, type, rule, source }) => ({ start, end, type, rule: rule ?? (source === 'known' ? 'known' : 'other') }));
  }

  /** The identifiers in a text, without replacing them. */
  find(text: string, known?: KnownIdentifiers, evidence?: ReadonlySet<string>): Span[] {
    return this.detections(text, known, evidence).map(({ start, end, type }) => ({ start, end, type }));
  }

  /**
   * The name words found in a text that should be looked for in the subject's other records:
   * lowercase, three letters or more, words the vocabularies do not explain as ordinary words.
   */
  harvest(text: string, known?: KnownIdentifiers): string[] {
    const folded = fold(text).text;
    const v = vocabulary();
    const out = new Set<string>();
    // Only the name rules, the known names and the site's staff list are asked: the other detectors
    // cannot make a name, and skipping them makes this pass a third of a detection. A name that
    // overlaps an e-mail address or a street is still the subject's name, so it counts here too.
    const info = textInfo(folded);
    const names = [
      ...this.names.detect({ text: folded, tokens: info.tokens, facts: info.facts, caps: info.caps }),
      ...new KnownMatcher(known).find(folded, info.tokens),
      ...this.site.find(folded, info.tokens, info.caps),
    ];
    for (const d of names) {
      if (d.type !== 'NAME') continue;
      for (const w of folded
        .slice(d.start, d.end)
        .toLowerCase()
        .match(/[a-z][a-z'-]{2,}/g) ?? []) {
        const cls = v.facts(w).cls;
        if (cls === 'name' || cls === 'unknown' || cls === 'ambiguous') out.add(w);
      }
    }
    return [...out];
  }

  /**
   * The identifiers of several records, the records of one subject judged together: the names found
   * in any of them are looked for in all of them (as a run and `ehrbench deid` do).
   */
  findAll(records: { text: string; subject: string; known?: KnownIdentifiers }[]): (Span & { rule: string })[][] {
    // a subject's only record has nothing to learn from others (and harvesting costs a detection)
    const counts = new Map<string, number>();
    for (const r of records) counts.set(r.subject, (counts.get(r.subject) ?? 0) + 1);
    const evidence = subjectEvidence(records, (r) => ((counts.get(r.subject) ?? 0) > 1 ? this.harvest(r.text, r.known) : []));
    return records.map((r) => this.explain(r.text, r.known, evidence.get(r.subject)));
  }

  run(input: DeidInput): DeidOutput {
    const matcher = new KnownMatcher(input.known);
    const detections = this.detections(input.text, input.known, input.evidence, matcher);
    let surrogates: SubjectSurrogates | undefined;
    const subject = () => (surrogates ??= new SubjectSurrogates(this.secret(), input.subject, this.settings, knownWords(input.known)));
    const replaced = replaceAll(input.text, detections, this.settings, subject);
    return {
      text: replaced.text,
      spans: detections.map(({ start, end, type }) => ({ start, end, type })),
      residual: residualScan(replaced.text, replaced.regions, matcher),
    };
  }
}

/** Subject -> the name words harvested from all its records. */
export function subjectEvidence<R extends { subject: string }>(records: R[], harvest: (r: R) => string[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const r of records) {
    const words = harvest(r);
    if (words.length === 0) continue;
    let set = out.get(r.subject);
    if (!set) out.set(r.subject, (set = new Set()));
    for (const w of words) set.add(w);
  }
  return out;
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
