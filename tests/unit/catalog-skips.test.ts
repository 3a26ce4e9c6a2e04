/**
 * Records HELM's loaders leave out are left out here too, counted under the rule that left them out:
 * CLEAR rows whose text or label is blank (HELM: `str(row.get(...)).strip()`, then `if not text or not
 * label: continue`) and ENT-Referral rows whose label is the empty string (HELM: `if row["label"] != ""`),
 * instead of failing the dataset (CLEAR's label map) or being scored against an empty reference. The
 * rows are synthetic (no patient data).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadBenchmark, loadSiteData, type SkipCounts, streamInstances, type Instance } from '../../src/catalog';
import { BUILTIN_BENCHMARK_DIR } from '../../src/paths';
import { tempDir } from '../helpers/db';

async function stream(benchmarkId: string, csv: string): Promise<{ instances: Instance[]; skipped: SkipCounts }> {
  const dir = tempDir('skips');
  writeFileSync(join(dir, 'data.csv'), csv);
  writeFileSync(join(dir, 'site-data.json'), JSON.stringify({ benchmarks: { [benchmarkId]: { source: { type: 'csv', path: 'data.csv' } } } }));
  const b = loadBenchmark(join(BUILTIN_BENCHMARK_DIR, benchmarkId), { site: loadSiteData(join(dir, 'site-data.json')) });
  const skipped: SkipCounts = {};
  const instances: Instance[] = [];
  for await (const i of streamInstances(b, { skipped })) instances.push(i);
  return { instances, skipped };
}

describe('records left out as HELM leaves them out', () => {
  it('CLEAR: a blank label or a blank text is skipped and counted, not an error', async () => {
    const { instances, skipped } = await stream(
      'clear',
      'text,condition,result_human\nnote a,chronic pain,1\nnote b,chronic pain,\nnote c,chronic pain,"  "\n"   ",chronic pain,0\nnote e,chronic pain,2\n',
    );
    expect(instances.map((i) => i.references[0])).toEqual(['Has a history of the condition', 'Uncertain']);
    expect(skipped).toEqual({ 'dataset.skip.blank-column': 3 });
  });

  it('CLEAR: a label outside 1/0/2 is still refused by row and column', async () => {
    await expect(stream('clear', 'text,condition,result_human\nnote a,chronic pain,7\n')).rejects.toThrow(/record 1: column "result_human" must be one of 0, 1, 2/);
  });

  it('ENT-Referral: an empty label is skipped and counted; the rows keep their positions as keys', async () => {
    const { instances, skipped } = await stream('shc_ent_med', 'prompt,context,label\nRefer to ENT?,Note one,A\nRefer to ENT?,Note two,\nRefer to ENT?,Note three,C\n');
    expect(instances.map((i) => [i.key, i.references[0]])).toEqual([
      ['1', 'A'],
      ['3', 'C'],
    ]);
    expect(skipped).toEqual({ 'dataset.skip.empty-column': 1 });
  });
});
