/**
 * `ehrbench deid lexicons propose` and `deid eval --holdout-by subject` through the real binary: lists
 * made from the training half of the subjects only, with counts and no note text; the folder written
 * whole, private, never over files under review; the sign-off scored on the other half, saying what was
 * in force; one-line errors. Every name and place is invented.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { propose } from '../../src/deid';
import { parseMarked } from '../../src/deid/gold';
import { entryOf, needsCue, trainingSubjects } from '../../src/deid/proposal';
import { initHome } from '../../src/setup/init';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

function cli(home: string, args: string[]) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'deid', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: home },
    timeout: 100_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Eight subjects, two notes each, the same staff and places across them; one text word per subject that is no identifier. */
function sample(): string {
  const out: string[] = [];
  for (let k = 1; k <= 8; k++) {
    out.push(`### subject P${k}`);
    out.push(`=== note P${k}-1 style=nursing-icu`);
    out.push(`Transferred from {{LOCATION:hospital|Quarrybrook Medical Center}} to MICU. Seen by Dr. {{NAME:clinician|Vandermolen}}. Notewordalpha${k} charted.`);
    out.push(`=== note P${k}-2 style=nursing-icu`);
    out.push(`Report given to {{NAME:clinician|will}} RN. Lives in {{LOCATION:city|Pellston Harbor}}. Wife {{NAME:relative|Zorbanna}} aware. -{{NAME:clinician|KD}} RN`);
  }
  return out.join('\n') + '\n';
}

let home: string;
let gold: string;
beforeAll(() => {
  home = tempDir('deid-lexicons');
  initHome({ home });
  gold = join(home, 'sample.txt');
  writeFileSync(gold, sample());
});

describe('proposing lexicons from an annotated sample', () => {
  it('splits the subjects by a seeded hash, the same way each time', () => {
    const subjects = ['P1', 'P2', 'P3', 'P4', 'P5', 'P6', 'P7', 'P8'];
    const a = trainingSubjects(subjects, 0.5, 'ehrbench');
    expect(a.size).toBe(4);
    expect([...trainingSubjects(subjects, 0.5, 'ehrbench')]).toEqual([...a]);
    expect([...trainingSubjects(subjects, 0.5, 'another seed')].sort()).not.toEqual([...a].sort());
  });

  it('takes an entry as written, without a title, a credential, "the" or a possessive', () => {
    expect(entryOf('Dr. Vandermolen')).toBe('Vandermolen');
    expect(entryOf('K. Dwyer, RN')).toBe('K. Dwyer');
    expect(entryOf('the Pines')).toBe('Pines');
    expect(entryOf("St. Brendan's")).toBe('St. Brendan');
    expect(entryOf('K')).toBeUndefined();
    expect(needsCue('will')).toBe(true);
    expect(needsCue('Mo')).toBe(true);
    expect(needsCue('LMC')).toBe(false);
    expect(needsCue('Vandermolen')).toBe(false);
  });

  it('makes the lists from the training subjects only', () => {
    const text = sample().replace('{{NAME:clinician|Vandermolen}}. Notewordalpha8', '{{NAME:clinician|Onlyinpeight}}. Notewordalpha8');
    const docs = parseMarked(text, 'sample.txt');
    const p = propose(docs, Buffer.from(text), { trainShare: 0.5, seed: 'ehrbench' });
    const training = trainingSubjects(
      docs.map((d) => d.subject as string),
      0.5,
      'ehrbench',
    );
    const staff = p.lists.staff.map((e) => e.entry);
    expect(staff.includes('Onlyinpeight')).toBe(training.has('P8'));
    expect(p.lists.staff.find((e) => e.entry === 'Vandermolen')?.seen).toBe(training.has('P8') ? 3 : 4);
    expect(p.lists.facilities.map((e) => e.entry)).toEqual(['Quarrybrook Medical Center']);
    expect(p.lists.places.map((e) => e.entry)).toEqual(['Pellston Harbor']);
    // relatives are no staff
    expect(staff).not.toContain('Zorbanna');
    expect(p.manifest.trainingSubjects).toHaveLength(4);
    expect(JSON.stringify(p.manifest)).not.toMatch(/P[1-8]\b/);
  });

  it('writes the lists and the manifest into a new private folder, with counts and no note text', () => {
    const out = join(home, 'proposal');
    const r = cli(home, ['lexicons', 'propose', '--gold', gold, '--out', out]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Proposed from 4 of 8 subjects into .*: staff 3 \(1 need a cue\), facilities 1, places 1, streets 0\n/);
    expect(r.stdout).not.toMatch(/Vandermolen|Quarrybrook|Pellston|Zorbanna/);
    expect(statSync(out).mode & 0o777).toBe(0o700);
    for (const f of ['staff.txt', 'facilities.txt', 'places.txt', 'streets.txt', 'proposal.json']) expect(statSync(join(out, f)).mode & 0o777).toBe(0o600);
    const staff = readFileSync(join(out, 'staff.txt'), 'utf8');
    expect(staff).toMatch(/^Vandermolen # seen 4$/m);
    expect(staff).toMatch(/^will # seen 4; needs a cue$/m);
    expect(staff).toMatch(/^KD # seen 4$/m);
    expect(staff + readFileSync(join(out, 'places.txt'), 'utf8')).not.toMatch(/Notewordalpha|Transferred|charted/);
    const manifest = JSON.parse(readFileSync(join(out, 'proposal.json'), 'utf8'));
    expect(manifest).toMatchObject({ format: 'ehrbench-lexicon-proposal/1', split: { by: 'subject', trainShare: 0.5, trainingSubjects: 4 }, gold: { documents: 16, subjects: 8 } });
  });

  it('never writes into a folder that holds files', () => {
    const out = join(home, 'busy');
    mkdirSync(out);
    writeFileSync(join(out, 'staff.txt'), 'Under Review\n');
    const r = cli(home, ['lexicons', 'propose', '--gold', gold, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--out .*busy is not empty; give a new folder/);
    expect(readFileSync(join(out, 'staff.txt'), 'utf8')).toBe('Under Review\n');
    expect(existsSync(join(out, 'proposal.json'))).toBe(false);
  });

  it.each([
    ['a share of 1', ['--train-share', '1'], /--train-share 1 must be between 0 and 1/],
    ['a share of 0', ['--train-share', '0'], /--train-share 0 must be between 0 and 1/],
  ])('refuses %s in one line', (_label, extra, message) => {
    const r = cli(home, ['lexicons', 'propose', '--gold', gold, '--out', join(home, `never-${extra[1]}`), ...extra]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });
});

describe('the sign-off on the subjects the lists were not made from', () => {
  it('scores only the held-out subjects and says what was in force', () => {
    const out = join(home, 'holdout');
    expect(cli(home, ['lexicons', 'propose', '--gold', gold, '--out', out]).code).toBe(0);
    const all = JSON.parse(cli(home, ['eval', '--gold', gold, '--json']).stdout);
    const held = JSON.parse(cli(home, ['eval', '--gold', gold, '--json', '--holdout-by', 'subject', '--proposal', join(out, 'proposal.json')]).stdout);
    expect(all.documents).toBe(16);
    expect(held.documents).toBe(8);
    expect(held.inForce.holdout).toMatchObject({ by: 'subject', trainingSubjects: 4, heldOutSubjects: 4, heldOutDocuments: 8 });
    expect(held.inForce.evidence.scope).toBe('dataset');
    expect(held.inForce.deidVersion).toMatch(/^ehrbench-deid\//);
    const table = cli(home, ['eval', '--gold', gold, '--holdout-by', 'subject', '--proposal', join(out, 'proposal.json')]).stdout;
    expect(table).toMatch(/^held out by subject: figures on 4 subjects \(8 documents\)/m);
    expect(table).toMatch(/^site lexicons: /m);
    expect(table).toMatch(/^evidence: the gold file read as one dataset/m);
  });

  it.each([
    ['--holdout-by without --proposal', ['--holdout-by', 'subject'], /--holdout-by subject needs --proposal FILE/],
    ['--proposal without --holdout-by', ['--proposal', 'x.json'], /--proposal is read only with --holdout-by subject/],
  ])('refuses %s in one line', (_label, extra, message) => {
    const r = cli(home, ['eval', '--gold', gold, ...extra]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it('refuses a manifest that is not a proposal, naming it', () => {
    const bad = join(home, 'bad-proposal.json');
    writeFileSync(bad, JSON.stringify({ format: 'something-else' }));
    const r = cli(home, ['eval', '--gold', gold, '--holdout-by', 'subject', '--proposal', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/bad-proposal\.json/);
  });

  it('refuses a hold-out with no subject left', () => {
    const out = join(home, 'one-file');
    expect(cli(home, ['lexicons', 'propose', '--gold', gold, '--out', out]).code).toBe(0);
    // a gold file of the training subjects only: nothing is left to measure on
    const docs = parseMarked(sample(), 'sample.txt');
    const manifest = JSON.parse(readFileSync(join(out, 'proposal.json'), 'utf8'));
    const training = trainingSubjects(
      docs.map((d) => d.subject as string),
      manifest.split.trainShare,
      manifest.split.seed,
    );
    const only = join(home, 'training-only.jsonl');
    writeFileSync(
      only,
      docs
        .filter((d) => training.has(d.subject as string))
        .map((d) => JSON.stringify({ id: d.id, subject: d.subject, text: d.text, spans: d.spans }))
        .join('\n') + '\n',
    );
    const r = cli(home, ['eval', '--gold', only, '--holdout-by', 'subject', '--proposal', join(out, 'proposal.json')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/every subject of the file trained/);
  });
});
