/**
 * src/csv.ts, the one CSV writer: RFC 4180 quoting, formula cells neutralised with a leading single
 * quote (OWASP CSV injection), plain numbers left numeric. Each row is also read back with csv-parse, the
 * reader the catalog uses, so what a spreadsheet would be given is what is asserted.
 */
import { parse } from 'csv-parse/sync';
import { type AuditRecord, csvHeader, csvRow as auditCsvRow } from '../../src/audit';
import { csvCell, csvRow, isFormulaCell } from '../../src/csv';

const PLAIN_NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** The cells of one CSV line as a reader gets them. */
const cellsOf = (line: string): string[] => (parse(line) as string[][])[0] as string[];

describe('csvCell', () => {
  it.each([
    // a formula at the start, OWASP's six characters
    ['=HYPERLINK("http://x","y")', `"'=HYPERLINK(""http://x"",""y"")"`],
    ['=1+1', "'=1+1"],
    ['+1+1', "'+1+1"],
    ["-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"],
    ['@SUM(A1:A9)', "'@SUM(A1:A9)"],
    ['\t=1+1', `"'\t=1+1"`],
    ['\r=1+1', `"'\r=1+1"`],
    ['\ttext', `"'\ttext"`],
    ['\0=1', "'\0=1"],
    // after leading white space or control characters
    [' =1+1', "' =1+1"],
    ['\n@SUM(1)', `"'\n@SUM(1)"`],
    ['\u00a0\u3000-1+1', "'\u00a0\u3000-1+1"],
    // compatibility forms that normalise to = + - @ (fullwidth, small, superscript)
    ['\uFF1D1+1', "'\uFF1D1+1"],
    ['\uFF0B1', "'\uFF0B1"],
    ['\uFF0D1', "'\uFF0D1"],
    ['\uFF20SUM(1)', "'\uFF20SUM(1)"],
    ['\uFE66 1', "'\uFE66 1"],
    ['\u207C1', "'\u207C1"],
    // not formulas
    ['model evaluation', 'model evaluation'],
    ['a=1', 'a=1'],
    ['x - y', 'x - y'],
    ['"=1+1" in quotes', `"""=1+1"" in quotes"`],
    ["'=1+1", "'=1+1"],
    ['2026-11-01T08:00:00.000Z', '2026-11-01T08:00:00.000Z'],
    ['', ''],
    // RFC 4180 quoting (and ; for readers that split on it)
    ['a,b', '"a,b"'],
    ['say "hi"', '"say ""hi"""'],
    ['line\nbreak', '"line\nbreak"'],
    ['a;b', '"a;b"'],
  ])('%j is written %j', (value, written) => {
    expect(csvCell(value)).toBe(written);
  });

  it('keeps plain numbers numeric, negative ones included, and neutralises anything more', () => {
    for (const n of [-0.5, -1, 0, 12, 3.25, 1e-7, -2.5e21, '-0.5', '-1', '1e5', '-1.25E-3']) expect(csvCell(n)).toBe(String(n));
    for (const s of ['-1+2', '-0.5 ', ' -0.5', '+5', '-.5', '-1,5', '-1e', '-1;2', '-Infinity', '-A1', '-0x10']) expect(csvCell(s).startsWith("'") || csvCell(s).startsWith(`"'`)).toBe(true);
    expect(csvCell(-Infinity)).toBe("'-Infinity");
  });

  it('writes empty cells for null and undefined, and text for booleans and bigints', () => {
    expect(csvRow([null, undefined, true, false, 12n, -3n])).toBe(',,true,false,12,-3\n');
  });

  it('isFormulaCell says what csvCell neutralises', () => {
    expect(isFormulaCell('=1')).toBe(true);
    expect(isFormulaCell('-0.5')).toBe(false);
    expect(isFormulaCell('')).toBe(false);
    expect(isFormulaCell('   ')).toBe(false);
  });
});

describe('csvRow', () => {
  it('reads back as the cells written, formula cells with their leading quote', () => {
    const values = ['=HYPERLINK("http://x","y")', '@cmd', 'plain, with comma', 'line\r\nbreak', -0.5, 7, null, '"quoted"'];
    const line = csvRow(values);
    expect(line.endsWith('\n')).toBe(true);
    expect(cellsOf(line)).toEqual(['\'=HYPERLINK("http://x","y")', "'@cmd", 'plain, with comma', 'line\r\nbreak', '-0.5', '7', '', '"quoted"']);
  });

  it('leaves no cell that starts a formula, whatever the text', () => {
    const leads = ['=', '+', '-', '@', '\t', '\r', '\n', ' ', '\0', '\uFF1D', '"', "'", ',', ';', 'a', '1'];
    for (const a of leads) {
      for (const b of leads) {
        for (const cell of cellsOf(csvRow([`${a}${b}1+1`, `${a}${b}`]))) {
          const trimmed = cell.replace(/^[\s\0-\x1f]*/, '');
          const formula = !PLAIN_NUMBER.test(cell) && (/^[=+\-@\uFF1D]/.test(trimmed) || /^[\t\r\0]/.test(cell));
          expect({ cell, formula }).toEqual({ cell, formula: false });
        }
      }
    }
  });
});

describe('the audit trail CSV', () => {
  const record: AuditRecord = {
    seq: 41,
    event_id: '7d0c2c41-0b7e-4e0f-9a53-5d1f0a6f4b2e',
    schema_version: 1,
    recorded_at: '2026-11-01T08:00:00.000Z',
    event_type: 'run.request',
    action: 'C',
    outcome: 'success',
    rule: 'tier.public',
    reason: '-1+1',
    actor_principal: 'alice',
    actor_role: 'researcher',
    actor_auth: 'mtls',
    purpose: '=HYPERLINK("http://x","y")',
    irb_protocol: '@IRB',
    run_id: 'run-1',
    benchmark_id: 'medec',
    tier: 'public',
    endpoint_id: 'demo-loopback',
    export_id: null,
    approval_id: null,
    address: null,
    detail: { maxInstances: 2, note: '=x' },
    site_id: 'site',
    host: 'host',
    daemon_version: '0.1.0',
    prev_hash: 'a'.repeat(64),
    row_hash: 'b'.repeat(64),
    mac_key_id: 'k1',
    row_mac: 'c'.repeat(64),
  };

  it('neutralises a formula in purpose, reason and protocol, and keeps seq a number', () => {
    const header = cellsOf(csvHeader());
    const row = Object.fromEntries(cellsOf(auditCsvRow(record)).map((v, i) => [header[i], v]));
    expect(row).toMatchObject({ seq: '41', purpose: '\'=HYPERLINK("http://x","y")', reason: "'-1+1", irb_protocol: "'@IRB", export_id: '' });
    expect(JSON.parse(row.detail as string)).toEqual(record.detail);
  });
});
