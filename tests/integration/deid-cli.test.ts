/**
 * `ehrbench deid` through the real binary: offsets, streaming, bad input, atomic output, residual
 * identifiers (fail or mark), and names shared between the lines of one subject.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validatorFor } from '../../src/schema/validate';
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
    const out = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
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
    for (let i = 0; i < n; i++)
      lines.push(JSON.stringify({ id: `r${i}`, subject: `p${i % 500}`, text: `Seen ${1 + (i % 12)}/${1 + (i % 28)}/2087 by Dr. Renwick; MRN ${1000000 + i}. Percocet 5/325 prn.` }));
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

  it('prints help that names both forms and the residual choice', () => {
    const r = cli(home, ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('deid eval');
    expect(r.stdout).toContain('--on-residual');
    expect(r.stdout).toMatch(/exit 3/);
  });

  it('refuses a call without --in and --out as a usage error', () => {
    const r = cli(home, []);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--in FILE\.jsonl and --out FILE\.jsonl/);
  });
});

interface OutLine {
  id: string;
  text: string;
  spans: { start: number; end: number; type: string }[];
  residual?: { start: number; end: number; type: string }[];
}

function readOut(file: string): OutLine[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as OutLine);
}

function writeJsonl(file: string, lines: (object | '')[]): void {
  writeFileSync(file, lines.map((l) => (l === '' ? '' : JSON.stringify(l))).join('\n') + '\n');
}

describe('ehrbench deid --on-residual', () => {
  // The trigger: in tag mode a replacement is written "[NAME]", and this line's structured data says
  // "NAME" is one of its identifiers. The residual scan checks that no replacement equals a known
  // identifier, so this output must trip it whatever the detectors find.
  const RESIDUAL_LINES: (object | '')[] = [
    { id: 'm1', text: 'Seen by Dr. Renwick on 3/11/2087.' },
    '', // a blank line: line numbers are the input's, counting it
    { id: 'm2', text: 'Seen by Dr. Renwick.', known: { other: ['NAME'] } },
    { id: 'm3', text: 'Afebrile, tolerating diet.' },
  ];

  it('fail (the default): the first flagged line stops everything; one line naming file, line and rule; nothing written', () => {
    const input = join(home, 'residual.jsonl');
    const output = join(home, 'residual-fail.out.jsonl');
    writeJsonl(input, RESIDUAL_LINES);
    writeFileSync(output, 'previous output\n');
    const r = cli(home, ['--in', input, '--out', output, '--mode', 'tag']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/residual\.jsonl: line 3: an identifier remained after de-identification \(rule deid\.residual-identifier\); nothing was written/);
    expect(r.stderr).not.toMatch(/Renwick|Seen by/);
    expect(readFileSync(output, 'utf8')).toBe('previous output\n');
    expect(readdirSync(home).filter((f) => f.includes('.tmp'))).toEqual([]);
  });

  it('mark: writes every line, the flagged one with "residual" offsets into the output text, reports counts and line numbers, exits 3', () => {
    const input = join(home, 'residual.jsonl');
    const output = join(home, 'residual-mark.out.jsonl');
    writeJsonl(input, RESIDUAL_LINES);
    const r = cli(home, ['--in', input, '--out', output, '--mode', 'tag', '--on-residual', 'mark']);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^3 lines de-identified into .*: 3 identifiers \(NAME 2, DATE 1\)\n1 line marked with "residual": 1 residual findings \(ID 1\); input lines 3\n$/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/1 of 3 lines still carry an identifier \(rule deid\.residual-identifier\)/);
    for (const text of [r.stdout, r.stderr]) expect(text).not.toMatch(/Renwick|Seen by|Afebrile/);

    const out = readOut(output);
    const validate = validatorFor('deid-output.schema.json');
    expect(out.map((o) => validate(o))).toEqual([true, true, true]);
    expect(out.map((o) => o.id)).toEqual(['m1', 'm2', 'm3']);
    expect(out.map((o) => o.residual)).toEqual([undefined, [{ start: 13, end: 17, type: 'ID' }], undefined]);
    const m2 = out[1] as OutLine;
    expect(m2.text).toBe('Seen by Dr. [NAME].');
    // the offsets are into the output text: they cover the replacement that equals the known identifier
    expect(m2.text.slice(13, 17)).toBe('NAME');
    expect(out[2]?.text).toBe('Afebrile, tolerating diet.');

    const json = cli(home, ['--in', input, '--out', join(home, 'residual-mark2.out.jsonl'), '--mode', 'tag', '--on-residual', 'mark', '--json']);
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({ onResidual: 'mark', lines: 3, spans: 3, byType: { NAME: 2, DATE: 1 }, marked: 1, residualByType: { ID: 1 }, markedLines: [3] });
  });

  it('mark on a clean file writes it and exits 0', () => {
    const input = join(home, 'clean.jsonl');
    const output = join(home, 'clean.out.jsonl');
    writeJsonl(input, [LINES[0] as object, LINES[1] as object]);
    const r = cli(home, ['--in', input, '--out', output, '--on-residual', 'mark', '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ lines: 2, marked: 0, residualByType: {}, markedLines: [] });
    expect(readOut(output).every((o) => o.residual === undefined)).toBe(true);
  });

  it('fail and mark agree on a generated file: fail names line k exactly when mark marks line k first', () => {
    // Lines of several kinds, some of which the residual scan may flag with the detectors of the day
    // (a labelled record number with a decimal, a phone with a trailing decimal, a bare date); the
    // contract is checked whatever is flagged.
    const kinds = [
      (i: number) => ({ id: `g${i}`, subject: `p${i % 7}`, text: `Seen ${1 + (i % 12)}/${1 + (i % 28)}/2087 by Dr. Renwick; MRN ${1000000 + i}.` }),
      (i: number) => ({ id: `g${i}`, text: `MRN ${100 + i}.45 noted; afebrile.` }),
      (i: number) => ({ id: `g${i}`, text: `Callback 508.555.${String(1000 + i).slice(-4)}.5 if worse.` }),
      (i: number) => ({ id: `g${i}`, text: 'Nothing identifying here: afebrile, tolerating diet.' }),
      (i: number) => ({ id: `g${i}`, text: `Ref 12-${10 + (i % 18)}-2087 per outside records.` }),
    ];
    const lines = Array.from({ length: 40 }, (_, i) => (kinds[i % kinds.length] as (i: number) => object)(i));
    const input = join(home, 'generated.jsonl');
    writeJsonl(input, lines);
    const failOut = join(home, 'generated-fail.out.jsonl');
    const markOut = join(home, 'generated-mark.out.jsonl');
    rmSync(failOut, { force: true });
    const fail = cli(home, ['--in', input, '--out', failOut]);
    const mark = cli(home, ['--in', input, '--out', markOut, '--on-residual', 'mark', '--json']);

    const out = readOut(markOut);
    expect(out).toHaveLength(lines.length);
    const flagged = out.flatMap((o, i) => (o.residual ? [i + 1] : []));
    for (const o of out) for (const f of o.residual ?? []) expect(f.start >= 0 && f.start < f.end && f.end <= o.text.length).toBe(true);
    expect(mark.code).toBe(flagged.length > 0 ? 3 : 0);
    const report = JSON.parse(mark.stdout);
    expect(report.markedLines).toEqual(flagged);
    expect(report.marked).toBe(flagged.length);
    expect(Object.values(report.residualByType as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(out.reduce((n, o) => n + (o.residual?.length ?? 0), 0));
    if (flagged.length > 0) {
      expect(fail.code).toBe(1);
      expect(fail.stderr).toMatch(new RegExp(`generated\\.jsonl: line ${flagged[0]}: .*rule deid\\.residual-identifier`));
      expect(existsSync(failOut)).toBe(false);
    } else {
      expect(fail.code).toBe(0);
      expect(readOut(failOut)).toEqual(out);
    }
  });
});

describe('ehrbench deid: the lines of one subject share names', () => {
  // Only line 1 has a cue (the title). The other writes the name in lowercase without a cue, which no
  // detector takes on its own; it is found only because line 1 of the same subject named it.
  const CUE = 'Seen by Dr. Okonkwo-Paredes today.';
  const NO_CUE = 'The okonkwo-paredes plan is unchanged.';
  const NAME_AT = [4, 19];

  function spansOf(lines: object[]): OutLine[] {
    const input = join(home, 'subjects.jsonl');
    const output = join(home, 'subjects.out.jsonl');
    writeJsonl(input, lines);
    const r = cli(home, ['--in', input, '--out', output]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return readOut(output);
  }

  it('masks a name found in one line of a subject in its other lines, whichever comes first', () => {
    const forward = spansOf([
      { id: 'a1', subject: 'p1', text: CUE },
      { id: 'a2', subject: 'p1', text: NO_CUE },
    ]);
    expect(forward[0]?.spans.map((s) => CUE.slice(s.start, s.end))).toEqual(['Okonkwo-Paredes']);
    expect(forward[1]?.spans).toEqual([{ start: NAME_AT[0], end: NAME_AT[1], type: 'NAME' }]);
    expect(forward[1]?.text).not.toMatch(/okonkwo|paredes/i);
    // the evidence is collected from the whole file first, so a later line helps an earlier one
    const backward = spansOf([
      { id: 'b1', subject: 'p1', text: NO_CUE },
      { id: 'b2', subject: 'p1', text: CUE },
    ]);
    expect(backward[0]?.spans).toEqual([{ start: NAME_AT[0], end: NAME_AT[1], type: 'NAME' }]);
  });

  it("carries a name a strong rule took to every subject's lines: the file is one dataset", () => {
    const other = spansOf([
      { id: 'c1', subject: 'p1', text: CUE },
      { id: 'c2', subject: 'p2', text: NO_CUE },
      { id: 'c3', text: NO_CUE },
    ]);
    expect(other.map((o) => o.spans.length)).toEqual([1, 1, 1]);
    expect(other[2]?.text).not.toMatch(/okonkwo|paredes/i);
  });

  it('does not carry a word a rule took once among many ordinary uses', () => {
    // "paged Zorvitab" takes the word once (a verb of contact); five other lines use it as a drug's name
    const lines = [{ id: 'z0', text: 'Overnight paged Zorvitab re: pain.' }, ...[1, 2, 3, 4, 5].map((k) => ({ id: `z${k}`, text: `zorvitab ${k}0mg given at 0800.` }))];
    const out = spansOf(lines);
    expect(out.slice(1).map((o) => o.spans.length)).toEqual([0, 0, 0, 0, 0]);
  });
});
