/**
 * A run's data revision (src/catalog/revision.ts): what identifies the bytes a run reads, without a
 * path, a connection or any data; and the benchmark held to it, so that a file changed after the run
 * recorded it is refused when it is read.
 */
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalHash } from '../../src/canonical';
import { Catalog, dataRevision, pinnedToRevision, revisionLabel, streamInstances, type Benchmark } from '../../src/catalog';
import { tempDir } from '../helpers/db';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function bindSite(id: string, binding: Record<string, unknown>, files: Record<string, string>): { benchmark: Benchmark; dir: string } {
  const dir = tempDir('data-revision');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const file = join(dir, 'site-data.json');
  writeFileSync(file, JSON.stringify({ benchmarks: { [id]: binding } }));
  return { benchmark: Catalog.load([], { siteDataFile: file }).get(id), dir };
}

async function drain(b: Benchmark): Promise<number> {
  let n = 0;
  for await (const _ of streamInstances(b)) n++;
  return n;
}

describe('data revisions', () => {
  it("names a shipped file by its pin (MedCalc-Bench v1.0's test_data.csv), with one sha256 over the files", async () => {
    const revision = await dataRevision(Catalog.load().get('medcalc_bench'));
    const files = [{ name: 'test_data.csv', sha256: 'c2d23097f8bdb7ae4a77dbf4a5a767335df7303998d7c7664a73a29fd8e2b31a' }];
    expect(revision).toEqual({ sha256: canonicalHash({ files }), files });
    expect(revisionLabel(revision)).toBe(revision?.sha256);
    expect(revisionLabel(undefined)).toBe('unknown');
  });

  it('hashes an unpinned site file, and holds the benchmark to that hash: the file changed afterwards is refused when read', async () => {
    const rows = (label: string) => `${JSON.stringify({ id: 'q1', question: 'Which?', options: ['a', 'b'], answer: label })}\n`;
    const { benchmark, dir } = bindSite('med_qa', { source: { type: 'jsonl', path: 'questions.jsonl' } }, { 'questions.jsonl': rows('A') });
    const revision = await dataRevision(benchmark);
    expect(revision?.files).toEqual([{ name: 'questions.jsonl', sha256: sha256(rows('A')) }]);
    // No folder of the site's in what is recorded.
    expect(JSON.stringify(revision)).not.toContain(dir);

    const held = pinnedToRevision(benchmark, revision);
    expect(await drain(held)).toBe(1);
    writeFileSync(join(dir, 'questions.jsonl'), rows('B'));
    await expect(drain(held)).rejects.toMatchObject({ code: 'dataset.hash-mismatch' });
    // No revision (a run recorded before they were) holds the file to nothing.
    expect(await drain(pinnedToRevision(benchmark, undefined))).toBe(1);
  });

  it('identifies an OMOP source by its schema, filter, labels sha256 and notes pin, without opening the connection', async () => {
    const labels = 'note_id,result_human,condition\n1,1,alcohol dependence\n';
    const { benchmark } = bindSite(
      'clear',
      {
        source: { type: 'omop-note', connection: { env: 'EHRBENCH_TEST_OMOP_URL_NOT_SET' }, schema: 'cdm', filter: { noteTypeConceptIds: [44814637] }, labels: { path: 'labels.csv' } },
        columns: { text: 'note_text' },
      },
      { 'labels.csv': labels },
    );
    const revision = await dataRevision(benchmark);
    const omop = { schema: 'cdm', filter: { noteTypeConceptIds: [44814637] }, labelsSha256: sha256(labels), noteIdsSha256: null };
    expect(revision).toEqual({ sha256: canonicalHash({ omop }), omop });
    const held = pinnedToRevision(benchmark, revision);
    expect(held.source?.kind === 'omop-note' && held.source.spec.labelsSha256).toBe(sha256(labels));
  });
});
