/**
 * The pre-flight of a benchmark's data, `ehrbench benchmarks check ID`: what a run would find wrong
 * with its binding, found without creating a run; one result per check, each problem with the error
 * a run would stop with (its message names the file, the field and the record; its code the rule).
 * The records are read through the adapters as planning reads them; an OMOP source is connected to
 * and its first page read, its labels and notes hashed for their pins. Nothing is sent anywhere, and
 * results carry names, counts and hashes, never a value.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync } from 'node:fs';
import type pg from 'pg';
import { describeError, type ErrorCode, UserError } from '../errors';
import type { SkipCounts } from './index';
import { databaseMissing, dataMissing, hashFile, hashMismatch, isSqliteFile, judgesMissing, limitsOf, needsDatabase, readableFile } from './readiness';
import type { OmopNoteSourceSpec } from './site-data';
import { connectOmop, firstPage, type Labels, labelsChanged, notesChanged, notesMissing, notesPin, type OmopReadOptions, readLabels } from './sources/omop';
import type { RawRecord } from './sources/records';
import type { Benchmark, DataSource, Instance } from './types';

export interface CheckResult {
  check: string;
  /** skipped: not checked, because an earlier check failed; not a problem by itself. */
  status: 'ok' | 'problem' | 'skipped';
  detail: string;
  code?: ErrorCode;
}

export interface CheckReport {
  benchmark: string;
  ok: boolean;
  checks: CheckResult[];
  /** With `pin`: the values to write into the binding, by their place in the site data file. */
  pins?: Record<string, string>;
}

export interface CheckOptions {
  env: NodeJS.ProcessEnv;
  /** The endpoint allowlist the judges must be in, or why it cannot be read; asked for jury benchmarks only. */
  endpoints: () => { file: string; ids: string[] } | UserError;
  /** Also compute the values to pin: a site file's sha256, an OMOP source's labelsSha256 and noteIdsSha256. */
  pin?: boolean;
}

/** How the pre-flight reads a benchmark: as planning does (the catalog's index supplies it). */
export interface CheckReader {
  /** The instances, with the records the adapters leave out counted in `skipped`. */
  instances(opts: { limit?: number; skipped?: SkipCounts }): AsyncGenerator<Instance>;
  /** The first raw record and the file it came from. */
  firstRecord(): Promise<{ record: RawRecord; file: string } | undefined>;
  /** How an OMOP source's messages and pins are named, and its record limit. */
  omop(): OmopReadOptions & { label: string };
}

const ok = (check: string, detail: string): CheckResult => ({ check, status: 'ok', detail });
const skipped = (check: string, detail: string): CheckResult => ({ check, status: 'skipped', detail });

/** A problem: the error a run would stop with (foreign errors withheld, as everywhere). */
function problem(check: string, err: unknown): CheckResult {
  const { code, message } = describeError(err);
  return { check, status: 'problem', detail: message, code };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const pinHint = (b: Benchmark, field: string) => `"${commandPrefix()} benchmarks check ${b.definition.id} --pin" prints the value for benchmarks.${b.definition.id}.source.${field}`;

export async function runChecks(b: Benchmark, opts: CheckOptions, reader: CheckReader): Promise<CheckReport> {
  const pins: Record<string, string> = {};
  const checks = [sourceCheck(b)];
  if (b.source?.kind === 'files') checks.push(...(await fileChecks(b, b.source, reader, opts.pin ? pins : undefined)));
  if (b.source?.kind === 'omop-note') checks.push(...(await omopChecks(b, b.source.spec, reader, opts, opts.pin ? pins : undefined)));
  if (needsDatabase(b)) checks.push(databaseCheck(b));
  if (b.definition.jury || b.definition.rubric) checks.push(judgesCheck(b, opts.endpoints));
  return { benchmark: b.definition.id, ok: checks.every((c) => c.status !== 'problem'), checks, ...(opts.pin ? { pins } : {}) };
}

function sourceCheck(b: Benchmark): CheckResult {
  const s = b.source;
  if (!s) return problem('source', dataMissing(b));
  const where = `(benchmarks.${b.definition.id}.source)`;
  if (s.kind === 'omop-note') return ok('source', `omop-note ${b.dataPath} ${where}`);
  const paths = s.files.map((f) => f.path).join(', ');
  return ok('source', b.site?.source ? `${s.format} ${paths} ${where}` : `shipped: ${paths}`);
}

/** Each file readable and as pinned, then its records. */
async function fileChecks(b: Benchmark, source: Extract<DataSource, { kind: 'files' }>, reader: CheckReader, pins: Record<string, string> | undefined): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  let readable = true;
  for (const f of source.files) {
    // A file is hashed only when there is a pin to compare with or one to print: hashing is a read of the whole file.
    let hashed: { sha256?: string; bytes: number };
    try {
      hashed = f.sha256 || pins ? await hashFile(f.path) : readableFile(f.path);
    } catch (err) {
      readable = false;
      out.push(problem('file', err), skipped('sha256', 'not checked: the file cannot be read'));
      continue;
    }
    out.push(ok('file', `${f.path}: readable, ${hashed.bytes} bytes`));
    if (!f.sha256) out.push(ok('sha256', b.site?.source ? `not pinned; ${pinHint(b, 'sha256')}` : 'not pinned'));
    else out.push(hashed.sha256 === f.sha256 ? ok('sha256', 'matches the pin') : problem('sha256', hashMismatch(b, f.path)));
    // Only a site's own file is pinned in the site data; a shipped file's pin is the definition's.
    if (pins && b.site?.source && hashed.sha256) pins[`benchmarks.${b.definition.id}.source.sha256`] = hashed.sha256;
  }
  if (!readable) return [...out, ...['encoding', 'size', 'columns', 'records'].map((c) => skipped(c, 'not checked: the file cannot be read'))];
  return [...out, ...(await recordChecks(b, source, reader))];
}

/** Which check a reading error belongs to. */
function aspectOf(err: unknown): 'encoding' | 'size' | 'records' {
  const code = err instanceof UserError ? err.code : undefined;
  return code === 'dataset.encoding' ? 'encoding' : code === 'dataset.record-too-large' ? 'size' : 'records';
}

/**
 * One read of every record through the adapters, as planning reads them: the first problem is the
 * one a run would stop at, and what reading could not reach after it says so.
 */
async function recordChecks(b: Benchmark, source: Extract<DataSource, { kind: 'files' }>, reader: CheckReader): Promise<CheckResult[]> {
  const left: SkipCounts = {};
  let instances = 0;
  let stop: unknown;
  try {
    for await (const _ of reader.instances({ skipped: left })) instances += 1;
  } catch (err) {
    stop = err;
  }
  const aspect = (check: 'encoding' | 'size' | 'records', detail: string): CheckResult => {
    if (stop === undefined) return ok(check, detail);
    return aspectOf(stop) === check ? problem(check, stop) : skipped(check, `not checked: reading stopped at the ${aspectOf(stop)} problem`);
  };
  const limits = limitsOf(b);
  return [
    aspect('encoding', source.encoding ? `${source.encoding} (declared)` : 'utf-8 (the default)'),
    aspect('size', `every record within ${limits.maxRecordBytes} bytes (catalog.maxRecordBytes), every instance within ${limits.maxInstanceBytes} (catalog.maxInstanceBytes)`),
    ...(await columnsCheck(b, reader)),
    aspect('records', recordsDetail(instances, left)),
  ];
}

function recordsDetail(instances: number, left: SkipCounts): string {
  const rules = Object.entries(left) as [string, number][];
  const out = rules.reduce((n, [, c]) => n + c, 0);
  const why = rules.map(([rule, n]) => (rules.length === 1 ? rule : `${n} ${rule}`)).join(', ');
  return `${plural(instances + out, 'record')}, ${plural(instances, 'instance')}${out ? ` (${out} left out: ${why})` : ''}`;
}

/** The columns a binding needs: the required ones under the site's names, and its subject and known-identifier columns. */
function expectedColumns(b: Benchmark): { column: string; why: string }[] {
  const id = b.definition.id;
  const rename = b.site?.columns ?? {};
  const required = (b.definition.dataRequirements?.columns ?? [])
    .filter((c) => !c.optional)
    .map((c) => {
      const actual = rename[c.name];
      return actual && actual !== c.name ? { column: actual, why: `required column "${c.name}", renamed in benchmarks.${id}.columns` } : { column: c.name, why: 'a required column' };
    });
  const identity = [
    ...(b.site?.subject ? [{ column: b.site.subject, why: `benchmarks.${id}.subject` }] : []),
    ...Object.entries(b.site?.known ?? {}).flatMap(([kind, columns]) => (columns ?? []).map((column) => ({ column, why: `benchmarks.${id}.known.${kind}` }))),
  ];
  // Identity columns the binding lets records leave out need not be in the first one.
  const optional = new Set(b.site?.optionalColumns ?? []);
  const seen = new Set<string>();
  return [...required, ...identity.filter((c) => !optional.has(c.column))].filter((c) => !seen.has(c.column) && seen.add(c.column));
}

/** Every column the binding needs, in the first record: all that are missing at once, not the first. */
async function columnsCheck(b: Benchmark, reader: CheckReader): Promise<CheckResult[]> {
  const expected = expectedColumns(b);
  if (expected.length === 0) return [];
  let first: { record: RawRecord; file: string } | undefined;
  try {
    first = await reader.firstRecord();
  } catch {
    return [skipped('columns', 'not checked: the first record cannot be read')];
  }
  if (!first) return [skipped('columns', 'not checked: the file holds no records')];
  const fields = first.record.fields;
  const missing = expected.filter((c) => !(c.column in fields));
  if (missing.length === 0) return [ok('columns', expected.map((c) => c.column).join(', '))];
  const named = missing.map((c) => `"${c.column}" (${c.why})`).join(', ');
  return [problem('columns', new UserError('dataset.missing-column', `${first.file}: record 1 has no column ${named}`))];
}

/** An OMOP source: its labels, the connection (read-only, one page), its notes and their pin, the first note adapted. */
async function omopChecks(b: Benchmark, spec: OmopNoteSourceSpec, reader: CheckReader, opts: CheckOptions, pins: Record<string, string> | undefined): Promise<CheckResult[]> {
  const { label, ...read } = reader.omop();
  const out: CheckResult[] = [];
  const labels = await labelsCheck(b, spec, label, read, out, pins);
  const ids = labels ? [...labels.byNoteId.keys()] : null;
  let client: pg.Client | undefined;
  try {
    client = await connectOmop(spec, label, opts.env);
    out.push(ok('connection', `connected, read-only session; first page: ${plural(await firstPage(client, spec, label, ids), 'note')}`));
  } catch (err) {
    out.push(problem('connection', err));
    await client?.end().catch(() => undefined);
    client = undefined;
  }
  if (!client) return [...out, skipped('notes', 'not checked: no connection'), skipped('records', 'not checked: no connection')];
  let notes: CheckResult;
  try {
    notes = await notesCheck(b, spec, label, read, client, labels, opts.pin === true, pins);
  } finally {
    await client.end().catch(() => undefined);
  }
  out.push(notes);
  if (labels === null) return [...out, skipped('records', 'not checked: the labels cannot be read')];
  if (notes.status === 'problem') return [...out, skipped('records', 'not checked: the notes are not the ones labelled')];
  return [...out, await firstNoteCheck(reader)];
}

/** The labels file read and hashed; null when it cannot be, undefined when the source has none. */
async function labelsCheck(
  b: Benchmark,
  spec: OmopNoteSourceSpec,
  label: string,
  read: OmopReadOptions,
  out: CheckResult[],
  pins: Record<string, string> | undefined,
): Promise<Labels | null | undefined> {
  if (!spec.labels) return undefined;
  const { labelsSha256: pinned, ...unpinned } = spec;
  let labels: Labels;
  try {
    labels = (await readLabels(unpinned, label, read)) as Labels;
  } catch (err) {
    out.push(problem('labels', err));
    return null;
  }
  if (pins) pins[`benchmarks.${b.definition.id}.source.labelsSha256`] = labels.sha256;
  if (pinned && pinned !== labels.sha256) out.push(problem('labels', labelsChanged(spec, label, read)));
  else out.push(ok('labels', `${spec.labels.path}: ${plural(labels.byNoteId.size, 'labelled note')}; labelsSha256 ${pinned ? 'matches' : `not pinned; ${pinHint(b, 'labelsSha256')}`}`));
  return labels;
}

/** The notes the source reads: all labelled ones present, and as pinned. Hashed only when that is asked or needed. */
async function notesCheck(
  b: Benchmark,
  spec: OmopNoteSourceSpec,
  label: string,
  read: OmopReadOptions,
  client: pg.Client,
  labels: Labels | null | undefined,
  pin: boolean,
  pins: Record<string, string> | undefined,
): Promise<CheckResult> {
  if (!labels && !spec.noteIdsSha256 && !pin) return ok('notes', `noteIdsSha256 not pinned; ${pinHint(b, 'noteIdsSha256')}`);
  try {
    const { sha256, notes } = await notesPin(client, spec, label, labels ? [...labels.byNoteId.keys()] : null);
    if (pins) pins[`benchmarks.${b.definition.id}.source.noteIdsSha256`] = sha256;
    if (labels && notes < labels.byNoteId.size) return problem('notes', notesMissing(spec, label, labels.byNoteId.size - notes));
    if (spec.noteIdsSha256 && sha256 !== spec.noteIdsSha256) return problem('notes', notesChanged(label, read));
    return ok('notes', `${plural(notes, 'note')}; noteIdsSha256 ${spec.noteIdsSha256 ? 'matches' : `not pinned; ${pinHint(b, 'noteIdsSha256')}`}`);
  } catch (err) {
    return problem('notes', err);
  }
}

/** The first note through the adapter: the columns the benchmark needs are there (labels or note fields). */
async function firstNoteCheck(reader: CheckReader): Promise<CheckResult> {
  try {
    let read = 0;
    for await (const _ of reader.instances({ limit: 1 })) read += 1;
    return ok('records', read ? 'the first note reads as an instance; a run reads the others' : 'no notes to read');
  } catch (err) {
    return problem('records', err);
  }
}

function databaseCheck(b: Benchmark): CheckResult {
  const db = b.site?.database;
  const id = b.definition.id;
  if (!db || !existsSync(db)) return problem('database', databaseMissing(b));
  try {
    if (!isSqliteFile(db)) return problem('database', new UserError('ehrsql.no-database', `${db}: not an SQLite database; check benchmarks.${id}.database`));
  } catch (err) {
    return problem('database', new UserError('ehrsql.no-database', `${db}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); check benchmarks.${id}.database`));
  }
  return ok('database', `${db}: an SQLite database`);
}

/** Where a jury benchmark's judges are named: its binding, the site's default, or the definition. */
function judgesAt(b: Benchmark, siteDefault: boolean): string {
  const id = b.definition.id;
  if (b.site?.jury) return `benchmarks.${id}.jury.judges in ${b.siteFile}`;
  return siteDefault ? `jury.judges in ${b.siteFile}` : `jury.judges of the ${id} definition`;
}

function judgesCheck(b: Benchmark, allowlist: CheckOptions['endpoints']): CheckResult {
  const judges = b.judges ?? [];
  if (judges.length === 0) return problem('judges', judgesMissing(b));
  const endpoints = allowlist();
  if (endpoints instanceof UserError) return problem('judges', endpoints);
  const unknown = judges.filter((j) => !endpoints.ids.includes(j));
  if (unknown.length === 0) return ok('judges', `${judges.join(', ')} (in the allowlist)`);
  const where = judgesAt(b, !(b.definition.jury?.judges ?? b.definition.rubric?.graders));
  return problem(
    'judges',
    new UserError(
      'endpoint.unknown',
      `judge ${unknown.map((j) => `"${j}"`).join(', ')} (${where}) ${unknown.length === 1 ? 'is' : 'are'} not in the endpoint allowlist ${endpoints.file}; see "${commandPrefix()} endpoints list"`,
    ),
  );
}
