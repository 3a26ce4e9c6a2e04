/**
 * The small-file way of reading a dataset's records (records.ts): the file read whole and parsed by
 * one native call. Streamed, PubMedQA's 2.5 MB of JSON took 120-180 ms to parse in a fresh process
 * (stream-json's tokenizer is JavaScript that has not been compiled yet) and 30-45 ms once warm;
 * JSON.parse takes 15-25 ms either way. A run capped with HELM's sample reads its dataset twice
 * before its first call, so in a fresh process (`ehrbench run`) that was most of the wait for it.
 *
 * It gives exactly the records the streaming reader gives, in the same order, or undefined: for a
 * file over WHOLE_FILE_BYTES (memory must not grow with a site's extract), and for anything the
 * streaming reader refuses or reports (bytes that are not text in the encoding, malformed JSON or
 * CSV, a record over the limit, an element that is not an object, a key repeated in a JSON object).
 * Those go the streaming way, whose message names the line or the element: one wording of each
 * problem, and this file never has to say what is wrong with a dataset.
 */
import { isUtf8 } from 'node:buffer';
import { open } from 'node:fs/promises';
import { parse as parseCsv } from 'csv-parse/sync';
import type { RawRecord, ReadOptions, RecordFormat, TextEncodingName } from './records';

/** Files up to this size are read whole: a few times the file while it is parsed, then its records. */
export const WHOLE_FILE_BYTES = 4 * 1024 * 1024;

/** The file's records, or undefined when the streaming reader must read it (see above). */
export async function wholeFileRecords(file: string, format: RecordFormat, opts: ReadOptions): Promise<RawRecord[] | undefined> {
  const bytes = await smallFile(file, opts.opened);
  if (!bytes) return undefined;
  const text = textOf(bytes, opts.encoding ?? 'utf-8');
  if (text === undefined) return undefined;
  let records: RawRecord[] | undefined;
  try {
    records = format === 'csv' ? csvRecords(text, opts.maxRecordBytes) : format === 'jsonl' ? jsonlRecords(text, opts.maxRecordBytes) : jsonRecords(text, format, opts.arrayField);
  } catch {
    // The parser's own error: the streaming reader reports it with its line or element.
    return undefined;
  }
  // The digest sees the bytes once, on the way that parsed them.
  if (records) opts.digest?.update(bytes);
  return records;
}

/**
 * The bytes of a regular file no larger than WHOLE_FILE_BYTES, read into a buffer of that size and
 * one byte more (a file growing meanwhile is seen, not followed); undefined otherwise or when it cannot
 * be read (the streaming reader says why). A device or a pipe goes the streaming way: its size says
 * nothing of how much it holds.
 */
async function smallFile(file: string, opened: ReadOptions['opened']): Promise<Buffer | undefined> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch {
    return undefined;
  }
  try {
    // A refusal of the file opened is the reader's answer, not a reason to try the streaming way.
    opened?.(handle.fd, file);
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
  try {
    const st = await handle.stat();
    if (!st.isFile() || st.size > WHOLE_FILE_BYTES) return undefined;
    const buffer = Buffer.alloc(st.size + 1);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      filled += bytesRead;
      if (bytesRead === 0 || filled === buffer.length) break;
    }
    return filled > st.size ? undefined : buffer.subarray(0, filled);
  } catch {
    return undefined;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** The text as the streaming reader decodes it; undefined for UTF-8 that it would refuse (invalid bytes, a NUL). */
function textOf(bytes: Buffer, encoding: TextEncodingName): string | undefined {
  if (encoding !== 'utf-8') {
    // Decoded as the streaming reader does (`stream: true`): Node 20's one-call decode of
    // windows-1252 takes a Latin-1 shortcut that turns its curly quotes and dashes into control codes.
    const decoder = new TextDecoder(encoding);
    return decoder.decode(bytes, { stream: true }) + decoder.decode();
  }
  if (!isUtf8(bytes) || bytes.includes(0)) return undefined;
  const text = bytes.toString('utf8');
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** csv-parse's own synchronous form, with the streaming reader's options. */
function csvRecords(text: string, maxRecordBytes: number | undefined): RawRecord[] {
  const rows = parseCsv(text, { columns: true, bom: true, skip_empty_lines: true, relax_quotes: false, ...(maxRecordBytes ? { max_record_size: maxRecordBytes } : {}) }) as Record<string, string>[];
  return rows.map((fields, i) => ({ position: i + 1, fields }));
}

/** Lines as the streaming reader cuts them: LF or CR LF, blank ones skipped, each within the limit (its CR counted). */
function jsonlRecords(text: string, maxRecordBytes: number | undefined): RawRecord[] | undefined {
  const records: RawRecord[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] as string;
    if (maxRecordBytes !== undefined && Buffer.byteLength(raw, 'utf8') > maxRecordBytes) return undefined;
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') continue;
    const value: unknown = JSON.parse(line);
    if (!isRecord(value)) return undefined;
    records.push({ position: i + 1, fields: value });
  }
  return records;
}

function jsonRecords(text: string, format: 'json-array' | 'json-object', arrayField: string | undefined): RawRecord[] | undefined {
  const top: unknown = JSON.parse(text);
  // A top-level key written twice: JSON.parse keeps the last value, the streaming reader sees both.
  const keys = isRecord(top) ? topLevelKeys(text) : undefined;
  if (keys && new Set(keys).size !== keys.length) return undefined;
  // The streaming reader's arrayField is a path (a dot goes one level down): only a plain key here.
  if (arrayField !== undefined && (arrayField.includes('.') || !isRecord(top))) return undefined;
  if (format === 'json-array') {
    const list = arrayField === undefined ? top : (top as Record<string, unknown>)[arrayField];
    if (!Array.isArray(list) || !list.every(isRecord)) return undefined;
    return list.map((fields: Record<string, unknown>, i) => ({ position: i + 1, fields }));
  }
  // A json-object's records in the file's order: its own key order would put integer-like keys
  // (PubMedQA's PMIDs) first, in numeric order, and HELM's sample is taken by position.
  if (arrayField !== undefined || !keys) return undefined;
  const members = top as Record<string, unknown>;
  if (!keys.every((key) => isRecord(members[key]))) return undefined;
  return keys.map((key, i) => ({ position: i + 1, key, fields: members[key] as Record<string, unknown> }));
}

/**
 * The keys of the top-level object of a JSON text that JSON.parse has accepted, in the text's order,
 * each as often as it is written. In valid JSON strings and brackets are enough to find them: a key is
 * the string right before a colon at depth 1. (Strings are matched whole, escapes included, so a
 * bracket or colon inside one is never counted.)
 */
export function topLevelKeys(text: string): string[] {
  const tokens = /"[^"\\]*(?:\\.[^"\\]*)*"|[{}[\]:]/g;
  const keys: string[] = [];
  let depth = 0;
  let lastString = '';
  for (let m = tokens.exec(text); m !== null; m = tokens.exec(text)) {
    const token = m[0];
    if (token === '{' || token === '[') depth += 1;
    else if (token === '}' || token === ']') depth -= 1;
    else if (token !== ':') lastString = token;
    else if (depth === 1) keys.push(JSON.parse(lastString) as string);
  }
  return keys;
}
