/**
 * A small dataset file is read whole and parsed in one call (src/catalog/sources/whole.ts). What a run
 * takes from it must not change: the same records in the same order as the streaming reader (HELM's
 * sample is taken by position, and PubMedQA's keys are PMIDs, which a plain object would put in
 * numeric order), on every shipped file and on site-style files; and whatever the streaming reader
 * refuses or reports is left to it, so its message is the one a user sees.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog, instancesOf, type Instance } from '../../src/catalog';
import { type RawRecord, type ReadOptions, readRecords, type RecordFormat, streamRecords } from '../../src/catalog/sources/records';
import { topLevelKeys, WHOLE_FILE_BYTES, wholeFileRecords } from '../../src/catalog/sources/whole';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';
import { failure } from '../helpers/errors';

async function streamed(file: string, format: RecordFormat, opts: ReadOptions = {}): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for await (const r of streamRecords(file, format, opts)) out.push(r);
  return out;
}

async function read(file: string, format: RecordFormat, opts: ReadOptions = {}): Promise<RawRecord[]> {
  const out: RawRecord[] = [];
  for await (const r of readRecords(file, format, opts)) out.push(r);
  return out;
}

describe('a small dataset file read whole', () => {
  // Every shipped file that a run reads, in each of its formats.
  const shipped: [string, RecordFormat, ReadOptions][] = [
    ['pubmed_qa/ori_pqal.json', 'json-object', {}],
    ['ehr_sql/eicu_valid.json', 'json-array', {}],
    ['aci_bench/clef_taskC_test3_full.json', 'json-array', { arrayField: 'data' }],
    ['medec/MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv', 'csv', {}],
    ['medcalc_bench/test_data.csv', 'csv', {}],
  ];

  it.each(shipped)('gives the streaming reader’s records of %s, in its order', async (path, format, opts) => {
    const file = join(ROOT, 'datasets', path);
    const whole = await wholeFileRecords(file, format, opts);
    expect(whole).toBeDefined();
    expect(whole).toEqual(await streamed(file, format, opts));
  });

  it('keeps a JSON object’s records in the file’s order, integer-like keys included', async () => {
    const dir = tempDir('whole-order');
    const file = join(dir, 'data.json');
    writeFileSync(file, '{"9488747":{"q":"a"},"21645374":{"q":"b"},"x":{"q":"c"},"16418930":{"q":"d"}}');
    const whole = (await wholeFileRecords(file, 'json-object', {})) ?? [];
    expect(whole.map((r) => [r.position, r.key, r.fields.q])).toEqual([
      [1, '9488747', 'a'],
      [2, '21645374', 'b'],
      [3, 'x', 'c'],
      [4, '16418930', 'd'],
    ]);
    // PubMedQA's own first keys, as the file has them.
    const pubmed = (await wholeFileRecords(join(ROOT, 'datasets', 'pubmed_qa', 'ori_pqal.json'), 'json-object', {})) ?? [];
    expect(pubmed.slice(0, 3).map((r) => r.key)).toEqual(['21645374', '16418930', '9488747']);
  });

  it('finds the top-level keys past brackets, colons and escaped quotes inside strings', () => {
    expect(topLevelKeys('{"a\\"":{"x:":[1,{"y":2}]},"b":"}:{","c\\u0041":[":"],"a\\"":0}')).toEqual(['a"', 'b', 'cA', 'a"']);
    expect(topLevelKeys('[{"a":1}]')).toEqual([]);
  });

  it('gives the same instances of a shipped benchmark as the streaming reader', async () => {
    const benchmark = Catalog.load([]).get('pubmed_qa');
    const instances: Instance[] = [];
    for await (const i of instancesOf(benchmark, 50)) instances.push(i);
    const records = (await streamed(join(ROOT, 'datasets', 'pubmed_qa', 'ori_pqal.json'), 'json-object')).slice(0, 50);
    expect(instances.map((i) => i.key)).toEqual(records.map((r) => r.key));
  });

  it('feeds a pin’s digest the file’s bytes once, either way', async () => {
    const file = join(ROOT, 'datasets', 'ehr_sql', 'eicu_valid.json');
    const expected = createHash('sha256').update(readFileSync(file)).digest('hex');
    const wholeDigest = createHash('sha256');
    await read(file, 'json-array', { digest: wholeDigest });
    expect(wholeDigest.digest('hex')).toBe(expected);
    const streamDigest = createHash('sha256');
    await streamed(file, 'json-array', { digest: streamDigest });
    expect(streamDigest.digest('hex')).toBe(expected);
  });

  describe('leaves to the streaming reader what it must refuse or report', () => {
    const dir = tempDir('whole-fallback');
    const write = (name: string, content: string | Buffer) => {
      const file = join(dir, name);
      writeFileSync(file, content);
      return file;
    };

    it('a key written twice in a JSON object: both records, as streamed (the planner then refuses the duplicate)', async () => {
      const file = write('dup.json', '{"a":{"q":1},"b":{"q":2},"a":{"q":3}}');
      expect(await wholeFileRecords(file, 'json-object', {})).toBeUndefined();
      expect((await read(file, 'json-object')).map((r) => [r.key, r.fields.q])).toEqual([
        ['a', 1],
        ['b', 2],
        ['a', 3],
      ]);
    });

    it('malformed JSON, with the element it follows', async () => {
      const file = write('bad.json', '[{"q":1},{"q":2},{"q":');
      expect(await wholeFileRecords(file, 'json-array', {})).toBeUndefined();
      const err = await failure(read(file, 'json-array'));
      expect(err.code).toBe('dataset.malformed');
      expect(err.message).toContain('after element 2');
    });

    it('an element that is not an object', async () => {
      const file = write('scalar.json', '[{"q":1},"text of a note"]');
      expect(await wholeFileRecords(file, 'json-array', {})).toBeUndefined();
      const err = await failure(read(file, 'json-array'));
      expect(err.message).toMatch(/element 2 is not a JSON object/);
      expect(err.message).not.toContain('text of a note');
    });

    it('bytes that are not UTF-8, and a NUL, with their line', async () => {
      const bad = write('latin.jsonl', Buffer.concat([Buffer.from('{"q":"a"}\n{"q":"caf'), Buffer.from([0xe9]), Buffer.from('"}\n')]));
      expect(await wholeFileRecords(bad, 'jsonl', {})).toBeUndefined();
      const err = await failure(read(bad, 'jsonl'));
      expect(err.code).toBe('dataset.encoding');
      expect(err.message).toContain('line 2');
      const nul = write('nul.jsonl', '{"q":"a"}\n{"q":"\u0000"}\n');
      expect(await wholeFileRecords(nul, 'jsonl', {})).toBeUndefined();
      expect((await failure(read(nul, 'jsonl'))).message).toContain('NUL');
    });

    it('a JSONL line or a CSV row over the record limit, by position', async () => {
      const jsonl = write('long.jsonl', `{"q":"a"}\n{"q":"${'x'.repeat(200)}"}\n`);
      expect(await wholeFileRecords(jsonl, 'jsonl', { maxRecordBytes: 100 })).toBeUndefined();
      expect((await failure(read(jsonl, 'jsonl', { maxRecordBytes: 100 }))).message).toMatch(/record 2 is larger than the per-record limit of 100 bytes/);
      const csv = write('long.csv', `q,a\nshort,1\n${'y'.repeat(200)},2\n`);
      expect(await wholeFileRecords(csv, 'csv', { maxRecordBytes: 100 })).toBeUndefined();
      expect((await failure(read(csv, 'csv', { maxRecordBytes: 100 }))).code).toBe('dataset.record-too-large');
    });

    it('malformed CSV', async () => {
      const csv = write('quote.csv', 'q,a\n"open,1\n');
      expect(await wholeFileRecords(csv, 'csv', {})).toBeUndefined();
      expect((await failure(read(csv, 'csv'))).code).toBe('dataset.malformed');
    });

    it('an arrayField that is a path, not a key', async () => {
      const file = write('nested.json', '{"a":{"b":[{"q":1}]},"a.b":[{"q":2}]}');
      expect(await wholeFileRecords(file, 'json-array', { arrayField: 'a.b' })).toBeUndefined();
      expect(await read(file, 'json-array', { arrayField: 'a.b' })).toEqual(await streamed(file, 'json-array', { arrayField: 'a.b' }));
    });

    it('a device, whose size says nothing of what it holds (read whole, /dev/zero would never end)', async () => {
      expect(await wholeFileRecords('/dev/zero', 'jsonl', {})).toBeUndefined();
      expect((await failure(read('/dev/zero', 'jsonl'))).message).toContain('NUL');
    });

    it('a file over the size for reading whole', async () => {
      const row = `{"q":"${'z'.repeat(1000)}"}\n`;
      const file = write('big.jsonl', row.repeat(Math.ceil(WHOLE_FILE_BYTES / row.length) + 1));
      expect(await wholeFileRecords(file, 'jsonl', {})).toBeUndefined();
      expect((await read(file, 'jsonl')).length).toBe(Math.ceil(WHOLE_FILE_BYTES / row.length) + 1);
    });
  });

  it('reads what the streaming reader reads: a BOM, CR LF, blank lines, Windows-1252', async () => {
    const dir = tempDir('whole-same');
    const cases: [string, string | Buffer, RecordFormat, ReadOptions][] = [
      ['bom.json', '\uFEFF[{"q":"a"}]', 'json-array', {}],
      ['crlf.jsonl', '{"q":"a"}\r\n\r\n  \n{"q":"b"}', 'jsonl', {}],
      ['bom.csv', '\uFEFFq,a\r\none,1\r\n\r\ntwo,2\r\n', 'csv', {}],
      [
        'cp1252.csv',
        Buffer.concat([Buffer.from('text,condition\n'), Buffer.from([0x93]), Buffer.from('Chronic'), Buffer.from([0x94, 0x20, 0x96]), Buffer.from(' pain,pain\n')]),
        'csv',
        { encoding: 'windows-1252' },
      ],
      ['latin1.jsonl', Buffer.concat([Buffer.from('{"q":"caf'), Buffer.from([0xe9]), Buffer.from('"}\n')]), 'jsonl', { encoding: 'latin1' }],
    ];
    for (const [name, content, format, opts] of cases) {
      const file = join(dir, name);
      writeFileSync(file, content);
      const whole = await wholeFileRecords(file, format, opts);
      expect([name, whole]).toEqual([name, await streamed(file, format, opts)]);
    }
  });
});
