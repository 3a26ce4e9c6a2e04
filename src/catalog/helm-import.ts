/**
 * Imports a HELM configurable benchmark (medhelm_configurable_benchmark: a YAML config, a prompt
 * template with {column} placeholders, a CSV with correct_answer and incorrect_answers, or without
 * them when jury_score is the only metric) as an
 * ehrbench site benchmark folder: benchmark.json, prompt.txt and, for jury_score, jury.txt. The CSV is
 * not copied: the definition names it where it is and pins its sha256, so patient data stays where
 * the site keeps it and a changed file is refused. Nothing from the CSV but its header is read.
 *
 * Mapping: exact_match and rouge_1/2/l keep their names; jury_score becomes ehrbench's jury on a 0-5
 * scale (HELM's configurable rubric starts at 0) with the criteria named in the judge prompt's
 * <rubric_criteria> block; BERTScore needs a GPU model and is left out (reported). The first metric
 * is the main one, as in HELM. Judges are HELM deployments there and endpoint ids here, so they are
 * given with --judge or in the site data file.
 */
import { commandPrefix } from '../command-prefix';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse as parseCsv } from 'csv-parse';
import { parse as parseYaml } from 'yaml';
import type { FilePlaces } from '../config';
import { validateOrThrow } from '../schema';
import { UserError } from '../errors';
import type { Tier } from '../tiers';
import { fileProblem, NO_PLACES, refuseFile } from './confine';
import { isSubcategoryOf } from './taxonomy';
import { juryTemplateProblem } from './jury-template';
import type { BenchmarkDefinition } from './types';

interface HelmConfig {
  name: string;
  description: string;
  prompt_file: string;
  dataset_file: string;
  max_tokens: number;
  metrics: { name: string; prompt_file?: string; judges?: { name: string; model_name?: string }[] }[];
}

export interface HelmImportOptions {
  outDir: string;
  id?: string;
  tier?: Tier;
  category: string;
  subcategory: string;
  judges?: string[];
  /** Where the definition's files may lie (config catalogFiles): the dataset is named, not copied, so it must lie where the catalog will read it. */
  files?: FilePlaces;
}

export interface HelmImportReport {
  id: string;
  dir: string;
  metrics: string[];
  skipped: string[];
  columns: string[];
  dataset: string;
  judgesNeeded: boolean;
}

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_ -]*)\}/g;

function idFrom(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 63);
}

/** HELM's {column} template as ehrbench's {{column}}; literal {{ or }} would be ambiguous, so they are refused. */
function convertTemplate(text: string, file: string, names: 'columns' | 'judge'): { template: string; placeholders: string[] } {
  // A judge prompt carries its rubric as JSON, whose nested objects close with "}}"; only the
  // three placeholders are read there. The prompt template has no such use for doubled braces.
  if (names === 'columns' && /\{\{|\}\}/.test(text)) throw new UserError('helm-import.template', `${file}: contains "{{" or "}}"; write placeholders as {column} only`);
  const placeholders: string[] = [];
  const template = text.replace(PLACEHOLDER, (m, name: string) => {
    if (names === 'judge' && !['QUESTION', 'RESPONSE', 'GOLD_RESPONSE'].includes(name)) return m;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UserError('helm-import.template', `${file}: placeholder {${name}} must be a column name of letters, digits and _`);
    placeholders.push(name);
    return `{{${name}}}`;
  });
  return { template, placeholders: [...new Set(placeholders)] };
}

async function csvHeader(file: string): Promise<string[]> {
  const parser = createReadStream(file).pipe(parseCsv({ bom: true, to_line: 1 }));
  try {
    for await (const row of parser as AsyncIterable<string[]>) return row;
  } catch {
    throw new UserError('helm-import.dataset', `${file}: not a readable CSV file`);
  }
  throw new UserError('helm-import.dataset', `${file}: the CSV has no header row`);
}

function sha256File(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/**
 * The criteria named in the judge prompt's <rubric_criteria>{...}</rubric_criteria> block. The block is
 * found as HELM finds it (benchmark_config.py): the tag followed by a JSON object and the closing tag,
 * so prose that names the tag first ("a JSON object inside <rubric_criteria>:", HELM's own example)
 * is not taken for the block.
 */
function rubricCriteria(text: string, file: string): string[] {
  const block = /<rubric_criteria>\s*(\{[\s\S]*?\})\s*<\/rubric_criteria>/.exec(text);
  if (!block) throw new UserError('helm-import.jury', `${file}: no <rubric_criteria>{...}</rubric_criteria> block naming the criteria`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(block[1] as string);
  } catch {
    throw new UserError('helm-import.jury', `${file}: the <rubric_criteria> block is not valid JSON`);
  }
  const keys = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.keys(parsed) : [];
  if (keys.length === 0 || !keys.every((k) => /^[a-z_]{1,40}$/.test(k))) {
    throw new UserError('helm-import.jury', `${file}: <rubric_criteria> must be an object of criteria named in lower-case letters and _`);
  }
  return keys;
}

/**
 * Whether the dataset has HELM's correct_answer column. HELM's configurable scenario requires it
 * unless jury_score is the only metric (a jury can score without a gold answer); the same here.
 */
function referenceColumn(header: string[], cfg: HelmConfig, dataset: string): boolean {
  if (header.includes('correct_answer')) return true;
  const juryOnly = cfg.metrics.length === 1 && cfg.metrics[0]?.name === 'jury_score';
  if (!juryOnly) {
    throw new UserError('helm-import.dataset', `${dataset}: missing column "correct_answer" (HELM configurable benchmarks need it unless jury_score is the only metric); add the reference answers`);
  }
  return false;
}

export async function importHelmBenchmark(configFile: string, opts: HelmImportOptions): Promise<HelmImportReport> {
  if (!existsSync(configFile)) throw new UserError('helm-import.missing', `${configFile}: no such file`);
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(configFile, 'utf8'));
  } catch {
    throw new UserError('helm-import.invalid', `${configFile}: not valid YAML`);
  }
  const cfg = validateOrThrow<HelmConfig>('helm-config.schema.json', raw, configFile, 'helm-import.invalid');
  if (!isSubcategoryOf(opts.category, opts.subcategory)) {
    throw new UserError('helm-import.taxonomy', `"${opts.subcategory}" is not a MedHELM subcategory of "${opts.category}"; see "${commandPrefix()} benchmarks list"`);
  }
  const base = dirname(resolve(configFile));
  const at = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const id = opts.id ?? idFrom(cfg.name);
  if (!/^[a-z0-9][a-z0-9_]{0,62}$/.test(id)) throw new UserError('helm-import.id', `cannot derive an id from the name; pass --id`);

  const promptFile = at(cfg.prompt_file);
  if (!existsSync(promptFile)) throw new UserError('helm-import.missing', `${configFile}: prompt_file ${cfg.prompt_file} does not exist`);
  const { template, placeholders } = convertTemplate(readFileSync(promptFile, 'utf8'), promptFile, 'columns');
  const dataset = at(cfg.dataset_file);
  if (!existsSync(dataset)) throw new UserError('helm-import.missing', `${configFile}: dataset_file ${cfg.dataset_file} does not exist`);
  // Refused before anything is written: a definition naming it would not load (catalog/confine.ts).
  refuseFile('helm-import.dataset', `${configFile}: dataset_file`, fileProblem(dataset, join(opts.outDir, id), opts.files ?? NO_PLACES));
  const header = await csvHeader(dataset);
  for (const c of placeholders) {
    if (!header.includes(c)) throw new UserError('helm-import.dataset', `${dataset}: missing column "${c}" (used by ${cfg.prompt_file})`);
  }
  const hasReference = referenceColumn(header, cfg, dataset);

  const metrics: string[] = [];
  const skipped: string[] = [];
  let jury: BenchmarkDefinition['jury'];
  let juryTemplate: string | undefined;
  for (const m of cfg.metrics) {
    if (m.name.startsWith('BERTScore')) {
      skipped.push(m.name);
      continue;
    }
    if (m.name !== 'jury_score') {
      metrics.push(m.name);
      continue;
    }
    if (!m.prompt_file) throw new UserError('helm-import.jury', `${configFile}: jury_score needs a prompt_file (the judge prompt)`);
    const judgeFile = at(m.prompt_file);
    if (!existsSync(judgeFile)) throw new UserError('helm-import.missing', `${configFile}: judge prompt_file ${m.prompt_file} does not exist`);
    const text = readFileSync(judgeFile, 'utf8');
    const criteria = rubricCriteria(text, judgeFile);
    juryTemplate = convertTemplate(text, judgeFile, 'judge').template;
    if (!juryTemplate.includes('{{RESPONSE}}')) throw new UserError('helm-import.jury', `${judgeFile}: the judge prompt has no {RESPONSE} placeholder`);
    const problem = juryTemplateProblem(juryTemplate);
    if (problem) throw new UserError('helm-import.jury', `${judgeFile}: ${problem}`);
    if (!hasReference && juryTemplate.includes('{{GOLD_RESPONSE}}')) {
      throw new UserError(
        'helm-import.dataset',
        `${dataset}: the judge prompt ${m.prompt_file} compares with {GOLD_RESPONSE}, which needs a correct_answer column; add it or take {GOLD_RESPONSE} out of the judge prompt`,
      );
    }
    jury = { promptFile: 'jury.txt', criteria, scale: { min: 0, max: 5 }, ...(opts.judges?.length ? { judges: opts.judges } : {}) };
    metrics.push('jury_score', 'jury_score_normalized', 'jury_judges_used');
  }
  if (metrics.length === 0) throw new UserError('helm-import.metrics', `${configFile}: no metric ehrbench can compute (BERTScore needs a GPU model and is not available)`);
  if (cfg.metrics[0]?.name.startsWith('BERTScore')) {
    throw new UserError('helm-import.metrics', `${configFile}: the main (first) metric ${cfg.metrics[0].name} is not available; list a computable metric first`);
  }

  const tier = opts.tier ?? 'private';
  const definition: BenchmarkDefinition = {
    id,
    version: '1.0.0',
    displayName: cfg.name,
    description: cfg.description,
    category: opts.category,
    subcategory: opts.subcategory,
    tier,
    helm: { runSpec: 'medhelm_configurable_benchmark', group: cfg.name, mainMetric: cfg.metrics[0]?.name === 'jury_score' ? 'jury_score' : (metrics[0] as string), args: ['config_path'] },
    dataset: {
      origin: 'shipped',
      files: [{ path: dataset, sha256: sha256File(dataset) }],
      format: 'csv',
      adapter: 'columns',
      columns: { id: '#row', vars: Object.fromEntries(placeholders.map((p) => [p, p])), ...(hasReference ? { reference: 'correct_answer' } : {}) },
      source: `site CSV imported from HELM config ${resolve(configFile)}`,
    },
    dataRequirements: {
      summary: `A CSV with one row per instance: the prompt template columns${hasReference ? ' and the correct answer' : ''} (HELM configurable-benchmark format).`,
      formats: ['csv'],
      columns: [
        ...placeholders.map((p) => ({ name: p, description: `Fills {${p}} in the prompt template.` })),
        ...(hasReference
          ? [
              { name: 'correct_answer', description: 'The reference answer.' },
              { name: 'incorrect_answers', description: 'JSON list of wrong answers (HELM keeps them as non-correct references; no ehrbench metric reads them).', optional: true },
            ]
          : []),
      ],
    },
    prompt: { templateFile: 'prompt.txt', maxTokens: cfg.max_tokens, temperature: 0 },
    references: hasReference ? 'correct_answer column' : 'none: the jury scores without a gold answer (the dataset has no correct_answer column)',
    metrics: { main: metrics[0] as string, ...(metrics.length > 1 ? { secondary: metrics.slice(1) } : {}) },
    ...(jury ? { jury } : {}),
    split: 'test',
    lowerIsBetter: false,
    deidentification: tier === 'public' ? 'never' : 'required',
  };
  const dir = join(opts.outDir, id);
  if (existsSync(join(dir, 'benchmark.json'))) throw new UserError('helm-import.exists', `${dir}: a benchmark is already there; remove it or pass another --id`);
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  writeFileSync(join(dir, 'prompt.txt'), template);
  if (juryTemplate !== undefined) writeFileSync(join(dir, 'jury.txt'), juryTemplate);
  writeFileSync(join(dir, 'benchmark.json'), JSON.stringify(definition, null, 2) + '\n');
  return { id, dir, metrics, skipped, columns: placeholders, dataset, judgesNeeded: Boolean(jury && !opts.judges?.length) };
}
