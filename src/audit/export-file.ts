/**
 * Reading a file written by `audit export --format jsonl`: one JSON object per line, events
 * (`kind: event`, every column of the row) and signed checkpoints (`kind: checkpoint`). Streamed,
 * since an export may hold years of events; shared by offline verification and `audit import`.
 */
import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { UserError } from '../errors';
import type { SignedCheckpoint } from './checkpoint';
import type { AuditRecord } from './record';

type ExportLine = { kind?: string; statement?: string; signature?: string } & Partial<AuditRecord>;

/** The lines of an export written by `audit export --format jsonl`, parsed, with their numbers. */
async function* exportLines(file: string): AsyncGenerator<{ line: number; value: ExportLine }> {
  if (!existsSync(file)) throw new UserError('audit.export-missing', `${file}: no such export file`);
  let line = 0;
  for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    line += 1;
    if (!text.trim()) continue;
    try {
      yield { line, value: JSON.parse(text) as ExportLine };
    } catch {
      throw new UserError('audit.export-invalid', `${file}: line ${line} is not JSON`);
    }
  }
}

/** First pass over an export: its checkpoints (few), so the events can then be streamed. */
export async function exportCheckpoints(file: string): Promise<{ checkpoints: SignedCheckpoint[]; firstSeq: number | null }> {
  const checkpoints: SignedCheckpoint[] = [];
  let firstSeq: number | null = null;
  for await (const { line, value } of exportLines(file)) {
    if (value.kind === 'checkpoint' && typeof value.statement === 'string' && typeof value.signature === 'string') {
      let statement: SignedCheckpoint['statement'];
      try {
        statement = JSON.parse(value.statement) as SignedCheckpoint['statement'];
      } catch {
        throw new UserError('audit.export-invalid', `${file}: line ${line}: checkpoint statement is not JSON`);
      }
      checkpoints.push({ statement, statementText: value.statement, signature: value.signature });
    } else if (value.kind === 'event') firstSeq ??= Number(value.seq);
    else throw new UserError('audit.export-invalid', `${file}: line ${line} is neither an event nor a checkpoint`);
  }
  return { checkpoints, firstSeq };
}

/** Second pass: the events, a page at a time. */
export async function* exportEventPages(file: string, pageSize = 5000): AsyncGenerator<AuditRecord[]> {
  let page: AuditRecord[] = [];
  for await (const { value } of exportLines(file)) {
    if (value.kind !== 'event') continue;
    const { kind: _kind, ...record } = value;
    page.push(record as AuditRecord);
    if (page.length >= pageSize) {
      yield page;
      page = [];
    }
  }
  if (page.length) yield page;
}
