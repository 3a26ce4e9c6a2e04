/**
 * A pinned dataset file is checked on the bytes that are parsed, not only before. Planning checked the
 * pin (verifyDataset, one read of the file) and then read the file again to parse it: a file replaced
 * in between, by anyone able to write it, went to the model unchecked. Now a file read whole (4 MB or
 * less) is refused before its first instance, and a streamed one once its last record is read.
 * Synthetic records only.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Instance, loadBenchmark, streamInstances, verifyDataset } from '../../src/catalog';
import { WHOLE_FILE_BYTES } from '../../src/catalog/sources/whole';
import { tempDir } from '../helpers/db';
import { failure } from '../helpers/errors';

/** `rows` synthetic questions as CSV, each padded to `pad` characters of context. */
function csv(rows: number, answer: string, pad = 20): string {
  let out = 'id,context,label\n';
  for (let i = 1; i <= rows; i++) out += `${i},"synthetic question ${i} ${'x'.repeat(pad)}",${answer}\n`;
  return out;
}

/** Rows of about 990 bytes that make a file over WHOLE_FILE_BYTES: read streamed. */
const STREAMED_ROWS = Math.ceil(WHOLE_FILE_BYTES / 900);

/** A benchmark folder whose data.csv is pinned to the sha256 of `data`. */
function pinnedBenchmark(data: string): { dir: string; file: string } {
  const dir = join(tempDir('pin'), 'pinned_bench');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'data.csv');
  writeFileSync(file, data);
  writeFileSync(join(dir, 'prompt.txt'), '{{note}}\n{{choices}}\nAnswer:');
  const sha256 = createHash('sha256').update(data).digest('hex');
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id: 'pinned_bench',
      version: '1.0.0',
      displayName: 'Pinned benchmark',
      category: 'Administration and Workflow',
      subcategory: 'Care Coordination and Planning',
      tier: 'public',
      dataset: {
        origin: 'shipped',
        files: [{ path: 'data.csv', sha256 }],
        format: 'csv',
        adapter: 'columns',
        columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] },
      },
      prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
      references: 'label column',
      metrics: { main: 'exact_match' },
      split: 'test',
      lowerIsBetter: false,
    }),
  );
  return { dir, file };
}

/** What planning does: the pin checked, then the instances read; `between` runs in between. */
async function plan(dir: string, between: () => void): Promise<{ seen: Instance[]; error?: { code?: string; message: string } }> {
  const b = loadBenchmark(dir);
  await verifyDataset(b);
  between();
  const seen: Instance[] = [];
  try {
    for await (const i of streamInstances(b)) seen.push(i);
    return { seen };
  } catch (err) {
    return { seen, error: err as { code?: string; message: string } };
  }
}

describe('a pinned dataset file', () => {
  it('is read as usual when it is the pinned file (read whole, and streamed)', async () => {
    const small = pinnedBenchmark(csv(3, 'yes'));
    expect((await plan(small.dir, () => undefined)).seen.map((i) => i.key)).toEqual(['1', '2', '3']);
    const rows = STREAMED_ROWS;
    const large = pinnedBenchmark(csv(rows, 'yes', 960));
    const read = await plan(large.dir, () => undefined);
    expect(read.error).toBeUndefined();
    expect(read.seen).toHaveLength(rows);
  });

  it('read whole: replaced after the pin was checked, it gives no instance and names the pin', async () => {
    const { dir, file } = pinnedBenchmark(csv(3, 'yes'));
    const out = await plan(dir, () => writeFileSync(file, csv(3, 'no')));
    expect(out.seen).toEqual([]);
    expect(out.error?.code).toBe('dataset.hash-mismatch');
    expect(out.error?.message).toBe(`${file}: content differs from the sha256 pinned for benchmark pinned_bench; restore the file or update the pin`);
  });

  it('streamed (over 4 MB): replaced after the pin was checked, the read stops with the mismatch at its end', async () => {
    const rows = STREAMED_ROWS;
    const { dir, file } = pinnedBenchmark(csv(rows, 'yes', 960));
    expect(statSync(file).size).toBeGreaterThan(WHOLE_FILE_BYTES);
    const out = await plan(dir, () => writeFileSync(file, csv(rows, 'no', 960)));
    expect(out.error?.code).toBe('dataset.hash-mismatch');
    // Too late for what was read (verifyDataset's check is the one before), but the run stops with it.
    expect(out.seen).toHaveLength(rows);
  });

  it('still refuses a file changed before the run, before reading it', async () => {
    const { dir, file } = pinnedBenchmark(csv(3, 'yes'));
    writeFileSync(file, csv(3, 'no'));
    const err = await failure(verifyDataset(loadBenchmark(dir)));
    expect(err.code).toBe('dataset.hash-mismatch');
  });
});
