/**
 * The one CSV writer: every CSV ehrbench writes is made of these rows (today the audit trail's export:
 * `audit export --format csv`, `GET /v1/audit/export?format=csv` and the console's CSV link). A leaf
 * that imports nothing, so the console (bundled from src/console/client) may import it by relative path.
 *
 *   csvCell(value): string     one cell, neutralised and quoted as needed
 *   csvRow(values): string     the cells joined by commas, ending in a line feed
 *
 * Quoting follows RFC 4180 (a cell holding a quote, comma or line break is put in double quotes, its
 * quotes doubled). Lines end in LF, as they always have; every spreadsheet and CSV reader takes it.
 *
 * Formula cells (OWASP "CSV Injection", CWE-1236): a spreadsheet reads a cell that starts with = + - @
 * as a formula, so a run purpose of =HYPERLINK("http://x","y") became a link in a compliance officer's
 * copy of the trail. Such a cell gets a single quote in front (OWASP's recommendation): spreadsheets
 * show it as text, and a reader of the file sees the original after the quote. A cell is neutralised when
 *  - its first character is = + - @, tab, carriage return or NUL (OWASP lists the first six; OWASP ASVS
 *    5.0, 1.2.10, adds NUL);
 *  - its first character after leading white space or control characters is = + - @ (some spreadsheets
 *    trim a cell before they parse it, and an extra quote on such rare text costs nothing);
 *  - that character is a compatibility form of = + - @ (fullwidth ＝ ＋ － ＠, small ﹦ ﹢ ﹣ ﹫,
 *    superscript ⁼ ⁺ ⁻): Apple Numbers normalises them to ASCII and then evaluates (csv-stringify's
 *    escape_formulas covers the fullwidth four for that reason); we test the character's NFKC form, so
 *    every such variant is covered, not a list of four.
 * A cell that starts with a quote character (" or ') is not: after CSV unquoting its first character is
 * the quote, which no spreadsheet reads as the start of a formula.
 *
 * Numbers stay numbers: a cell that is wholly a plain decimal number (-0.5, 12, 1e-7) is written as it
 * is. Nothing else fits in it (no function, reference, operator after the sign, or text), so it cannot
 * execute, and a score of '-0.5 would become text that a committee's spreadsheet no longer sums or sorts.
 */

/** What a cell may hold; null and undefined are an empty cell. */
export type CsvValue = string | number | bigint | boolean | null | undefined;

/** Wholly a plain decimal number: an optional minus, digits, an optional fraction and exponent. */
const PLAIN_NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** A first character a spreadsheet takes as the start of a formula or of another cell. */
const DANGEROUS_FIRST = /^[\t\r\0]/;

/** Leading white space (\s covers no-break, ideographic and other Unicode spaces) and control characters. */
const LEADING_SPACE = /^[\s\0-\x1f\x7f]*/;

const FORMULA_SIGNS = new Set(['=', '+', '-', '@']);

/** A character RFC 4180 quotes for (quote, comma, line breaks), or ; and tab, separators of other readers. */
const NEEDS_QUOTES = /[",;\t\r\n]/;

/** True when a spreadsheet could read `text` as a formula. */
export function isFormulaCell(text: string): boolean {
  if (PLAIN_NUMBER.test(text)) return false;
  if (DANGEROUS_FIRST.test(text)) return true;
  const rest = text.slice(LEADING_SPACE.exec(text)?.[0].length ?? 0);
  const first = rest.codePointAt(0);
  if (first === undefined) return false;
  return FORMULA_SIGNS.has(String.fromCodePoint(first).normalize('NFKC').charAt(0));
}

function textOf(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  return String(value);
}

/** One cell: a formula cell gets a leading single quote, then RFC 4180 quoting where needed. */
export function csvCell(value: CsvValue): string {
  let text = textOf(value);
  if (isFormulaCell(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One line of cells, comma-separated, ending in a line feed. */
export function csvRow(values: readonly CsvValue[]): string {
  return values.map(csvCell).join(',') + '\n';
}
