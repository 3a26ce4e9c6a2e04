/**
 * `ehrbench deid eval` through the real binary: the sign-off report on a small gold file in both its
 * forms, figures for a case built to have one certain miss and one certain false positive, no gold
 * text in the output unless --show-text asks for it on the table, and one-line errors for bad gold.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { initHome } from '../../src/setup/init';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

function cli(home: string, args: string[]) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'deid', 'eval', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: home },
    timeout: 100_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let home: string;
beforeAll(() => {
  home = tempDir('deid-eval');
  initHome({ home });
});

// n1: a clinician after a title and a full date, which detection certainly finds; "Pain 4/10" is a
//     look-alike that must survive.
// n2: a lowercase made-up word with no cue, annotated as the patient's name: certainly missed.
// n3: an unannotated eight-digit number, which detection takes for an ID: a certain false positive.
const N1 = 'Seen by Dr. Renwick on 3/11/2087. Pain 4/10 at rest.';
const N2 = 'Noted qwzx in the chart. Afebrile, tolerating diet.';
const N3 = 'Lab slip 00384157 filed with the paperwork.';
const span = (text: string, value: string, type: string, subtype?: string) => ({ start: text.indexOf(value), end: text.indexOf(value) + value.length, type, ...(subtype ? { subtype } : {}) });
const GOLD_DOCS = [
  { id: 'n1', text: N1, spans: [span(N1, 'Renwick', 'NAME', 'clinician'), span(N1, '3/11/2087', 'DATE')], style: 'clinic' },
  { id: 'n2', text: N2, spans: [span(N2, 'qwzx', 'NAME', 'patient')], style: 'nursing' },
  { id: 'n3', text: N3, spans: [], style: 'nursing' },
];
const MARKED = [
  '# the same three notes, marked by hand',
  '=== note n1 style=clinic',
  'Seen by Dr. {{NAME:clinician|Renwick}} on {{DATE|3/11/2087}}. Pain {{SAFE|4/10}} at rest.',
  '=== note n2 style=nursing',
  'Noted {{NAME:patient|qwzx}} in the chart. Afebrile, tolerating diet.',
  '=== note n3 style=nursing',
  N3,
  '',
].join('\n');
/** Every piece of gold text that must not appear in a report without --show-text. */
const SECRETS = ['Renwick', '3/11/2087', 'qwzx', '00384157', 'Afebrile, tolerating diet', 'Noted', 'Lab slip', 'Pain 4/10'];

function goldFile(name: string, content: string): string {
  const file = join(home, name);
  writeFileSync(file, content);
  return file;
}

const jsonlGold = () => goldFile('gold.jsonl', GOLD_DOCS.map((d) => JSON.stringify(d)).join('\n') + '\n');
const markedGold = () => goldFile('gold.txt', MARKED);

function expectNoGoldText(output: string): void {
  for (const s of SECRETS) expect(output).not.toContain(s);
}

describe('ehrbench deid eval', () => {
  it.each([
    ['JSON lines', jsonlGold, 'shapes'],
    ['marked text', markedGold, 'gold'],
  ])('scores a %s gold file: one certain miss, one certain false positive, per type, subtype and style', (_form, make, lookalikeSource) => {
    const r = cli(home, ['--gold', make(), '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectNoGoldText(r.stdout);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ documents: 3, characters: N1.length + N2.length + N3.length, recall: 2 / 3, precision: 2 / 3, withKnown: false });
    expect(report.byType.NAME).toMatchObject({ gold: 2, found: 1, recall: 0.5, predicted: 1, correct: 1, precision: 1 });
    expect(report.byType.DATE).toMatchObject({ gold: 1, found: 1, recall: 1 });
    expect(report.byType.ID).toMatchObject({ gold: 0, predicted: 1, correct: 0, precision: 0 });
    expect(report.bySubtype).toMatchObject({ 'NAME:clinician': { gold: 1, found: 1 }, 'NAME:patient': { gold: 1, found: 0 } });
    expect(report.byStyle).toEqual({
      clinic: { documents: 1, gold: 2, found: 2, recall: 1, predicted: 2, correct: 2, precision: 1 },
      nursing: { documents: 2, gold: 1, found: 0, recall: 0, predicted: 1, correct: 0, precision: 0 },
    });
    expect(report.misses).toEqual([{ id: 'n2', type: 'NAME', subtype: 'patient', start: 6, end: 10, coveredShare: 0 }]);
    expect(report.falsePositives).toEqual([{ id: 'n3', type: 'ID', start: 9, end: 17 }]);
    expect(report.falsePositivesPer10k).toBeCloseTo((1 / report.characters) * 10_000);
    expect(report.lookalikes).toEqual({ total: 1, untouched: 1, survival: 1, source: lookalikeSource });
    expect(report.maskedShare).toBeCloseTo(('Renwick3/11/2087' + '00384157').length / report.characters);
  });

  it('prints a readable table with no gold text', () => {
    const r = cli(home, ['--gold', jsonlGold()]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectNoGoldText(r.stdout);
    const out = r.stdout;
    expect(out).toMatch(/^type +gold +strict recall +predicted +precision$/m);
    expect(out).toMatch(/^NAME +2 +0\.500 +1 +1\.000$/m);
    expect(out).toMatch(/^ {2}NAME:patient +1 +0\.000/m);
    expect(out).toMatch(/^style +documents +gold/m);
    expect(out).toMatch(/^nursing +2 +1 +0\.000 +1 +0\.000$/m);
    expect(out).toMatch(/^strict recall +0\.667 +\(2 of 3 gold spans wholly masked\)$/m);
    expect(out).toMatch(/^precision +0\.667/m);
    expect(out).toMatch(/^masked share +[\d.]+% of all characters$/m);
    expect(out).toMatch(/^masked outside gold +[\d.]+%/m);
    expect(out).toMatch(/^look-alikes untouched +1 \/ 1 +\(1\.000; fractions, ranges and doses outside the gold spans\)$/m);
    expect(out).toMatch(/^false positives +[\d.]+ per 10k characters \(1\)$/m);
    expect(out).toMatch(/^Misses \(1\):\n.*\n.*\nn2 +NAME:patient +6-10 +0\.0%$/m);
    expect(out).toMatch(/^False positives \(1\):\n.*\n.*\nn3 +ID +9-17$/m);
  });

  it('shows the text around misses and false positives with --show-text', () => {
    const r = cli(home, ['--gold', markedGold(), '--show-text']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^n2 +NAME:patient +6-10 +0\.0% +Noted \[\[qwzx\]\] in the chart\. Afebrile, toler…$/m);
    expect(r.stdout).toMatch(/^n3 +ID +9-17 +Lab slip \[\[00384157\]\] filed with the paperwork\.$/m);
  });

  it('refuses --json with --show-text as a usage error naming both', () => {
    const r = cli(home, ['--gold', jsonlGold(), '--json', '--show-text']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--json and --show-text/);
  });

  it('judges the notes of one subject together, and uses known identifiers only with --with-known', () => {
    const a = 'Seen by Dr. Okonkwo-Paredes today.';
    const b = 'The okonkwo-paredes plan is unchanged.';
    const c = 'Noted qwzx in the chart.';
    const docs = [
      { id: 's1', subject: 'p1', text: a, spans: [span(a, 'Okonkwo-Paredes', 'NAME')] },
      { id: 's2', subject: 'p1', text: b, spans: [span(b, 'okonkwo-paredes', 'NAME')] },
      { id: 's3', subject: 'p2', text: b, spans: [span(b, 'okonkwo-paredes', 'NAME')] },
      { id: 'k1', text: c, spans: [span(c, 'qwzx', 'NAME')], known: { names: ['Qwzx Plorbin'] } },
    ];
    const file = goldFile('subjects.jsonl', docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
    const without = JSON.parse(cli(home, ['--gold', file, '--json', '--evidence', 'subject']).stdout);
    expect(without.inForce.evidence.scope).toBe('subject');
    expect(without.misses.map((m: { id: string }) => m.id)).toEqual(['s3', 'k1']);
    const withKnown = JSON.parse(cli(home, ['--gold', file, '--json', '--with-known', '--evidence', 'subject']).stdout);
    expect(withKnown.withKnown).toBe(true);
    expect(withKnown.misses.map((m: { id: string }) => m.id)).toEqual(['s3']);
    // read as one dataset (the default), the name a title took in p1 is found in p2's note too
    const dataset = JSON.parse(cli(home, ['--gold', file, '--json']).stdout);
    expect(dataset.inForce.evidence).toMatchObject({ scope: 'dataset', names: 1 });
    expect(dataset.misses.map((m: { id: string }) => m.id)).toEqual(['k1']);
  });

  it.each([
    ['a line that is not JSON', 'bad.jsonl', `${JSON.stringify(GOLD_DOCS[0])}\n{"id":"n2","text":"Noted qwzx in the chart.",\n`, /bad\.jsonl: line 2 is not valid JSON/],
    [
      'a span outside the text',
      'bad.jsonl',
      JSON.stringify({ id: 'n1', text: N1, spans: [{ start: 12, end: 500, type: 'NAME' }] }) + '\n',
      /bad\.jsonl: line 1: span 1 \(12-500\) is empty or outside the text/,
    ],
    ['an unknown type', 'bad.jsonl', JSON.stringify({ id: 'n1', text: N1, spans: [{ start: 12, end: 19, type: 'PERSON' }] }) + '\n', /bad\.jsonl: line 1: \/spans\/0\/type: must be one of/],
    ['an unknown mark type', 'bad.txt', '=== note n1\nSeen by Dr. {{PERSON|Renwick}} today.\n', /bad\.txt: note n1 \(line 1\): unknown mark type PERSON/],
    ['a mark left open', 'bad.txt', '=== note n1\nfirst line\n=== note n2\nSeen by Dr. {{NAME|Renwick today.\n', /bad\.txt: note n2 \(line 3\): a mark is not closed/],
  ])('refuses %s with one line naming the file and line, quoting no text', (_label, name, content, message) => {
    const r = cli(home, ['--gold', goldFile(name, content)]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expectNoGoldText(r.stderr);
  });

  it('names a missing gold file', () => {
    const r = cli(home, ['--gold', join(home, 'absent.jsonl')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/absent\.jsonl: cannot read \(ENOENT\); check the --gold path/);
  });

  it('prints help that says --show-text is for the table only', () => {
    const r = cli(home, ['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--gold');
    expect(r.stdout).toMatch(/--show-text[\s\S]*table only/);
    expect(r.stdout).not.toContain('--in ');
    expect(r.stdout).not.toContain('--on-residual');
  });
});

describe('ehrbench deid eval --record', () => {
  const audit = (args: string[]) => {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'audit', ...args], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: home },
      timeout: 100_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const principalsFile = () => join(home, 'access-policies', 'principals.json');

  it("records the sign-off's figures in the audit trail for compliance only, with no gold text", () => {
    // init maps the operating-system account as a researcher and auditor: not the privacy office.
    const refused = cli(home, ['--gold', jsonlGold(), '--record']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /^ehrbench: denied by rule rbac\.compliance-required: recording the privacy office's de-identification sign-off figures needs the compliance role; \S+ holds researcher, auditor\n$/,
    );
    const principals = JSON.parse(readFileSync(principalsFile(), 'utf8')) as { principals: { roles: string[] }[] };
    principals.principals[0]?.roles.push('compliance');
    writeFileSync(principalsFile(), JSON.stringify(principals, null, 2));

    const gold = jsonlGold();
    const recorded = cli(home, ['--gold', gold, '--record', '--json']);
    expect(recorded.code).toBe(0);
    expect(recorded.stderr).toMatch(/^sign-off recorded in the audit trail as event (\d+) \(deid\.signoff\)\n$/);
    const seq = Number(/event (\d+)/.exec(recorded.stderr)?.[1]);
    const found = audit(['search', '--type', 'deid.signoff', '--json']);
    expect(found.code).toBe(0);
    expectNoGoldText(found.stdout);
    const events = JSON.parse(found.stdout) as { seq: number; outcome: string; detail: Record<string, unknown> }[];
    const event = events.find((e) => e.seq === seq);
    expect(event?.outcome).toBe('success');
    expect(event?.detail).toEqual({
      deidVersion: expect.any(String),
      goldSha256: createHash('sha256').update(readFileSync(gold)).digest('hex'),
      documents: 3,
      goldSpans: 3,
      recall: 0.6667,
      precision: 0.6667,
      withKnown: false,
      heldOut: false,
    });
    // The refusal was audited too, as a refused request naming its rule.
    const denied = JSON.parse(audit(['search', '--type', 'access.denied', '--json']).stdout) as { rule: string }[];
    expect(denied.map((e) => e.rule)).toContain('rbac.compliance-required');
  });
});
