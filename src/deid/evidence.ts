/**
 * Dataset-wide evidence: a site's staff and facilities recur across patients, and a name or place
 * caught once with a strong cue ("Dr. Okafor", "-kd RN", "transferred from SBH", "rehab at Hillcrest")
 * is missed where it recurs without one ("okafor aware", "back to SBH"). Before any record of a dataset
 * is de-identified, every record is surveyed (`Deidentifier.survey`), and this collector keeps, per
 * word, how often a strong rule took it and how often it stood as an ordinary word. A word becomes
 * evidence for the whole dataset when strong rules took it often enough against its ordinary uses:
 *   - a word no vocabulary explains ("okafor", "hillcrest", a misspelling): taken at least once, in at
 *     least a quarter of its occurrences ("levo" taken once by mistake among 500 uses does not spread);
 *   - a name that is also an English word ("Hope", "Will", "Grace"): taken at least three times, in at
 *     least half of its capitalised occurrences inside a sentence, and it spreads only to those, and
 *     only as a name (a place that is an English word, "Revere", does not spread);
 *   - a place acronym ("SBH", "HRC"): six letters at most, no English word ("LOG", "HEALTH"), taken at
 *     least once, in at least a quarter of its uses in capitals;
 *   - never a clinical word, a common English word that is no name, or a word of two letters.
 * The subject's own evidence (every name word of its other records, any rule) is kept beside it.
 *
 * What leaves this module is a `DatasetEvidence` (types.ts) that answers "is this word a name / a place
 * elsewhere?", in plain words within one process (`ehrbench deid`, `deid eval`), or sealed as keyed
 * hashes for the run store (`seal`, `SealedEvidence`), so that the list of a site's names is never
 * written out in clear. Its version (a hash of the sealed entries) is recorded with the run. Nothing
 * here is ever logged.
 */
import { createHash, createHmac } from 'node:crypto';
import type { DatasetEvidence } from './types';
import { vocabulary } from './vocabulary';

/** Rules strong enough that what they take may spread: cues of title, credential, role, relation, contact, signature; organisation and facility cues. */
export const STRONG_RULES = new Set([
  'name.title',
  'name.credential',
  'name.role',
  'name.relation',
  'name.contact',
  'name.signature',
  'name.inverted',
  'name.label',
  'name.subject',
  'place.organisation',
  'place.saint',
  'place.cue',
  'place.ward',
  'place.field',
  'place.employer',
]);

export type EvidenceKind = 'NAME' | 'LOCATION';

/** What one record adds: the subject's name words, the words strong rules took, and how often candidate words occurred. */
export interface RecordSurvey {
  subjectWords: string[];
  takes: { word: string; kind: EvidenceKind; acronym: boolean }[];
  /** Candidate words (lowercase) -> [all uses, capitalised uses inside a sentence, uses in capitals in mixed-case text]. */
  seen: Map<string, [number, number, number]>;
}

interface Tally {
  name: number;
  place: number;
  acronym: number;
  all: number;
  capitalisedMid: number;
  upper: number;
}

/** The share of a word's uses that strong rules must have taken before it spreads. */
export const MIN_SHARE_UNEXPLAINED = 0.25;
export const MIN_SHARE_ENGLISH = 0.5;
export const MIN_TAKES_ENGLISH = 3;

const key = (kind: 'N' | 'P' | 'A', word: string) => `${kind}:${word}`;

export class EvidenceCollector {
  private readonly tallies = new Map<string, Tally>();
  private readonly subjects = new Map<string, Set<string>>();
  private records = 0;

  private tally(word: string): Tally {
    let t = this.tallies.get(word);
    if (!t) this.tallies.set(word, (t = { name: 0, place: 0, acronym: 0, all: 0, capitalisedMid: 0, upper: 0 }));
    return t;
  }

  add(subject: string | undefined, survey: RecordSurvey): void {
    this.records += 1;
    if (subject && survey.subjectWords.length > 0) {
      let set = this.subjects.get(subject);
      if (!set) this.subjects.set(subject, (set = new Set()));
      for (const w of survey.subjectWords) set.add(w);
    }
    for (const [word, [all, mid, upper]] of survey.seen) {
      const t = this.tally(word);
      t.all += all;
      t.capitalisedMid += mid;
      t.upper += upper;
    }
    for (const take of survey.takes) {
      const t = this.tally(take.word);
      if (take.kind === 'NAME') t.name += 1;
      else if (take.acronym) t.acronym += 1;
      else t.place += 1;
    }
  }

  /** The name words of a subject's records. */
  subject(subject: string): ReadonlySet<string> | undefined {
    return this.subjects.get(subject);
  }

  subjectEntries(): { subject: string; words: string[] }[] {
    return [...this.subjects].map(([subject, words]) => ({ subject, words: [...words] }));
  }

  /** The words that spread, keyed by kind ("N:okafor", "P:hillcrest", "A:sbh"), sorted. */
  entries(): string[] {
    const v = vocabulary();
    const out: string[] = [];
    for (const [word, t] of this.tallies) {
      if (word.length < 3 || t.name + t.place + t.acronym === 0) continue;
      const f = v.facts(word);
      if (f.clinical) continue;
      // an acronym may be on a safe list and still be a place's ("DHC"); a word in lowercase may not
      if (t.acronym > 0 && t.acronym >= MIN_SHARE_UNEXPLAINED * Math.max(1, t.upper)) out.push(key('A', word));
      if (t.name + t.place === 0 || f.cls === 'safe') continue;
      const kind = t.name >= t.place ? 'N' : 'P';
      const taken = t.name + t.place;
      if (f.cls === 'ambiguous') {
        // an English word spreads only as a name, and only when taken three times or more
        if (kind === 'N' && taken >= MIN_TAKES_ENGLISH && taken >= MIN_SHARE_ENGLISH * Math.max(1, t.capitalisedMid)) out.push(key(kind, word));
      } else if (taken >= MIN_SHARE_UNEXPLAINED * Math.max(1, t.all)) out.push(key(kind, word));
    }
    return out.sort();
  }

  /** The evidence, in plain words, for use within this process. */
  dataset(): PlainEvidence {
    return new PlainEvidence(this.entries(), this.records);
  }
}

/** Version of a set of entries: which words spread decides what is masked, so a run records it. */
function versionOf(entries: string[], records: number): string {
  return `evidence/1:${records}:${entries.length}:${createHash('sha256').update(entries.join('\n')).digest('hex').slice(0, 16)}`;
}

/** Dataset evidence in plain words: within one process only, never written out. */
export class PlainEvidence implements DatasetEvidence {
  private readonly set: Set<string>;
  readonly version: string;
  readonly size: number;

  constructor(
    private readonly list: string[],
    records: number,
  ) {
    this.set = new Set(list);
    this.size = list.length;
    this.version = versionOf(list, records);
  }

  static empty(): PlainEvidence {
    return new PlainEvidence([], 0);
  }

  name(lower: string): boolean {
    return this.set.has(key('N', lower));
  }

  place(lower: string, acronym: boolean): boolean {
    return this.set.has(key(acronym ? 'A' : 'P', lower));
  }

  /** Counts by kind, for reports (never the words). */
  counts(): { names: number; places: number; acronyms: number } {
    const c = { names: 0, places: 0, acronyms: 0 };
    for (const e of this.list) {
      if (e.startsWith('N:')) c.names += 1;
      else if (e.startsWith('P:')) c.places += 1;
      else c.acronyms += 1;
    }
    return c;
  }

  /** The entries as keyed hashes (the de-identification secret is the key), for the run store. */
  seal(secret: Buffer): SealedEvidence {
    const hashes = this.list.map((e) => hmac(secret, e)).sort();
    return { version: this.version, hashes };
  }
}

/** What the run store keeps: keyed hashes of the entries and the version; no word in clear. */
export interface SealedEvidence {
  version: string;
  hashes: string[];
}

function hmac(secret: Buffer, entry: string): string {
  return createHmac('sha256', secret).update(entry).digest('hex').slice(0, 32);
}

/** Sealed evidence read back: each question is answered by hashing the word with the same key. */
export class HashedEvidence implements DatasetEvidence {
  private readonly set: Set<string>;
  private readonly asked = new Map<string, boolean>();

  constructor(
    sealed: SealedEvidence,
    private readonly secret: Buffer,
  ) {
    this.set = new Set(sealed.hashes);
  }

  private has(entry: string): boolean {
    let hit = this.asked.get(entry);
    if (hit === undefined) {
      hit = this.set.has(hmac(this.secret, entry));
      if (this.asked.size < 50_000) this.asked.set(entry, hit);
    }
    return hit;
  }

  name(lower: string): boolean {
    return this.set.size > 0 && this.has(key('N', lower));
  }

  place(lower: string, acronym: boolean): boolean {
    return this.set.size > 0 && this.has(key(acronym ? 'A' : 'P', lower));
  }
}
