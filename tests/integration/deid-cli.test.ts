/** `ehrbench deid` through the real binary: offsets, streaming, bad input, atomic output. */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validatorFor } from '../../src/config/validate';
import { initHome } from '../../src/setup/init';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

function cli(home: string, args: string[]) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'deid', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: home },
    timeout: 100_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let home: string;
beforeAll(() => {
  home = tempDir('deid-cli');
  initHome({ home });
});

const LINES = [
  { id: 'n1', text: 'Mrs. Hollis (MRN 00384157) seen 3/11/2087 by Dr. Renwick. Pain 4/10, BP 118/72.', known: { names: ['Marguerite Hollis'] } },
  { id: 'n2', text: 'Call daughter Colette at (508) 555-0187. Foley in place.' },
  { id: 'n3', text: 'Nothing identifying here: afebrile, tolerating diet.' },
  // non-BMP characters before an identifier: offsets are JavaScript string indices (UTF-16)
  { id: 'n4', text: '🙂 note from portal: SSN 031-44-9182' },
];

describe('ehrbench deid', () => {
  it('writes one output line per input line, with spans that are offsets into the input text', () => {
    const input = join(home, 'notes.jsonl');
    const output = join(home, 'notes.deid.jsonl');
    writeFileSync(input, LINES.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const r = cli(home, ['--in', input, '--out', output]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^4 lines de-identified into .*: \d+ identifiers \(/);
    const out = readFileSync(output, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const validate = validatorFor('deid-output.schema.json');
    expect(out.map((o) => validate(o))).toEqual([true, true, true, true]);
    expect(out.map((o) => o.id)).toEqual(['n1', 'n2', 'n3', 'n4']);
    const slices = out.map((o, i) => o.spans.map((s: { start: number; end: number; type: string }) => [s.type, (LINES[i] as { text: string }).text.slice(s.start, s.end)]));
    expect(slices[0]).toEqual([
      ['NAME', 'Hollis'],
      ['MRN', '00384157'],
      ['DATE', '3/11/2087'],
      ['NAME', 'Renwick'],
    ]);
    expect(slices[1]).toEqual([
      ['NAME', 'Colette'],
      ['PHONE', '(508) 555-0187'],
    ]);
    expect(slices[2]).toEqual([]);
    expect(slices[3]).toEqual([['SSN', '031-44-9182']]);
    expect(out[2].text).toBe(LINES[2]?.text);
    expect(out[0].text).toContain('Pain 4/10, BP 118/72.');
    for (const o of out) expect(o.text).not.toMatch(/Hollis|00384157|Renwick|Colette|555-0187|031-44-9182/);
  });

  it('streams a large file', () => {
    const input = join(home, 'big.jsonl');
    const output = join(home, 'big.deid.jsonl');
    const n = 20_000;
    const lines: string[] = [];
    for (let i = 0; i < n; i++) lines.push(JSON.stringify({ id: `r${i}`, subject: `p${i % 500}`, text: `Seen ${1 + (i % 12)}/${1 + (i % 28)}/2087 by Dr. Renwick; MRN ${1000000 + i}. Percocet 5/325 prn.` }));
    writeFileSync(input, lines.join('\n') + '\n');
    const r = cli(home, ['--in', input, '--out', output, '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.lines).toBe(n);
    expect(report.byType).toEqual({ DATE: n, NAME: n, MRN: n });
    const out = readFileSync(output, 'utf8').trim().split('\n');
    expect(out).toHaveLength(n);
    expect(out.filter((l) => l.includes('Renwick'))).toEqual([]);
  });

  it.each([
    ['a line that is not JSON', '{"id":"a","text":"Patient Hollis"}\n{"id":"b","text": "Jane Roe, 508-555-0187\n', /notes-bad\.jsonl: line 2 is not valid JSON/],
    ['a line with a missing key', '{"id":"a","text":"x"}\n{"id":"b","txt":"Jane Roe, 508-555-0187"}\n', /notes-bad\.jsonl: line 2: \/: missing required key "text"/],
    ['a line with a wrong type', '{"id":"a","text":42}\n', /notes-bad\.jsonl: line 1: \/text: must be string/],
  ])('refuses %s with one line naming the file and line, quoting no text, and writes nothing', (_label, content, message) => {
    const input = join(home, 'notes-bad.jsonl');
    const output = join(home, 'bad.out.jsonl');
    writeFileSync(output, 'previous output\n');
    writeFileSync(input, content);
    const r = cli(home, ['--in', input, '--out', output]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).not.toMatch(/Roe|555-0187|Hollis/);
    // the previous output is untouched and no temporary file is left behind
    expect(readFileSync(output, 'utf8')).toBe('previous output\n');
    expect(readdirSync(home).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('prints help', () => {
    const r = cli(home, ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--in');
    expect(r.stdout).toContain('--out');
  });

  it('names a missing input file', () => {
    const r = cli(home, ['--in', join(home, 'absent.jsonl'), '--out', join(home, 'x.jsonl')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/absent\.jsonl: cannot read \(ENOENT\)/);
    expect(existsSync(join(home, 'x.jsonl'))).toBe(false);
  });

  it('writes typed tags with --mode tag', () => {
    const input = join(home, 'tag.jsonl');
    const output = join(home, 'tag.out.jsonl');
    writeFileSync(input, JSON.stringify({ id: 't', text: 'Dr. Renwick saw her on 3/11/2087.' }) + '\n');
    expect(cli(home, ['--in', input, '--out', output, '--mode', 'tag']).code).toBe(0);
    expect(JSON.parse(readFileSync(output, 'utf8')).text).toBe('Dr. [NAME] saw her on [DATE].');
  });
});
