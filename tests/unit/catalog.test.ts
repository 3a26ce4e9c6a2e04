import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog, instancesOf, loadBenchmark, verifyDataset } from '../../src/catalog';
import { UserError } from '../../src/errors';
import { tempDir } from '../helpers/db';
import { catalog, countInstances } from '../helpers/instances';

describe('built-in catalog', () => {
  it('ships PubMedQA (1,000), MedCalc-Bench (1,047) and MEDEC (597 notes with text)', async () => {
    expect(await countInstances('pubmed_qa')).toBe(1000);
    expect(await countInstances('medcalc_bench')).toBe(1047);
    expect(await countInstances('medec')).toBe(597);
  });

  it('verifies shipped data against the sha256 in the definition', async () => {
    for (const b of catalog.list()) await expect(verifyDataset(b)).resolves.toBeUndefined();
  });

  it('records stable content hashes of definition and template', () => {
    const again = Catalog.load();
    for (const b of catalog.list()) {
      expect(b.definitionHash).toMatch(/^[0-9a-f]{64}$/);
      expect(again.get(b.definition.id).definitionHash).toBe(b.definitionHash);
      expect(again.get(b.definition.id).templateHash).toBe(b.templateHash);
    }
  });

  it('refuses an unknown benchmark id with a pointer to the list', () => {
    expect(() => catalog.get('nope')).toThrow(/unknown benchmark "nope"; see "ehrbench benchmarks list"/);
  });
});

describe('site benchmarks from CSV', () => {
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
        dataset: { path: 'data.csv', format: 'csv', adapter: 'columns', columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] } },
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

  it('reads instances through a column mapping', async () => {
    const b = loadBenchmark(siteBenchmark('id,context,label\n1,"note one",yes\n2,"note two",no\n'));
    const all = [];
    for await (const i of instancesOf(b)) all.push(i);
    expect(all.map((i) => [i.key, i.vars.note, i.references[0]])).toEqual([
      ['1', 'note one', 'yes'],
      ['2', 'note two', 'no'],
    ]);
  });

  it('names the file, the record and the column when a column is missing', async () => {
    const dir = siteBenchmark('id,text,label\n1,"Patient Jane Roe",yes\n');
    const b = loadBenchmark(dir);
    let error: unknown;
    try {
      for await (const _ of instancesOf(b)) void _;
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toBe(`${join(dir, 'data.csv')}: record 1: missing column "context"`);
    expect((error as Error).message).not.toContain('Jane');
  });

  it('reports malformed CSV by line without quoting it', async () => {
    const b = loadBenchmark(siteBenchmark('id,context,label\n1,"Patient "Jane" Roe",yes\n'));
    let error: unknown;
    try {
      for await (const _ of instancesOf(b)) void _;
    } catch (err) {
      error = err;
    }
    expect((error as Error).message).toMatch(/data\.csv: CSV error \w+ at line \d+/);
    expect((error as Error).message).not.toContain('Jane');
  });

  it('rejects a definition with an unknown key or a template variable the data cannot fill', () => {
    expect(() => loadBenchmark(siteBenchmark('id,context,label\n', { colour: 'red' }))).toThrow(/benchmark\.json: \/: unknown key "colour"/);
    const dir = siteBenchmark('id,context,label\n');
    writeFileSync(join(dir, 'prompt.txt'), '{{note}} {{age}}');
    expect(() => loadBenchmark(dir)).toThrow(/template uses \{\{age\}\} but the dataset adapter provides only note, choices/);
  });
});
