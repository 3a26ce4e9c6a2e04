/**
 * The privacy office's annotated sample becomes the site's lexicons (`ehrbench deid lexicons propose`).
 * The subjects of the sample are split in two by a seeded hash of their ids: the lists are proposed
 * from the gold spans of one part (the training subjects) only, so that `deid eval --holdout-by
 * subject` can measure them on the other part (a sign-off must not measure on its own training set).
 *
 *   staff       NAME spans annotated `clinician`
 *   facilities  LOCATION spans annotated `hospital` or `other` (clinics, rehabs, homes, shelters, wards)
 *   places      LOCATION spans annotated `city`
 *   streets     LOCATION spans annotated `street`
 *
 * An entry is the span as written (folded, titles, credentials and "the" taken off), with how often it
 * was seen; never the note text around it. Entries that are ordinary words ("Will", "Hope", "Lakeside")
 * are marked: the site lexicons find them only after a cue (site-lexicons.ts), which the files say.
 * The manifest records which subjects trained the lists as keyed hashes of their ids (an id may be an
 * MRN), the split, and the gold file's sha256.
 */
import { createHash } from 'node:crypto';
import type { GoldRecord } from './gold';
import { foldValue } from './normalize';
import { SITE_LEXICON_KINDS, type SiteLexiconKind } from './site-lexicons';
import { vocabulary } from './vocabulary';

export const PROPOSAL_FORMAT = 'ehrbench-lexicon-proposal/1';

export interface ProposalManifest {
  format: typeof PROPOSAL_FORMAT;
  gold: { sha256: string; documents: number; subjects: number };
  split: { by: 'subject'; trainShare: number; seed: string; trainingSubjects: number };
  /** sha256(seed, subject id) of each training subject, sorted. */
  trainingSubjects: string[];
  lists: Record<SiteLexiconKind, { entries: number; needCue: number }>;
}

export interface ProposedEntry {
  entry: string;
  seen: number;
  /** An ordinary word (or two letters): found only after a cue. */
  needsCue: boolean;
}

export interface Proposal {
  manifest: ProposalManifest;
  lists: Record<SiteLexiconKind, ProposedEntry[]>;
}

/** Which list a gold span feeds, by its type and subtype. */
function kindOf(type: string, subtype: string | undefined): SiteLexiconKind | undefined {
  if (type === 'NAME') return subtype === 'clinician' ? 'staff' : undefined;
  if (type !== 'LOCATION') return undefined;
  if (subtype === 'hospital' || subtype === 'other') return 'facilities';
  if (subtype === 'city') return 'places';
  if (subtype === 'street') return 'streets';
  return undefined;
}

const TITLE = /^(?:(?:dr|doctor|mr|mrs|ms|miss|mx|prof|rev|fr|sr|sister|father|nurse)\.?\s+)+/i;
const CREDENTIAL = /(?:[,\s]+(?:md|m\.d\.|rn|r\.n\.|np|pa|pa-c|do|phd|pharmd|msw|lcsw|licsw|rrt|pt|ot|cna|lpn|aprn|fnp|dds|rd|slp))+\.?$/i;

/** The entry a gold span gives: folded, one space between words, without a title, a credential, "the" or a possessive. */
export function entryOf(value: string): string | undefined {
  let v = foldValue(value).replace(/\s+/g, ' ').trim();
  v = v
    .replace(TITLE, '')
    .replace(CREDENTIAL, '')
    .replace(/^the\s+/i, '');
  v = v
    .replace(/['’]s$/i, '')
    .replace(/^[\s,.;:()"'-]+|[\s,.;:()"'-]+$/g, '')
    .trim();
  // initials alone ("K.", "JT") and numbers name nobody a list can find again
  if (v.replace(/[^\p{L}]/gu, '').length < 2 || !/\p{L}/u.test(v)) return undefined;
  return v;
}

/**
 * Whether an entry is an ordinary word (or short enough to be one): such entries need a cue. An acronym
 * written in capitals ("LMC") does not: it is found wherever it is written so.
 */
export function needsCue(entry: string): boolean {
  if (/^[A-Z]{2,6}$/.test(entry)) return false;
  const words = entry.toLowerCase().match(/[a-z][a-z'-]*/g) ?? [];
  if (words.length !== 1) return false;
  const w = words[0] as string;
  return w.length <= 2 || vocabulary().isSafe(w);
}

export function subjectHash(seed: string, subject: string): string {
  return createHash('sha256').update(`${seed}\u0000${subject}`).digest('hex');
}

/** The training subjects: the first `share` of the subjects ordered by their seeded hash. */
export function trainingSubjects(subjects: string[], share: number, seed: string): Set<string> {
  const ordered = [...new Set(subjects)].sort((a, b) => subjectHash(seed, a).localeCompare(subjectHash(seed, b)));
  return new Set(ordered.slice(0, Math.round(ordered.length * share)));
}

export function subjectOf(d: GoldRecord): string {
  return d.subject ?? d.id;
}

export function propose(docs: GoldRecord[], goldBytes: Buffer, opts: { trainShare: number; seed: string }): Proposal {
  const subjects = docs.map(subjectOf);
  const training = trainingSubjects(subjects, opts.trainShare, opts.seed);
  // entry (lowercase) -> the forms written and how often
  const seen = Object.fromEntries(SITE_LEXICON_KINDS.map((k) => [k, new Map<string, Map<string, number>>()])) as Record<SiteLexiconKind, Map<string, Map<string, number>>>;
  for (const d of docs) {
    if (!training.has(subjectOf(d))) continue;
    for (const g of d.spans) {
      const kind = kindOf(g.type, g.subtype);
      const entry = kind && entryOf(d.text.slice(g.start, g.end));
      if (!kind || !entry) continue;
      const key = entry.toLowerCase();
      let forms = seen[kind].get(key);
      if (!forms) seen[kind].set(key, (forms = new Map()));
      forms.set(entry, (forms.get(entry) ?? 0) + 1);
    }
  }
  const lists = {} as Record<SiteLexiconKind, ProposedEntry[]>;
  for (const kind of SITE_LEXICON_KINDS) {
    lists[kind] = [...seen[kind].values()]
      .map((forms) => {
        // the form written most often (ties: the one with capitals, then the first in order)
        const [entry] = [...forms.entries()].sort((a, b) => b[1] - a[1] || capitals(b[0]) - capitals(a[0]) || a[0].localeCompare(b[0]))[0] as [string, number];
        const count = [...forms.values()].reduce((a, b) => a + b, 0);
        return { entry, seen: count, needsCue: needsCue(entry) };
      })
      .sort((a, b) => b.seen - a.seen || a.entry.localeCompare(b.entry));
  }
  const manifest: ProposalManifest = {
    format: PROPOSAL_FORMAT,
    gold: { sha256: createHash('sha256').update(goldBytes).digest('hex'), documents: docs.length, subjects: new Set(subjects).size },
    split: { by: 'subject', trainShare: opts.trainShare, seed: opts.seed, trainingSubjects: training.size },
    trainingSubjects: [...training].map((s) => subjectHash(opts.seed, s)).sort(),
    lists: Object.fromEntries(SITE_LEXICON_KINDS.map((k) => [k, { entries: lists[k].length, needCue: lists[k].filter((e) => e.needsCue).length }])) as ProposalManifest['lists'],
  };
  return { manifest, lists };
}

function capitals(s: string): number {
  return (s.match(/\p{Lu}/gu) ?? []).length;
}

/** One list's file: a header saying what it is and how to adopt it, then one entry a line with how often it was seen. */
export function listFile(kind: SiteLexiconKind, entries: ProposedEntry[], manifest: ProposalManifest): string {
  const head = [
    `# ${kind}: proposed by ehrbench deid lexicons propose from the gold spans of ${manifest.split.trainingSubjects} of ${manifest.gold.subjects} subjects`,
    `# (gold sha256 ${manifest.gold.sha256.slice(0, 16)}...). Review it: delete what is not the site's, add what is missing,`,
    `# then name this file in deid.siteLexicons.${kind}. One entry a line; text after " # " is a comment.`,
    `# Entries marked "needs a cue" are ordinary words: they are found only after a cue ("Dr.", "RN", "from", "at").`,
  ];
  const lines = entries.map((e) => `${e.entry} # seen ${e.seen}${e.needsCue ? '; needs a cue' : ''}`);
  return [...head, ...lines].join('\n') + '\n';
}
