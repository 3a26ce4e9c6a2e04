import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  CATEGORIES,
  Catalog,
  checkBuiltIns,
  dataStatus,
  instancesOf,
  loadBenchmark,
  loadSiteData,
  MEDHELM_BENCHMARK_COUNT,
  MEDHELM_BENCHMARKS,
  medhelmCategoryOf,
  OMOP_IDENTIFIER_TABLES,
  TAXONOMY,
  verifyDataset,
  type Instance,
} from '../../src/catalog';
import { BUILTIN_BENCHMARK_DIR } from '../../src/paths';
import { ROOT } from '../helpers/paths';
import { loadSchema } from '../../src/schema/validate';
import { tempDir } from '../helpers/db';
import { catalog, countInstances } from '../helpers/instances';
import { failure } from '../helpers/errors';
import type { UserError } from '../../src/errors';

async function all(b: ReturnType<typeof loadBenchmark>): Promise<Instance[]> {
  const out: Instance[] = [];
  for await (const i of instancesOf(b)) out.push(i);
  return out;
}

/** The benchmarks of each MedHELM category in a schema_medhelm.yaml (run_groups medhelm_scenarios -> category -> benchmark). */
function schemaCategories(file: string): Record<string, string[]> {
  const groups = (parseYaml(readFileSync(file, 'utf8')) as { run_groups: { name: string; display_name: string; subgroups?: string[] }[] }).run_groups;
  const byName = new Map(groups.map((g) => [g.name, g]));
  const out: Record<string, string[]> = {};
  for (const c of byName.get('medhelm_scenarios')?.subgroups ?? []) out[byName.get(c)?.display_name as string] = byName.get(c)?.subgroups ?? [];
  return out;
}

const HELM_SCHEMA = schemaCategories(join(ROOT, 'tests', 'fixtures', 'helm', 'schema_medhelm.yaml'));
const PACKAGE_SCHEMA = schemaCategories(join(ROOT, 'tests', 'fixtures', 'medhelm-package', 'schema_medhelm.yaml'));

describe('built-in catalog', () => {
  it(`holds the ${MEDHELM_BENCHMARK_COUNT} benchmarks the taxonomy lists: HELM's 37 (16 public, 7 approval-required, 14 private) and the package's, public, in 5 categories and 22 subcategories`, () => {
    const list = catalog.list();
    expect(list).toHaveLength(MEDHELM_BENCHMARK_COUNT);
    expect(list.map((b) => b.definition.id).sort()).toEqual(Object.values(MEDHELM_BENCHMARKS).flat().sort());
    const helm = new Set(Object.values(HELM_SCHEMA).flat());
    expect(helm.size).toBe(37);
    const tiers = (t: string, inHelm: boolean) => list.filter((b) => b.definition.tier === t && helm.has(b.definition.id) === inHelm).length;
    expect([tiers('public', true), tiers('approval-required', true), tiers('private', true)]).toEqual([16, 7, 14]);
    expect(tiers('public', false)).toBe(MEDHELM_BENCHMARK_COUNT - 37);
    expect(new Set(list.map((b) => b.definition.category)).size).toBe(5);
    const subcategories = new Set(list.map((b) => `${b.definition.category}/${b.definition.subcategory}`));
    expect(subcategories.size).toBe(22);
    expect(Object.values(TAXONOMY).flat()).toHaveLength(22);
  });

  it("files every benchmark where the MedHELM package's schema files it: HELM's categories and members unchanged, the package's additions in Clinical Decision Support", () => {
    expect(Object.keys(PACKAGE_SCHEMA)).toEqual(CATEGORIES);
    expect(Object.keys(HELM_SCHEMA)).toEqual(CATEGORIES);
    for (const category of CATEGORIES) {
      // The package keeps HELM's members in HELM's order and only appends.
      expect((PACKAGE_SCHEMA[category] as string[]).slice(0, HELM_SCHEMA[category]?.length)).toEqual(HELM_SCHEMA[category]);
      expect([...MEDHELM_BENCHMARKS[category]]).toEqual(PACKAGE_SCHEMA[category]);
    }
    for (const b of catalog.list()) expect([b.definition.id, medhelmCategoryOf(b.definition.id)]).toEqual([b.definition.id, b.definition.category]);
  });

  it('is counted in the READMEs as the taxonomy counts it, tiers included', () => {
    const tier = (t: string) => catalog.list().filter((b) => b.definition.tier === t).length;
    const guide = readFileSync(join(ROOT, 'benchmarks', 'README.md'), 'utf8').replace(/\s+/g, ' ');
    expect(guide).toContain(
      `${MEDHELM_BENCHMARK_COUNT} MedHELM benchmarks (5 categories, 22 subcategories; ${tier('public')} public, ${tier('approval-required')} approval-required = HELM's "gated", ${tier('private')} private)`,
    );
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ')).toContain(`**Benchmarks are data**: ${MEDHELM_BENCHMARK_COUNT} MedHELM benchmarks in`);
  });

  it('refuses a built-in benchmark filed under another category, or missing, naming the file and the taxonomy; a site folder files its own anywhere', () => {
    const d = JSON.parse(readFileSync(join(BUILTIN_BENCHMARK_DIR, 'sct_bench', 'benchmark.json'), 'utf8')) as Record<string, unknown>;
    const dir = tempDir('cat');
    mkdirSync(join(dir, 'sct_bench'));
    cpSync(join(BUILTIN_BENCHMARK_DIR, 'sct_bench', 'prompt.txt'), join(dir, 'sct_bench', 'prompt.txt'));
    writeFileSync(join(dir, 'sct_bench', 'benchmark.json'), JSON.stringify({ ...d, category: 'Medical Research Assistance', subcategory: 'Ensuring Clinical Research Quality' }));
    const moved = loadBenchmark(join(dir, 'sct_bench'));
    const others = catalog.list().filter((b) => b.definition.id !== 'sct_bench');
    expect(() => checkBuiltIns([...others, moved])).toThrow(
      `${join(dir, 'sct_bench', 'benchmark.json')}: /category: "Medical Research Assistance", but the MedHELM taxonomy files it under Clinical Decision Support (src/catalog/taxonomy.ts)`,
    );
    expect(() => checkBuiltIns(others)).toThrow(/: no folder for sct_bench, which the MedHELM taxonomy lists \(src\/catalog\/taxonomy\.ts\); reinstall ehrbench$/);
    expect(() => checkBuiltIns(catalog.list())).not.toThrow();
    // In a site folder (another id) the same definition loads where it says.
    mkdirSync(join(dir, 'site', 'own_bench'), { recursive: true });
    cpSync(join(dir, 'sct_bench', 'prompt.txt'), join(dir, 'site', 'own_bench', 'prompt.txt'));
    writeFileSync(
      join(dir, 'site', 'own_bench', 'benchmark.json'),
      JSON.stringify({ ...d, id: 'own_bench', category: 'Medical Research Assistance', subcategory: 'Ensuring Clinical Research Quality' }),
    );
    expect(Catalog.load([join(dir, 'site')]).get('own_bench').definition.category).toBe('Medical Research Assistance');
  });

  it('ships PubMedQA (1,000), MedCalc-Bench (1,047), MEDEC (597), ACI-Bench (120) and the EHRSQL eICU questions (2,909)', async () => {
    expect(await countInstances('pubmed_qa')).toBe(1000);
    expect(await countInstances('medcalc_bench')).toBe(1047);
    expect(await countInstances('medec')).toBe(597);
    expect(await countInstances('aci_bench')).toBe(120);
    expect(await countInstances('ehr_sql')).toBe(2909);
  });

  it('reads EHRSQL valid + test as HELM does: 950 unanswerable questions whose gold query is "null"', async () => {
    let impossible = 0;
    let nullGold = 0;
    for await (const i of instancesOf(catalog.get('ehr_sql'))) {
      if (i.extra?.isImpossible === true) impossible += 1;
      if (i.references[0] === 'null') nullGold += 1;
    }
    expect(impossible).toBe(950);
    expect(nullGold).toBe(950);
  });

  it('reads ACI-Bench dialogues with their reference notes from the three challenge test files', async () => {
    const [first] = await all(catalog.get('aci_bench'));
    expect(first?.key).toMatch(/^D2N\d+/);
    expect(first?.vars.conversation).toContain('[doctor]');
    expect(first?.references[0]?.length).toBeGreaterThan(100);
  });

  it('verifies shipped data against the sha256 in the definition', async () => {
    for (const b of catalog.list().filter((x) => dataStatus(x) === 'shipped' && !x.definition.jury && !x.definition.dataRequirements?.resources)) {
      await expect(verifyDataset(b)).resolves.toBeUndefined();
    }
  });

  it('records stable content hashes of definition and template', () => {
    const again = Catalog.load();
    for (const b of catalog.list()) {
      expect(b.definitionHash).toMatch(/^[0-9a-f]{64}$/);
      expect(again.get(b.definition.id).definitionHash).toBe(b.definitionHash);
      expect(again.get(b.definition.id).templateHash).toBe(b.templateHash);
    }
  });

  it('lists every site-supplied benchmark, and reading one without data says what to supply and where', async () => {
    const b = catalog.get('shc_ptbm_med');
    expect(dataStatus(b)).toBe('missing');
    const err = await failure(all(b));
    expect(err.code).toBe('dataset.not-configured');
    expect(err.message).toContain('add benchmarks.shc_ptbm_med.source (csv or jsonl or omop-note with columns prompt, context, label)');
    expect(err.message).toContain('ehrbench benchmarks show shc_ptbm_med');
  });

  it('refuses to run EHRSQL without the site database and a jury benchmark without judges', async () => {
    expect((await failure(verifyDataset(catalog.get('ehr_sql')))).code).toBe('ehrsql.no-database');
    expect((await failure(verifyDataset(catalog.get('aci_bench')))).code).toBe('jury.no-judges');
  });

  it('refuses an unknown benchmark id with a pointer to the list', () => {
    expect(() => catalog.get('nope')).toThrow(/unknown benchmark "nope"; see "npx ehrbench benchmarks list"/);
  });
});

describe('site data bound in site-data.json', () => {
  function siteFile(bindings: unknown): string {
    const dir = tempDir('site');
    const file = join(dir, 'site-data.json');
    writeFileSync(file, JSON.stringify(bindings));
    return file;
  }

  it('reads a private benchmark from the site CSV (prompt, context, label) named in the site data file', async () => {
    const file = siteFile({ benchmarks: { shc_ptbm_med: { source: { type: 'csv', path: 'ptbm.csv' } } } });
    writeFileSync(join(file, '..', 'ptbm.csv'), 'prompt,context,label\n"Is PTBM recommended?","Note one",A\n"Is PTBM recommended?","Note two",B\n');
    const c = Catalog.load([], { siteDataFile: file });
    const b = c.get('shc_ptbm_med');
    expect(dataStatus(b)).toBe('site');
    const got = await all(b);
    expect(got.map((i) => [i.key, i.vars.context, i.choices, i.references])).toEqual([
      ['1', 'Note one', ['A', 'B'], ['A']],
      ['2', 'Note two', ['A', 'B'], ['B']],
    ]);
  });

  it("maps the site's own column names and names both in errors, never the value", async () => {
    const file = siteFile({ benchmarks: { mimiciv_billing_code: { source: { type: 'csv', path: 'codes.csv' }, columns: { text: 'discharge_summary', target: 'icd10' } } } });
    writeFileSync(join(file, '..', 'codes.csv'), 'discharge_summary,icd10\n"Mr Jane Roe, sepsis","A41.9, N17.9"\n');
    const b = Catalog.load([], { siteDataFile: file }).get('mimiciv_billing_code');
    const [i] = await all(b);
    expect(i?.vars.text).toBe('Mr Jane Roe, sepsis');
    expect(i?.references).toEqual(['A41.9, N17.9']);

    writeFileSync(join(file, '..', 'codes.csv'), 'discharge_summary,codes\n"Mr Jane Roe, sepsis","A41.9"\n');
    const err = await failure(all(Catalog.load([], { siteDataFile: file }).get('mimiciv_billing_code')));
    expect(err.message).toBe(`${join(file, '..', 'codes.csv')}: record 1: missing column "icd10" (required column "target")`);
    expect(err.message).not.toContain('Jane');
  });

  it('maps CLEAR labels 1/0/2 to its options and refuses any other label by row and column', async () => {
    const file = siteFile({ benchmarks: { clear: { source: { type: 'csv', path: 'clear.csv' } } } });
    writeFileSync(join(file, '..', 'clear.csv'), 'text,condition,result_human\nnote a,chronic pain,1\nnote b,chronic pain,2\nnote c,chronic pain,7\n');
    const b = Catalog.load([], { siteDataFile: file }).get('clear');
    const seen: string[] = [];
    const err = await failure(
      (async () => {
        for await (const i of instancesOf(b)) seen.push(i.references[0] as string);
      })(),
    );
    expect(seen).toEqual(['Has a history of the condition', 'Uncertain']);
    expect(err.message).toBe(`${join(file, '..', 'clear.csv')}: record 3: column "result_human" must be one of 0, 1, 2`);
  });

  it('reads multiple choice from JSONL (options as a JSON list, answer as a letter)', async () => {
    const file = siteFile({ benchmarks: { med_qa: { source: { type: 'jsonl', path: 'medqa.jsonl' } } } });
    writeFileSync(
      join(file, '..', 'medqa.jsonl'),
      [
        JSON.stringify({ id: 'q1', question: 'Which drug?', options: JSON.stringify(['aspirin', 'heparin', 'warfarin', 'insulin']), answer: 'C' }),
        JSON.stringify({ id: 'q2', question: 'Which dose?', options: JSON.stringify(['1 mg', '2 mg']), answer: 'E' }),
      ].join('\n'),
    );
    const b = Catalog.load([], { siteDataFile: file }).get('med_qa');
    const seen: Instance[] = [];
    const err = await failure(
      (async () => {
        for await (const i of instancesOf(b)) seen.push(i);
      })(),
    );
    expect(seen[0]?.choices).toEqual(['aspirin', 'heparin', 'warfarin', 'insulin']);
    expect(seen[0]?.references).toEqual(['warfarin']);
    expect(err.message).toBe(`${join(file, '..', 'medqa.jsonl')}: record 2: column "answer" must be the letter of one of the options`);
  });

  it('changes the definition hash when the site binds other data, so a run notices', () => {
    const a = siteFile({ benchmarks: { shc_gip_med: { source: { type: 'csv', path: 'a.csv' } } } });
    const b = siteFile({ benchmarks: { shc_gip_med: { source: { type: 'csv', path: 'b.csv' } } } });
    const ha = Catalog.load([], { siteDataFile: a }).get('shc_gip_med').definitionHash;
    expect(Catalog.load([], { siteDataFile: a }).get('shc_gip_med').definitionHash).toBe(ha);
    expect(Catalog.load([], { siteDataFile: b }).get('shc_gip_med').definitionHash).not.toBe(ha);
    expect(catalog.get('shc_gip_med').definitionHash).not.toBe(ha);
  });

  it('refuses a binding for an unknown benchmark, a format the benchmark does not take, and unknown keys', () => {
    expect(() => Catalog.load([], { siteDataFile: siteFile({ benchmarks: { nope: {} } }) })).toThrow(/\/benchmarks\/nope: no benchmark has this id/);
    expect(() => Catalog.load([], { siteDataFile: siteFile({ benchmarks: { starr_patient_instructions: { source: { type: 'omop-note', connection: { env: 'X' } } } } }) })).toThrow(
      /type "omop-note" is not accepted; starr_patient_instructions takes csv, jsonl/,
    );
    expect(() => loadSiteData(siteFile({ benchmarks: {}, password: 'x' }))).toThrow(/unknown key "password"/);
  });
});

describe('subject and known identifiers bound in site-data.json', () => {
  function site(binding: Record<string, unknown>, file: string, content: string, id = 'shc_ptbm_med', dirs: string[] = []): { catalog: Catalog; data: string; siteData: string } {
    const dir = tempDir('known');
    const siteData = join(dir, 'site-data.json');
    const data = join(dir, file);
    writeFileSync(data, content);
    writeFileSync(siteData, JSON.stringify({ benchmarks: { [id]: { source: { type: file.endsWith('.csv') ? 'csv' : 'jsonl', path: file }, ...binding } } }));
    return { catalog: Catalog.load(dirs, { siteDataFile: siteData }), data, siteData };
  }

  const ALL_KINDS = {
    subject: 'patient_id',
    known: { names: ['patient_name', 'nok_name'], mrns: ['mrn'], dates: ['dob'], addresses: ['home_address'], phones: ['phone'], facilities: ['facility'], emails: [], other: ['account'] },
  };
  const HEADER = 'prompt,context,label,patient_id,patient_name,nok_name,mrn,dob,home_address,phone,facility,account';

  it('attaches the values of the named CSV columns to each instance, and skips empty cells', async () => {
    const { catalog } = site(
      ALL_KINDS,
      'notes.csv',
      `${HEADER}\nq,note one,A,P-17,Marguerite Hollis,Tomas Hollis,MRN-99812,1946-03-14,"12 Pellham Road, Cambridge, MA 02139",617-555-0142,Riverbend Clinic,ACCT-7731\n` +
        `q,note two,B,,Ines Abara,  ,0042,,,,,\n`,
    );
    const [one, two] = await all(catalog.get('shc_ptbm_med'));
    expect(one?.subjectId).toBe('P-17');
    expect(one?.known).toEqual({
      names: ['Marguerite Hollis', 'Tomas Hollis'],
      mrns: ['MRN-99812'],
      dates: ['1946-03-14'],
      addresses: ['12 Pellham Road, Cambridge, MA 02139'],
      phones: ['617-555-0142'],
      facilities: ['Riverbend Clinic'],
      other: ['ACCT-7731'],
    });
    // An empty (or blank) cell adds nothing; an empty subject cell leaves the record without one.
    expect(two?.subjectId).toBeUndefined();
    expect(two?.known).toEqual({ names: ['Ines Abara'], mrns: ['0042'] });
  });

  it('reads JSONL numbers, nulls (skipped) and lists (several values), for any adapter', async () => {
    const line = (o: Record<string, unknown>) => JSON.stringify({ question: 'Which drug?', options: JSON.stringify(['aspirin', 'heparin']), answer: 'A', ...o });
    const { catalog } = site(
      { subject: 'pid', known: { names: ['family'], mrns: ['mrn'], phones: ['phone'] } },
      'mcq.jsonl',
      [line({ id: 'q1', pid: 4411, family: ['Ada Lindqvist', '', 'Bo Lindqvist'], mrn: 778201, phone: null }), line({ id: 'q2', pid: null, family: null, mrn: 'M-2', phone: '555-0100' })].join('\n'),
      'med_qa',
    );
    const got = await all(catalog.get('med_qa'));
    expect(got.map((i) => [i.key, i.subjectId, i.known])).toEqual([
      ['q1', '4411', { names: ['Ada Lindqvist', 'Bo Lindqvist'], mrns: ['778201'] }],
      ['q2', undefined, { mrns: ['M-2'], phones: ['555-0100'] }],
    ]);
  });

  it('names the file, the record, the column and the binding key of a missing column in one line, never a value', async () => {
    const csv = site(
      ALL_KINDS,
      'notes.csv',
      'prompt,context,label,patient_id,patient_name,mrn,dob,home_address,phone,facility,account\nq,Marguerite Hollis note,A,P-17,Marguerite Hollis,MRN-99812,,,,,\n',
    );
    const err = await failure(all(csv.catalog.get('shc_ptbm_med')));
    expect(err.code).toBe('dataset.missing-column');
    expect(err.message).toBe(
      `${csv.data}: record 1: missing column "nok_name" (benchmarks.shc_ptbm_med.known.names in ${csv.siteData}); if some records leave it out, list it in benchmarks.shc_ptbm_med.optionalColumns`,
    );

    const jsonl = site(
      { subject: 'pid', known: { mrns: ['mrn'] } },
      'notes.jsonl',
      [JSON.stringify({ prompt: 'q', context: 'Hollis', label: 'A', pid: 1, mrn: 'MRN-99812' }), JSON.stringify({ prompt: 'q', context: 'Hollis', label: 'A', mrn: 'MRN-31337' })].join('\n'),
    );
    const missing = await failure(all(jsonl.catalog.get('shc_ptbm_med')));
    expect(missing.message).toBe(
      `${jsonl.data}: record 2: missing column "pid" (benchmarks.shc_ptbm_med.subject in ${jsonl.siteData}); if some records leave it out, list it in benchmarks.shc_ptbm_med.optionalColumns`,
    );

    const nested = site({ known: { names: ['family'] } }, 'nested.jsonl', JSON.stringify({ prompt: 'q', context: 'c', label: 'A', family: { mother: 'Ada Lindqvist' } }));
    const bad = await failure(all(nested.catalog.get('shc_ptbm_med')));
    expect(bad.message).toBe(`${nested.data}: record 1: column "family" (benchmarks.shc_ptbm_med.known.names in ${nested.siteData}) must be text, a number or a list of them`);
    for (const e of [err, missing, bad]) expect(e.message).not.toMatch(/Hollis|MRN-|Lindqvist/);
  });

  it('lets records leave out the identity columns the binding lists in optionalColumns, and only those', async () => {
    const lines = [
      JSON.stringify({ prompt: 'q', context: 'c', label: 'A', pid: 1, mrn: 'MRN-1', phone: '555-0100' }),
      // A JSONL export leaves out the keys a record has no value for.
      JSON.stringify({ prompt: 'q', context: 'c', label: 'A', mrn: 'MRN-2' }),
    ].join('\n');
    const lenient = site({ subject: 'pid', known: { mrns: ['mrn'], phones: ['phone'] }, optionalColumns: ['pid', 'phone'] }, 'notes.jsonl', lines);
    const got = await all(lenient.catalog.get('shc_ptbm_med'));
    expect(got.map((i) => [i.subjectId, i.known])).toEqual([
      ['1', { mrns: ['MRN-1'], phones: ['555-0100'] }],
      [undefined, { mrns: ['MRN-2'] }],
    ]);
    // A column not listed is still refused when a record lacks it.
    const strict = site({ subject: 'pid', known: { mrns: ['mrn'], phones: ['phone'] }, optionalColumns: ['pid'] }, 'notes.jsonl', lines);
    expect((await failure(all(strict.catalog.get('shc_ptbm_med')))).message).toMatch(/record 2: missing column "phone" \(benchmarks\.shc_ptbm_med\.known\.phones/);
    // Only identity columns may be listed: a required column absent is never a record without a value.
    expect(() => site({ subject: 'pid', optionalColumns: ['context'] }, 'notes.jsonl', lines)).toThrow(
      /\/benchmarks\/shc_ptbm_med\/optionalColumns: "context" is not a column this binding names in subject or known/,
    );
  });

  it("combines known values with the definition's columns, and the site's subject wins", async () => {
    const root = tempDir('defs');
    const dir = join(root, 'site_known');
    mkdirSync(dir);
    writeFileSync(join(dir, 'prompt.txt'), '{{note}}\nAnswer:');
    writeFileSync(
      join(dir, 'benchmark.json'),
      JSON.stringify({
        id: 'site_known',
        version: '1.0.0',
        displayName: 'Site known',
        category: 'Administration and Workflow',
        subcategory: 'Care Coordination and Planning',
        tier: 'private',
        dataset: { origin: 'site', adapter: 'columns', columns: { id: 'id', vars: { note: 'text' }, reference: 'label', subject: 'mrn', known: { names: ['patient'], mrns: ['mrn'] } } },
        dataRequirements: { summary: 'notes', formats: ['csv'], columns: ['id', 'text', 'label', 'patient', 'mrn'].map((name) => ({ name, description: name })) },
        prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
        references: 'label column',
        metrics: { main: 'exact_match' },
        split: 'test',
        lowerIsBetter: false,
      }),
    );
    const csv = 'id,body,label,patient,mrn,family_id,nok\n1,note,yes,Marguerite Hollis,MRN-1,F-9,Tomas Hollis\n2,note,no,Ines Abara,MRN-2,,Marguerite Hollis\n';
    const { catalog } = site({ columns: { text: 'body' }, subject: 'family_id', known: { names: ['nok', 'patient'] } }, 'known.csv', csv, 'site_known', [root]);
    const got = await all(catalog.get('site_known'));
    expect(got.map((i) => [i.subjectId, i.known])).toEqual([
      ['F-9', { names: ['Marguerite Hollis', 'Tomas Hollis'], mrns: ['MRN-1'] }],
      // No family_id: the definition's subject column stands.
      ['MRN-2', { names: ['Ines Abara', 'Marguerite Hollis'], mrns: ['MRN-2'] }],
    ]);
  });

  it('offers exactly the kinds of known identifiers de-identification takes, and exactly the CDM tables the OMOP reader joins', () => {
    const siteSchema = loadSchema('site-data.schema.json') as { $defs: Record<string, { properties: Record<string, { items?: { enum: string[] } }> }> };
    const kinds = Object.keys((loadSchema('deid-known.schema.json') as { properties: object }).properties);
    expect(Object.keys(siteSchema.$defs.knownColumns?.properties ?? {})).toEqual(kinds);
    expect(siteSchema.$defs.omopSource?.properties.identifierTables?.items?.enum).toEqual([...OMOP_IDENTIFIER_TABLES]);
  });

  it('refuses known columns of an unknown kind, without a source, or empty; and the binding changes the definition hash', () => {
    const file = (b: unknown) => {
      const f = join(tempDir('kschema'), 'site-data.json');
      writeFileSync(f, JSON.stringify({ benchmarks: { shc_ptbm_med: b } }));
      return f;
    };
    const source = { type: 'csv', path: 'x.csv' };
    expect(() => loadSiteData(file({ source, known: { ssn: ['ssn'] } }))).toThrow(
      /\/benchmarks\/shc_ptbm_med\/known: unknown key "ssn" \(allowed: names, mrns, dates, addresses, facilities, phones, emails, other\)/,
    );
    expect(() => loadSiteData(file({ known: { names: ['n'] } }))).toThrow(/\/benchmarks\/shc_ptbm_med: must have property source when property known is present/);
    expect(() => loadSiteData(file({ source, subject: '' }))).toThrow(/\/benchmarks\/shc_ptbm_med\/subject: must NOT have fewer than 1 characters/);
    expect(() => loadSiteData(file({ source, known: { names: [''] } }))).toThrow(/known\/names\/0: must NOT have fewer than 1 characters/);
    const plain = Catalog.load([], { siteDataFile: file({ source }) }).get('shc_ptbm_med').definitionHash;
    expect(Catalog.load([], { siteDataFile: file({ source, known: { names: ['n'] } }) }).get('shc_ptbm_med').definitionHash).not.toBe(plain);
  });
});

describe('site benchmark folders', () => {
  function siteBenchmark(csv: string, extra: Record<string, unknown> = {}): string {
    const dir = join(tempDir('bench'), 'site_bench');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'data.csv'), csv);
    writeFileSync(join(dir, 'prompt.txt'), '{{note}}\n{{choices}}\nAnswer:');
    writeFileSync(
      join(dir, 'benchmark.json'),
      JSON.stringify({
        id: 'site_bench',
        version: '1.0.0',
        displayName: 'Site benchmark',
        category: 'Administration and Workflow',
        subcategory: 'Care Coordination and Planning',
        tier: 'private',
        dataset: { origin: 'shipped', files: [{ path: 'data.csv' }], format: 'csv', adapter: 'columns', columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] } },
        prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
        references: 'label column',
        metrics: { main: 'exact_match' },
        split: 'test',
        lowerIsBetter: false,
        ...extra,
      }),
    );
    return dir;
  }

  it("refuses, at load, a judge prompt HELM's string.Template could not fill, naming the line", () => {
    const juryBench = (text: string) => {
      const dir = siteBenchmark('id,context,label\n1,"note one",yes\n', {
        metrics: { main: 'jury_score' },
        jury: { promptFile: 'jury.txt', criteria: ['accuracy'] },
      });
      writeFileSync(join(dir, 'jury.txt'), text);
      return dir;
    };
    const err = (() => {
      try {
        loadBenchmark(juryBench('Rate {RESPONSE}\nIt costs $5.'));
      } catch (e) {
        return e as UserError;
      }
      return undefined;
    })();
    expect(err?.code).toBe('benchmark.invalid');
    expect(err?.message).toMatch(/jury\.promptFile jury\.txt: "\$" at line 2 is not a placeholder/);
    // HELM's own placeholders, ehrbench's {{...}} form and an escaped $$ load.
    expect(loadBenchmark(juryBench('Rate {{RESPONSE}} against {GOLD_RESPONSE}; it costs $$5.')).juryTemplate).toContain('$$5');
    expect(() => loadBenchmark(juryBench('Rate the answer.'))).toThrow(/has no \{RESPONSE\} placeholder/);
  });

  it('reads instances through a column mapping', async () => {
    const b = loadBenchmark(siteBenchmark('id,context,label\n1,"note one",yes\n2,"note two",no\n'));
    expect((await all(b)).map((i) => [i.key, i.vars.note, i.references[0]])).toEqual([
      ['1', 'note one', 'yes'],
      ['2', 'note two', 'no'],
    ]);
  });

  it('names the file, the record and the column when a column is missing', async () => {
    const dir = siteBenchmark('id,text,label\n1,"Patient Jane Roe",yes\n');
    const err = await failure(all(loadBenchmark(dir)));
    expect(err.message).toBe(`${join(dir, 'data.csv')}: record 1: missing column "context"`);
    expect(err.message).not.toContain('Jane');
  });

  it('reports malformed CSV by line without quoting it', async () => {
    const err = await failure(all(loadBenchmark(siteBenchmark('id,context,label\n1,"Patient "Jane" Roe",yes\n'))));
    expect(err.message).toMatch(/data\.csv: CSV error \w+ at line \d+/);
    expect(err.message).not.toContain('Jane');
  });

  it('rejects an unknown key, a template variable the data cannot fill, and a subcategory of another category', () => {
    expect(() => loadBenchmark(siteBenchmark('id,context,label\n', { colour: 'red' }))).toThrow(/benchmark\.json: \/: unknown key "colour"/);
    const dir = siteBenchmark('id,context,label\n');
    writeFileSync(join(dir, 'prompt.txt'), '{{note}} {{age}}');
    expect(() => loadBenchmark(dir)).toThrow(/template uses \{\{age\}\} but the dataset adapter provides only note, choices/);
    expect(() => loadBenchmark(siteBenchmark('id,context,label\n', { subcategory: 'Planning Treatments' }))).toThrow(
      /"Planning Treatments" is not a MedHELM subcategory of Administration and Workflow/,
    );
  });

  it('requires a site-supplied benchmark to list every column its adapter reads', () => {
    const dir = siteBenchmark('', {
      dataset: { origin: 'site', adapter: 'columns', columns: { id: '#row', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] } },
      dataRequirements: { summary: 'notes', formats: ['csv'], columns: [{ name: 'context', description: 'the note' }] },
    });
    expect(() => loadBenchmark(dir)).toThrow(/the adapter reads column "label", which is not listed/);
  });
});
