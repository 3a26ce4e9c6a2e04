/**
 * The OMOP CDM note source on a real PostgreSQL server (TEST_DATABASE_URL): a fresh database with small
 * CDM 5.4 tables (person, location, care_site, provider, visit_occurrence, note), read through the site
 * data binding of a private benchmark. Shows the joins that attach known identifiers (address, city,
 * care sites, providers, the MRN or pseudonym), the per-source options, the labels CSV, keyset paging,
 * errors that name a missing table or column, and that the connection cannot write even when the
 * database tries to make it.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Catalog, instancesOf, type Instance } from '../../src/catalog';
import { initHome } from '../../src/setup/init';
import { freshStore, tempDir, type TestStore } from '../helpers/db';
import { ROOT } from '../helpers/paths';
import { failure } from '../helpers/errors';

jest.setTimeout(60_000);

const run = process.env.TEST_DATABASE_URL ? describe : describe.skip;

async function collect(b: ReturnType<Catalog['get']>, env: NodeJS.ProcessEnv): Promise<Instance[]> {
  const out: Instance[] = [];
  for await (const i of instancesOf(b, undefined, env)) out.push(i);
  return out;
}

/** The known identifiers with each kind's values sorted, so assertions do not depend on join order. */
function sortedKnown(i: Instance | undefined): Record<string, string[]> {
  return Object.fromEntries(Object.entries(i?.known ?? {}).map(([k, v]) => [k, [...(v ?? [])].sort()]));
}

/** CDM 5.4 tables with their 5.4 column names, in `schema`; no keys, as many sites load them. */
function cdmTables(schema: string): string {
  return `
    CREATE SCHEMA ${schema};
    CREATE TABLE ${schema}.location (location_id integer NOT NULL, address_1 varchar(50), address_2 varchar(50), city varchar(50),
      state varchar(2), zip varchar(9), county varchar(20), location_source_value varchar(50), country_concept_id integer,
      country_source_value varchar(80), latitude numeric, longitude numeric);
    CREATE TABLE ${schema}.care_site (care_site_id integer NOT NULL, care_site_name varchar(255), place_of_service_concept_id integer,
      location_id integer, care_site_source_value varchar(50), place_of_service_source_value varchar(50));
    CREATE TABLE ${schema}.provider (provider_id integer NOT NULL, provider_name varchar(255), npi varchar(20), dea varchar(20),
      specialty_concept_id integer, care_site_id integer, year_of_birth integer, gender_concept_id integer,
      provider_source_value varchar(50), specialty_source_value varchar(50), specialty_source_concept_id integer,
      gender_source_value varchar(50), gender_source_concept_id integer);
    CREATE TABLE ${schema}.person (person_id integer NOT NULL, gender_concept_id integer NOT NULL, year_of_birth integer NOT NULL,
      month_of_birth integer, day_of_birth integer, birth_datetime timestamp, race_concept_id integer NOT NULL,
      ethnicity_concept_id integer NOT NULL, location_id integer, provider_id integer, care_site_id integer,
      person_source_value varchar(50), gender_source_value varchar(50), gender_source_concept_id integer,
      race_source_value varchar(50), race_source_concept_id integer, ethnicity_source_value varchar(50),
      ethnicity_source_concept_id integer);
    CREATE TABLE ${schema}.visit_occurrence (visit_occurrence_id integer NOT NULL, person_id integer NOT NULL, visit_concept_id integer NOT NULL,
      visit_start_date date NOT NULL, visit_start_datetime timestamp, visit_end_date date NOT NULL, visit_end_datetime timestamp,
      visit_type_concept_id integer NOT NULL, provider_id integer, care_site_id integer, visit_source_value varchar(50),
      visit_source_concept_id integer, admitted_from_concept_id integer, admitted_from_source_value varchar(50),
      discharged_to_concept_id integer, discharged_to_source_value varchar(50), preceding_visit_occurrence_id integer);
    CREATE TABLE ${schema}.note (note_id integer NOT NULL, person_id integer NOT NULL, note_date date NOT NULL, note_datetime timestamp,
      note_type_concept_id integer NOT NULL, note_class_concept_id integer NOT NULL, note_title varchar(250), note_text text NOT NULL,
      encoding_concept_id integer NOT NULL, language_concept_id integer NOT NULL, provider_id integer, visit_occurrence_id integer,
      visit_detail_id integer, note_source_value varchar(50), note_event_id bigint, note_event_field_concept_id integer);`;
}

/**
 * Person 1 lives at location 10, has care site 100 (at location 21) and primary provider 502; their
 * notes (even note_ids) belong to visit 900 at care site 101 (location 20) with provider 501 and are
 * written by provider 500. Person 2 lives at location 11 and has nothing else; their notes have no
 * visit and no provider.
 */
function cdmRows(schema: string): string {
  return `
    INSERT INTO ${schema}.location VALUES
      (10, '12 Pellham Road', 'Apt 4', 'Cambridge', 'MA', '02139', 'Middlesex', 'LOC-H10', 4330442, 'US', 42.37, -71.11),
      (11, '9 Quillfeather Lane', NULL, 'Salem', 'MA', '01970', 'Essex', NULL, 4330442, 'US', NULL, NULL),
      (20, '55 Fruit Street', NULL, 'Boston', 'MA', '02114', 'Suffolk', 'LOC-S20', 4330442, 'US', NULL, NULL),
      (21, '7 Mill Pond Drive', '', 'Lowell', 'MA', '01854', 'Middlesex', NULL, 4330442, 'US', NULL, NULL);
    INSERT INTO ${schema}.care_site VALUES
      (100, 'Riverbend Family Practice', 8716, 21, 'CS-RFP', 'Office'),
      (101, 'Harborview Cardiac Pavilion', 8717, 20, 'CS-HCP', 'Inpatient');
    INSERT INTO ${schema}.provider VALUES
      (500, 'Alma Voss', '1234567893', 'AV1234563', 38004456, 101, 1970, 8532, 'PRV-500', 'Cardiology', NULL, 'F', NULL),
      (501, 'Henrik Okafor', '1982736450', NULL, 38004451, 101, 1965, 8507, 'PRV-501', 'Internal Medicine', NULL, 'M', NULL),
      (502, 'Priya Natarajan', NULL, NULL, 38004446, 100, 1980, 8532, NULL, 'Family Practice', NULL, 'F', NULL);
    INSERT INTO ${schema}.person VALUES
      (1, 8507, 2015, 3, 9, NULL, 0, 0, 10, 502, 100, 'MRN-0001', 'M', 0, NULL, 0, NULL, 0),
      (2, 8532, 2016, NULL, NULL, '2016-11-02 00:00', 0, 0, 11, NULL, NULL, 'MRN-0002', 'F', 0, NULL, 0, NULL, 0);
    INSERT INTO ${schema}.visit_occurrence VALUES
      (900, 1, 9201, '2021-01-01', NULL, '2021-01-20', NULL, 44818518, 501, 101, 'V-900', 0, 0, NULL, 0, NULL, NULL);
    INSERT INTO ${schema}.note
      SELECT g, 1 + g % 2, date '2021-01-01' + g, NULL, 44814645, 706, 'Progress note', 'Note text number ' || g, 0, 0,
             CASE WHEN g % 2 = 0 THEN 500 END, CASE WHEN g % 2 = 0 THEN 900 END, NULL, NULL, NULL, NULL
        FROM generate_series(1, 7) g;`;
}

/** What a note of person 1 knows with every identifier table joined and the default personSourceValue. */
const PERSON_1 = {
  mrns: ['MRN-0001'],
  dates: ['2015-03-09'],
  addresses: ['12 Pellham Road, Apt 4, Cambridge, MA 02139', '55 Fruit Street, Boston, MA 02114', '7 Mill Pond Drive, Lowell, MA 01854', 'Boston', 'Cambridge', 'Lowell', 'Middlesex', 'Suffolk'],
  facilities: ['Harborview Cardiac Pavilion', 'Riverbend Family Practice'],
  names: ['Alma Voss', 'Henrik Okafor', 'Priya Natarajan'],
  other: ['1234567893', '1982736450', 'AV1234563', 'CS-HCP', 'CS-RFP', 'LOC-H10', 'LOC-S20', 'PRV-500', 'PRV-501'],
};

const PERSON_2 = {
  mrns: ['MRN-0002'],
  dates: ['2016-11-02'],
  addresses: ['9 Quillfeather Lane, Salem, MA 01970', 'Essex', 'Salem'],
};

run('OMOP CDM note source on PostgreSQL', () => {
  let store: TestStore;
  let url: string;

  async function sql(text: string): Promise<void> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query(text);
    } finally {
      await c.end();
    }
  }

  beforeAll(async () => {
    store = await freshStore('postgres');
    url = store.url as string;
    await sql(`${cdmTables('cdm')}${cdmRows('cdm')} CREATE TABLE cdm.audit_sink (x int);`);
  });

  afterAll(async () => {
    await store?.drop();
  });

  function bind(source: Record<string, unknown>, extra: Record<string, unknown> = {}): { catalog: Catalog; dir: string } {
    const dir = tempDir('omop');
    writeFileSync(join(dir, 'labels.csv'), 'note_id,prompt,label\n2,Is PTBM recommended?,A\n5,Is PTBM recommended?,B\n7,Is PTBM recommended?,A\n');
    writeFileSync(
      join(dir, 'site-data.json'),
      JSON.stringify({ benchmarks: { shc_ptbm_med: { source: { type: 'omop-note', connection: { env: 'TEST_OMOP_URL' }, schema: 'cdm', ...source }, columns: { context: 'note_text' }, ...extra } } }),
    );
    return { catalog: Catalog.load([], { siteDataFile: join(dir, 'site-data.json') }), dir };
  }

  const read = (source: Record<string, unknown>, extra?: Record<string, unknown>) => collect(bind(source, extra).catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url });

  it('reads the labelled notes in note_id order across batches, each with its person as subject', async () => {
    const got = await read({ labels: { path: 'labels.csv' }, batchSize: 2 });
    expect(got.map((i) => [i.key, i.vars.context, i.vars.question, i.references[0], i.subjectId])).toEqual([
      ['2', 'Note text number 2', 'Is PTBM recommended?', 'A', '1'],
      ['5', 'Note text number 5', 'Is PTBM recommended?', 'B', '2'],
      ['7', 'Note text number 7', 'Is PTBM recommended?', 'A', '2'],
    ]);
  });

  it("attaches the person's address, city and county, the care sites of the person and of the visit, and the providers of the note, the visit and the person", async () => {
    const got = await read({ labels: { path: 'labels.csv' }, batchSize: 2 });
    expect(sortedKnown(got[0])).toEqual(PERSON_1);
    // No visit, provider or care site: the person's own location only.
    expect(sortedKnown(got[1])).toEqual(PERSON_2);
    expect(sortedKnown(got[2])).toEqual(PERSON_2);
  });

  it('takes person_source_value as the MRN, as a pseudonym ("other"), or not at all', async () => {
    const only = (i: Instance | undefined) => ({ mrns: i?.known?.mrns, other: i?.known?.other?.filter((v) => v.startsWith('MRN')) });
    const labels = { path: 'labels.csv' };
    expect(only((await read({ labels, personSourceValue: 'mrn' }))[0])).toEqual({ mrns: ['MRN-0001'], other: [] });
    expect(only((await read({ labels, personSourceValue: 'pseudonym' }))[0])).toEqual({ mrns: undefined, other: ['MRN-0001'] });
    expect(only((await read({ labels, personSourceValue: 'ignore' }))[0])).toEqual({ mrns: undefined, other: [] });
    expect(() => bind({ personSourceValue: 'ssn' })).toThrow(/personSourceValue: must be one of "mrn", "pseudonym", "ignore"/);
  });

  it("joins only the identifier tables the source names: [] is note and person alone, and a visit's provider needs visit_occurrence", async () => {
    const labels = { path: 'labels.csv' };
    expect((await read({ labels, identifierTables: [] }))[0]?.known).toEqual({ mrns: ['MRN-0001'], dates: ['2015-03-09'] });
    const providers = (await read({ labels, identifierTables: ['provider'] }))[0];
    expect(sortedKnown(providers)).toEqual({ mrns: ['MRN-0001'], dates: ['2015-03-09'], names: ['Alma Voss', 'Priya Natarajan'], other: ['1234567893', 'AV1234563', 'PRV-500'] });
    expect(() => bind({ identifierTables: ['person'] })).toThrow(/identifierTables\/0: must be one of "location", "care_site", "provider", "visit_occurrence"/);
  });

  it("lays the site binding's subject and known columns (from the labels CSV) on what the CDM attaches", async () => {
    const { catalog, dir } = bind({ labels: { path: 'labels.csv' }, identifierTables: [] }, { subject: 'family', known: { names: ['nok'] } });
    writeFileSync(join(dir, 'labels.csv'), 'note_id,prompt,label,family,nok\n2,q,A,fam-7,Ruth Okonkwo\n5,q,B,,\n');
    const got = await collect(catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url });
    expect(got.map((i) => [i.subjectId, i.known])).toEqual([
      ['fam-7', { mrns: ['MRN-0001'], dates: ['2015-03-09'], names: ['Ruth Okonkwo'] }],
      ['2', { mrns: ['MRN-0002'], dates: ['2016-11-02'] }],
    ]);
  });

  it('merges the identifiers of a note whose dimension rows repeat (no primary keys) and keeps the keyset exact', async () => {
    await sql(`${cdmTables('dup')}${cdmRows('dup')}
      INSERT INTO dup.location VALUES (10, '40 Second Home Way', NULL, 'Cambridge', 'MA', '02139', 'Middlesex', NULL, 4330442, 'US', NULL, NULL);
      INSERT INTO dup.provider VALUES (500, 'Alma Voss-Lindqvist', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);`);
    const got = await read({ schema: 'dup', batchSize: 1 }, { columns: { context: 'note_text', prompt: 'note_title', label: 'note_title' } });
    expect(got.map((i) => i.key)).toEqual(['1', '2', '3', '4', '5', '6', '7']);
    expect(got[1]?.known?.addresses).toEqual(expect.arrayContaining(['12 Pellham Road, Apt 4, Cambridge, MA 02139', '40 Second Home Way, Cambridge, MA 02139']));
    expect(got[1]?.known?.names).toEqual(expect.arrayContaining(['Alma Voss', 'Alma Voss-Lindqvist', 'Henrik Okafor']));
  });

  it('never writes: a note "table" that tries to write fails on the read-only connection', async () => {
    await sql(`
      CREATE SCHEMA trap;
      CREATE TABLE trap.person (LIKE cdm.person);
      CREATE TABLE trap.location (LIKE cdm.location);
      CREATE TABLE trap.care_site (LIKE cdm.care_site);
      CREATE TABLE trap.provider (LIKE cdm.provider);
      CREATE TABLE trap.visit_occurrence (LIKE cdm.visit_occurrence);
      CREATE FUNCTION trap.log_read() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$ BEGIN INSERT INTO cdm.audit_sink VALUES (1); RETURN true; END $$;
      CREATE VIEW trap.note AS SELECT * FROM cdm.note WHERE trap.log_read();
    `);
    const err = await failure(read({ schema: 'trap' }));
    expect(err.code).toBe('omop.query-failed');
    expect(err.message).toContain('(25006); a write was attempted on the read-only connection');
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    expect((await check.query('SELECT count(*)::int AS n FROM cdm.audit_sink')).rows[0]).toEqual({ n: 0 });
    await check.end();
  });

  it('names the source, the record and the column when a required column is missing, never a value', async () => {
    // No labels file: the note rows have no "label" or "prompt" column.
    const err = await failure(read({}));
    expect(err.message).toBe('omop:cdm.note: record 1: missing column "prompt"');
  });

  it('names a missing table or CDM column and the fix, and a missing connection variable', async () => {
    expect((await failure(read({ schema: 'nothere' }))).message).toMatch(/reading nothere\.note failed \(42P01\); the note or person table is not in that schema/);

    // A CDM with note and person only (no location_id, care_site_id or provider_id on person either).
    await sql(`CREATE SCHEMA bare;
      CREATE TABLE bare.note (LIKE cdm.note);
      CREATE TABLE bare.person (LIKE cdm.person);
      ALTER TABLE bare.person DROP COLUMN location_id, DROP COLUMN care_site_id, DROP COLUMN provider_id;
      INSERT INTO bare.note SELECT * FROM cdm.note;
      INSERT INTO bare.person SELECT person_id, gender_concept_id, year_of_birth, month_of_birth, day_of_birth, birth_datetime, race_concept_id,
        ethnicity_concept_id, person_source_value, gender_source_value, gender_source_concept_id, race_source_value, race_source_concept_id,
        ethnicity_source_value, ethnicity_source_concept_id FROM cdm.person;`);
    const err = await failure(read({ schema: 'bare' }));
    expect(err.message).toMatch(
      /^benchmark shc_ptbm_med \(OMOP source in .*\): reading bare\.note failed \(42P01\); table bare\.location, bare\.care_site, bare\.provider, bare\.visit_occurrence is missing or not readable by this role; column bare\.person\.location_id, bare\.person\.care_site_id, bare\.person\.provider_id is missing \(CDM v5\.3\/5\.4 expected\); fix the CDM or the role's grants, or leave "location", "care_site", "provider", "visit_occurrence" out of "identifierTables" of this source in the site data file$/,
    );
    // Only the provider table, and the person's provider_id, missing: only "provider" to leave out.
    await sql(`CREATE TABLE bare.location (LIKE cdm.location); CREATE TABLE bare.care_site (LIKE cdm.care_site); CREATE TABLE bare.visit_occurrence (LIKE cdm.visit_occurrence);
      ALTER TABLE bare.person ADD COLUMN location_id integer, ADD COLUMN care_site_id integer;`);
    expect((await failure(read({ schema: 'bare' }))).message).toMatch(
      /\(42P01\); table bare\.provider is missing or not readable by this role; column bare\.person\.provider_id is missing .*leave "provider" out of "identifierTables"/,
    );
    const without = await read({ schema: 'bare', labels: { path: 'labels.csv' }, identifierTables: ['location', 'care_site', 'visit_occurrence'] });
    expect(without.map((i) => [i.key, i.known?.mrns, i.known?.names])).toEqual([
      ['2', ['MRN-0001'], undefined],
      ['5', ['MRN-0002'], undefined],
      ['7', ['MRN-0002'], undefined],
    ]);

    const missing = await failure(collect(bind({}).catalog.get('shc_ptbm_med'), {}));
    expect(missing.code).toBe('omop.no-connection');
    expect(missing.message).toContain('environment variable TEST_OMOP_URL (the OMOP database URL) is not set');
  });

  it('names a table the role may not read (least-privilege grants) the same way', async () => {
    const role = `ehrbench_omop_ro_${Date.now().toString(36)}`;
    await sql(`CREATE ROLE ${role} LOGIN; GRANT USAGE ON SCHEMA cdm TO ${role};
      GRANT SELECT ON cdm.note, cdm.person, cdm.location, cdm.care_site, cdm.visit_occurrence TO ${role};`);
    try {
      const u = new URL(url);
      u.username = role;
      const err = await failure(collect(bind({}).catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: u.toString() }));
      expect(err.message).toMatch(
        /reading cdm\.note failed \(42501\); table cdm\.provider is missing or not readable by this role; fix the CDM or the role's grants, or leave "provider" out of "identifierTables"/,
      );
      const got = await collect(bind({ labels: { path: 'labels.csv' }, identifierTables: ['location', 'care_site', 'visit_occurrence'] }).catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: u.toString() });
      expect(got[0]?.known?.facilities?.sort()).toEqual(['Harborview Cardiac Pavilion', 'Riverbend Family Practice']);
    } finally {
      await sql(`DROP OWNED BY ${role}; DROP ROLE ${role};`);
    }
  });

  it('reports labelled note_ids the note table does not have', async () => {
    const { catalog, dir } = bind({ labels: { path: 'labels.csv' } });
    writeFileSync(join(dir, 'labels.csv'), 'note_id,prompt,label\n2,q,A\n99,q,B\n');
    const err = await failure(collect(catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url }));
    expect(err.code).toBe('omop.missing-notes');
  });

  /** A site data file for shc_ptbm_med on `source` in a fresh folder with the labels CSV. */
  function siteFor(source: Record<string, unknown>, labels = 'note_id,prompt,label\n2,q2,A\n5,q5,B\n7,q7,A\n'): { dir: string; file: string } {
    const dir = tempDir('omop-pin');
    writeFileSync(join(dir, 'labels.csv'), labels);
    const file = join(dir, 'site-data.json');
    writeFileSync(
      file,
      JSON.stringify({
        benchmarks: {
          shc_ptbm_med: { source: { type: 'omop-note', connection: { env: 'TEST_OMOP_URL' }, schema: 'cdm', labels: { path: 'labels.csv' }, ...source }, columns: { context: 'note_text' } },
        },
      }),
    );
    return { dir, file };
  }

  it('keeps the read-only session default when the URL sets its own options (search_path), and applies both', async () => {
    // A note "table" that answers only to a session that is read-only by default and has the URL's search_path.
    await sql(`CREATE SCHEMA sess;
      CREATE TABLE sess.person AS SELECT * FROM cdm.person;
      CREATE FUNCTION sess.session_ok() RETURNS boolean LANGUAGE plpgsql STABLE AS $$
      BEGIN
        IF current_setting('default_transaction_read_only') <> 'on' THEN RAISE EXCEPTION USING ERRCODE = 'EB001'; END IF;
        IF current_setting('search_path') !~ '^sess' THEN RAISE EXCEPTION USING ERRCODE = 'EB002'; END IF;
        RETURN true;
      END $$;
      CREATE VIEW sess.note AS SELECT * FROM cdm.note WHERE sess.session_ok();`);
    const u = new URL(url);
    u.searchParams.set('options', '-c search_path=sess,public');
    const { file } = siteFor({ schema: 'sess', identifierTables: [] });
    const got = await collect(Catalog.load([], { siteDataFile: file }).get('shc_ptbm_med'), { TEST_OMOP_URL: u.toString() });
    expect(got.map((i) => i.key)).toEqual(['2', '5', '7']);
  });

  it('refuses labels whose file differs from labelsSha256, naming the field', async () => {
    const labels = 'note_id,prompt,label\n2,q2,A\n5,q5,B\n7,q7,A\n';
    const pin = createHash('sha256').update(labels).digest('hex');
    const { dir, file } = siteFor({ labelsSha256: pin }, labels);
    expect((await collect(Catalog.load([], { siteDataFile: file }).get('shc_ptbm_med'), { TEST_OMOP_URL: url })).map((i) => i.references[0])).toEqual(['A', 'B', 'A']);
    writeFileSync(join(dir, 'labels.csv'), 'note_id,prompt,label\n2,q2,B\n5,q5,B\n7,q7,A\n');
    const err = await failure(collect(Catalog.load([], { siteDataFile: file }).get('shc_ptbm_med'), { TEST_OMOP_URL: url }));
    expect(err.code).toBe('dataset.hash-mismatch');
    expect(err.message).toMatch(/: the labels file .*labels\.csv differs from source\.labelsSha256 \(benchmarks\.shc_ptbm_med in .*site-data\.json\); /);
  });

  it('pins the notes with `benchmarks check --pin` and refuses them once an ETL refresh renumbers them', async () => {
    await sql(`CREATE SCHEMA etl;
      CREATE TABLE etl.note AS SELECT * FROM cdm.note; CREATE TABLE etl.person AS SELECT * FROM cdm.person;`);
    const h = tempDir('omop-home');
    initHome({ home: h });
    writeFileSync(join(h, 'labels.csv'), 'note_id,prompt,label\n2,q2,A\n5,q5,B\n7,q7,A\n');
    const binding = (pins: Record<string, string> = {}) =>
      writeFileSync(
        join(h, 'site-data.json'),
        JSON.stringify({
          benchmarks: {
            shc_ptbm_med: {
              source: { type: 'omop-note', connection: { env: 'TEST_OMOP_URL' }, schema: 'etl', identifierTables: [], labels: { path: 'labels.csv' }, ...pins },
              columns: { context: 'note_text' },
            },
          },
        }),
      );
    binding();
    const check = (args: string[] = []) =>
      spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'benchmarks', 'check', 'shc_ptbm_med', ...args], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: process.env.HOME, EHRBENCH_HOME: h, TEST_OMOP_URL: url },
      });
    const first = check(['--pin', '--json']);
    expect(first.stderr).toBe('');
    const report = JSON.parse(first.stdout) as { ok: boolean; checks: { check: string; status: string; detail: string }[]; pins: Record<string, string> };
    expect(report.checks.map((c) => [c.check, c.status])).toEqual([
      ['site-data', 'ok'],
      ['source', 'ok'],
      ['labels', 'ok'],
      ['connection', 'ok'],
      ['notes', 'ok'],
      ['records', 'ok'],
    ]);
    expect(report.checks.find((c) => c.check === 'connection')?.detail).toBe('connected, read-only session; first page: 3 notes');
    expect(report.checks.find((c) => c.check === 'labels')?.detail).toMatch(/labels\.csv: 3 labelled notes; labelsSha256 not pinned/);
    expect(Object.keys(report.pins)).toEqual(['benchmarks.shc_ptbm_med.source.labelsSha256', 'benchmarks.shc_ptbm_med.source.noteIdsSha256']);
    expect(report.pins['benchmarks.shc_ptbm_med.source.labelsSha256']).toBe(
      createHash('sha256')
        .update(readFileSync(join(h, 'labels.csv')))
        .digest('hex'),
    );
    binding({ labelsSha256: report.pins['benchmarks.shc_ptbm_med.source.labelsSha256'] as string, noteIdsSha256: report.pins['benchmarks.shc_ptbm_med.source.noteIdsSha256'] as string });
    const pinned = check();
    expect(pinned.status).toBe(0);
    expect(pinned.stdout).toMatch(/^ok\s+notes\s+3 notes; noteIdsSha256 matches$/m);
    const catalog = () => Catalog.load([], { siteDataFile: join(h, 'site-data.json') }).get('shc_ptbm_med');
    expect((await collect(catalog(), { TEST_OMOP_URL: url })).map((i) => [i.key, i.vars.context])).toEqual([
      ['2', 'Note text number 2'],
      ['5', 'Note text number 5'],
      ['7', 'Note text number 7'],
    ]);

    // The refresh gives notes 2 and 5 each other's ids: the same ids, other notes behind them.
    await sql(`UPDATE etl.note SET note_id = CASE note_id WHEN 2 THEN 5 ELSE 2 END WHERE note_id IN (2, 5);`);
    const err = await failure(collect(catalog(), { TEST_OMOP_URL: url }));
    expect(err.code).toBe('omop.notes-changed');
    expect(err.message).toMatch(
      /^benchmark shc_ptbm_med \(OMOP source in .*\): the notes read differ from source\.noteIdsSha256 \(benchmarks\.shc_ptbm_med in .*\); the note table changed since it was pinned \(an ETL refresh that renumbers or rewrites notes\), so labels keyed by note_id may pair with other notes: check the labels against the new note_ids, then pin again with "npx ehrbench benchmarks check shc_ptbm_med --pin"$/,
    );
    const after = check();
    expect(after.status).toBe(1);
    expect(after.stdout).toMatch(/^PROBLEM\s+notes\s+.*differ from source\.noteIdsSha256 .*\[omop\.notes-changed\]$/m);
  });

  it('refuses a note over maxRecordBytes by its record number, without fetching its text', async () => {
    await sql(`CREATE SCHEMA big;
      CREATE TABLE big.note AS SELECT * FROM cdm.note; CREATE TABLE big.person AS SELECT * FROM cdm.person;
      UPDATE big.note SET note_text = repeat('long text ', 1000) WHERE note_id = 5;`);
    const { file } = siteFor({ schema: 'big', identifierTables: [] });
    const err = await failure(collect(Catalog.load([], { siteDataFile: file, limits: { maxRecordBytes: 4096 } }).get('shc_ptbm_med'), { TEST_OMOP_URL: url }));
    expect(err.code).toBe('dataset.record-too-large');
    expect(err.message).toMatch(/^benchmark shc_ptbm_med \(OMOP source in .*\): record 2: note_text is larger than the per-record limit of 4096 bytes \(catalog\.maxRecordBytes in the config\); /);
    expect(await collect(Catalog.load([], { siteDataFile: file, limits: { maxRecordBytes: 20_000 } }).get('shc_ptbm_med'), { TEST_OMOP_URL: url })).toHaveLength(3);
  });
});
