/**
 * The benchmark catalog: definitions as data (one folder per benchmark with benchmark.json and its
 * prompt template), validated against schemas/benchmark.schema.json, and the stream of instances of
 * each. Built-in benchmarks come first; site folders from the config may add more but not shadow one.
 */
import { createReadStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { isAbsolute, join } from 'node:path';
import { canonicalHash, sha256Hex } from '../canonical';
import { readJsonFile, validateOrThrow } from '../config/validate';
import { UserError } from '../errors';
import { getMetric } from '../metrics';
import { BUILTIN_BENCHMARK_DIR } from '../paths';
import { adapterFor } from './adapters';
import { readRecords } from './sources/records';
import { templateVariables } from './template';
import type { Benchmark, BenchmarkDefinition, Instance } from './types';

export type { Benchmark, BenchmarkDefinition, Instance, KnownIdentifiers } from './types';
export { renderTemplate, renderChoices, templateVariables } from './template';

/** Variables each named adapter fills; `columns` declares its own in the definition. */
const ADAPTER_VARIABLES: Record<string, string[]> = {
  pubmed_qa: ['context', 'question', 'choices'],
  medec: ['sentences'],
};

export function loadBenchmark(dir: string): Benchmark {
  const file = join(dir, 'benchmark.json');
  const definition = validateOrThrow<BenchmarkDefinition>('benchmark.schema.json', readJsonFile(file, 'benchmark.invalid'), file, 'benchmark.invalid');
  const templatePath = resolveIn(dir, definition.prompt.templateFile);
  if (!existsSync(templatePath)) throw new UserError('benchmark.invalid', `${file}: prompt.templateFile ${definition.prompt.templateFile} does not exist`);
  const template = readFileSync(templatePath, 'utf8');
  if (!adapterFor(definition.dataset.adapter)) {
    throw new UserError('benchmark.invalid', `${file}: /dataset/adapter: unknown adapter "${definition.dataset.adapter}"`);
  }
  const provided =
    definition.dataset.adapter === 'columns'
      ? [...Object.keys(definition.dataset.columns?.vars ?? {}), ...(definition.dataset.columns?.choices ? ['choices'] : [])]
      : (ADAPTER_VARIABLES[definition.dataset.adapter] ?? []);
  for (const v of templateVariables(template)) {
    if (!provided.includes(v)) throw new UserError('benchmark.invalid', `${file}: template uses {{${v}}} but the dataset adapter provides only ${provided.join(', ')}`);
  }
  for (const m of [definition.metrics.main, ...(definition.metrics.secondary ?? [])]) {
    if (!getMetric(m)) throw new UserError('benchmark.invalid', `${file}: /metrics: unknown metric "${m}"`);
  }
  return {
    definition,
    dir,
    dataPath: resolveIn(dir, definition.dataset.path),
    template,
    definitionHash: canonicalHash(definition),
    templateHash: sha256Hex(template),
  };
}

function resolveIn(dir: string, p: string): string {
  return isAbsolute(p) ? p : join(dir, p);
}

export class Catalog {
  private readonly byId = new Map<string, Benchmark>();

  constructor(benchmarks: Benchmark[]) {
    for (const b of benchmarks) {
      if (this.byId.has(b.definition.id)) {
        throw new UserError('benchmark.duplicate', `${b.dir}: benchmark id "${b.definition.id}" is already defined`);
      }
      this.byId.set(b.definition.id, b);
    }
  }

  /** Loads every folder holding a benchmark.json under the built-in catalog and the given site folders. */
  static load(siteDirs: string[] = []): Catalog {
    const found: Benchmark[] = [];
    for (const root of [BUILTIN_BENCHMARK_DIR, ...siteDirs]) {
      if (!existsSync(root)) throw new UserError('catalog.missing', `${root}: benchmark folder does not exist; fix catalog.dirs in the config`);
      for (const entry of readdirSync(root, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (entry.isDirectory() && existsSync(join(root, entry.name, 'benchmark.json'))) found.push(loadBenchmark(join(root, entry.name)));
      }
    }
    return new Catalog(found);
  }

  list(): Benchmark[] {
    return [...this.byId.values()];
  }

  get(id: string): Benchmark {
    const b = this.byId.get(id);
    if (!b) throw new UserError('benchmark.unknown', `unknown benchmark "${id}"; see "ehrbench benchmarks list"`);
    return b;
  }
}

/** Verifies the data file against the definition's sha256, when one is given. */
export async function verifyDataset(b: Benchmark): Promise<void> {
  const expected = b.definition.dataset.sha256;
  if (!expected) return;
  const hash = createHash('sha256');
  await new Promise<void>((resolve, reject) => {
    createReadStream(b.dataPath)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve())
      .on('error', (err: NodeJS.ErrnoException) =>
        reject(new UserError('dataset.unreadable', `${b.dataPath}: cannot read (${err.code ?? 'error'}); check the dataset path`)),
      );
  });
  if (hash.digest('hex') !== expected) {
    throw new UserError('dataset.hash-mismatch', `${b.dataPath}: content differs from the sha256 in benchmark ${b.definition.id}; restore the file or update the definition`);
  }
}

/** Streams the instances of a benchmark in dataset order; `limit` stops after that many. */
export async function* instancesOf(b: Benchmark, limit?: number): AsyncGenerator<Instance> {
  const adapter = adapterFor(b.definition.dataset.adapter);
  if (!adapter) throw new UserError('benchmark.invalid', `benchmark ${b.definition.id}: unknown adapter`);
  let count = 0;
  for await (const record of readRecords(b.dataPath, b.definition.dataset.format)) {
    if (limit !== undefined && count >= limit) return;
    const instance = adapter(record, { file: b.dataPath, definition: b.definition });
    if (instance === null) continue;
    count += 1;
    yield instance;
  }
}
