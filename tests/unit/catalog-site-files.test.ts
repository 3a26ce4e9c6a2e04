/**
 * The files a site brings, as a hospital has them: their encoding (invalid UTF-8 refused by file and
 * line, or a declared Latin-1 / Windows-1252 decoded), their size (a record or an instance over its
 * limit refused by position, without reading an oversized record whole), JSONL values as JSON (real
 * option lists, numbers), and site data errors that speak of the source its `type` names. On the
 * shipped MEDEC file where the case allows it.
 */
import fs, { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { Catalog, instancesOf, loadSiteData, type Instance } from '../../src/catalog';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';
import { failure } from '../helpers/errors';

const MEDEC = join(ROOT, 'datasets', 'medec', 'MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv');

async function all(b: ReturnType<Catalog['get']>): Promise<Instance[]> {
  const out: Instance[] = [];
  for await (const i of instancesOf(b)) out.push(i);
  return out;
}

/** A site data file binding `id` to `source` (paths relative to its folder). */
function site(dir: string, id: string, binding: Record<string, unknown>): string {
  const file = join(dir, 'site-data.json');
  writeFileSync(file, JSON.stringify({ benchmarks: { [id]: binding } }));
  return file;
}

/** The 1-based line of the first byte that is not ASCII. */
function firstNonAsciiLine(bytes: Buffer): number {
  const at = bytes.findIndex((b) => b > 0x7f);
  return bytes.subarray(0, at).toString('latin1').split('\n').length;
}

describe('encoding of a site file', () => {
  const utf8 = readFileSync(MEDEC);
  // The shipped MEDEC test set as a hospital's Windows export writes it: the same text in Latin-1.
  const latin1 = Buffer.from(utf8.toString('utf8'), 'latin1');

  it('refuses a Latin-1 file read as UTF-8, naming the file and the line, never the text', async () => {
    const dir = tempDir('enc');
    const file = join(dir, 'medec-latin1.csv');
    writeFileSync(file, latin1);
    const siteFile = site(dir, 'medec', { source: { type: 'csv', path: 'medec-latin1.csv' } });
    const err = await failure(all(Catalog.load([], { siteDataFile: siteFile }).get('medec')));
    expect(err.code).toBe('dataset.encoding');
    const line = firstNonAsciiLine(latin1);
    expect(line).toBe(138);
    expect(err.message).toBe(
      `${file}: line ${line} is not valid UTF-8; convert the file to UTF-8, or declare its "encoding" ("latin1" or "windows-1252") in the source of benchmarks.medec in ${siteFile}`,
    );
    const text = latin1.toString('latin1').split('\n')[line - 1] as string;
    for (const word of text.split(/\s+/).filter((w) => w.length > 3)) expect(err.message).not.toContain(word);
  });

  it('reads a declared Latin-1 file as the UTF-8 original, instance for instance', async () => {
    const dir = tempDir('enc');
    writeFileSync(join(dir, 'medec-latin1.csv'), latin1);
    writeFileSync(join(dir, 'medec.csv'), utf8);
    const declared = await all(Catalog.load([], { siteDataFile: site(dir, 'medec', { source: { type: 'csv', path: 'medec-latin1.csv', encoding: 'latin1' } }) }).get('medec'));
    const original = await all(Catalog.load([], { siteDataFile: site(dir, 'medec', { source: { type: 'csv', path: 'medec.csv' } }) }).get('medec'));
    expect(declared).toHaveLength(597);
    expect(declared).toEqual(original);
    expect(declared.some((i) => i.vars.sentences?.includes('µm3'))).toBe(true);
    // Declaring UTF-8 is the default, written out.
    const explicit = await all(Catalog.load([], { siteDataFile: site(dir, 'medec', { source: { type: 'csv', path: 'medec.csv', encoding: 'utf-8' } }) }).get('medec'));
    expect(explicit).toEqual(original);
  });

  it('decodes Windows-1252 (curly quotes, dashes) and refuses an unknown encoding by name', async () => {
    const dir = tempDir('enc');
    // “Chronic” – pain: 0x93, 0x94, 0x96 in Windows-1252, C1 controls in ISO-8859-1.
    writeFileSync(
      join(dir, 'clear.csv'),
      Buffer.concat([Buffer.from('text,condition,result_human\n"'), Buffer.from([0x93]), Buffer.from('Chronic'), Buffer.from([0x94, 0x20, 0x96]), Buffer.from(' pain",pain,1\n')]),
    );
    const got = await all(Catalog.load([], { siteDataFile: site(dir, 'clear', { source: { type: 'csv', path: 'clear.csv', encoding: 'windows-1252' } }) }).get('clear'));
    expect(got.map((i) => i.vars)).toEqual([{ text: '\u201cChronic\u201d \u2013 pain', condition: 'pain' }]);
    expect(() => loadSiteData(site(dir, 'clear', { source: { type: 'csv', path: 'clear.csv', encoding: 'ebcdic' } }))).toThrow(
      /\/benchmarks\/clear\/source\/encoding: must be one of "utf-8", "latin1", "windows-1252"$/,
    );
  });

  it('refuses a UTF-16 export without a byte order mark (valid UTF-8 bytes, NUL between them) by its line', async () => {
    const dir = tempDir('enc');
    writeFileSync(join(dir, 'clear.csv'), Buffer.from('text,condition,result_human\nHistory of pain,pain,1\n', 'utf16le'));
    const err = await failure(all(Catalog.load([], { siteDataFile: site(dir, 'clear', { source: { type: 'csv', path: 'clear.csv' } }) }).get('clear')));
    expect(err.code).toBe('dataset.encoding');
    expect(err.message).toBe(`${join(dir, 'clear.csv')}: line 1 holds a NUL byte, so it is not UTF-8 text (a UTF-16 export?); convert the file to UTF-8`);
  });

  it('names the JSONL line holding invalid UTF-8, and accepts a character split across read chunks', async () => {
    const dir = tempDir('enc');
    const good = (id: number, q: string) => JSON.stringify({ id: String(id), question: q, options: '["a","b"]', answer: 'A' });
    writeFileSync(join(dir, 'q.jsonl'), Buffer.concat([Buffer.from(`${good(1, 'fine')}\n\n${good(2, 'caf')}`), Buffer.from([0xe9]), Buffer.from(`\n${good(3, 'x')}\n`)]));
    const err = await failure(all(Catalog.load([], { siteDataFile: site(dir, 'med_qa', { source: { type: 'jsonl', path: 'q.jsonl' } }) }).get('med_qa')));
    expect(err.message).toMatch(/q\.jsonl: line 3 is not valid UTF-8; /);

    // "é" (2 bytes) straddles the 64 KiB boundary of the file stream's chunks: valid, and read whole.
    const head = 'text,condition,result_human\n"';
    const pad = 'a'.repeat(65_536 - Buffer.byteLength(head) - 1);
    writeFileSync(join(dir, 'clear.csv'), `${head}${pad}é and more",pain,1\n`);
    const [one] = await all(Catalog.load([], { siteDataFile: site(dir, 'clear', { source: { type: 'csv', path: 'clear.csv' } }) }).get('clear'));
    expect(one?.vars.text).toBe(`${pad}é and more`);
  });
});

describe('size of a site record', () => {
  it('refuses the first MEDEC instance whose prompt variables exceed maxInstanceBytes, by its record number and the limit', async () => {
    const rows = parse(readFileSync(MEDEC), { columns: true, bom: true, skip_empty_lines: true }) as Record<string, string>[];
    const limit = 1500;
    const record = rows.findIndex((r) => Buffer.byteLength(r.Sentences ?? '') > limit) + 1;
    expect(record).toBeGreaterThan(1);
    const catalog = Catalog.load([], { limits: { maxInstanceBytes: limit } });
    const err = await failure(all(catalog.get('medec')));
    expect(err.code).toBe('dataset.record-too-large');
    expect(err.message).toBe(
      `${MEDEC}: record ${record}: its prompt variables exceed the per-instance limit of ${limit} bytes (catalog.maxInstanceBytes in the config); shorten or remove the record, or raise the limit`,
    );
    // The default limit (1 MiB of prompt variables) takes the whole shipped file.
    expect(await all(Catalog.load([]).get('medec'))).toHaveLength(597);
  });

  it('refuses a 50 MB CSV cell while reading it, without reading the file whole', async () => {
    const dir = tempDir('size');
    const file = join(dir, 'clear.csv');
    const cell = 50 * 1024 * 1024;
    const fd = fs.openSync(file, 'w');
    fs.writeSync(fd, 'text,condition,result_human\nfirst,pain,1\nsecond,pain,0\n"');
    const block = Buffer.alloc(1024 * 1024, 'x');
    for (let written = 0; written < cell; written += block.length) fs.writeSync(fd, block);
    fs.writeSync(fd, '",pain,1\nlast,pain,2\n');
    fs.closeSync(fd);
    const streams: fs.ReadStream[] = [];
    const real = fs.createReadStream;
    const spy = jest.spyOn(fs, 'createReadStream').mockImplementation(((...args: Parameters<typeof real>) => {
      const s = real(...args);
      streams.push(s);
      return s;
    }) as typeof real);
    try {
      const catalog = Catalog.load([], { siteDataFile: site(dir, 'clear', { source: { type: 'csv', path: 'clear.csv' } }) });
      const err = await failure(all(catalog.get('clear')));
      expect(err.code).toBe('dataset.record-too-large');
      expect(err.message).toBe(`${file}: record 3 is larger than the per-record limit of 16777216 bytes (catalog.maxRecordBytes in the config); shorten or remove the record, or raise the limit`);
      const read = streams.find((s) => s.path === file)?.bytesRead ?? Infinity;
      expect(read).toBeLessThan(20 * 1024 * 1024);
    } finally {
      spy.mockRestore();
    }
  });

  it('refuses a JSONL line over maxRecordBytes by its line, and takes lines under it', async () => {
    const dir = tempDir('size');
    const line = (id: number, q: string) => JSON.stringify({ id: String(id), question: q, options: ['a', 'b'], answer: 'A' });
    writeFileSync(join(dir, 'q.jsonl'), [line(1, 'short'), line(2, 'y'.repeat(5000)), line(3, 'short')].join('\n'));
    const siteFile = site(dir, 'med_qa', { source: { type: 'jsonl', path: 'q.jsonl' } });
    const err = await failure(all(Catalog.load([], { siteDataFile: siteFile, limits: { maxRecordBytes: 4096 } }).get('med_qa')));
    expect(err.message).toBe(
      `${join(dir, 'q.jsonl')}: record 2 is larger than the per-record limit of 4096 bytes (catalog.maxRecordBytes in the config); shorten or remove the record, or raise the limit`,
    );
    expect(await all(Catalog.load([], { siteDataFile: siteFile, limits: { maxRecordBytes: 8192 } }).get('med_qa'))).toHaveLength(3);
  });
});

describe('JSONL values', () => {
  it('takes options as a real JSON list, numbers and booleans as their text, and still a list written as text', async () => {
    const dir = tempDir('jsonl');
    const rows = [
      { id: 'q1', question: 'Which one?', options: ['Aspirin', 'Heparin', 'Warfarin'], answer: 'B' },
      { id: 2, question: 'How many mg?', options: [5, 10, 20.5], answer: 'C' },
      { id: 'q3', question: 'True?', options: [true, false], answer: 'A' },
      { id: 'q4', question: 'Text list', options: '["x","y"]', answer: 'B' },
    ];
    writeFileSync(join(dir, 'q.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n'));
    const got = await all(Catalog.load([], { siteDataFile: site(dir, 'med_qa', { source: { type: 'jsonl', path: 'q.jsonl' } }) }).get('med_qa'));
    expect(got.map((i) => [i.key, i.choices, i.references])).toEqual([
      ['q1', ['Aspirin', 'Heparin', 'Warfarin'], ['Heparin']],
      ['2', ['5', '10', '20.5'], ['20.5']],
      ['q3', ['true', 'false'], ['true']],
      ['q4', ['x', 'y'], ['y']],
    ]);
    // Anything else is refused by record and column, never by value.
    writeFileSync(join(dir, 'q.jsonl'), JSON.stringify({ id: 'q', question: 'q', options: ['a', { secret: 'x' }], answer: 'A' }));
    const err = await failure(all(Catalog.load([], { siteDataFile: site(dir, 'med_qa', { source: { type: 'jsonl', path: 'q.jsonl' } }) }).get('med_qa')));
    expect(err.message).toBe(
      `${join(dir, 'q.jsonl')}: record 1: column "options" must be a list of at least two options (text or numbers), or an object of them keyed A, B, C..., or either written as JSON text`,
    );
  });
});

describe('site data errors speak of the source its type names', () => {
  const source = (s: Record<string, unknown>) => {
    const dir = tempDir('sd');
    return () => loadSiteData(site(dir, 'shc_ptbm_med', { source: s }));
  };
  const message = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return (err as Error).message.replace(/^.*site-data\.json: /, '');
    }
    throw new Error('expected an error');
  };

  it('reports an OMOP schema name that breaks the naming rule as that rule, not as missing file fields', () => {
    expect(message(source({ type: 'omop-note', connection: { env: 'OMOP_URL' }, schema: 'CDM' }))).toBe('/benchmarks/shc_ptbm_med/source/schema: must match pattern "^[a-z_][a-z0-9_]{0,62}$"');
  });

  it('reports an unknown or missing type alone, not the fields of either kind', () => {
    expect(message(source({ type: 'omop', connection: { env: 'OMOP_URL' }, schema: 'CDM' }))).toBe('/benchmarks/shc_ptbm_med/source/type: must be one of "csv", "jsonl", "omop-note"');
    expect(message(source({ path: 'notes.csv' }))).toBe('/benchmarks/shc_ptbm_med/source: missing required key "type"');
  });

  it('reports the fields of the kind the type names', () => {
    expect(message(source({ type: 'csv', path: 'x.csv', schema: 'cdm' }))).toBe('/benchmarks/shc_ptbm_med/source: unknown key "schema" (allowed: type, path, sha256, encoding)');
    expect(message(source({ type: 'omop-note', connection: { env: 'OMOP_URL' }, path: 'x.csv' }))).toMatch(
      /^\/benchmarks\/shc_ptbm_med\/source: unknown key "path" \(allowed: type, connection, schema, /,
    );
  });

  it('says to set exactly one of env and file for the connection, instead of "must match exactly one schema in oneOf"', () => {
    expect(message(source({ type: 'omop-note', connection: { env: 'OMOP_URL', file: 'url.txt' } }))).toBe('/benchmarks/shc_ptbm_med/source/connection: set exactly one of "env", "file"');
    expect(message(source({ type: 'omop-note', connection: {} }))).toBe('/benchmarks/shc_ptbm_med/source/connection: set exactly one of "env", "file"');
  });
});
