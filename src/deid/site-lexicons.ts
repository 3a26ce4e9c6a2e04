/**
 * Site lexicons: what a hospital knows about itself and may hand to de-identification, one entry a line
 * in files the configuration names (`deid.siteLexicons`): its staff roster, its facility, ward and
 * clinic names, its local towns and neighbourhoods, its streets. Every entry is found in every record,
 * in any case and with one-edit misspellings of its longer words. A word that is also an ordinary word
 * ("Will", "Hope", "Pines") or has two letters ("Mo") is not found alone: it needs a cue, which the name
 * and place rules give (`cueWords`: "RN will", "per hope", "from the Pines"), and a whole entry of
 * several words is found as it is ("Will Okafor"). Text after " # " on a line is a comment (the counts
 * `deid lexicons propose` writes). They raise recall where a site has lists; they are no substitute for
 * detection (which is measured without them).
 *
 * The files are read once; their contents are hashed into the de-identification version, so a changed
 * roster shows in every run that follows. Matching is by an index of words built once (not one regex
 * per entry per record), so a roster of thousands costs a lookup per word.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { UserError } from '../errors';
import { withinOneEdit } from './known';
import { foldValue } from './normalize';
import type { Token } from './text';
import { type Detection, PRIORITY, type SiteCueWords, type SpanType } from './types';
import { vocabulary } from './vocabulary';

export const SITE_LEXICON_KINDS = ['staff', 'facilities', 'places', 'streets'] as const;
export type SiteLexiconKind = (typeof SITE_LEXICON_KINDS)[number];
export type SiteLexiconFiles = Partial<Record<SiteLexiconKind, string>>;

const TYPE_OF: Record<SiteLexiconKind, SpanType> = { staff: 'NAME', facilities: 'LOCATION', places: 'LOCATION', streets: 'LOCATION' };

/** Words of a place entry that do not identify alone ("Hospital", "Street", "North"). */
const PLACE_GENERIC = new Set(
  'the of and at for in on hospital medical center centre clinic health healthcare care system rehab rehabilitation nursing home facility practice family group associates memorial general regional community university street st avenue ave road rd lane ln drive dr boulevard blvd court ct place pl way unit ward floor wing building north south east west saint mount mt new old upper lower main'.split(
    ' ',
  ),
);

interface Entry {
  kind: SiteLexiconKind;
  words: string[];
  /** Written in capitals in the file ("WCH", "LMC"): an acronym, found wherever it is written in capitals. */
  acronym: boolean;
}

/** A line of a lexicon file: printable, at most 200 characters, with a letter. */
function checkLine(line: string, file: string, lineNo: number): void {
  if (line.length > 200) throw new UserError('deid.site-lexicon-invalid', `${file}: line ${lineNo} is longer than 200 characters; one entry a line`);
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(line)) throw new UserError('deid.site-lexicon-invalid', `${file}: line ${lineNo} holds a control character; one plain-text entry a line`);
  if (!/\p{L}/u.test(line)) throw new UserError('deid.site-lexicon-invalid', `${file}: line ${lineNo} has no letter; an entry is a name or a place`);
}

function wordsOf(entry: string): string[] {
  return (
    foldValue(entry)
      .toLowerCase()
      .match(/[a-z][a-z'-]*[a-z]|[a-z]/g) ?? []
  ).map((w) => w.replace(/'s$/, ''));
}

export class SiteLexicons {
  /** sha256 of the kinds and contents, for the de-identification version. */
  readonly hash: string;
  readonly size: number;
  /** Single identifying words -> their kinds. */
  private readonly words = new Map<string, SiteLexiconKind>();
  /** Every one-letter deletion of a word of five letters or more -> the words it comes from. */
  private readonly deletions = new Map<string, string[]>();
  /** Multi-word entries by their first word. */
  private readonly phrases = new Map<string, Entry[]>();
  /** Ordinary words of entries, found only after a cue, by kind. */
  private readonly cueOnly = new Map<string, SiteLexiconKind>();
  /** Acronym entries, found where they are written in capitals in a mixed-case text. */
  private readonly acronyms = new Map<string, SiteLexiconKind>();

  private constructor(entries: Entry[], hash: string) {
    this.hash = hash;
    this.size = entries.length;
    const v = vocabulary();
    for (const e of entries) {
      if (e.words.length > 1) {
        const list = this.phrases.get(e.words[0] as string) ?? [];
        list.push(e);
        this.phrases.set(e.words[0] as string, list);
      }
      for (const w of e.words) {
        if (w.length < 2) continue;
        // a place's generic words ("Hospital", "Road") are not identifiers alone; a staff member's names
        // are, and so is an entry of one word ("WCH")
        if (e.kind !== 'staff' && e.words.length > 1 && (PLACE_GENERIC.has(w) || (w.length < 4 && v.isSafe(w)))) continue;
        if (e.acronym) this.acronyms.set(w, e.kind);
        // an ordinary word ("will", "hope") or a two-letter one ("mo") fires everywhere: only after a cue
        if (w.length <= 2 || v.isSafe(w)) {
          if (!this.cueOnly.has(w)) this.cueOnly.set(w, e.kind);
          continue;
        }
        if (!this.words.has(w)) this.words.set(w, e.kind);
        if (w.length >= 5) for (const d of deletionsOf(w)) this.deletions.set(d, [...(this.deletions.get(d) ?? []), w]);
      }
    }
  }

  static empty(): SiteLexicons {
    return new SiteLexicons([], 'none');
  }

  /** Reads the configured files; a missing or malformed file is a one-line error naming it (and the line). */
  static load(files: SiteLexiconFiles | undefined): SiteLexicons {
    const entries: Entry[] = [];
    const hash = createHash('sha256');
    for (const kind of SITE_LEXICON_KINDS) {
      const file = files?.[kind];
      if (!file) continue;
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new UserError(
          'deid.site-lexicon-unreadable',
          `${file}: cannot read the ${kind} lexicon (${(err as NodeJS.ErrnoException).code ?? 'error'}); fix deid.siteLexicons.${kind} in the configuration`,
        );
      }
      hash.update(`${kind}\u0000${text}\u0000`);
      text.split('\n').forEach((raw, i) => {
        const line = raw
          .replace(/\r$/, '')
          .replace(/\s+#\s.*$/, '')
          .trim();
        if (line === '' || line.startsWith('#')) return;
        checkLine(line, file, i + 1);
        const words = wordsOf(line);
        if (words.length > 0) entries.push({ kind, words, acronym: words.length === 1 && /^[A-Z]{2,6}$/.test(line) });
      });
    }
    return entries.length ? new SiteLexicons(entries, hash.digest('hex')) : new SiteLexicons([], files && Object.keys(files).length ? hash.digest('hex') : 'none');
  }

  get hasCueWords(): boolean {
    return this.cueOnly.size > 0;
  }

  /** The ordinary words of the lists, which the name and place rules take after a cue. */
  readonly cueWords: SiteCueWords = {
    name: (lower) => this.cueOnly.get(lower) === 'staff',
    place: (lower) => {
      const kind = this.cueOnly.get(lower);
      return kind !== undefined && kind !== 'staff';
    },
  };

  /** The kind of a word: exact, or one edit from a lexicon word of five letters or more. */
  private kindOf(lower: string): { kind: SiteLexiconKind; canonical: string } | undefined {
    const exact = this.words.get(lower);
    if (exact) return { kind: exact, canonical: lower };
    if (lower.length < 4) return undefined;
    const candidates = new Set<string>(this.deletions.get(lower) ?? []);
    for (const d of deletionsOf(lower)) {
      if (this.words.has(d)) candidates.add(d);
      for (const w of this.deletions.get(d) ?? []) candidates.add(w);
    }
    for (const c of candidates) if (withinOneEdit(lower, c)) return { kind: this.words.get(c) as SiteLexiconKind, canonical: c };
    return undefined;
  }

  /** Every occurrence of a lexicon entry or word in a text (the folded text and its tokens). */
  find(text: string, tokens: Token[], caps: boolean): Detection[] {
    if (this.size === 0) return [];
    const v = vocabulary();
    const out: Detection[] = [];
    const push = (first: Token, last: Token, kind: SiteLexiconKind, canonical: string[]) =>
      out.push({ start: first.start, end: last.end, type: TYPE_OF[kind], priority: PRIORITY[TYPE_OF[kind]] + 100, source: 'known', rule: `site.${kind}`, canonical });
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i] as Token;
      // whole entries first: "Maple Crest Manor", "Ann Kowalski"
      const phrase = this.phraseAt(tokens, i, text);
      if (phrase) {
        push(t, tokens[phrase.last] as Token, phrase.kind, phrase.words);
        i = phrase.last;
        continue;
      }
      const acronym = t.shape === 'upper' && !caps ? this.acronyms.get(t.lower) : undefined;
      if (acronym) {
        push(t, t, acronym, [t.lower]);
        continue;
      }
      const hit = this.kindOf(t.lower);
      if (!hit) continue;
      if (hit.canonical !== t.lower && (v.isSafe(t.lower) || caps)) continue; // "many" is not "Mary"
      push(t, t, hit.kind, [hit.canonical]);
    }
    return out;
  }

  private phraseAt(tokens: Token[], i: number, text: string): { last: number; kind: SiteLexiconKind; words: string[] } | undefined {
    const first = (tokens[i] as Token).lower;
    for (const e of this.phrases.get(first) ?? []) {
      let k = i;
      let ok = true;
      for (let w = 1; w < e.words.length; w++) {
        k++;
        const t = tokens[k];
        const want = e.words[w] as string;
        if (!t || /\n/.test(text.slice((tokens[k - 1] as Token).end, t.start)) || !(t.lower === want || (want.length >= 5 && withinOneEdit(t.lower, want)))) {
          ok = false;
          break;
        }
      }
      if (ok) return { last: k, kind: e.kind, words: e.words };
    }
    return undefined;
  }
}

function deletionsOf(w: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < w.length; i++) out.push(w.slice(0, i) + w.slice(i + 1));
  return out;
}
