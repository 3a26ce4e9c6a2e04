/**
 * `ehrbench benchmarks check ID` through the real binary: the pre-flight of a site binding (file,
 * sha256, encoding, sizes, columns, records, EHRSQL's database, judges, an OMOP connection and labels)
 * that creates no run, one line per check, exit 1 on any problem; `--json` and `--pin`. And what the
 * catalog commands say when the site data file itself is broken, or an OMOP binding is unchecked.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_ENDPOINT_ID, initHome } from '../../src/setup/init';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

const MEDEC = join(ROOT, 'datasets', 'medec', 'MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv');

function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function home(): string {
  const h = tempDir('check');
  initHome({ home: h });
  return h;
}

function bind(h: string, benchmarks: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const file = join(h, 'site-data.json');
  writeFileSync(file, JSON.stringify({ benchmarks, ...extra }));
  return file;
}

/** The line of one check: its status and what it says. */
function line(stdout: string, check: string): string {
  const found = stdout.split('\n').find((l) => new RegExp(`^(ok|PROBLEM|-)\\s+${check}\\s`).test(l));
  if (!found) throw new Error(`no "${check}" line in:\n${stdout}`);
  return found.replace(/\s+/g, ' ');
}

const CLEAR = 'text,condition,result_human\nHistory of chronic pain.,chronic pain,1\nNo history.,chronic pain,0\n';

describe('ehrbench benchmarks check', () => {
  it('checks a bound CSV line by line without creating a run, and exits 0 when every check passes', () => {
    const h = home();
    writeFileSync(join(h, 'clear.csv'), CLEAR);
    const site = bind(h, { clear: { source: { type: 'csv', path: 'clear.csv' } } });
    const r = cli(['benchmarks', 'check', 'clear'], { EHRBENCH_HOME: h });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(line(r.stdout, 'site-data')).toBe(`ok site-data ${site}`);
    expect(line(r.stdout, 'source')).toBe(`ok source csv ${join(h, 'clear.csv')} (benchmarks.clear.source)`);
    expect(line(r.stdout, 'file')).toBe(`ok file ${join(h, 'clear.csv')}: readable, ${CLEAR.length} bytes`);
    expect(line(r.stdout, 'sha256')).toBe('ok sha256 not pinned; "npx ehrbench benchmarks check clear --pin" prints the value for benchmarks.clear.source.sha256');
    expect(line(r.stdout, 'encoding')).toBe('ok encoding utf-8 (the default)');
    expect(line(r.stdout, 'size')).toBe('ok size every record within 16777216 bytes (catalog.maxRecordBytes), every instance within 1048576 (catalog.maxInstanceBytes)');
    expect(line(r.stdout, 'columns')).toBe('ok columns text, condition, result_human');
    expect(line(r.stdout, 'records')).toBe('ok records 2 records, 2 instances');
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('clear: ready to run (nothing was run)');
    // No run row, whatever the outcome: the check opens no store (it is still unmigrated, so
    // `runs list`, which never migrates, says so).
    writeFileSync(join(h, 'clear.csv'), 'text,condition\nx,y\n');
    expect(cli(['benchmarks', 'check', 'clear'], { EHRBENCH_HOME: h }).code).toBe(1);
    const runs = cli(['runs', 'list', '--json'], { EHRBENCH_HOME: h });
    expect(JSON.parse(runs.stderr)).toMatchObject({ error: 'db.migrations-pending' });
    expect(cli(['db', 'migrate'], { EHRBENCH_HOME: h }).code).toBe(0);
    expect(JSON.parse(cli(['runs', 'list', '--json'], { EHRBENCH_HOME: h }).stdout)).toEqual([]);
  });

  it('names each problem by file, field and rule, and exits 1', () => {
    const h = home();
    writeFileSync(join(h, 'clear.csv'), 'text,condition\nHistory of chronic pain.,chronic pain\n');
    bind(h, { clear: { source: { type: 'csv', path: 'clear.csv', sha256: 'a'.repeat(64) }, known: { names: ['patient_name'] } } });
    const r = cli(['benchmarks', 'check', 'clear'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(1);
    expect(line(r.stdout, 'sha256')).toBe(
      `PROBLEM sha256 ${join(h, 'clear.csv')}: content differs from the sha256 pinned for benchmark clear; restore the file or update the pin [dataset.hash-mismatch]`,
    );
    expect(line(r.stdout, 'columns')).toBe(
      `PROBLEM columns ${join(h, 'clear.csv')}: record 1 has no column "result_human" (a required column), "patient_name" (benchmarks.clear.known.names) [dataset.missing-column]`,
    );
    expect(line(r.stdout, 'records')).toMatch(/^PROBLEM records .*clear\.csv: record 1: missing column "result_human" \[dataset\.missing-column\]$/);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('clear: 3 problems (nothing was run)');

    // A missing file: what cannot be checked without it says so.
    bind(h, { clear: { source: { type: 'csv', path: 'gone.csv' } } });
    const gone = cli(['benchmarks', 'check', 'clear'], { EHRBENCH_HOME: h });
    expect(line(gone.stdout, 'file')).toBe(`PROBLEM file ${join(h, 'gone.csv')}: cannot read (ENOENT); check the dataset path [dataset.unreadable]`);
    expect(line(gone.stdout, 'encoding')).toBe('- encoding not checked: the file cannot be read');
  });

  it('reports a Latin-1 file by line and an oversized MEDEC instance by record, with the limit', () => {
    const h = home();
    writeFileSync(join(h, 'medec.csv'), Buffer.from(readFileSync(MEDEC, 'utf8'), 'latin1'));
    bind(h, { medec: { source: { type: 'csv', path: 'medec.csv' } } });
    const latin1 = cli(['benchmarks', 'check', 'medec'], { EHRBENCH_HOME: h });
    expect(latin1.code).toBe(1);
    expect(line(latin1.stdout, 'encoding')).toBe(
      `PROBLEM encoding ${join(h, 'medec.csv')}: line 138 is not valid UTF-8; convert the file to UTF-8, or declare its "encoding" ("latin1" or "windows-1252") in the source of benchmarks.medec in ${join(h, 'site-data.json')} [dataset.encoding]`,
    );
    expect(line(latin1.stdout, 'records')).toBe('- records not checked: reading stopped at the encoding problem');
    bind(h, { medec: { source: { type: 'csv', path: 'medec.csv', encoding: 'latin1' } } });
    const declared = cli(['benchmarks', 'check', 'medec'], { EHRBENCH_HOME: h });
    expect(line(declared.stdout, 'encoding')).toBe('ok encoding latin1 (declared)');
    expect(line(declared.stdout, 'records')).toBe('ok records 925 records, 597 instances (328 left out: dataset.skip.blank-column)');

    // The shipped file under a small per-instance limit from the config.
    const configFile = join(h, 'config.json');
    const config = JSON.parse(readFileSync(configFile, 'utf8'));
    config.catalog = { ...config.catalog, maxInstanceBytes: 1500 };
    writeFileSync(configFile, JSON.stringify(config));
    bind(h, {});
    const small = cli(['benchmarks', 'check', 'medec'], { EHRBENCH_HOME: h });
    expect(small.code).toBe(1);
    expect(line(small.stdout, 'source')).toBe(`ok source shipped: ${MEDEC}`);
    expect(line(small.stdout, 'sha256')).toBe('ok sha256 matches the pin');
    expect(line(small.stdout, 'size')).toMatch(
      new RegExp(
        `^PROBLEM size ${MEDEC.replace(/[.]/g, '\\.')}: record \\d+: its prompt variables exceed the per-instance limit of 1500 bytes \\(catalog\\.maxInstanceBytes in the config\\); .* \\[dataset\\.record-too-large\\]$`,
      ),
    );
  });

  it('prints JSON with --json and the values to pin with --pin', () => {
    const h = home();
    writeFileSync(join(h, 'clear.csv'), CLEAR);
    bind(h, { clear: { source: { type: 'csv', path: 'clear.csv' } } });
    const r = cli(['benchmarks', 'check', 'clear', '--json', '--pin'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { benchmark: string; ok: boolean; checks: { check: string; status: string; detail: string; code?: string }[]; pins: Record<string, string> };
    expect(report).toMatchObject({ benchmark: 'clear', ok: true });
    expect(report.checks.map((c) => c.check)).toEqual(['site-data', 'source', 'file', 'sha256', 'encoding', 'size', 'columns', 'records']);
    expect(report.pins).toEqual({ 'benchmarks.clear.source.sha256': createHash('sha256').update(CLEAR).digest('hex') });
    const text = cli(['benchmarks', 'check', 'clear', '--pin'], { EHRBENCH_HOME: h });
    expect(text.stdout).toContain(`pin: "sha256": "${report.pins['benchmarks.clear.source.sha256']}" in benchmarks.clear.source of ${join(h, 'site-data.json')}`);
    writeFileSync(join(h, 'clear.csv'), 'text,condition\nx,y\n');
    const bad = JSON.parse(cli(['benchmarks', 'check', 'clear', '--json'], { EHRBENCH_HOME: h }).stdout) as typeof report;
    expect(bad.ok).toBe(false);
    expect(bad.checks.find((c) => c.check === 'columns')).toMatchObject({ status: 'problem', code: 'dataset.missing-column' });
  });

  it('checks the judges of a jury benchmark against the endpoint allowlist', () => {
    const h = home();
    const none = cli(['benchmarks', 'check', 'aci_bench'], { EHRBENCH_HOME: h });
    expect(none.code).toBe(1);
    expect(line(none.stdout, 'judges')).toMatch(/^PROBLEM judges benchmark aci_bench: the LLM jury needs judge endpoints .* \[jury\.no-judges\]$/);
    bind(h, { aci_bench: { jury: { judges: [DEMO_ENDPOINT_ID, 'judge-nowhere'] } } });
    const unknown = cli(['benchmarks', 'check', 'aci_bench'], { EHRBENCH_HOME: h });
    expect(line(unknown.stdout, 'judges')).toBe(
      `PROBLEM judges judge "judge-nowhere" (benchmarks.aci_bench.jury.judges in ${join(h, 'site-data.json')}) is not in the endpoint allowlist ${join(h, 'access-policies', 'endpoints.json')}; see "npx ehrbench endpoints list" [endpoint.unknown]`,
    );
    bind(h, { aci_bench: { jury: { judges: [DEMO_ENDPOINT_ID] } } });
    const ok = cli(['benchmarks', 'check', 'aci_bench'], { EHRBENCH_HOME: h });
    expect(line(ok.stdout, 'judges')).toBe(`ok judges ${DEMO_ENDPOINT_ID} (in the allowlist)`);
    expect(ok.code).toBe(0);
  });

  it("checks EHRSQL's site database", () => {
    const h = home();
    bind(h, { ehr_sql: { database: 'eicu.sqlite' } });
    const missing = cli(['benchmarks', 'check', 'ehr_sql'], { EHRBENCH_HOME: h });
    expect(missing.code).toBe(1);
    expect(line(missing.stdout, 'database')).toBe(
      `PROBLEM database ${join(h, 'eicu.sqlite')}: the SQLite database for benchmark ehr_sql does not exist; check benchmarks.ehr_sql.database [ehrsql.no-database]`,
    );
    writeFileSync(join(h, 'eicu.sqlite'), 'not a database');
    expect(line(cli(['benchmarks', 'check', 'ehr_sql'], { EHRBENCH_HOME: h }).stdout, 'database')).toBe(
      `PROBLEM database ${join(h, 'eicu.sqlite')}: not an SQLite database; check benchmarks.ehr_sql.database [ehrsql.no-database]`,
    );
  });

  it('checks an OMOP binding: the connection variable and the labels file', () => {
    const h = home();
    bind(h, { shc_ptbm_med: { source: { type: 'omop-note', connection: { env: 'EHRBENCH_OMOP_URL' }, schema: 'cdm', labels: { path: 'labels.csv' } }, columns: { context: 'note_text' } } });
    const r = cli(['benchmarks', 'check', 'shc_ptbm_med'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(1);
    expect(line(r.stdout, 'source')).toBe('ok source omop-note omop:cdm.note (benchmarks.shc_ptbm_med.source)');
    expect(line(r.stdout, 'labels')).toBe(`PROBLEM labels ${join(h, 'labels.csv')}: cannot read (ENOENT); check the dataset path [dataset.unreadable]`);
    expect(line(r.stdout, 'connection')).toMatch(
      /^PROBLEM connection benchmark shc_ptbm_med \(OMOP source in .*\): environment variable EHRBENCH_OMOP_URL \(the OMOP database URL\) is not set \[omop\.no-connection\]$/,
    );
    expect(line(r.stdout, 'records')).toBe('- records not checked: no connection');
    // Unreachable: named by the connection step, not the data.
    const down = cli(['benchmarks', 'check', 'shc_ptbm_med'], { EHRBENCH_HOME: h, EHRBENCH_OMOP_URL: 'postgres://nobody@127.0.0.1:9/cdm' });
    expect(line(down.stdout, 'connection')).toMatch(/^PROBLEM connection .*: connecting to the OMOP database failed \([A-Z]+\); .* \[omop\.query-failed\]$/);
  });
});

describe('what the catalog commands say about site data', () => {
  it('lists the shipped benchmarks when site-data.json is broken, and reports the problem in one line', () => {
    const h = home();
    writeFileSync(join(h, 'site-data.json'), '{"benchmarks": {"clear": ');
    const r = cli(['benchmarks', 'list'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('39 benchmarks: 18 public, 7 approval-required, 14 private');
    expect(r.stdout).toMatch(/medec\s+MEDEC\s+.*shipped/);
    expect(r.stderr).toMatch(new RegExp(`^ehrbench: ${join(h, 'site-data.json').replace(/[.]/g, '\\.')}: not valid JSON( near character \\d+)?; fix the syntax\n$`));
    const json = cli(['benchmarks', 'list', '--json'], { EHRBENCH_HOME: h });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toHaveLength(39);
    // A schema error: the branch the type names, once.
    bind(h, { shc_ptbm_med: { source: { type: 'omop-note', connection: { env: 'A', file: 'b' } } } });
    const schema = cli(['benchmarks', 'list'], { EHRBENCH_HOME: h });
    expect(schema.stderr).toBe(`ehrbench: ${join(h, 'site-data.json')}: /benchmarks/shc_ptbm_med/source/connection: set exactly one of "env", "file"\n`);
    expect(line(cli(['benchmarks', 'check', 'medec'], { EHRBENCH_HOME: h }).stdout, 'site-data')).toBe(
      `PROBLEM site-data ${join(h, 'site-data.json')}: /benchmarks/shc_ptbm_med/source/connection: set exactly one of "env", "file" [site-data.invalid]`,
    );
  });

  it('says an OMOP binding is bound but not checked, and how to check it', () => {
    const h = home();
    bind(h, { shc_ptbm_med: { source: { type: 'omop-note', connection: { env: 'EHRBENCH_OMOP_URL' }, schema: 'cdm' } } });
    const r = cli(['benchmarks', 'show', 'shc_ptbm_med'], { EHRBENCH_HOME: h });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Data: bound by ${join(h, 'site-data.json')} (omop-note): omop:cdm.note; bound, not checked: run "npx ehrbench benchmarks check shc_ptbm_med"`);
  });
});
