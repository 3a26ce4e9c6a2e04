/**
 * HELM's run-entry files (`run_entries_medhelm_*.conf`, HOCON): each entry is a run spec description
 * `name:arg=value,...` and a priority. A hospital that ran MedHELM brings these files; this reads them
 * and says, per entry, which catalog benchmark it is, with which settings, and what the hospital must
 * configure here for the same run (an endpoint for the deployment, its data, judges, options).
 * Only the subset of HOCON the run-entry files use is read: `entries: [ {description: "...",
 * priority: N}, ... ]` with `#` and `//` comments; anything else is refused with its line, so a file
 * that means something else is never half-read. Nothing here reads data or contacts anything.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { UserError } from '../errors';
import type { Catalog } from './index';
import type { Benchmark } from './types';

export interface HelmRunEntry {
  line: number;
  description: string;
  priority: number | null;
  /** The `### Subcategory ###` comment above the entry (MedHELM's files name the subcategory only there). */
  subcategory: string | null;
}

export interface RunEntryMapping {
  line: number;
  description: string;
  runSpec: string;
  subcategory: string | null;
  /** The catalog benchmark this run spec is, or null ("no match"). */
  benchmarkId: string | null;
  model: string | null;
  modelDeployment: string | null;
  maxEvalInstances: number | null;
  /** The other run-spec arguments, as HELM wrote them. */
  settings: Record<string, string>;
  /** What the hospital must set up here to run the same thing, one item each. */
  configure: string[];
}

export interface RunEntriesReport {
  file: string;
  entries: RunEntryMapping[];
}

type Token = { kind: 'punct' | 'word' | 'string' | 'comment'; text: string; line: number };

const SUBCATEGORY = /^###\s*(.+?)\s*###$/;

type Placed = Token & { subcategory: string | null };

/** Splits the file into tokens; comments are kept, since MedHELM's subcategories live in them. */
function tokenize(text: string, file: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '\n') line += 1;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '#' || text.startsWith('//', i)) {
      const end = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
      tokens.push({ kind: 'comment', text: text.slice(i, end).replace(/^\/\//, '').trim(), line });
      i = end;
    } else if (c === '"') {
      const { value, end } = quoted(text, i, file, line);
      tokens.push({ kind: 'string', text: value, line });
      i = end;
    } else if ('{}[]:=,'.includes(c)) {
      tokens.push({ kind: 'punct', text: c, line });
      i += 1;
    } else {
      const m = /^[A-Za-z0-9_.-]+/.exec(text.slice(i));
      if (!m) throw new UserError('helm-import.invalid', `${file}: line ${line}: unexpected character "${c}"; a HELM run-entries file holds entries: [ {description: "...", priority: N}, ... ]`);
      tokens.push({ kind: 'word', text: m[0], line });
      i += m[0].length;
    }
  }
  return tokens;
}

function quoted(text: string, start: number, file: string, line: number): { value: string; end: number } {
  let value = '';
  for (let i = start + 1; i < text.length; i += 1) {
    const c = text[i] as string;
    if (c === '"') return { value, end: i + 1 };
    if (c === '\n') break;
    if (c === '\\') {
      const next = text[i + 1] ?? '';
      value += next === 'n' ? '\n' : next === 't' ? '\t' : next;
      i += 1;
    } else value += c;
  }
  throw new UserError('helm-import.invalid', `${file}: line ${line}: a string is not closed on its line`);
}

/** The entries of a run-entries file, with the subcategory comment each falls under. */
export function parseHelmRunEntries(file: string): HelmRunEntry[] {
  if (!existsSync(file)) throw new UserError('helm-import.missing', `${file}: no such file`);
  const tokens: Placed[] = [];
  let subcategory: string | null = null;
  for (const t of tokenize(readFileSync(file, 'utf8'), file)) {
    if (t.kind !== 'comment') tokens.push({ ...t, subcategory });
    // ########## Category ########## starts a category; ### Subcategory ### names the entries below it.
    else if (/^#{4,}/.test(t.text)) subcategory = null;
    else subcategory = SUBCATEGORY.exec(t.text)?.[1] ?? subcategory;
  }
  const at = (i: number) => tokens[i];
  const expect = (i: number, ok: (t: Token) => boolean, what: string): Placed => {
    const t = at(i);
    if (!t || !ok(t)) throw new UserError('helm-import.invalid', `${file}: line ${t?.line ?? 'end'}: expected ${what}`);
    return t;
  };
  const begin = 'expected "entries: [" (a HELM run-entries file)';
  if (at(0)?.kind !== 'word' || at(0)?.text !== 'entries' || at(1)?.kind !== 'punct' || ![':', '='].includes(at(1)?.text ?? '') || at(2)?.text !== '[') {
    throw new UserError('helm-import.invalid', `${file}: line ${at(0)?.line ?? 1}: ${begin}`);
  }
  const entries: HelmRunEntry[] = [];
  let i = 3;
  while (at(i) && at(i)?.text !== ']') {
    const open = expect(i, (t) => t.text === '{', 'an entry {description: "...", priority: N}');
    const { entry, next } = readEntry(tokens, i + 1, file, open);
    entries.push({ ...entry, subcategory: open.subcategory });
    i = next;
    if (at(i)?.text === ',') i += 1;
  }
  expect(i, (t) => t.text === ']', 'the "]" that closes the entries');
  if (at(i + 1)) throw new UserError('helm-import.invalid', `${file}: line ${at(i + 1)?.line}: nothing may follow the entries list`);
  return entries;
}

function readEntry(tokens: Token[], start: number, file: string, open: Token): { entry: Omit<HelmRunEntry, 'subcategory'>; next: number } {
  let description: string | undefined;
  let priority: number | null = null;
  let i = start;
  while (tokens[i] && tokens[i]?.text !== '}') {
    const key = tokens[i] as Token;
    const sep = tokens[i + 1];
    const value = tokens[i + 2];
    if (!(key.kind === 'word' || key.kind === 'string') || !sep || ![':', '='].includes(sep.text) || !value || value.kind === 'punct') {
      throw new UserError('helm-import.invalid', `${file}: line ${key.line}: expected field: value inside an entry`);
    }
    const bad = (why: string) => new UserError('helm-import.invalid', `${file}: line ${key.line}: ${why}`);
    if (key.text === 'description') {
      if (value.kind !== 'string') throw bad('description must be a quoted string');
      description = value.text;
    } else if (key.text === 'priority') {
      if (!/^\d+$/.test(value.text)) throw bad('priority must be a whole number');
      priority = Number(value.text);
    } else throw bad(`an entry has a field "${key.text}"; HELM run entries have description and priority`);
    i += 3;
    if (tokens[i]?.text === ',') i += 1;
  }
  if (!tokens[i]) throw new UserError('helm-import.invalid', `${file}: line ${open.line}: an entry is not closed with "}"`);
  if (description === undefined) throw new UserError('helm-import.invalid', `${file}: line ${open.line}: an entry has no description`);
  return { entry: { line: open.line, description, priority }, next: i + 1 };
}

/** HELM's `name:arg=value,arg=value` (parse_object_spec). */
export function parseRunSpecDescription(description: string): { runSpec: string; args: Record<string, string> } {
  const colon = description.indexOf(':');
  const runSpec = (colon < 0 ? description : description.slice(0, colon)).trim();
  // No prototype: an argument named like an Object property ("__proto__") stays an argument.
  const args = Object.create(null) as Record<string, string>;
  for (const part of colon < 0 ? [] : description.slice(colon + 1).split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq < 0) args[part.trim()] = '';
    else args[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return { runSpec, args };
}

/** Run-spec arguments with a place here; any other is reported as having none. */
const KNOWN = new Set([
  'model',
  'model_deployment',
  'max_eval_instances',
  'num_output_tokens',
  'data_path',
  'subject',
  'condition',
  'subset',
  'max_length',
  'jury_config_path',
  'config_path',
  'version',
  'language',
  'category',
]);
/** HELM's limit on EHRSHOT prompts and MedAlign context, which ehrbench applies (adapters.ts). */
const HELM_MAX_LENGTH = '100000';

export function mapHelmRunEntries(file: string, catalog: Catalog): RunEntriesReport {
  const byRunSpec = new Map(catalog.list().flatMap((b) => (b.definition.helm?.runSpec ? [[b.definition.helm.runSpec, b] as const] : [])));
  const entries = parseHelmRunEntries(file).map((e): RunEntryMapping => {
    const { runSpec, args } = parseRunSpecDescription(e.description);
    const b = byRunSpec.get(runSpec);
    const { model, model_deployment: deployment, max_eval_instances: maxEval, ...settings } = args;
    return {
      line: e.line,
      description: e.description,
      runSpec,
      subcategory: e.subcategory,
      benchmarkId: b?.definition.id ?? null,
      model: model ?? null,
      modelDeployment: deployment ?? null,
      maxEvalInstances: maxEval !== undefined && /^\d+$/.test(maxEval) ? Number(maxEval) : null,
      settings,
      configure: toConfigure(b, runSpec, args, dirname(file)),
    };
  });
  return { file, entries };
}

/** What a hospital sets up here for one entry, in the order it would do it. */
function toConfigure(b: Benchmark | undefined, runSpec: string, args: Record<string, string>, confDir: string): string[] {
  const out: string[] = [];
  if (args.model) out.push(`an endpoint serving ${args.model}${args.model_deployment ? ` (HELM deployment ${args.model_deployment})` : ''}`);
  else if (args.model_deployment) out.push(`an endpoint for HELM deployment ${args.model_deployment}`);
  if (args.num_output_tokens) out.push(`run with --max-output-tokens ${args.num_output_tokens}`);
  if (args.max_eval_instances) out.push(`run with --max-instances ${args.max_eval_instances} (HELM samples them with seed 0 when the set is larger)`);
  // MedHELM's run-entry files leave the cap to helm-run's command line: its leaderboard ran --max-eval-instances 1000.
  else out.push(`run with --max-instances 1000, MedHELM's leaderboard cap (or --preset medhelm-leaderboard for all its settings)`);
  if (runSpec === 'medhelm_configurable_benchmark') {
    const config = args.config_path ? (isAbsolute(args.config_path) ? args.config_path : join(confDir, args.config_path)) : 'CONFIG.yaml';
    out.push(`import it first: ${commandPrefix()} benchmarks import-helm ${config} --out DIR --category C --subcategory S`);
    return out;
  }
  if (!b) return [...out, `no catalog benchmark has HELM run spec "${runSpec}"`];
  out.push(...benchmarkNeeds(b, args));
  return out;
}

function benchmarkNeeds(b: Benchmark, args: Record<string, string>): string[] {
  const d = b.definition;
  const out: string[] = [];
  for (const key of ['subject', 'condition', 'subset'] as const) {
    if (args[key]) out.push(`${key} ${args[key]}: one site data file per ${key} (HELM runs each ${key} separately and averages them)`);
  }
  if (!b.source) {
    const formats = d.dataRequirements?.formats.join(' or ') ?? 'csv or jsonl';
    out.push(`benchmarks.${d.id}.source in the site data file (${args.data_path ? `HELM read data_path ${args.data_path}; ` : ''}${formats}; see ${commandPrefix()} benchmarks show ${d.id})`);
  }
  if (d.dataRequirements?.resources?.includes('ehrsql-database') && !b.site?.database) out.push(`benchmarks.${d.id}.database in the site data file: the SQLite database the SQL runs against`);
  if (d.jury && !b.judges?.length) out.push(`judges: jury.judges in the site data file (HELM: ${args.jury_config_path ? `jury_config_path ${args.jury_config_path}` : 'the default judges.yaml'})`);
  if (args.max_length && args.max_length !== HELM_MAX_LENGTH) out.push(`max_length ${args.max_length}: ehrbench applies HELM's ${HELM_MAX_LENGTH}; this run used another limit`);
  if (args.version) out.push(`version ${args.version}: bind that release as site data (ehrbench ships the v1.0 test set)`);
  if ((args.language && args.language !== 'en') || args.category) out.push(`language/category: bind the questions HELM selected with them as site data`);
  for (const [key, value] of Object.entries(args)) if (!KNOWN.has(key)) out.push(`setting ${key}=${value} has no ehrbench equivalent`);
  return out;
}
