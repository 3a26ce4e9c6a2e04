/**
 * Subgroup results from the site's own demographics, end to end: an OMOP CDM database on PostgreSQL
 * (TEST_DATABASE_URL) whose person and visit rows give each note its age band at the note date, sex,
 * race, ethnicity and visit type, and whose labels file gives its language; a private run of a site
 * benchmark on the loopback stand-in; an export whose subgroup tables hold only the binding's declared
 * labels, with k = 11 and complementary suppression visible, and the disparity of each field.
 *
 * Then the attacker: a researcher who wants the score of the few patients aged exactly 45. Export 1
 * releases the age bands 18-44 and 45-64. IT moves the edge by a year (45 -> 46), and the researcher
 * exports run 2 over the same notes: its bands 18-45 and 46-64 differ from the released ones by those
 * few patients. Or the researcher runs a sample a few notes smaller. Either second export is refused
 * (disclosure.differencing) before any preview exists: nothing about the few patients comes back.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { App } from '../../src/app';
import type { Bundle, ExportContent, ExportResult, SubgroupCell } from '../../src/export';
import { type Caller, Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import { Catalog, instancesOf, type Instance } from '../../src/catalog';
import { backends, freshStore, tempDir, type TestStore } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(300_000);

const pgOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;
const OMOP_ENV = 'EHRBENCH_STRATA_OMOP_URL';
const NOTES = 70;
const BENCHMARK = 'shc_ptbm_med';
const EDGES = [18, 45, 65, 80];

/**
 * Person i (1..70) has note i, written on 2024-06-01. Ages: 3 with no year of birth, 30 aged 30, 3
 * aged exactly 45 (the attacker's target), 18 aged 55, 12 born in 1954 with no month or day (69 or 70:
 * both 65-79), 4 aged 85. Sex: i % 7 in 1..4 female (40), else male (30). Race: i % 10 in 1..5 White
 * (35), 6..8 Black (21), 9 Asian (7), 0 no concept (7). Ethnicity: i <= 12 Hispanic. Visit: none for
 * i % 10 = 1 (7), else inpatient for even i (35), outpatient for odd (28). Language: es for i % 3 = 0
 * (23), tl for note 70, else en (46).
 */
function person(i: number): { year: number | null; month: number | null; day: number | null; gender: number; race: number; ethnicity: number } {
  const birth = i <= 3 ? [null, null, null] : i <= 33 ? [1994, 1, 15] : i <= 36 ? [1979, 1, 15] : i <= 54 ? [1969, 1, 15] : i <= 66 ? [1954, null, null] : [1939, 1, 15];
  return {
    year: birth[0] ?? null,
    month: birth[1] ?? null,
    day: birth[2] ?? null,
    gender: [1, 2, 3, 4].includes(i % 7) ? 8532 : 8507,
    race: i % 10 >= 1 && i % 10 <= 5 ? 8527 : i % 10 >= 6 && i % 10 <= 8 ? 8516 : i % 10 === 9 ? 8515 : 0,
    ethnicity: i <= 12 ? 38003563 : 38003564,
  };
}

async function createCdm(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`
      CREATE SCHEMA cdm;
      CREATE TABLE cdm.person (person_id bigint, gender_concept_id integer, year_of_birth integer, month_of_birth integer, day_of_birth integer,
        birth_datetime timestamp, race_concept_id integer, ethnicity_concept_id integer, location_id bigint, provider_id bigint, care_site_id bigint,
        person_source_value varchar(50));
      CREATE TABLE cdm.location (location_id bigint, address_1 varchar(50), address_2 varchar(50), city varchar(50), state varchar(2), zip varchar(9),
        county varchar(20), location_source_value varchar(50));
      CREATE TABLE cdm.care_site (care_site_id bigint, care_site_name varchar(255), place_of_service_concept_id integer, location_id bigint,
        care_site_source_value varchar(50));
      CREATE TABLE cdm.provider (provider_id bigint, provider_name varchar(255), npi varchar(20), dea varchar(20), provider_source_value varchar(50));
      CREATE TABLE cdm.payer_plan_period (payer_plan_period_id bigint, person_id bigint, payer_plan_period_start_date date,
        payer_plan_period_end_date date, payer_concept_id integer);
      INSERT INTO cdm.care_site VALUES (1, 'Unit A', 8717, NULL, NULL), (2, 'Unit B', 8756, NULL, NULL);
      CREATE TABLE cdm.visit_occurrence (visit_occurrence_id bigint, person_id bigint, visit_concept_id integer, visit_start_date date,
        visit_end_date date, provider_id bigint, care_site_id bigint);
      CREATE TABLE cdm.note (note_id bigint, person_id bigint, note_date date, note_datetime timestamp, note_type_concept_id integer,
        note_class_concept_id integer, note_title varchar(250), note_text text, provider_id bigint, visit_occurrence_id bigint);`);
    for (let i = 1; i <= NOTES; i++) {
      const p = person(i);
      await c.query('INSERT INTO cdm.person VALUES ($1, $2, $3, $4, $5, NULL, $6, $7, NULL, NULL, NULL, $8)', [i, p.gender, p.year, p.month, p.day, p.race, p.ethnicity, `MRN-STRATA-${1000 + i}`]);
      const visit = i % 10 === 1 ? null : 500 + i;
      if (visit !== null) await c.query("INSERT INTO cdm.visit_occurrence VALUES ($1, $2, $3, '2024-05-30', '2024-06-02', NULL, $4)", [visit, i, i % 2 === 0 ? 9201 : 9202, i % 2 === 0 ? 1 : 2]);
      // A plan covering the note's day for i % 4 = 0; one that ended the day before for i % 4 = 1.
      if (i % 4 === 0) await c.query("INSERT INTO cdm.payer_plan_period VALUES ($1, $1, '2024-01-01', '2024-12-31', 280)", [i]);
      if (i % 4 === 1) await c.query("INSERT INTO cdm.payer_plan_period VALUES ($1, $1, '2023-01-01', '2024-05-31', 289)", [i]);
      await c.query("INSERT INTO cdm.note VALUES ($1, $1, '2024-06-01', NULL, 44814645, 706, 'Progress note', $2, NULL, $3)", [i, `Synthetic progress note ${i}: stable, follow up in clinic.`, visit]);
    }
  } finally {
    await c.end();
  }
}

const LANGUAGE = (i: number) => (i === 70 ? 'tl' : i % 3 === 0 ? 'es' : 'en');

function strata(edges: number[]): unknown[] {
  return [
    { name: 'age', omop: 'age', edges },
    { name: 'sex', omop: 'sex' },
    { name: 'race', omop: 'race' },
    { name: 'ethnicity', omop: 'ethnicity' },
    { name: 'setting', omop: 'visit_type' },
    { name: 'language', column: 'lang', map: { en: 'English', es: 'Spanish' } },
  ];
}

function writeSiteData(home: string, edges: number[]): void {
  const binding = {
    source: { type: 'omop-note', connection: { env: OMOP_ENV }, schema: 'cdm', labels: { path: 'strata-labels.csv' } },
    columns: { context: 'note_text' },
    strata: strata(edges),
  };
  writeFileSync(join(home, 'site-data.json'), JSON.stringify({ benchmarks: { [BENCHMARK]: binding } }));
}

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

const cellsOf = (r: ExportResult | undefined, field: string) =>
  (r?.subgroups.find((s) => s.field === field)?.cells ?? []).map((c: SubgroupCell) => [c.label, 'suppressed' in c ? c.suppressed : `${c.n.low}-${c.n.high}`]);

/** The declared labels of each stratum, as the binding declares them, and "(other)". */
const DECLARED: Record<string, string[]> = {
  age: ['0-17', '18-44', '45-64', '65-79', '80+', '(other)'],
  sex: ['male', 'female', '(other)'],
  race: ['White', 'Black or African American', 'Asian', 'American Indian or Alaska Native', 'Native Hawaiian or Other Pacific Islander', '(other)'],
  ethnicity: ['Hispanic or Latino', 'Not Hispanic or Latino', '(other)'],
  setting: ['inpatient', 'outpatient', 'emergency', 'emergency and inpatient', 'home', '(other)'],
  language: ['English', 'Spanish', '(other)'],
};

pgOnly.each(backends())('subgroups from OMOP demographics (%s run store)', (backend) => {
  let cdm: TestStore;
  let t: TestDaemon;

  beforeAll(async () => {
    cdm = await freshStore('postgres');
    await createCdm(cdm.url as string);
    process.env[OMOP_ENV] = cdm.url as string;
    t = await startTestDaemon({
      backend,
      workers: 0,
      concurrency: 4,
      prepare: (home) => {
        writeFileSync(
          join(home.home, 'strata-labels.csv'),
          ['note_id,prompt,label,lang', ...Array.from({ length: NOTES }, (_, k) => `${k + 1},Is follow-up needed?,${k % 3 ? 'A' : 'B'},${LANGUAGE(k + 1)}`)].join('\n') + '\n',
        );
        writeSiteData(home.home, EDGES);
      },
    });
  });

  afterAll(async () => {
    await t?.close();
    await cdm?.drop();
    delete process.env[OMOP_ENV];
  });

  async function completedRun(ops: Operations, approvalId: string, maxInstances?: number): Promise<string> {
    const view = await ops.requestRun(callerOf(t.app, 'alice'), { benchmarkId: BENCHMARK, endpointId: 'vpc-private', approvalId, ...(maxInstances ? { maxInstances, sample: 'first' as const } : {}) });
    if (view.status === 'requested') await ops.approveRun(callerOf(t.app, 'dave'), view.runId);
    expect((await executeRun(t.app.engine, view.runId)).status).toBe('completed');
    return view.runId;
  }

  it("labels each note from its person, its visit's care site and its payer on the note's day", async () => {
    const dir = tempDir('strata-omop');
    writeFileSync(join(dir, 'labels.csv'), ['note_id,prompt,label,lang', ...[1, 2, 4, 5, 55, 70].map((i) => `${i},q,A,${LANGUAGE(i)}`)].join('\n') + '\n');
    writeFileSync(
      join(dir, 'site-data.json'),
      JSON.stringify({
        benchmarks: {
          [BENCHMARK]: {
            source: { type: 'omop-note', connection: { env: OMOP_ENV }, schema: 'cdm', labels: { path: 'labels.csv' }, identifierTables: [] },
            columns: { context: 'note_text' },
            strata: [...strata(EDGES), { name: 'care_site', omop: 'care_site_type' }, { name: 'payer', omop: 'payer', map: { '280': 'private', '289': 'medicare' } }],
          },
        },
      }),
    );
    const b = Catalog.load([], { siteDataFile: join(dir, 'site-data.json') }).get(BENCHMARK);
    const got: Instance[] = [];
    for await (const i of instancesOf(b, undefined, { [OMOP_ENV]: cdm.url as string })) got.push(i);
    expect(got.map((i) => [i.key, i.extra])).toEqual([
      ['1', { age: '(other)', sex: 'female', race: 'White', ethnicity: 'Hispanic or Latino', setting: '(other)', language: 'English', care_site: '(other)', payer: '(other)' }],
      ['2', { age: '(other)', sex: 'female', race: 'White', ethnicity: 'Hispanic or Latino', setting: 'inpatient', language: 'English', care_site: 'inpatient hospital', payer: '(other)' }],
      ['4', { age: '18-44', sex: 'female', race: 'White', ethnicity: 'Hispanic or Latino', setting: 'inpatient', language: 'English', care_site: 'inpatient hospital', payer: 'private' }],
      ['5', { age: '18-44', sex: 'male', race: 'White', ethnicity: 'Hispanic or Latino', setting: 'outpatient', language: 'English', care_site: 'outpatient hospital', payer: '(other)' }],
      ['55', { age: '65-79', sex: 'male', race: 'White', ethnicity: 'Not Hispanic or Latino', setting: 'outpatient', language: 'English', care_site: 'outpatient hospital', payer: '(other)' }],
      ['70', { age: '80+', sex: 'male', race: '(other)', ethnicity: 'Not Hispanic or Latino', setting: 'inpatient', language: '(other)', care_site: 'inpatient hospital', payer: '(other)' }],
    ]);
  });

  it('exports subgroup tables of declared labels only, with k = 11 and complementary suppression; a second export that differs by a few patients is refused', async () => {
    const { app } = t;
    const ops = new Operations(app);
    const alice = callerOf(app, 'alice');
    const approval = await ops.createApproval(callerOf(app, 'carol'), {
      protocolNumber: 'IRB-STRATA-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: [BENCHMARK],
      purpose: 'subgroup performance by demographics',
    });
    const run1 = await completedRun(ops, approval.approvalId);
    // The run records which strata labelled its instances.
    expect((await app.engine.store.getRun(run1))?.spec.strata).toEqual({ names: ['age', 'sex', 'race', 'ethnicity', 'setting', 'language'], sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const first = await ops.requestExport(alice, [run1]);
    const result = (JSON.parse(first.preview) as ExportContent).results[0];
    expect(result?.n).toEqual({ low: 70, high: 79 });
    // Age: 80+ (4) and "(other)" (3, no year of birth) are below k and 7 together, so 65-79 (12) is hidden with them.
    expect(cellsOf(result, 'age')).toEqual([
      ['0-17', '0-0'],
      ['18-44', '30-39'],
      ['45-64', '20-29'],
      ['65-79', 'complementary'],
      ['80+', '<k'],
      ['(other)', '<k'],
    ]);
    expect(cellsOf(result, 'sex')).toEqual([
      ['male', '30-39'],
      ['female', '40-49'],
    ]);
    // Asian (7) and no concept (7) are each below k; together 14, so nothing more is hidden. (Cells
    // come in the order of the map's keys: concept ids ascending.)
    expect(cellsOf(result, 'race')).toEqual([
      ['Asian', '<k'],
      ['Black or African American', '20-29'],
      ['White', '30-39'],
      ['Native Hawaiian or Other Pacific Islander', '0-0'],
      ['American Indian or Alaska Native', '0-0'],
      ['(other)', '<k'],
    ]);
    expect(cellsOf(result, 'ethnicity')).toEqual([
      ['Hispanic or Latino', '11-19'],
      ['Not Hispanic or Latino', '50-59'],
    ]);
    // Notes without a visit (7) are one hidden cell: the smallest released one (outpatient) goes with it.
    expect(cellsOf(result, 'setting')).toEqual([
      ['emergency and inpatient', '0-0'],
      ['inpatient', '30-39'],
      ['outpatient', 'complementary'],
      ['emergency', '0-0'],
      ['home', '0-0'],
      ['(other)', '<k'],
    ]);
    // One note in a language the binding does not declare: "(other)", hidden, and Spanish with it.
    expect(cellsOf(result, 'language')).toEqual([
      ['English', '40-49'],
      ['Spanish', 'complementary'],
      ['(other)', '<k'],
    ]);
    expect(result?.subgroups.every((s) => s.stratum === true)).toBe(true);
    // Disparity per field: worst and best among released cells only, a ratio for each released cell.
    const sex = result?.subgroups.find((s) => s.field === 'sex')?.disparity?.find((d) => d.metric === 'exact_match');
    expect(sex).toMatchObject({ metric: 'exact_match', lowerIsBetter: false });
    expect(['male', 'female']).toContain(sex?.worst);
    const age = result?.subgroups.find((s) => s.field === 'age')?.disparity?.find((d) => d.metric === 'exact_match');
    expect(['18-44', '45-64']).toContain(age?.worst);
    expect(age?.ratios.filter((r) => r.ratio !== null).map((r) => r.label)).toEqual(['18-44', '45-64']);

    const released = await ops.releaseExport(callerOf(app, 'carol'), first.exportId, 'bundle');
    const bundle = JSON.parse(released.files.bundle) as Bundle;
    // Only declared labels (and "(other)") in the bundle, and nothing of the CDM's rows.
    for (const sg of bundle.results[0]?.subgroups ?? []) {
      for (const c of sg.cells) expect(DECLARED[sg.field]).toContain(c.label);
      for (const d of sg.disparity ?? []) for (const label of [d.worst, d.best, ...d.ratios.map((r) => r.label)]) expect(DECLARED[sg.field]).toContain(label);
    }
    expect(released.files.bundle).not.toMatch(/MRN-STRATA|Synthetic progress note|1979|1994|8532|38003563|\btl\b/);

    // The attack, 1: IT moves the age edge by a year (45 -> 46); run 2 reads the same notes. Its 18-45
    // band is 18-44 plus the three patients aged 45, and 46-64 is 45-64 without them.
    writeSiteData(t.home.home, [18, 46, 65, 80]);
    await app.refreshPolicies();
    expect(app.catalog().get(BENCHMARK).site?.strata?.[0]?.edges).toEqual([18, 46, 65, 80]);
    const run2 = await completedRun(ops, approval.approvalId);
    const attack = await ops.requestExport(alice, [run2]).catch((e: { rule?: string; message: string }) => e);
    expect(attack).toMatchObject({ rule: 'disclosure.differencing' });
    // What the attacker is told: which released cell is too close, and that it is closer than k; not by how much.
    const message = (attack as { message: string }).message;
    expect(message).toMatch(/subgroup age=(18-45|46-64).*released in export [0-9a-f-]{36} by fewer than k = 11 instances/);

    // The attack, 2: the original edges back, and a run of a few notes fewer (the first 67 of 70).
    writeSiteData(t.home.home, EDGES);
    await app.refreshPolicies();
    expect(app.catalog().get(BENCHMARK).site?.strata?.[0]?.edges).toEqual(EDGES);
    const run3 = await completedRun(ops, approval.approvalId, 67);
    expect(
      await ops.requestExport(alice, [run3]).then(
        () => 'allowed',
        (e: { rule?: string }) => e.rule,
      ),
    ).toBe('disclosure.differencing');

    // Neither refused request left a preview behind: the attacker has export 1 and nothing else.
    expect((await ops.listExports(alice)).map((e) => e.exportId)).toEqual([first.exportId]);
    const denied = await app.db.query<{ rule: string }>("SELECT rule FROM audit_events WHERE event_type = 'export.deny' ORDER BY seq");
    expect(denied.map((d) => d.rule)).toEqual(['disclosure.differencing', 'disclosure.differencing']);

    // Run 2 under the strata now in force (the original edges) is labelled under other ones: exported, it
    // carries no strata at all, and its whole cohort matches the released one exactly.
    const plain = JSON.parse((await ops.requestExport(alice, [run2])).preview) as ExportContent;
    expect(plain.results[0]?.subgroups).toEqual([]);
  });
});
