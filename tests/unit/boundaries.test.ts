/**
 * The house rules, checked on the source rather than hoped for (ARCHITECTURE.md):
 *  - a folder of src/ is a room: another room imports it through its index.ts, never its insides;
 *  - src/models (the SDK clients) is imported by the outbound gateway (src/calls) only, and only the
 *    gateway builds an endpoint transport or a model client;
 *  - only the de-identification stage mints a de-identified prompt;
 *  - only src/csv.ts writes CSV, so no cell escapes its formula check;
 *  - the rooms are layered (LAYERS): a room imports only rooms of a layer below its own, so the
 *    engine (src/runs) composes the rooms under it and none of them reaches back up to it;
 *  - src/contracts, which the layers share, imports only types of other rooms (it loads no room's code).
 * Each rule is also run on a planted violation, so a rule that can no longer fail is noticed.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { ROOT } from '../helpers/paths';

const SRC = join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.ts$/.test(name) && !/\.d\.ts$/.test(name) ? [p] : [];
  });
}

interface Import {
  file: string;
  specifier: string;
}

/** Static imports and re-exports, dynamic import() and require() of relative paths. */
export function importsOf(file: string, text: string): Import[] {
  const out: Import[] = [];
  const patterns = [/\b(?:import|export)\s[^'";]*?\sfrom\s*'([^']+)'/g, /\bimport\s*'([^']+)'/g, /\bimport\(\s*'([^']+)'\s*\)/g, /\brequire\(\s*'([^']+)'\s*\)/g];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push({ file, specifier: m[1] as string });
  return out.filter((i) => i.specifier.startsWith('.'));
}

/** The room of a source file: its top-level folder under src/, or undefined for a top-level file. */
function roomOf(path: string): string | undefined {
  const parts = relative(SRC, path).split(sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** A violation of "another room only through its index.ts", or undefined. */
export function pastIndex(imp: Import): string | undefined {
  const target = resolve(dirname(imp.file), imp.specifier);
  const from = roomOf(imp.file);
  const to = roomOf(target + '.ts') ?? roomOf(join(target, 'index.ts'));
  if (to === undefined || to === from) return undefined;
  const inside = relative(join(SRC, to), target);
  if (inside === '' || inside === 'index') return undefined;
  return `${relative(ROOT, imp.file)} imports ${imp.specifier} (inside src/${to}; use src/${to}/index.ts)`;
}

/** Which rooms may import which: src/models only from the gateway. */
export function forbiddenRoom(imp: Import): string | undefined {
  const target = resolve(dirname(imp.file), imp.specifier);
  const to = roomOf(target + '.ts') ?? roomOf(join(target, 'index.ts'));
  const from = roomOf(imp.file);
  if (to === 'models' && from !== 'models' && from !== 'calls') return `${relative(ROOT, imp.file)} imports src/models (only src/calls may)`;
  return undefined;
}

/**
 * The rooms from top to bottom (ARCHITECTURE.md, "Layers"). A room imports rooms of lower layers only;
 * rooms sharing a layer may import each other (catalog and metrics still do, both ways). Top-level
 * files (errors.ts, tiers.ts, app.ts...) are no room and are not checked. The engine (runs) sits
 * above everything it composes; export and pictures read finished runs, export through the run store
 * (above runs), pictures through src/contracts only (below it). src/contracts holds what the layers
 * share (RunContext, the stage ports, an endpoint's description, prices, a run's phase, the audit
 * event types) and reads only types of the vocabulary rooms under it.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ['cli'],
  ['server'],
  ['bench'],
  ['demo'],
  ['console'],
  ['report'],
  ['operations'],
  ['certificates'],
  ['setup'],
  ['export'],
  ['ratings'],
  ['runs'],
  ['annotate'],
  ['calls'],
  ['models'],
  ['access'],
  ['deid'],
  ['egress'],
  ['audit'],
  ['observability'],
  ['pictures'],
  ['contracts'],
  ['agreement'],
  ['catalog', 'metrics'],
  ['identity'],
  ['db'],
  ['config'],
  ['schema'],
  ['log'],
  ['policy'],
  ['prompt'],
];

/** A room's layer, counted from the top; undefined for a room not placed in LAYERS. */
function layerOf(room: string): number | undefined {
  const i = LAYERS.findIndex((layer) => layer.includes(room));
  return i < 0 ? undefined : i;
}

/** A violation of the layer order, or undefined. A room not placed in LAYERS is a violation (deny by default). */
export function upwardImport(imp: Import): string | undefined {
  const target = resolve(dirname(imp.file), imp.specifier);
  const from = roomOf(imp.file);
  // a top-level file (src/errors.ts) is no room; anything else names a folder's index
  const to = existsSync(target + '.ts') ? roomOf(target + '.ts') : roomOf(join(target, 'index.ts'));
  if (from === undefined || to === undefined || from === to) return undefined;
  const [fromLayer, toLayer] = [layerOf(from), layerOf(to)];
  const where = `${relative(ROOT, imp.file)} imports src/${to}`;
  if (fromLayer === undefined || toLayer === undefined) return `${where} (src/${fromLayer === undefined ? from : to} is in no layer; place it in LAYERS and ARCHITECTURE.md)`;
  if (toLayer < fromLayer) return `${where} (a layer above src/${from}; move what both need down, e.g. to src/contracts)`;
  return undefined;
}

/** An import in src/contracts of another room that is more than its types (contracts loads no other room's code). */
export function contractsCode(rel: string, text: string): string[] {
  if (!rel.startsWith('src/contracts/')) return [];
  const code = [...text.matchAll(/^(import|export)\s(?!type\s)[^;]*?\sfrom\s*'(\.\.\/[^']+)'/gm)].map((m) => m[2] as string);
  return code.map((specifier) => `${rel} imports ${specifier} (src/contracts imports types only: import type)`);
}

/** Constructions only the gateway may write, and mints only their owners may call. */
const RESTRICTED: { what: RegExp; allowed: (rel: string) => boolean; rule: string }[] = [
  { what: /\bcreateEndpointTransport\s*\(/, allowed: (rel) => rel.startsWith('src/calls/') || rel.startsWith('src/egress/'), rule: 'only src/calls builds an endpoint transport' },
  { what: /\bnew\s+ModelClient\s*\(/, allowed: (rel) => rel.startsWith('src/calls/') || rel.startsWith('src/models/'), rule: 'only src/calls builds a model client' },
  { what: /\bnew\s+(?:OpenAI|AzureOpenAI)\s*\(/, allowed: (rel) => rel.startsWith('src/models/'), rule: 'only src/models builds an SDK client' },
  { what: /\bdeidentifiedPrompt\s*\(/, allowed: (rel) => rel === 'src/deid/stage.ts' || rel.startsWith('src/prompt/'), rule: 'only the de-identification stage mints a de-identified prompt' },
  // A CSV library or a hand-written quote doubling would write cells that no formula check has seen.
  { what: /['"]csv-stringify|\.replace(?:All)?\(\s*\/"\/g\s*,\s*'""'\s*\)/, allowed: (rel) => rel === 'src/csv.ts', rule: 'only src/csv.ts writes CSV (formula cells neutralised)' },
];

export function restrictedUse(rel: string, text: string): string[] {
  // comments may name the constructions (this file's own documentation does)
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  return RESTRICTED.filter((r) => r.what.test(code) && !r.allowed(rel)).map((r) => `${rel}: ${r.rule}`);
}

const files = sourceFiles(SRC).map((file) => ({ file, rel: relative(ROOT, file).split(sep).join('/'), text: readFileSync(file, 'utf8') }));

describe('boundaries of src/', () => {
  it('reaches another folder only through its index.ts', () => {
    const violations = files.flatMap(({ file, text }) => importsOf(file, text).flatMap((i) => pastIndex(i) ?? []));
    expect(violations).toEqual([]);
  });

  it('imports src/models only from the outbound gateway', () => {
    const violations = files.flatMap(({ file, text }) => importsOf(file, text).flatMap((i) => forbiddenRoom(i) ?? []));
    expect(violations).toEqual([]);
  });

  it('builds transports and clients only in the gateway, mints de-identified prompts only in the de-identification stage, writes CSV only in src/csv.ts', () => {
    expect(files.flatMap(({ rel, text }) => restrictedUse(rel, text))).toEqual([]);
  });

  it('imports only rooms of lower layers, and every room has its place in the layers', () => {
    const violations = files.flatMap(({ file, text }) => importsOf(file, text).flatMap((i) => upwardImport(i) ?? []));
    expect(violations).toEqual([]);
    const rooms = [...new Set(files.flatMap(({ file }) => roomOf(file) ?? []))].sort();
    expect(rooms.filter((r) => layerOf(r) === undefined)).toEqual([]);
    // a layer that names a room that no longer exists would hide a typo of a new one
    expect(LAYERS.flat().filter((r) => !rooms.includes(r))).toEqual([]);
  });

  it('src/contracts imports only types of other rooms', () => {
    expect(files.flatMap(({ rel, text }) => contractsCode(rel, text))).toEqual([]);
  });

  it('sees every source file and its imports (the checks above have something to check)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.reduce((n, { file, text }) => n + importsOf(file, text).length, 0)).toBeGreaterThan(500);
  });
});

describe('each rule fails on a planted violation', () => {
  const inRuns = join(SRC, 'runs', 'x.ts');
  it('an import past a folder index', () => {
    expect(pastIndex({ file: inRuns, specifier: '../catalog/template' })).toMatch(/inside src\/catalog/);
    expect(pastIndex({ file: join(SRC, 'annotate', 'jury', 'x.ts'), specifier: '../../catalog/types' })).toMatch(/inside src\/catalog/);
    expect(pastIndex({ file: inRuns, specifier: '../catalog' })).toBeUndefined();
    expect(pastIndex({ file: inRuns, specifier: './store' })).toBeUndefined();
    expect(pastIndex({ file: inRuns, specifier: '../errors' })).toBeUndefined();
  });
  it('src/models outside the gateway', () => {
    expect(forbiddenRoom({ file: inRuns, specifier: '../models' })).toMatch(/only src\/calls/);
    expect(forbiddenRoom({ file: join(SRC, 'calls', 'x.ts'), specifier: '../models' })).toBeUndefined();
  });
  it('an import of a higher layer, or of a room in no layer', () => {
    expect(upwardImport({ file: join(SRC, 'calls', 'x.ts'), specifier: '../runs' })).toMatch(/src\/calls\/x\.ts imports src\/runs \(a layer above src\/calls/);
    expect(upwardImport({ file: join(SRC, 'audit', 'x.ts'), specifier: '../runs' })).toMatch(/a layer above/);
    expect(upwardImport({ file: join(SRC, 'pictures', 'x.ts'), specifier: '../runs' })).toMatch(/a layer above/);
    expect(upwardImport({ file: join(SRC, 'contracts', 'x.ts'), specifier: '../egress' })).toMatch(/a layer above/);
    expect(upwardImport({ file: join(SRC, 'deid', 'x.ts'), specifier: '../newroom' })).toMatch(/src\/newroom is in no layer/);
    expect(upwardImport({ file: join(SRC, 'newroom', 'x.ts'), specifier: '../contracts' })).toMatch(/src\/newroom is in no layer/);
    expect(upwardImport({ file: join(SRC, 'export', 'x.ts'), specifier: '../runs' })).toBeUndefined();
    expect(upwardImport({ file: join(SRC, 'calls', 'x.ts'), specifier: '../contracts' })).toBeUndefined();
    expect(upwardImport({ file: join(SRC, 'metrics', 'x.ts'), specifier: '../catalog' })).toBeUndefined();
    expect(upwardImport({ file: inRuns, specifier: '../errors' })).toBeUndefined();
    expect(upwardImport({ file: inRuns, specifier: './store' })).toBeUndefined();
  });
  it('code of another room loaded by src/contracts', () => {
    expect(contractsCode('src/contracts/x.ts', "import { getMetric } from '../metrics';")).toHaveLength(1);
    expect(contractsCode('src/contracts/x.ts', "export { TIERS } from '../tiers';")).toHaveLength(1);
    expect(contractsCode('src/contracts/x.ts', "import type { Benchmark } from '../catalog';")).toEqual([]);
    expect(contractsCode('src/contracts/index.ts', "export { runPhase } from './phase';")).toEqual([]);
    expect(contractsCode('src/calls/x.ts', "import { getMetric } from '../metrics';")).toEqual([]);
  });
  it('a transport, a client, a de-identified prompt or a CSV cell made elsewhere', () => {
    expect(restrictedUse('src/runs/x.ts', 'const t = createEndpointTransport(e, {});')).toHaveLength(1);
    expect(restrictedUse('src/metrics/x.ts', 'const c = new ModelClient(e, t, o);')).toHaveLength(1);
    expect(restrictedUse('src/runs/x.ts', 'return { ok: true, prompt: deidentifiedPrompt(text) };')).toHaveLength(1);
    expect(restrictedUse('src/calls/clients.ts', 'const t = createEndpointTransport(e, {});')).toEqual([]);
    expect(restrictedUse('src/report/x.ts', "import { stringify } from 'csv-stringify/sync';")).toEqual(['src/report/x.ts: only src/csv.ts writes CSV (formula cells neutralised)']);
    expect(restrictedUse('src/export/x.ts', `const cell = '"' + v.replace(/"/g, '""') + '"';`)).toHaveLength(1);
    expect(restrictedUse('src/csv.ts', `return \`"\${text.replace(/"/g, '""')}"\`;`)).toEqual([]);
  });
});
