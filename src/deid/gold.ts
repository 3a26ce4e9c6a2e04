/**
 * Gold annotations for `ehrbench deid eval` and the de-identification benchmark, in two forms:
 *   - JSON lines, one document a line: {"id", "text", "spans": [{"start", "end", "type", "subtype"?}],
 *     "lookalikes"?: [{"start", "end"}], "subject"?, "known"?} (schemas/deid-gold.schema.json);
 *   - marked text, easier to write by hand: identifiers inline as {{TYPE|text}} or {{TYPE:subtype|text}},
 *     look-alikes as {{SAFE|text}}, documents introduced by "=== note ID [style=S]" lines and grouped by
 *     "### subject ID" lines, each optionally followed by a "known: {...}" JSON line. A file without any
 *     "=== note" line is one document named after the file.
 * Errors name the file, the line and what is wrong, never the text.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { KnownIdentifiers } from '../catalog';
import { validateOrThrow } from '../schema';
import { UserError } from '../errors';
import type { GoldDocument, GoldSpan } from './evaluate';
import { SPAN_TYPES } from './types';

export interface GoldRecord extends GoldDocument {
  subject?: string;
  style?: string;
  known?: KnownIdentifiers;
}

const TYPES = new Set<string>(SPAN_TYPES);
const MARK = /\{\{([A-Z_]+)(?::([a-z-]+))?\|([^{}|]*)\}\}/g;

/** One document's marked text -> plain text, gold spans and look-alikes. */
function unmark(raw: string, where: () => string): Pick<GoldDocument, 'text' | 'spans'> & { lookalikes?: { start: number; end: number }[] } {
  const spans: GoldSpan[] = [];
  const lookalikes: { start: number; end: number }[] = [];
  let text = '';
  let pos = 0;
  for (const m of raw.matchAll(MARK)) {
    text += raw.slice(pos, m.index);
    const [type, subtype, inner] = [m[1] as string, m[2], m[3] as string];
    const start = text.length;
    text += inner;
    if (type === 'SAFE') lookalikes.push({ start, end: text.length });
    else if (TYPES.has(type)) spans.push({ start, end: text.length, type, ...(subtype ? { subtype } : {}) });
    else throw new UserError('deid.gold-invalid', `${where()}: unknown mark type ${type}; use one of ${SPAN_TYPES.join(', ')} or SAFE`);
    pos = m.index + m[0].length;
  }
  text += raw.slice(pos);
  if (/\{\{|\}\}/.test(text)) throw new UserError('deid.gold-invalid', `${where()}: a mark is not closed or is malformed; write {{TYPE|text}}`);
  // no SAFE marks: let eval take the look-alike shapes instead of reporting none
  return { text, spans, ...(lookalikes.length ? { lookalikes } : {}) };
}

/** Marked text (see the header) -> gold documents. */
export function parseMarked(raw: string, file: string): GoldRecord[] {
  const lines = raw.replace(/\r\n/g, '\n').split('\n');
  if (!lines.some((l) => l.startsWith('=== note'))) {
    const doc = unmark(raw.replace(/\r\n/g, '\n').replace(/\n+$/, ''), () => file);
    return [{ id: basename(file), ...doc }];
  }
  const docs: GoldRecord[] = [];
  let subject: string | undefined;
  let known: KnownIdentifiers | undefined;
  let current: { id: string; style?: string; line: number; body: string[] } | undefined;
  const ids = new Set<string>();
  const flush = () => {
    if (!current) return;
    const c = current;
    if (ids.has(c.id)) throw new UserError('deid.gold-invalid', `${file}: line ${c.line}: note ${c.id} occurs more than once; ids must be unique`);
    ids.add(c.id);
    const doc = unmark(c.body.join('\n').replace(/\n+$/, ''), () => `${file}: note ${c.id} (line ${c.line})`);
    docs.push({ id: c.id, ...doc, ...(c.style ? { style: c.style } : {}), ...(subject ? { subject } : {}), ...(known ? { known } : {}) });
    current = undefined;
  };
  lines.forEach((line, i) => {
    const lineNo = i + 1;
    if (line.startsWith('### subject')) {
      flush();
      subject = line.slice('### subject'.length).trim() || undefined;
      known = undefined;
      return;
    }
    if (!current && line.startsWith('known:')) {
      try {
        known = validateOrThrow<KnownIdentifiers>('deid-known.schema.json', JSON.parse(line.slice('known:'.length)), `${file}: line ${lineNo}`, 'deid.gold-invalid');
      } catch (err) {
        if (err instanceof UserError) throw err;
        throw new UserError('deid.gold-invalid', `${file}: line ${lineNo}: the known identifiers are not valid JSON`);
      }
      return;
    }
    const note = /^=== note\s+(\S+)(?:\s+style=(\S+))?\s*$/.exec(line);
    if (note) {
      flush();
      current = { id: note[1] as string, ...(note[2] ? { style: note[2] } : {}), line: lineNo, body: [] };
      return;
    }
    if (current) current.body.push(line);
    else if (line.trim() !== '' && !line.startsWith('#')) throw new UserError('deid.gold-invalid', `${file}: line ${lineNo}: text before the first "=== note" line`);
  });
  flush();
  return docs;
}

/** Gold JSON lines -> documents, each validated; spans must lie inside the text. */
export function parseGoldJsonl(raw: string, file: string): GoldRecord[] {
  const docs: GoldRecord[] = [];
  const ids = new Set<string>();
  raw.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const where = `${file}: line ${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new UserError('deid.gold-invalid', `${where} is not valid JSON; each line must be {"id", "text", "spans": [{"start", "end", "type"}]}`);
    }
    const doc = validateOrThrow<GoldRecord>('deid-gold.schema.json', value, where, 'deid.gold-invalid');
    if (ids.has(doc.id)) throw new UserError('deid.gold-invalid', `${where}: id occurs more than once; ids must be unique`);
    ids.add(doc.id);
    for (const [k, s] of [...doc.spans, ...(doc.lookalikes ?? [])].entries()) {
      if (s.end <= s.start || s.end > doc.text.length)
        throw new UserError('deid.gold-invalid', `${where}: span ${k + 1} (${s.start}-${s.end}) is empty or outside the text (length ${doc.text.length})`);
    }
    docs.push(doc);
  });
  return docs;
}

/** A gold file by its form: marked text for .txt and .md, JSON lines otherwise. */
export function readGold(file: string): GoldRecord[] {
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError('deid.gold-unreadable', `${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the --gold path`);
  }
  return /\.(?:txt|md)$/i.test(file) ? parseMarked(raw, file) : parseGoldJsonl(raw, file);
}
