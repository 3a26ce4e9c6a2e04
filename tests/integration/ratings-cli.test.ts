/**
 * `ehrbench ratings agreement` and `ratings plan` through the real binary: the table, --json against its
 * schema and the fixtures' figures, --datasets, and the one-line refusal of a bad file.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGREEMENT_OUTPUT_SCHEMA, PLAN_OUTPUT_SCHEMA } from '../../src/cli/commands/ratings';
import { formatSchemaErrors, validatorFor } from '../../src/schema/validate';
import type { AgreementReport } from '../../src/agreement';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

const BIN = join(ROOT, 'bin', 'ehrbench.js');
const RATINGS = join(ROOT, 'tests', 'fixtures', 'agreement', 'ratings.csv');
const expected = JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', 'agreement', 'expected.json'), 'utf8'));

function ehrbench(args: string[]) {
  // No configuration is read: an empty home proves the command does not need one.
  const home = tempDir('ratings-home');
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: home, EHRBENCH_HOME: join(home, 'none') } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function schemaErrors(schema: string, value: unknown): string[] {
  const validate = validatorFor(schema);
  return formatSchemaErrors(validate(value) ? [] : validate.errors);
}

describe('ehrbench ratings agreement', () => {
  it('prints one row per dataset and ALL, with the ICC and its interval, Spearman, kappa and the clinician pair', () => {
    const r = ehrbench(['ratings', 'agreement', '--from', RATINGS]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.find((l) => l.startsWith('dataset'))).toMatch(/^dataset\s+items\s+raters\s+jury ICC\(3,k\) \[95% CI\]\s+Spearman\s+kappa \(quadratic\)\s+clinician-clinician ICC\(3,k\)$/);
    const all = expected.ALL;
    const icc = all.jury.icc;
    expect(lines.find((l) => l.startsWith('ALL'))).toBe(
      `ALL        60     6       ${icc.icc.toFixed(3)} [${icc.ci[0].toFixed(3)}, ${icc.ci[1].toFixed(3)}]    ${all.jury.spearman.rho.toFixed(3)}     ${all.jury.kappa.toFixed(3)}              ${all.clinicians.icc.icc.toFixed(3)} [${all.clinicians.icc.ci[0].toFixed(3)}, ${all.clinicians.icc.ci[1].toFixed(3)}] (${all.clinicians.items} items)`,
    );
    expect(r.stdout).toContain(`Clinician-clinician (ALL): ${all.clinicians.pair[0]} and ${all.clinicians.pair[1]}`);
  });

  it('--json: valid against its schema, every dataset and ALL with their intervals', () => {
    const r = ehrbench(['ratings', 'agreement', '--from', RATINGS, '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as AgreementReport;
    expect(schemaErrors(AGREEMENT_OUTPUT_SCHEMA, report)).toEqual([]);
    expect(Object.keys(report.byDataset)).toEqual(['aci_bench', 'mediqa']);
    expect(report.ALL.jury.icc.value?.icc).toBeCloseTo(expected.ALL.jury.icc.icc, 12);
    expect(report.byDataset.mediqa?.jury.icc.value?.ci[0]).toBeCloseTo(expected.byDataset.mediqa.jury.icc.ci[0], 9);
    expect(report.ALL.rouge).toBeNull();
  });

  it('--datasets pools only those, z-scored among themselves', () => {
    const r = ehrbench(['ratings', 'agreement', '--from', RATINGS, '--datasets', 'mediqa', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as AgreementReport;
    expect(Object.keys(report.byDataset)).toEqual(['mediqa']);
    expect(report.ALL.items).toBe(30);
    expect(report.ALL.jury.icc.value?.icc).toBeCloseTo(expected.byDataset.mediqa.jury.icc.icc, 12);
  });

  it('refuses a bad file in one line naming the line and column, exit 1, without the cell', () => {
    const file = join(tempDir('ratings-bad'), 'ratings.csv');
    const lines = readFileSync(RATINGS, 'utf8').split('\n');
    lines[3] = lines[3]!.replace(/^(\w+,[\w-]+,\w+,)\d/, '$1"Jane Roe"');
    writeFileSync(file, lines.join('\n'));
    const r = ehrbench(['ratings', 'agreement', '--from', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: ${file}: line 4, column accuracy: a clinician's score must be a whole number 1-5, or empty if not rated; correct the cell\n`);
    const json = ehrbench(['ratings', 'agreement', '--from', file, '--json']);
    expect(JSON.parse(json.stderr)).toMatchObject({ error: 'ratings.file-invalid' });
  });

  it('refuses a dataset the file does not have, exit 1', () => {
    const r = ehrbench(['ratings', 'agreement', '--from', RATINGS, '--datasets', 'medalign']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('ehrbench: no rating of dataset medalign; the ratings cover aci_bench, mediqa\n');
  });
});

describe('ehrbench ratings plan', () => {
  it("gives MedHELM's planned numbers, with and without the finite-population correction", () => {
    const r = ehrbench(['ratings', 'plan', '--icc', '0.75', '--width', '0.3', '--raters', '2', '--assurance', '0.8', '--population', '120']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('47 items (Zou 2012: ICC 0.75, 95% interval width 0.3, 2 raters, assurance 0.8)\n34 items of a dataset of 120 (finite-population correction)\n');
  });

  it('--json is valid against its schema', () => {
    const r = ehrbench(['ratings', 'plan', '--icc', '0.5', '--width', '0.3', '--raters', '2', '--assurance', '0.8', '--json']);
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(schemaErrors(PLAN_OUTPUT_SCHEMA, plan)).toEqual([]);
    expect(plan).toMatchObject({ instances: 113, corrected: null, population: null });
  });

  it('refuses an impossible request as a usage error (exit 2)', () => {
    const r = ehrbench(['ratings', 'plan', '--icc', '1.5', '--width', '0.3', '--raters', '2', '--assurance', '0.8']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('ehrbench: --icc must be between 0 and 1 (exclusive), the ICC you expect\n');
  });
});
