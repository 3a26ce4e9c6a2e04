/**
 * HELM's sample needs the dataset's population, which costs a read of the whole dataset. A process
 * remembers it by the files' identity, so a daemon running a benchmark again reads the data once; the
 * remembered count can never choose a wrong sample unnoticed: the selection pass counts again and a
 * difference refuses the run (dataset.changed) and forgets the count. Synthetic rows only.
 */
import { statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBenchmark, loadSiteData, streamInstances } from '../../src/catalog';
import { BUILTIN_BENCHMARK_DIR } from '../../src/paths';
import { tempDir } from '../helpers/db';

const header = 'text,condition,result_human\n';
const rows = (n: number) => Array.from({ length: n }, (_, i) => `note ${i},chronic pain,${i % 3}\n`).join('');

function benchmarkOn(csv: string) {
  const dir = tempDir('population');
  writeFileSync(join(dir, 'data.csv'), csv);
  writeFileSync(join(dir, 'site-data.json'), JSON.stringify({ benchmarks: { clear: { source: { type: 'csv', path: 'data.csv' } } } }));
  return { file: join(dir, 'data.csv'), benchmark: () => loadBenchmark(join(BUILTIN_BENCHMARK_DIR, 'clear'), { site: loadSiteData(join(dir, 'site-data.json')) }) };
}

async function sample(b: ReturnType<typeof loadBenchmark>, limit: number): Promise<string[]> {
  const keys: string[] = [];
  for await (const i of streamInstances(b, { limit, sample: 'helm' })) keys.push(i.key);
  return keys;
}

describe("the population behind HELM's sample", () => {
  it('gives the same sample when it is remembered as when it is counted', async () => {
    const { benchmark } = benchmarkOn(header + rows(40));
    const first = await sample(benchmark(), 7);
    expect(first).toHaveLength(7);
    expect(await sample(benchmark(), 7)).toEqual(first);
  });

  it('is counted again when the file changes, and a stale count refuses the run instead of choosing another sample', async () => {
    const { file, benchmark } = benchmarkOn(header + rows(40) + '\n'.repeat(200));
    // A whole second, so that it can be set again exactly.
    const mtime = 1_700_000_000;
    utimesSync(file, mtime, mtime);
    const before = await sample(benchmark(), 5);
    // Rewritten in place with more rows but the same size and modification time: the identity the
    // process remembered the count by still matches, the count does not.
    const longer = header + rows(45);
    writeFileSync(file, longer + '\n'.repeat(statSync(file).size - Buffer.byteLength(longer)));
    utimesSync(file, mtime, mtime);
    await expect(sample(benchmark(), 5)).rejects.toThrow(/the dataset changed while the run was planned \(40 then 45 instances\)/);
    // Forgotten after the refusal: the next plan counts 45 and samples from them.
    const after = await sample(benchmark(), 5);
    expect(after).toHaveLength(5);
    expect(after).not.toEqual(before);
  });
});
