/** All detectors over one text, and the resolution of overlapping spans into one list. */
import { isAllCaps, type Token, tokenize } from '../text';
import { vocabulary, type WordFacts } from '../vocabulary';
import { type Detection, type Evidence, PRIORITY } from '../types';
import { foreignRuns } from '../scripts';
import { detectDates } from './dates';
import { detectAddresses } from './addresses';
import { detectExtracts } from './extracts';
import { LocationDetector } from './locations';
import { NameDetector } from './names';
import { detectPatterns } from './patterns';

export { detectDates, monthNumber } from './dates';
export { NameDetector } from './names';
export { LocationDetector } from './locations';

/** What every detector may want to know about a text, computed once. */
export interface TextInfo {
  /** Written in ALL CAPS (ICU shorthand), where case says nothing. */
  caps: boolean;
  tokens: Token[];
  /** What the vocabularies say of each token. */
  facts: WordFacts[];
  /** What the subject's other records and the dataset taught. */
  evidence?: Evidence;
}

export function textInfo(text: string, evidence?: Evidence): TextInfo {
  const tokens = tokenize(text);
  const v = vocabulary();
  return { caps: isAllCaps(text), tokens, facts: tokens.map((t) => v.facts(t.lower)), ...(evidence ? { evidence } : {}) };
}

/** A detector: text -> detections. */
export type Detector = (text: string, info: TextInfo) => Detection[];

export function defaultDetectors(): Detector[] {
  const names = new NameDetector();
  const places = new LocationDetector();
  return [
    (t) => detectPatterns(t),
    (t, i) => detectDates(t, i.caps),
    (t, i) => names.detect({ text: t, tokens: i.tokens, facts: i.facts, caps: i.caps, ...(i.evidence ? { evidence: i.evidence } : {}) }),
    (t, i) =>
      places.detect({
        text: t,
        tokens: i.tokens,
        facts: i.facts,
        caps: i.caps,
        ...(i.evidence?.dataset ? { dataset: i.evidence.dataset } : {}),
        ...(i.evidence?.site ? { site: i.evidence.site } : {}),
      }),
    (t, i) => detectAddresses(t, i.caps, i.tokens),
    (t) => detectExtracts(t),
    (t) => foreignRuns(t).map(([start, end]) => ({ start, end, type: 'NAME' as const, priority: PRIORITY.NAME, source: 'detector' as const, rule: 'name.script' })),
  ];
}

/**
 * Overlapping detections become one span covering all of them (never less: a partial identifier is
 * still an identifier), typed by the strongest. A date keeps its renderer only if the span is exactly
 * the date that was read.
 */
export function resolve(detections: Detection[]): Detection[] {
  const sorted = [...detections].sort((a, b) => a.start - b.start || b.end - a.end || b.priority - a.priority);
  const out: Detection[] = [];
  let cur: Detection | undefined;
  let members: Detection[] = [];
  const flush = () => {
    if (!cur) return;
    // A span that contains the others names the whole ("colette.hollis@example.net" is an EMAIL, not a
    // NAME); between spans that only overlap, the stronger type wins.
    const contains = members.find((m) => m.start === cur!.start && m.end === cur!.end);
    const best =
      contains && members.every((m) => m === contains || m.end - m.start < contains.end - contains.start)
        ? contains
        : members.reduce((a, b) => (b.priority > a.priority || (b.priority === a.priority && b.end - b.start > a.end - a.start) ? b : a));
    const merged: Detection = {
      start: cur.start,
      end: cur.end,
      type: best.type,
      priority: best.priority,
      source: members.some((m) => m.source === 'known') ? 'known' : 'detector',
      ...(best.rule ? { rule: best.rule } : {}),
    };
    const date = members.find((m) => m.date && m.start === merged.start && m.end === merged.end);
    if (merged.type === 'DATE' && date?.date) merged.date = date.date;
    const canonical = members.flatMap((m) => m.canonical ?? []);
    if (canonical.length) merged.canonical = canonical;
    out.push(merged);
  };
  for (const d of sorted) {
    if (cur && d.start < cur.end) {
      cur.end = Math.max(cur.end, d.end);
      members.push(d);
      continue;
    }
    flush();
    cur = { ...d };
    members = [d];
  }
  flush();
  return out;
}

export function detect(text: string, detectors: Detector[], info: TextInfo = textInfo(text), extra: Detection[] = []): Detection[] {
  const all = [...extra];
  for (const d of detectors) all.push(...d(text, info));
  return resolve(all);
}
