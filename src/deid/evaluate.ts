/**
 * Scoring de-identification against gold annotations: the figures a privacy office signs off on
 * before it enables a private benchmark (`ehrbench deid eval`), and what `npm run bench:deid` prints.
 *
 *   strict recall   a gold span counts as found only if every letter and digit of it is covered by
 *                   predicted spans (a partly masked name still identifies); a title or credential
 *                   around a name and "the" before a place need not be;
 *   precision       predicted spans are merged where they overlap or touch; a merged span is right if
 *                   it overlaps a gold span;
 *   masked share    characters inside predicted spans, over all characters;
 *   look-alikes     clinical text that resembles an identifier (5/10 pain, 120/80, 1/2 tab, Foley):
 *                   the share no predicted span touches. The gold file may list them; otherwise the
 *                   shapes below are taken outside the gold spans.
 * Misses and false positives are reported by document, type and offsets; the text itself only when
 * the caller asks (the CLI's --show-text, to the terminal).
 */
import type { Span } from './types';

export interface GoldSpan {
  start: number;
  end: number;
  type: string;
  /** Finer kind, when the annotator gave one (NAME: patient, relative, clinician; LOCATION: hospital, city...). */
  subtype?: string;
}

export interface GoldDocument {
  id: string;
  text: string;
  spans: GoldSpan[];
  lookalikes?: { start: number; end: number }[];
}

export interface TypeFigures {
  /** Gold spans of the type, and how many were wholly covered. */
  gold: number;
  found: number;
  recall: number | null;
  /** Merged predicted spans whose strongest member has the type, and how many touch gold. */
  predicted: number;
  correct: number;
  precision: number | null;
}

export interface Miss {
  id: string;
  type: string;
  subtype?: string;
  start: number;
  end: number;
  /** Characters of the gold span that were covered (0 when none). */
  coveredShare: number;
}

export interface FalsePositive {
  id: string;
  type: string;
  start: number;
  end: number;
}

export interface Evaluation {
  documents: number;
  characters: number;
  recall: number | null;
  precision: number | null;
  maskedShare: number;
  /** Characters masked outside every gold span, over all characters. */
  overMaskedShare: number;
  lookalikes: { total: number; untouched: number; survival: number | null; source: 'gold' | 'shapes' | 'mixed' };
  byType: Record<string, TypeFigures>;
  /** Recall by "TYPE:subtype" for gold spans that carry a subtype. */
  bySubtype: Record<string, TypeFigures>;
  misses: Miss[];
  falsePositives: FalsePositive[];
}

/** Shapes a detector may take for a date, a phone or a name that are clinical values (used when the gold lists no look-alikes). */
const LOOKALIKE_SHAPES = [
  /(?<![\w/.])\d{1,3}\/\d{1,3}(?![\w/]|\.\d)/g, // 5/10, 120/80, 1/2, 2/6
  /(?<![\w.-])\d{1,3}-\d{1,3}(?![\w-]|\.\d)/g, // 20-30, 4-5
  /\b\d+(?:\.\d+)?\s?(?:mg|mcg|ml|cc|units?|mmhg|meq|mmol|kg|cm|mm|%)(?![A-Za-z])/gi,
];

/**
 * What of a gold span must be covered: a title before a name, a credential after it and "the" before a
 * place say nothing about who or where (the annotation conventions of the i2b2 corpora), so an annotator
 * who included them is not held against the detector.
 */
const LEADING_TITLE = /^(?:(?:dr|doctor|mr|mrs|ms|miss|mx|prof|rev)\.?\s+)+/i;
const TRAILING_CREDENTIAL = /(?:[,\s]+(?:md|m\.d\.|rn|np|pa|pa-c|do|phd|pharmd|msw|lcsw|rrt|pt|ot|cna|lpn|aprn|fnp|dds|facp|facs)\.?)+$/i;

function required(text: string, g: GoldSpan): { start: number; end: number } {
  const value = text.slice(g.start, g.end);
  let start = g.start;
  let end = g.end;
  if (g.type === 'NAME') {
    const lead = LEADING_TITLE.exec(value)?.[0].length ?? 0;
    if (lead < value.length) start += lead;
    const trail = TRAILING_CREDENTIAL.exec(text.slice(start, end))?.[0].length ?? 0;
    if (end - trail > start) end -= trail;
  } else if (g.type === 'LOCATION') {
    const lead = /^the\s+/i.exec(value)?.[0].length ?? 0;
    if (lead < value.length) start += lead;
  }
  return { start, end };
}

function isAlnum(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c > 0x7f;
}

function merge(spans: readonly Span[]): (Span & { members: Span[] })[] {
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  const out: (Span & { members: Span[] })[] = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s.start <= last.end) {
      last.end = Math.max(last.end, s.end);
      last.members.push(s);
    } else out.push({ ...s, members: [s] });
  }
  return out;
}

/** The type a merged span reports: its longest member's. */
function mergedType(m: { members: Span[] }): string {
  return m.members.reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a)).type;
}

function lookalikesOf(doc: GoldDocument): { spans: { start: number; end: number }[]; fromGold: boolean } {
  if (doc.lookalikes) return { spans: doc.lookalikes, fromGold: true };
  const spans: { start: number; end: number }[] = [];
  for (const re of LOOKALIKE_SHAPES) {
    for (const m of doc.text.matchAll(re)) {
      const s = { start: m.index, end: m.index + m[0].length };
      if (!doc.spans.some((g) => g.start < s.end && s.start < g.end)) spans.push(s);
    }
  }
  return { spans, fromGold: false };
}

function figures(): TypeFigures {
  return { gold: 0, found: 0, recall: null, predicted: 0, correct: 0, precision: null };
}

function finish(f: TypeFigures): void {
  f.recall = f.gold ? f.found / f.gold : null;
  f.precision = f.predicted ? f.correct / f.predicted : null;
}

export function evaluate(docs: readonly GoldDocument[], predict: (doc: GoldDocument) => readonly Span[]): Evaluation {
  const byType = new Map<string, TypeFigures>();
  const bySubtype = new Map<string, TypeFigures>();
  const of = (map: Map<string, TypeFigures>, key: string) => {
    let f = map.get(key);
    if (!f) map.set(key, (f = figures()));
    return f;
  };
  let characters = 0;
  let masked = 0;
  let overMasked = 0;
  let lookTotal = 0;
  let lookKept = 0;
  let fromGold = 0;
  let fromShapes = 0;
  const misses: Miss[] = [];
  const falsePositives: FalsePositive[] = [];
  for (const doc of docs) {
    const n = doc.text.length;
    characters += n;
    const spans = predict(doc);
    const mask = new Uint8Array(n);
    for (const s of spans) mask.fill(1, Math.max(0, s.start), Math.min(n, s.end));
    const goldMask = new Uint8Array(n);
    for (const g of doc.spans) goldMask.fill(1, g.start, g.end);
    for (let i = 0; i < n; i++) {
      if (!mask[i]) continue;
      masked++;
      if (!goldMask[i]) overMasked++;
    }
    for (const g of doc.spans) {
      let letters = 0;
      let hit = 0;
      const need = required(doc.text, g);
      for (let i = need.start; i < need.end; i++) {
        if (!isAlnum(doc.text.charCodeAt(i))) continue;
        letters++;
        if (mask[i]) hit++;
      }
      const found = hit === letters;
      const t = of(byType, g.type);
      t.gold++;
      if (found) t.found++;
      if (g.subtype) {
        const st = of(bySubtype, `${g.type}:${g.subtype}`);
        st.gold++;
        if (found) st.found++;
      }
      if (!found) misses.push({ id: doc.id, type: g.type, ...(g.subtype ? { subtype: g.subtype } : {}), start: g.start, end: g.end, coveredShare: letters ? hit / letters : 0 });
    }
    for (const m of merge(spans)) {
      const type = mergedType(m);
      const t = of(byType, type);
      t.predicted++;
      const right = doc.spans.some((g) => g.start < m.end && m.start < g.end);
      if (right) t.correct++;
      else falsePositives.push({ id: doc.id, type, start: m.start, end: m.end });
    }
    const look = lookalikesOf(doc);
    if (look.spans.length) look.fromGold ? fromGold++ : fromShapes++;
    for (const l of look.spans) {
      lookTotal++;
      let touched = false;
      for (let i = l.start; i < l.end && !touched; i++) if (mask[i]) touched = true;
      if (!touched) lookKept++;
    }
  }
  let gold = 0;
  let found = 0;
  let predicted = 0;
  let correct = 0;
  for (const f of byType.values()) {
    finish(f);
    gold += f.gold;
    found += f.found;
    predicted += f.predicted;
    correct += f.correct;
  }
  for (const f of bySubtype.values()) finish(f);
  const sortedRecord = (m: Map<string, TypeFigures>) => Object.fromEntries([...m.entries()].sort(([a], [b]) => a.localeCompare(b)));
  return {
    documents: docs.length,
    characters,
    recall: gold ? found / gold : null,
    precision: predicted ? correct / predicted : null,
    maskedShare: characters ? masked / characters : 0,
    overMaskedShare: characters ? overMasked / characters : 0,
    lookalikes: { total: lookTotal, untouched: lookKept, survival: lookTotal ? lookKept / lookTotal : null, source: fromGold && fromShapes ? 'mixed' : fromShapes ? 'shapes' : 'gold' },
    byType: sortedRecord(byType),
    bySubtype: sortedRecord(bySubtype),
    misses,
    falsePositives,
  };
}
