/**
 * The ratings file of MedHELM's clinician study: one row per clinician rating, with the jury's scores of
 * the item repeated on each of its rows:
 *
 *   username, instance_id, dataset_name, accuracy, completeness, clarity, llm_accuracy, llm_completeness, llm_clarity
 *
 * Read strictly, since a wrong number here becomes a published agreement figure:
 *  - exactly these columns, in any order: a missing one, a repeated one or any other column is refused.
 *    Another column is not skipped: it could be a free-text comment (patient text) that the file should
 *    not carry into ehrbench, and a misspelt score column must not be silently dropped;
 *  - a clinician's score is a whole number 1-5 (4.0 accepted: pandas writes a column with a gap that
 *    way), or empty / NA / NaN for a criterion not rated; the jury's is a number 1-5, never empty;
 *  - one rating per username and item; the jury's scores identical on every row of an item;
 *  - an item is (dataset_name, instance_id): the same id in two datasets is two items.
 * Every error names the file, the line and the column and says what to do, and never quotes a cell: a
 * cell may hold patient text.
 */
import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { UserError } from '../errors';
import type { AgreementInput, ClinicianRating, JuryScore } from './agreement';

export const MEDHELM_CRITERIA = ['accuracy', 'completeness', 'clarity'] as const;
const ID_COLUMNS = ['username', 'instance_id', 'dataset_name'] as const;
const JURY_COLUMNS = MEDHELM_CRITERIA.map((c) => `llm_${c}`);
export const MEDHELM_COLUMNS: readonly string[] = [...ID_COLUMNS, ...MEDHELM_CRITERIA, ...JURY_COLUMNS];

const MISSING = /^\s*(|na|nan)\s*$/i;
const NUMBER = /^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/;
/** A header shown in an error only if it looks like a column name, not like a cell that slipped up. */
const SHOWABLE_HEADER = /^[A-Za-z0-9_ .-]{1,40}$/;

function fail(file: string, where: string, what: string): never {
  throw new UserError('ratings.file-invalid', `${file}: ${where}: ${what}`);
}

function headerName(header: string, index: number): string {
  return SHOWABLE_HEADER.test(header) ? `column ${index + 1} (${header.trim()})` : `column ${index + 1}`;
}

function checkHeader(file: string, header: readonly string[]): Map<string, number> {
  const at = new Map<string, number>();
  header.forEach((h, i) => {
    const name = h.trim();
    if (!MEDHELM_COLUMNS.includes(name)) fail(file, `line 1, ${headerName(h, i)}`, `not a column of the MedHELM ratings file; remove it (the file must have exactly ${MEDHELM_COLUMNS.join(', ')})`);
    if (at.has(name)) fail(file, `line 1, column ${i + 1} (${name})`, 'appears twice; keep one');
    at.set(name, i);
  });
  const missing = MEDHELM_COLUMNS.filter((c) => !at.has(c));
  if (missing.length) fail(file, 'line 1', `missing column ${missing.join(', ')}; the file must have exactly ${MEDHELM_COLUMNS.join(', ')}`);
  return at;
}

function clinicianScore(file: string, line: number, column: string, cell: string): number | null {
  if (MISSING.test(cell)) return null;
  const v = NUMBER.test(cell) ? Number(cell) : NaN;
  if (!Number.isInteger(v) || v < 1 || v > 5) fail(file, `line ${line}, column ${column}`, "a clinician's score must be a whole number 1-5, or empty if not rated; correct the cell");
  return v;
}

function juryScore(file: string, line: number, column: string, cell: string): number {
  const v = NUMBER.test(cell) ? Number(cell) : NaN;
  if (!Number.isFinite(v) || v < 1 || v > 5) fail(file, `line ${line}, column ${column}`, "the jury's score must be a number 1-5 on every row; correct the cell");
  return v;
}

function text(file: string, line: number, column: string, cell: string): string {
  const v = cell.trim();
  if (v === '') fail(file, `line ${line}, column ${column}`, 'is empty; every row needs a username, instance_id and dataset_name');
  return v;
}

interface Row {
  record: string[];
  line: number;
}

function rows(file: string, content: string): { header: string[]; body: Row[] } {
  let parsed: { record: string[]; info: { lines: number } }[];
  try {
    parsed = parseCsv(content, { bom: true, skip_empty_lines: true, relax_quotes: false, info: true }) as unknown as typeof parsed;
  } catch (err) {
    // csv-parse's message quotes the field it was reading: only its code and line are used.
    const e = err as { code?: string; lines?: number };
    fail(file, `line ${e.lines ?? '?'}`, `not valid CSV (${e.code ?? 'parse error'}); check the quoting and that every row has as many cells as the header`);
  }
  const [first, ...body] = parsed;
  if (!first) fail(file, 'line 1', `no header; the file must start with ${MEDHELM_COLUMNS.join(',')}`);
  return { header: first.record, body: body.map((r) => ({ record: r.record, line: r.info.lines })) };
}

/** Reads and checks a MedHELM ratings CSV; the result is agreement()'s input. */
export function readMedhelmRatings(file: string): AgreementInput {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UserError('ratings.file-unreadable', `${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); give the path of the ratings CSV`);
  }
  return parseMedhelmRatings(file, content);
}

/** The same, from the file's content (`file` names it in errors). */
export function parseMedhelmRatings(file: string, content: string): AgreementInput {
  const { header, body } = rows(file, content);
  const at = checkHeader(file, header);
  const cell = (r: Row, c: string) => r.record[at.get(c) as number] as string;
  const ratings: ClinicianRating[] = [];
  const jury = new Map<string, JuryScore & { line: number }>();
  const rated = new Set<string>();
  for (const r of body) {
    const [rater, item, dataset] = ID_COLUMNS.map((c) => text(file, r.line, c, cell(r, c))) as [string, string, string];
    const scores: Record<string, number | null> = {};
    for (const c of MEDHELM_CRITERIA) scores[c] = clinicianScore(file, r.line, c, cell(r, c));
    const juryScores: Record<string, number> = {};
    for (const c of MEDHELM_CRITERIA) juryScores[c] = juryScore(file, r.line, `llm_${c}`, cell(r, `llm_${c}`));
    const itemKey = JSON.stringify([dataset, item]);
    if (rated.has(JSON.stringify([rater, dataset, item])))
      fail(file, `line ${r.line}, column username`, 'this username rated this instance_id of this dataset_name on an earlier line too; keep one rating per rater and item');
    rated.add(JSON.stringify([rater, dataset, item]));
    const before = jury.get(itemKey);
    const differs = before && MEDHELM_CRITERIA.find((c) => before.scores[c] !== juryScores[c]);
    if (differs) fail(file, `line ${r.line}, column llm_${differs}`, `the jury's score of this item differs from line ${before.line}; the jury's scores must be the same on every row of an item`);
    if (!before) jury.set(itemKey, { dataset, item, scores: juryScores, line: r.line });
    ratings.push({ rater, dataset, item, scores });
  }
  if (ratings.length === 0) fail(file, 'line 2', 'no ratings; the file has a header only');
  return { ratings, jury: [...jury.values()].map(({ dataset, item, scores }) => ({ dataset, item, scores })), criteria: [...MEDHELM_CRITERIA] };
}
