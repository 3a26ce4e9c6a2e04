/**
 * Streams raw records out of a data file, one at a time, so memory does not grow with the dataset.
 * Formats: CSV with a header row (csv-parse), JSON lines, a JSON array, or a JSON object keyed by id
 * (stream-json). Parse errors name the file and the line or record number, never the content.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parse as parseCsv } from 'csv-parse';
import { parser as jsonParser } from 'stream-json';
import { pick } from 'stream-json/filters/Pick';
import { streamArray } from 'stream-json/streamers/StreamArray';
import { streamObject } from 'stream-json/streamers/StreamObject';
import { UserError } from '../../errors';

import type { KnownIdentifiers, RecordFormat } from '../types';

export type { RecordFormat } from '../types';

export interface RawRecord {
  /** 1-based position in the file: the data row for CSV, the line for JSONL, the element otherwise. */
  position: number;
  /** The key of a json-object entry. */
  key?: string;
  fields: Record<string, unknown>;
  /** Identifiers the source knows from structured data (OMOP person, location, care site, provider), for de-identification. */
  known?: KnownIdentifiers;
  subjectId?: string;
}

export interface ReadOptions {
  /** json-array: the top-level key holding the array when the file is an object ({"data": [...]}). */
  arrayField?: string;
}

export async function* readRecords(file: string, format: RecordFormat, opts: ReadOptions = {}): AsyncGenerator<RawRecord> {
  const stream = createReadStream(file);
  const opened = new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  });
  try {
    await opened;
  } catch (err) {
    throw new UserError('dataset.unreadable', `${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the dataset path`);
  }
  switch (format) {
    case 'csv':
      yield* csvRecords(file, stream);
      break;
    case 'jsonl':
      yield* jsonlRecords(file, stream);
      break;
    case 'json-array':
    case 'json-object':
      yield* jsonRecords(file, stream, format, opts.arrayField);
      break;
  }
}

async function* csvRecords(file: string, stream: NodeJS.ReadableStream): AsyncGenerator<RawRecord> {
  const rows = stream.pipe(parseCsv({ columns: true, bom: true, skip_empty_lines: true, relax_quotes: false }));
  let position = 0;
  try {
    for await (const row of rows as AsyncIterable<Record<string, string>>) {
      position += 1;
      yield { position, fields: row };
    }
  } catch (err) {
    const e = err as { code?: string; lines?: number };
    throw new UserError('dataset.malformed', `${file}: CSV error ${e.code ?? ''} at line ${e.lines ?? '?'}; fix the file (quoting, column count)`);
  }
}

async function* jsonlRecords(file: string, stream: NodeJS.ReadableStream): AsyncGenerator<RawRecord> {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let position = 0;
  for await (const line of lines) {
    position += 1;
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

async function* jsonRecords(file: string, stream: NodeJS.ReadableStream, format: 'json-array' | 'json-object', arrayField?: string): AsyncGenerator<RawRecord> {
  let tokens: NodeJS.ReadableStream = stream.pipe(jsonParser());
  if (arrayField) tokens = tokens.pipe(pick({ filter: arrayField }));
  const pipeline = tokens.pipe(format === 'json-array' ? streamArray() : streamObject());
  let position = 0;
  try {
    for await (const item of pipeline as AsyncIterable<{ key: number | string; value: unknown }>) {
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
