/**
 * HELM's own files in: the configurable benchmark of HELM's documentation (the LLM-jury example, taken
 * from docs/medhelm.md as written there) and HELM's four MedHELM run-entry files, each entry mapped to
 * a catalog benchmark and the settings a hospital must configure. Fixtures: tests/fixtures/helm/
 * (unchanged copies, Apache-2.0; SOURCE.txt there).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Catalog, importHelmBenchmark, instancesOf, loadBenchmark, mapHelmRunEntries, type Instance } from '../../src/catalog';
import { judgePrompt } from '../../src/annotate';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';
import { failure } from '../helpers/errors';

const FIXTURES = join(ROOT, 'tests', 'fixtures', 'helm');
const DOC = readFileSync(join(FIXTURES, 'medhelm.md'), 'utf8');
const catalog = Catalog.load();

/** The fenced block that follows "**Example — `name`:**" in HELM's docs, as written there. */
function docExample(name: string): string {
  const at = DOC.indexOf(`**Example — \`${name}\`:**`);
  if (at < 0) throw new Error(`no example ${name} in medhelm.md`);
  const open = DOC.indexOf('```', at);
  const body = DOC.indexOf('\n', open) + 1;
  const close = DOC.indexOf('\n```', body);
  return DOC.slice(body, close + 1);
}

/** HELM's LLM-JURY-SCORE-DEMO in a folder of its own; `dataset` may change the CSV. */
function juryDemo(dataset: (csv: string) => string = (csv) => csv): string {
  const dir = tempDir('helm-jury');
  for (const file of ['llm_jury_score_demo_prompt.txt', 'llm_jury_score_demo_judge_prompt.txt', 'llm_jury_score_demo.yaml']) {
    writeFileSync(join(dir, file), docExample(file));
  }
  // The docs elide further rows with a "..." line; the two rows shown are the dataset.
  const csv = docExample('llm_jury_score_demo_dataset.csv')
    .split('\n')
    .filter((l) => l.trim() !== '...')
    .join('\n');
  writeFileSync(join(dir, 'llm_jury_score_demo_dataset.csv'), dataset(csv));
  return join(dir, 'llm_jury_score_demo.yaml');
}

const placement = { category: 'Patient Communication and Education', subcategory: 'Delivering Personalized Care Instructions' };

/** The import names its dataset where it is: that folder is declared for site data (config catalog.dataDirs). */
const beside = (yaml: string) => ({ dataDirs: [dirname(yaml)], daemonFiles: [] });

describe("import-helm on HELM's documented LLM-jury example", () => {
  it('imports the jury-only benchmark without a correct_answer column, as HELM allows', async () => {
    const out = tempDir('helm-out');
    const yaml = juryDemo();
    const report = await importHelmBenchmark(yaml, { outDir: out, ...placement, judges: ['judge-a', 'judge-b', 'judge-c'], files: beside(yaml) });
    expect(report.id).toBe('llm_jury_score_demo');
    expect(report.metrics).toEqual(['jury_score', 'jury_score_normalized', 'jury_judges_used']);
    const b = loadBenchmark(report.dir, { files: beside(yaml) });
    expect(b.definition.dataset.columns).toEqual({ id: '#row', vars: { patient_id: 'patient_id', note: 'note' } });
    expect(b.definition.dataRequirements?.columns.map((c) => c.name)).toEqual(['patient_id', 'note']);
    expect(b.definition.references).toMatch(/^none/);
    const got: Instance[] = [];
    for await (const i of instancesOf(b)) got.push(i);
    expect(got.map((i) => [i.vars.patient_id, i.references])).toEqual([
      ['4001', []],
      ['4002', []],
    ]);
  });

  it('reads the criteria from the <rubric_criteria> block, not from the prose that names the tag before it', async () => {
    // With a correct_answer column the dataset passes either way: what is left is the rubric parser.
    const config = juryDemo((csv) =>
      csv
        .split('\n')
        .map((l, i) => (l === '' ? l : i === 0 ? `${l},correct_answer` : `${l},"x"`))
        .join('\n'),
    );
    const report = await importHelmBenchmark(config, { outDir: tempDir('helm-out'), ...placement, files: beside(config) });
    expect(loadBenchmark(report.dir, { files: beside(config) }).definition.jury?.criteria).toEqual(['faithfulness', 'completeness', 'safety', 'clarity', 'conciseness']);
  });

  it('still requires correct_answer when a metric other than jury_score needs a reference (HELM: unless jury_score is the only metric)', async () => {
    const config = juryDemo();
    const yaml = readFileSync(config, 'utf8').replace('metrics:\n', 'metrics:\n  - name: "rouge_l"\n');
    writeFileSync(config, yaml);
    const err = await failure(importHelmBenchmark(config, { outDir: tempDir('helm-out'), ...placement, files: beside(config) }));
    expect(err.code).toBe('helm-import.dataset');
    expect(err.message).toContain('missing column "correct_answer"');
    expect(err.message).toContain('unless jury_score is the only metric');
  });

  it('refuses a judge prompt that compares with {GOLD_RESPONSE} when the dataset has no correct_answer', async () => {
    const config = juryDemo();
    const judge = join(config, '..', 'llm_jury_score_demo_judge_prompt.txt');
    writeFileSync(judge, readFileSync(judge, 'utf8').replace('</RESPONSE>', '</RESPONSE>\n<GOLD>{GOLD_RESPONSE}</GOLD>'));
    const err = await failure(importHelmBenchmark(config, { outDir: tempDir('helm-out'), ...placement, files: beside(config) }));
    expect(err.code).toBe('helm-import.dataset');
    expect(err.message).toContain('{GOLD_RESPONSE}');
  });

  it("fills the imported judge prompt as HELM fills the original, and refuses one HELM's string.Template would fail on", async () => {
    const config = juryDemo();
    const report = await importHelmBenchmark(config, { outDir: tempDir('helm-out'), ...placement, judges: ['judge-a', 'judge-b', 'judge-c'], files: beside(config) });
    const b = loadBenchmark(report.dir, { files: beside(config) });
    const original = readFileSync(join(config, '..', 'llm_jury_score_demo_judge_prompt.txt'), 'utf8');
    // HELM: {QUESTION} -> $QUESTION, then string.Template; the imported {{QUESTION}} gives the same prompt.
    const helm = original.replaceAll('{QUESTION}', 'Q $1').replaceAll('{RESPONSE}', 'R').replaceAll('{GOLD_RESPONSE}', '');
    expect(judgePrompt(b.juryTemplate as string, 'Q $1', 'R', '')).toBe(helm);

    const judge = join(config, '..', 'llm_jury_score_demo_judge_prompt.txt');
    writeFileSync(judge, `${original}\nA visit costs $20.\n`);
    const err = await failure(importHelmBenchmark(config, { outDir: tempDir('helm-out'), ...placement, files: beside(config) }));
    expect(err.code).toBe('helm-import.jury');
    expect(err.message).toMatch(/"\$" at line \d+ is not a placeholder/);
  });

  it('refuses, before writing anything, a dataset the catalog would not read: outside the output folder and catalog.dataDirs', async () => {
    const config = juryDemo();
    const out = tempDir('helm-out');
    const err = await failure(importHelmBenchmark(config, { outDir: out, ...placement, files: { dataDirs: [], daemonFiles: [] } }));
    expect(err.code).toBe('helm-import.dataset');
    expect(err.message).toContain(`${config}: dataset_file: ${join(dirname(config), 'llm_jury_score_demo_dataset.csv')} is outside the benchmark's folder`);
    expect(err.message).toMatch(/catalog\.dataDirs \(rule benchmark\.file-outside-folder\)$/);
    expect(readdirSync(out)).toEqual([]);
  });
});

describe("HELM's MedHELM run-entry files (.conf)", () => {
  const report = (file: string) => mapHelmRunEntries(join(FIXTURES, file), catalog);

  it('reads every entry of the four files and maps each to a catalog benchmark', () => {
    const counts = ['public', 'gated', 'private_stanford', 'dspy'].map((t) => report(`run_entries_medhelm_${t}.conf`).entries);
    expect(counts.map((e) => e.length)).toEqual([221, 143, 338, 64]);
    for (const entries of counts) expect(entries.filter((e) => e.benchmarkId === null).map((e) => e.runSpec)).toEqual([]);
    const ids = (entries: (typeof counts)[number]) => [...new Set(entries.map((e) => e.benchmarkId))].sort();
    const tierOf = (id: string | null) => catalog.get(id as string).definition.tier;
    expect(ids(counts[0] ?? []).map(tierOf)).toEqual(Array(16).fill('public'));
    expect(new Set(ids(counts[1] ?? []).map(tierOf))).toEqual(new Set(['approval-required']));
    expect(ids(counts[1] ?? [])).toHaveLength(7);
    expect(new Set(ids(counts[2] ?? []).map(tierOf))).toEqual(new Set(['private']));
    expect(ids(counts[2] ?? [])).toHaveLength(14);
  });

  it('names the MedHELM run spec and subcategory, the model deployment, the eval cap and the settings of an entry', () => {
    const { entries } = report('run_entries_medhelm_public.conf');
    const medqa = entries.find((e) => e.runSpec === 'medhelm_med_qa' && e.modelDeployment === 'stanfordhealthcare/deepseek-r1');
    expect(medqa).toMatchObject({
      benchmarkId: 'med_qa',
      subcategory: 'Providing Clinical Knowledge Support',
      model: 'deepseek-ai/deepseek-r1',
      maxEvalInstances: null,
      settings: { num_output_tokens: '4000' },
    });
    expect(medqa?.configure).toEqual([
      'an endpoint serving deepseek-ai/deepseek-r1 (HELM deployment stanfordhealthcare/deepseek-r1)',
      'run with --max-output-tokens 4000',
      "run with --max-instances 1000, MedHELM's leaderboard cap (or --preset medhelm-leaderboard for all its settings)",
      'benchmarks.med_qa.source in the site data file (csv or jsonl; see npx ehrbench benchmarks show med_qa)',
    ]);
  });

  it('says what a hospital must configure for gated and private entries: its data, subjects run separately, judges, the eval cap', () => {
    const gated = report('run_entries_medhelm_gated.conf').entries;
    const ehrshot = gated.find((e) => e.runSpec === 'ehrshot' && e.settings.subject === 'lab_anemia' && e.modelDeployment === 'stanfordhealthcare/gpt-4o-2024-05-13');
    expect(ehrshot?.benchmarkId).toBe('ehrshot');
    expect(ehrshot?.settings).toEqual({ subject: 'lab_anemia', max_length: '100000', data_path: '/share/pi/nigam/data/medhelm/ehrshot/meds/' });
    expect(ehrshot?.configure).toContain('subject lab_anemia: one site data file per subject (HELM runs each subject separately and averages them)');
    expect(ehrshot?.configure).toContain(
      'benchmarks.ehrshot.source in the site data file (HELM read data_path /share/pi/nigam/data/medhelm/ehrshot/meds/; csv or jsonl; see npx ehrbench benchmarks show ehrshot)',
    );
    const medalign = gated.find((e) => e.runSpec === 'medalign');
    expect(medalign?.configure).toContain('judges: jury.judges in the site data file (HELM: the default judges.yaml)');

    const clear = report('run_entries_medhelm_private_stanford.conf').entries.find((e) => e.runSpec === 'clear');
    expect(clear).toMatchObject({ benchmarkId: 'clear', maxEvalInstances: 100 });
    expect(clear?.configure).toContain('run with --max-instances 100 (HELM samples them with seed 0 when the set is larger)');
    expect(clear?.configure.filter((c) => c.includes('--max-instances'))).toHaveLength(1);
  });

  it("hints MedHELM's leaderboard cap, --max-instances 1000 or the preset, where an entry sets none (helm-run took it on its command line)", () => {
    const entries = report('run_entries_medhelm_public.conf').entries;
    expect(entries.length).toBeGreaterThan(0);
    for (const e of entries.filter((x) => x.maxEvalInstances === null)) {
      expect(e.configure).toContain("run with --max-instances 1000, MedHELM's leaderboard cap (or --preset medhelm-leaderboard for all its settings)");
    }
    expect(entries.filter((x) => x.maxEvalInstances === null).length).toBeGreaterThan(0);
  });

  it('points a configurable-benchmark entry at import-helm with its config', () => {
    const dir = tempDir('helm-conf');
    const conf = join(dir, 'llm_jury_score_demo.conf');
    writeFileSync(conf, docExample('llm_jury_score_demo.conf'));
    const [entry] = mapHelmRunEntries(conf, catalog).entries;
    expect(entry).toMatchObject({
      runSpec: 'medhelm_configurable_benchmark',
      benchmarkId: null,
      modelDeployment: 'huggingface/qwen2.5-7b-instruct',
      settings: { config_path: 'llm_jury_score_demo.yaml' },
    });
    expect(entry?.configure).toContain(`import it first: npx ehrbench benchmarks import-helm ${join(dir, 'llm_jury_score_demo.yaml')} --out DIR --category C --subcategory S`);
  });

  it('refuses a file that is not a run-entries file, naming the file and line', () => {
    const dir = tempDir('helm-conf');
    mkdirSync(join(dir, 'x'));
    const bad = join(dir, 'bad.conf');
    writeFileSync(bad, 'entries: [\n  {description: "medec:model=a/b", priority: 1},\n  {descripton: "medec", priority: 1},\n]\n');
    expect(() => mapHelmRunEntries(bad, catalog)).toThrow(`${bad}: line 3: an entry has a field "descripton"; HELM run entries have description and priority`);
    writeFileSync(bad, 'runs = [1, 2]\n');
    expect(() => mapHelmRunEntries(bad, catalog)).toThrow(`${bad}: line 1: expected "entries: [" (a HELM run-entries file)`);
  });
});
