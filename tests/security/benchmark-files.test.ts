/**
 * The files a benchmark names (issue 27, class 1). A site benchmark's prompt template, dataset files
 * and judge prompt were resolved with a plain join or taken as absolute: a template of
 * `../../keys/audit-mac.key` put the MAC key into every prompt of a public run. Now each resolves,
 * links followed, inside the benchmark's folder, the shipped datasets or a folder of
 * catalog.dataDirs, and is never one of the daemon's own files; a site-data binding may name a file
 * anywhere but those. Refused at load naming the rule, and again on the file actually opened.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Catalog, type Instance, instancesOf } from '../../src/catalog';
import { loadConfig } from '../../src/config';
import { UserError } from '../../src/errors';
import { tempDir } from '../helpers/db';
import { failure } from '../helpers/errors';
import { ROOT } from '../helpers/paths';

const MAC_KEY = 'f'.repeat(64);

/** A site home laid out as `ehrbench init` makes it (stand-in key files), with one site benchmark folder. */
function siteHome(catalog: Record<string, unknown> = {}) {
  const home = tempDir('bench-files');
  for (const dir of ['keys', 'pki', 'secrets', 'access-policies', 'audit', 'site-benchmarks', 'site-data', 'elsewhere']) mkdirSync(join(home, dir), { mode: 0o700 });
  writeFileSync(join(home, 'keys', 'audit-mac.key'), `${MAC_KEY}\n`, { mode: 0o600 });
  writeFileSync(join(home, 'keys', 'deid-secret.hex'), 'e'.repeat(64), { mode: 0o600 });
  writeFileSync(join(home, 'pki', 'ca.key.pem'), 'site CA key\n', { mode: 0o600 });
  writeFileSync(join(home, 'secrets', 'aoai-key'), 'endpoint key\n', { mode: 0o600 });
  writeFileSync(join(home, 'access-policies', 'principals.json'), '{"principals": []}\n');
  writeFileSync(join(home, 'site-data', 'notes.csv'), 'id,context,label\n1,"note one",yes\n');
  writeFileSync(join(home, 'elsewhere', 'notes.csv'), 'id,context,label\n1,"note one",yes\n');
  writeFileSync(join(home, 'config.json'), JSON.stringify({ configVersion: 1, site: { id: 's1' }, catalog: { dirs: ['site-benchmarks'], ...catalog } }));
  return home;
}

/** A site benchmark whose files are named as `files` says (defaults: its own prompt.txt and data.csv). */
function benchmark(home: string, files: { template?: string; data?: string; jury?: string } = {}): string {
  const dir = join(home, 'site-benchmarks', 'notes_qa');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'prompt.txt'), '{{note}}\nAnswer:');
  writeFileSync(join(dir, 'data.csv'), 'id,context,label\n1,"note one",yes\n2,"note two",no\n');
  writeFileSync(join(dir, 'jury.txt'), 'Rate {{RESPONSE}}');
  const jury = files.jury !== undefined;
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id: 'notes_qa',
      version: '1.0.0',
      displayName: 'Notes QA',
      description: 'A site benchmark.',
      category: 'Administration and Workflow',
      subcategory: 'Organizing Workflow Processes',
      tier: 'public',
      dataset: {
        origin: 'shipped',
        files: [{ path: files.data ?? 'data.csv' }],
        format: 'csv',
        adapter: 'columns',
        columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] },
      },
      prompt: { templateFile: files.template ?? 'prompt.txt', maxTokens: 1 },
      references: 'label column',
      metrics: jury ? { main: 'exact_match', secondary: ['jury_score'] } : { main: 'exact_match' },
      ...(jury ? { jury: { promptFile: files.jury, criteria: ['accuracy'], judges: ['judge'] } } : {}),
      split: 'test',
      lowerIsBetter: false,
    }),
  );
  return dir;
}

function load(home: string): Catalog {
  const config = loadConfig({ file: join(home, 'config.json'), env: { HOME: home } });
  return Catalog.load(config.catalogDirs, { siteDataFile: config.catalogSiteData, files: config.catalogFiles });
}

function loadError(home: string): UserError {
  try {
    load(home);
  } catch (e) {
    return e as UserError;
  }
  throw new Error('expected the catalog to refuse');
}

async function all(home: string): Promise<Instance[]> {
  const out: Instance[] = [];
  for await (const i of instancesOf(load(home).get('notes_qa'))) out.push(i);
  return out;
}

describe('the files a benchmark definition names', () => {
  it("refuses a template that climbs out of the benchmark's folder to the audit MAC key, by path or by absolute name", () => {
    const home = siteHome();
    benchmark(home, { template: '../../keys/audit-mac.key' });
    const err = loadError(home);
    expect(err.code).toBe('benchmark.invalid');
    expect(err.message).toBe(
      `${join(home, 'site-benchmarks', 'notes_qa', 'benchmark.json')}: prompt.templateFile: ${join(home, 'site-benchmarks', 'notes_qa', '../../keys/audit-mac.key')} is the daemon's keys folder (keys.dir: audit signing and MAC keys, export signing key), never a benchmark's file (rule benchmark.file-is-daemon-file)`,
    );
    expect(err.message).not.toContain(MAC_KEY);
    benchmark(home, { template: join(home, 'pki', 'ca.key.pem') });
    expect(loadError(home).message).toMatch(/prompt\.templateFile: .*ca\.key\.pem is the site PKI folder .*\(rule benchmark\.file-is-daemon-file\)$/);
  });

  it('follows links: a template inside the folder that links to a daemon file or outside is refused', () => {
    const home = siteHome();
    const dir = benchmark(home, { template: 'linked.txt' });
    symlinkSync(join(home, 'keys', 'deid-secret.hex'), join(dir, 'linked.txt'));
    expect(loadError(home).message).toMatch(/prompt\.templateFile: .*linked\.txt \(resolves to .*deid-secret\.hex\) is the daemon's keys folder/);
    rmSync(join(dir, 'linked.txt'));
    writeFileSync(join(home, 'elsewhere', 'prompt.txt'), '{{note}}');
    symlinkSync(join(home, 'elsewhere', 'prompt.txt'), join(dir, 'linked.txt'));
    expect(loadError(home).message).toMatch(/linked\.txt \(resolves to .*elsewhere\/prompt\.txt\) is outside the benchmark's folder .*catalog\.dataDirs \(rule benchmark\.file-outside-folder\)$/);
  });

  it("refuses each of the daemon's own files, whatever the folder that holds the benchmark", () => {
    const home = siteHome();
    for (const [file, what] of [
      ['secrets/aoai-key', "the endpoints' secrets folder"],
      ['config.json', "the daemon's configuration"],
      ['access-policies/principals.json', 'an access policy file'],
      ['audit', 'an audit witness folder'],
    ]) {
      benchmark(home, { template: join(home, file as string) });
      expect(loadError(home).message).toContain(`is ${what}`);
    }
  });

  it('refuses a judge prompt outside the folder, and a dataset file outside it unless its folder is declared in catalog.dataDirs', async () => {
    const home = siteHome();
    writeFileSync(join(home, 'elsewhere', 'jury.txt'), 'Rate {{RESPONSE}}');
    benchmark(home, { jury: '../../elsewhere/jury.txt' });
    expect(loadError(home).message).toMatch(/benchmark\.json: jury\.promptFile: .* is outside the benchmark's folder .*\(rule benchmark\.file-outside-folder\)$/);

    benchmark(home, { data: '../../elsewhere/notes.csv' });
    expect(loadError(home).message).toMatch(/benchmark\.json: dataset\.files\[0\]\.path: .*elsewhere\/notes\.csv is outside the benchmark's folder/);
    benchmark(home, { data: join(home, 'keys', 'audit-mac.key') });
    expect(loadError(home).message).toMatch(/dataset\.files\[0\]\.path: .*audit-mac\.key is the daemon's keys folder/);

    // Declared for site data, the folder's files may be named.
    const declared = siteHome({ dataDirs: ['site-data'] });
    benchmark(declared, { data: '../../site-data/notes.csv' });
    expect((await all(declared)).map((i) => i.vars.note)).toEqual(['note one']);
  });

  it('loads the shipped catalog (its datasets outside each folder, in the package) and a well-formed site benchmark', async () => {
    const home = siteHome();
    benchmark(home);
    const catalog = load(home);
    expect(catalog.get('pubmed_qa').source?.kind).toBe('files');
    expect((await all(home)).map((i) => i.vars.note)).toEqual(['note one', 'note two']);
  });
});

describe('the files a site-data binding names', () => {
  function bind(home: string, source: Record<string, unknown>): void {
    writeFileSync(join(home, 'site-data.json'), JSON.stringify({ benchmarks: { shc_ptbm_med: { source } } }));
  }

  it("may lie anywhere the site keeps its data, never among the daemon's files", () => {
    const home = siteHome();
    bind(home, { type: 'csv', path: join(home, 'elsewhere', 'notes.csv') });
    expect(load(home).get('shc_ptbm_med').source?.kind).toBe('files');
    bind(home, { type: 'csv', path: 'keys/deid-secret.hex' });
    const err = loadError(home);
    expect(err.code).toBe('site-data.invalid');
    expect(err.message).toBe(
      `${join(home, 'site-data.json')}: /benchmarks/shc_ptbm_med/source/path: ${join(home, 'keys', 'deid-secret.hex')} is the daemon's keys folder (keys.dir: audit signing and MAC keys, export signing key), never a benchmark's file (rule benchmark.file-is-daemon-file)`,
    );
    bind(home, { type: 'csv', path: 'config.json' });
    expect(loadError(home).message).toContain("config.json is the daemon's configuration");
    bind(home, { type: 'omop-note', connection: { file: 'secrets/aoai-key' } });
    expect(loadError(home).message).toMatch(/\/source\/connection\/file: .*aoai-key is the endpoints' secrets folder/);
  });
});

describe('the file actually opened', () => {
  it('is checked again when it is read: a data file swapped for a link after the load is refused (read whole and streamed)', async () => {
    const home = siteHome();
    const dir = benchmark(home);
    const b = load(home).get('notes_qa');
    renameSync(join(dir, 'data.csv'), join(dir, 'data.old'));
    symlinkSync(join(home, 'elsewhere', 'notes.csv'), join(dir, 'data.csv'));
    const small = await failure(instancesOf(b).next());
    expect(small.code).toBe('dataset.unreadable');
    expect(small.message).toMatch(/^benchmark notes_qa: its data file: .*elsewhere\/notes\.csv is outside the benchmark's folder .*\(rule benchmark\.file-outside-folder\)$/);

    // Over 4 MB the streaming reader opens it: the same check, before a record is given.
    const big = join(home, 'elsewhere', 'big.csv');
    writeFileSync(big, `id,context,label\n${'1,"x",yes\n'.repeat(500_000)}`);
    rmSync(join(dir, 'data.csv'));
    symlinkSync(big, join(dir, 'data.csv'));
    const streamed = await failure(instancesOf(b).next());
    expect(streamed.message).toMatch(/elsewhere\/big\.csv is outside the benchmark's folder/);

    rmSync(join(dir, 'data.csv'));
    symlinkSync(join(home, 'keys', 'audit-mac.key'), join(dir, 'data.csv'));
    const key = await failure(instancesOf(b).next());
    expect(key.message).toMatch(/audit-mac\.key is the daemon's keys folder .*\(rule benchmark\.file-is-daemon-file\)$/);
    expect(key.message).not.toContain(MAC_KEY);
  });
});

describe('ehrbench benchmarks list', () => {
  it('refuses the catalog in one line naming the file, the field and the rule, exit 1, no stack', () => {
    const home = siteHome();
    benchmark(home, { template: relative(join(home, 'site-benchmarks', 'notes_qa'), join(home, 'keys', 'audit-mac.key')) });
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'benchmarks', 'list'], { env: { ...process.env, EHRBENCH_HOME: home }, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^ehrbench: .*notes_qa\/benchmark\.json: prompt\.templateFile: .*audit-mac\.key is the daemon's keys folder .*\(rule benchmark\.file-is-daemon-file\)\n$/);
    expect(r.stdout + r.stderr).not.toContain(MAC_KEY);
  });
});
