/**
 * Streams raw records out of a data file, one at a time, so memory does not grow with the dataset.
 * Formats: CSV with a header row (csv-parse), JSON lines, a JSON array, or a JSON object keyed by id
 * (stream-json). The bytes are text in the declared encoding: UTF-8 by default, checked and never
 * repaired (a Latin-1 file read as UTF-8 would reach the model with replacement characters), or a
 * declared single-byte encoding. A CSV row or JSONL line over the record limit is refused while it is
 * read, before it is in memory whole. Errors name the file and the line or record number, never the
 * content.
 *
 * A small file (WHOLE_FILE_BYTES) is read whole and parsed in one call instead (whole.ts): the same
 * records in the same order, several times faster. Whatever that way does not take as it is (a
 * problem to report, a key repeated) goes the streaming way, which says what is wrong.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { isUtf8 } from 'node:buffer';
import { pipeline, Readable } from 'node:stream';
import { parse as parseCsv } from 'csv-parse';
import { parser as jsonParser } from 'stream-json';
import { pick } from 'stream-json/filters/Pick';
import { streamArray } from 'stream-json/streamers/StreamArray';
import { streamObject } from 'stream-json/streamers/StreamObject';
import { UserError } from '../../errors';
import { wholeFileRecords } from './whole';

import type { KnownIdentifiers, RecordFormat } from '../types';

export type { RecordFormat } from '../types';

/** How a file's bytes are text (site-data.schema.json, `encoding`). */
export type TextEncodingName = 'utf-8' | 'latin1' | 'windows-1252';

export interface RawRecord {
  /** 1-based position in the file: the data row for CSV, the line for JSONL, the element otherwise. */
  position: number;
  /** The key of a json-object entry. */
  key?: string;
  fields: Record<string, unknown>;
  /** Identifiers the source knows from structured data (OMOP person, location, care site, provider), for de-identification. */
  known?: KnownIdentifiers;
  subjectId?: string;
  /** An OMOP source's demographics of the record, read when the binding declares OMOP strata. */
  demographics?: import('../strata').OmopDemographics;
}

export interface ReadOptions {
  /** json-array: the top-level key holding the array when the file is an object ({"data": [...]}). */
  arrayField?: string;
  /** The file's encoding; UTF-8 when not declared. */
  encoding?: TextEncodingName;
  /** Where a site declares the encoding, for the message that suggests it ("the source of benchmarks.x in ..."). */
  encodingAt?: string;
  /** The most bytes a CSV row or JSONL line may hold; none when absent. */
  maxRecordBytes?: number;
  /** Fed every byte read, so that a pin is checked on exactly the bytes that were parsed. */
  digest?: Hash;
  /**
   * The file's pinned sha256 (instead of `digest`), checked by readRecords on the bytes it parses, and
   * the error for a mismatch. A check of the file before the read cannot see it replaced in between.
   */
  pin?: { sha256: string; mismatch: () => UserError };
  /** Called with each file descriptor opened, before a byte is read: throws to refuse the file (catalog/confine.ts). */
  opened?: (fd: number, file: string) => void;
}

/** The message of a record over the limit; the catalog's own limit check says the same of instances. */
export function recordTooLarge(where: string, record: number, limit: number): UserError {
  return new UserError(
    'dataset.record-too-large',
    `${where}: record ${record} is larger than the per-record limit of ${limit} bytes (catalog.maxRecordBytes in the config); shorten or remove the record, or raise the limit`,
  );
}

/**
 * A file's records. With `pin`, the bytes parsed are the bytes checked: a file read whole is checked
 * before its first record is given; a streamed one (over WHOLE_FILE_BYTES) once its last record is
 * read, which stops the reader with the mismatch (a reader that stops earlier, a capped run taking
 * the first N, has only the check made before it, verifyDataset's).
 */
export async function* readRecords(file: string, format: RecordFormat, opts: ReadOptions = {}): AsyncGenerator<RawRecord> {
  const { pin, ...rest } = opts;
  const digest = pin ? createHash('sha256') : undefined;
  const read = digest ? { ...rest, digest } : rest;
  const matches = () => !pin || digest?.digest('hex') === pin.sha256;
  const whole = await wholeFileRecords(file, format, read);
  if (whole) {
    if (!matches()) throw (pin as NonNullable<typeof pin>).mismatch();
    yield* whole;
    return;
  }
  yield* streamRecords(file, format, read);
  if (!matches()) throw (pin as NonNullable<typeof pin>).mismatch();
}

/** The streaming reader itself, whatever the file's size (readRecords takes it for all but small files). */
export async function* streamRecords(file: string, format: RecordFormat, opts: ReadOptions = {}): AsyncGenerator<RawRecord> {
  const stream = createReadStream(file);
  const opened = new Promise<number>((resolve, reject) => {
    stream.once('open', resolve);
    stream.once('error', reject);
  });
  let fd: number;
  try {
    fd = await opened;
  } catch (err) {
    throw new UserError('dataset.unreadable', `${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the dataset path`);
  }
  try {
    opts.opened?.(fd, file);
  } catch (err) {
    stream.destroy();
    throw err;
  }
  const text = decodedText(file, opts.digest ? digested(stream, opts.digest) : stream, opts);
  try {
    switch (format) {
      case 'csv':
        yield* csvRecords(file, text, opts.maxRecordBytes);
        break;
      case 'jsonl':
        yield* jsonlRecords(file, text, opts.maxRecordBytes);
        break;
      case 'json-array':
      case 'json-object':
        yield* jsonRecords(file, text, format, opts.arrayField);
        break;
    }
  } finally {
    // Reading may stop early (a refused record, a consumer that has enough): close the file now.
    stream.destroy();
  }
}

async function* digested(bytes: AsyncIterable<Buffer>, digest: Hash): AsyncGenerator<Buffer> {
  for await (const chunk of bytes) {
    digest.update(chunk);
    yield chunk;
  }
}

/**
 * Bytes at the end of a chunk that begin a UTF-8 character the chunk does not complete; they are
 * checked with the next chunk. Continuation bytes (10xxxxxx) are skipped back to their lead byte.
 */
function incompleteTail(buf: Buffer): number {
  for (let back = 1; back <= Math.min(3, buf.length); back += 1) {
    const byte = buf[buf.length - back] as number;
    if ((byte & 0xc0) === 0x80) continue;
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

function newlines(buf: Buffer): number {
  let count = 0;
  for (let at = buf.indexOf(0x0a); at !== -1; at = buf.indexOf(0x0a, at + 1)) count += 1;
  return count;
}

/**
 * How many lines of an invalid chunk come before the one holding the invalid bytes. A newline byte is
 * never part of a multi-byte character, so the chunk is invalid exactly where one of its lines is.
 */
function linesBeforeInvalid(buf: Buffer): number {
  let start = 0;
  let line = 0;
  for (let nl = buf.indexOf(0x0a); nl !== -1 && isUtf8(buf.subarray(start, nl)); nl = buf.indexOf(0x0a, start)) {
    start = nl + 1;
    line += 1;
  }
  return line;
}

/**
 * The file's text, chunk by chunk. Declared single-byte encodings decode every byte (TextDecoder);
 * UTF-8 is checked up to each chunk's last complete character, and a chunk with invalid bytes is
 * refused with the line they are on. A UTF-8 byte order mark is dropped.
 */
async function* decodedText(file: string, bytes: AsyncIterable<Buffer>, opts: ReadOptions): AsyncGenerator<string> {
  const encoding = opts.encoding ?? 'utf-8';
  if (encoding !== 'utf-8') {
    const decoder = new TextDecoder(encoding);
    for await (const chunk of bytes) yield decoder.decode(chunk, { stream: true });
    const rest = decoder.decode();
    if (rest) yield rest;
    return;
  }
  const refuse = (line: number) =>
    new UserError(
      'dataset.encoding',
      `${file}: line ${line} is not valid UTF-8; convert the file to UTF-8, or declare its "encoding" ("latin1" or "windows-1252") in ${opts.encodingAt ?? 'its source in the site data file'}`,
    );
  // NUL is valid UTF-8 but no text file holds it: it is how a UTF-16 file without a BOM reads as UTF-8.
  const nul = (line: number) => new UserError('dataset.encoding', `${file}: line ${line} holds a NUL byte, so it is not UTF-8 text (a UTF-16 export?); convert the file to UTF-8`);
  let carry = Buffer.alloc(0);
  let line = 1;
  let atStart = true;
  for await (const chunk of bytes) {
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    const whole = buf.subarray(0, buf.length - incompleteTail(buf));
    if (!isUtf8(whole)) throw refuse(line + linesBeforeInvalid(whole));
    const zero = whole.indexOf(0x00);
    if (zero !== -1) throw nul(line + newlines(whole.subarray(0, zero)));
    line += newlines(whole);
    carry = Buffer.from(buf.subarray(whole.length));
    let text = whole.toString('utf8');
    if (atStart && text.length > 0) {
      if (text.startsWith('\uFEFF')) text = text.slice(1);
      atStart = false;
    }
    if (text.length > 0) yield text;
  }
  // The file ends inside a character.
  if (carry.length) throw refuse(line);
}

/**
 * The text through the parsing stages, as the last stage's stream: an error in any of them (a decoding
 * error, a record over the limit) ends it, so its reader sees the error instead of waiting.
 */
function parsed(text: AsyncIterable<string>, ...stages: NodeJS.ReadWriteStream[]): NodeJS.ReadableStream {
  return pipeline([Readable.from(text), ...stages] as unknown as [NodeJS.ReadableStream, NodeJS.ReadWriteStream], () => undefined) as unknown as NodeJS.ReadableStream;
}

async function* csvRecords(file: string, text: AsyncIterable<string>, maxRecordBytes: number | undefined): AsyncGenerator<RawRecord> {
  const rows = parsed(text, parseCsv({ columns: true, bom: true, skip_empty_lines: true, relax_quotes: false, ...(maxRecordBytes ? { max_record_size: maxRecordBytes } : {}) }));
  let position = 0;
  try {
    for await (const row of rows as AsyncIterable<Record<string, string>>) {
      position += 1;
      yield { position, fields: row };
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    // csv-parse's error carries the field it was reading: only its code and counts are used.
    const e = err as { code?: string; lines?: number; records?: number };
    if (e.code === 'CSV_MAX_RECORD_SIZE') throw recordTooLarge(file, (e.records ?? position) + 1, maxRecordBytes as number);
    throw new UserError('dataset.malformed', `${file}: CSV error ${e.code ?? ''} at line ${e.lines ?? '?'}; fix the file (quoting, column count)`);
  }
}

/**
 * The lines of the text, numbered from 1 (CR LF or LF). A line is gathered in pieces and refused as
 * soon as it passes `maxBytes`, so an oversized line is never held whole.
 */
async function* lines(file: string, text: AsyncIterable<string>, maxBytes: number | undefined): AsyncGenerator<{ number: number; line: string }> {
  let pieces: string[] = [];
  let bytes = 0;
  let number = 0;
  const add = (piece: string) => {
    bytes += Buffer.byteLength(piece, 'utf8');
    if (maxBytes !== undefined && bytes > maxBytes) throw recordTooLarge(file, number + 1, maxBytes);
    pieces.push(piece);
  };
  for await (const chunk of text) {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
      add(chunk.slice(start, nl));
      number += 1;
      yield { number, line: pieces.join('').replace(/\r$/, '') };
      pieces = [];
      bytes = 0;
      start = nl + 1;
    }
    add(chunk.slice(start));
  }
  if (pieces.length) yield { number: number + 1, line: pieces.join('').replace(/\r$/, '') };
}

async function* jsonlRecords(file: string, text: AsyncIterable<string>, maxRecordBytes: number | undefined): AsyncGenerator<RawRecord> {
  for await (const { number: position, line } of lines(file, text, maxRecordBytes)) {
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new UserError('dataset.malformed', `${file}: line ${position} is not valid JSON; each line must be one JSON object`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new UserError('dataset.malformed', `${file}: line ${position} is not a JSON object`);
    }
    yield { position, fields: value as Record<string, unknown> };
  }
}

async function* jsonRecords(file: string, text: AsyncIterable<string>, format: 'json-array' | 'json-object', arrayField?: string): AsyncGenerator<RawRecord> {
  // Packed values only (no streamed chunks of each string and number): a third of the tokens, and the
  // records are assembled whole anyway.
  const items = parsed(text, jsonParser({ streamValues: false }), ...(arrayField ? [pick({ filter: arrayField })] : []), format === 'json-array' ? streamArray() : streamObject());
  let position = 0;
  try {
    for await (const item of items as AsyncIterable<{ key: number | string; value: unknown }>) {
      position += 1;
      const value = item.value;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new UserError('dataset.malformed', `${file}: element ${position} is not a JSON object`);
      }
      yield { position, ...(format === 'json-object' ? { key: String(item.key) } : {}), fields: value as Record<string, unknown> };
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError('dataset.malformed', `${file}: not valid ${format === 'json-array' ? 'JSON array' : 'JSON object'} after element ${position}; fix the file`);
  }
}
