/**
 * The OMOP CDM note source on a real PostgreSQL server (TEST_DATABASE_URL): a fresh database with a
 * small CDM `note` and `person`, read through the site data binding of a private benchmark. Shows the
 * join to person for known identifiers, the labels CSV, keyset paging, and that the connection cannot
 * write even when the database tries to make it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { Catalog, instancesOf, type Instance } from '../../src/catalog';
import { UserError } from '../../src/errors';
import { freshStore, tempDir, type TestStore } from '../helpers/db';

jest.setTimeout(60_000);

const run = process.env.TEST_DATABASE_URL ? describe : describe.skip;

async function collect(b: ReturnType<Catalog['get']>, env: NodeJS.ProcessEnv): Promise<Instance[]> {
  const out: Instance[] = [];
  for await (const i of instancesOf(b, undefined, env)) out.push(i);
  return out;
}

async function failure(p: Promise<unknown>): Promise<UserError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof UserError) return err;
    throw err;
  }
  throw new Error('expected a UserError');
}

run('OMOP CDM note source on PostgreSQL', () => {
  let store: TestStore;
  let url: string;

  beforeAll(async () => {
    store = await freshStore('postgres');
    url = store.url as string;
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`
      CREATE SCHEMA cdm;
      CREATE TABLE cdm.person (person_id bigint PRIMARY KEY, gender_concept_id integer, year_of_birth integer, month_of_birth integer,
        day_of_birth integer, birth_datetime timestamp, person_source_value varchar(50));
      CREATE TABLE cdm.note (note_id bigint PRIMARY KEY, person_id bigint, note_date date, note_datetime timestamp,
        note_type_concept_id integer, note_class_concept_id integer, note_title varchar(250), note_text text,
        encoding_concept_id integer, language_concept_id integer, provider_id bigint, visit_occurrence_id bigint);
      INSERT INTO cdm.person VALUES (1, 8507, 2015, 3, 9, NULL, 'MRN-0001'), (2, 8532, 2016, NULL, NULL, '2016-11-02 00:00', 'MRN-0002');
      INSERT INTO cdm.note SELECT g, 1 + g % 2, date '2021-01-01' + g, NULL, 44814645, 706, 'Progress note', 'Note text number ' || g, 0, 0, NULL, NULL
        FROM generate_series(1, 7) g;
      CREATE TABLE cdm.audit_sink (x int);
    `);
    await c.end();
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

  it('reads the labelled notes, joined to person for the MRN and birth date, in note_id order across batches', async () => {
    const { catalog } = bind({ labels: { path: 'labels.csv' }, batchSize: 2 });
    const got = await collect(catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url });
    expect(got.map((i) => [i.key, i.vars.context, i.vars.question, i.references[0], i.subjectId])).toEqual([
      ['2', 'Note text number 2', 'Is PTBM recommended?', 'A', '1'],
      ['5', 'Note text number 5', 'Is PTBM recommended?', 'B', '2'],
      ['7', 'Note text number 7', 'Is PTBM recommended?', 'A', '2'],
    ]);
    expect(got[0]?.known).toEqual({ mrns: ['MRN-0001'], dates: ['2015-03-09'] });
    expect(got[1]?.known).toEqual({ mrns: ['MRN-0002'], dates: ['2016-11-02'] });
  });

  it('never writes: a note "table" that tries to write fails on the read-only connection', async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`
      CREATE SCHEMA trap;
      CREATE TABLE trap.person (LIKE cdm.person);
      CREATE FUNCTION trap.log_read() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$ BEGIN INSERT INTO cdm.audit_sink VALUES (1); RETURN true; END $$;
      CREATE VIEW trap.note AS SELECT * FROM cdm.note WHERE trap.log_read();
    `);
    await c.end();
    const { catalog } = bind({ schema: 'trap' });
    const err = await failure(collect(catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url }));
    expect(err.code).toBe('omop.query-failed');
    expect(err.message).toContain('(25006); a write was attempted on the read-only connection');
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    expect((await check.query('SELECT count(*)::int AS n FROM cdm.audit_sink')).rows[0]).toEqual({ n: 0 });
    await check.end();
  });

  it('names the source, the record and the column when a required column is missing, never a value', async () => {
    const { catalog } = bind({});
    // No labels file: the note rows have no "label" or "prompt" column.
    const err = await failure(collect(catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url }));
    expect(err.message).toBe('omop:cdm.note: record 1: missing column "prompt"');
  });

  it('explains a missing table or CDM column by SQLSTATE, and a missing connection variable', async () => {
    expect((await failure(collect(bind({ schema: 'nothere' }).catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url }))).message).toMatch(
      /reading nothere\.note failed \(42P01\); the note or person table is not in that schema/,
    );
    const err = await failure(collect(bind({}).catalog.get('shc_ptbm_med'), {}));
    expect(err.code).toBe('omop.no-connection');
    expect(err.message).toContain('environment variable TEST_OMOP_URL (the OMOP database URL) is not set');
  });

  it('reports labelled note_ids the note table does not have', async () => {
    const { catalog, dir } = bind({ labels: { path: 'labels.csv' } });
    writeFileSync(join(dir, 'labels.csv'), 'note_id,prompt,label\n2,q,A\n99,q,B\n');
    const err = await failure(collect(catalog.get('shc_ptbm_med'), { TEST_OMOP_URL: url }));
    expect(err.code).toBe('omop.missing-notes');
  });
});
