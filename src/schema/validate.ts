/**
 * JSON Schema validation for every file and message ehrbench reads (ajv, draft 2020-12). Schemas live in
 * the top-level `schemas/` folder and are addressed by file name. Errors name the file, the JSON path
 * and what was expected; they quote keys (operator-written), never values (which may be data).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ErrorObject, type Options, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { type ErrorCode, UserError } from '../errors';
import { SCHEMA_DIR } from '../paths';

let ajv: Ajv2020 | undefined;

/** The options every validator is built with; verbose: errors carry their parent schema, so an unknown-key error can list the allowed keys. */
export function newAjv(extra: Options = {}): Ajv2020 {
  const a = new Ajv2020({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true, ...extra });
  addFormats(a);
  return a;
}

function instance(): Ajv2020 {
  if (ajv) return ajv;
  ajv = newAjv();
  for (const file of schemaFiles()) ajv.addSchema(loadSchema(file), file);
  return ajv;
}

/** The build's precompiled validators (compile-validators.ts), beside this file in dist/. */
export const PRECOMPILED_FILE = 'schema-validators.js';

/** sha256 of every schema file, by name: what the precompiled validators were built from. */
export function schemasSha256(): string {
  const h = createHash('sha256');
  for (const f of schemaFiles()) h.update(`${f}\u0000`).update(readFileSync(join(SCHEMA_DIR, f)));
  return h.digest('hex');
}

let precompiled: Record<string, ValidateFunction> | null | undefined;

/** The precompiled validators, if the build made them from the schemas as they are now. */
function precompiledValidators(): Record<string, ValidateFunction> | null {
  if (precompiled !== undefined) return precompiled;
  precompiled = null;
  const file = join(__dirname, PRECOMPILED_FILE);
  if (!existsSync(file)) return null;
  try {
    const mod = require(file) as Record<string, ValidateFunction> & { __schemasSha256?: string };
    if (mod.__schemasSha256 === schemasSha256()) precompiled = mod;
  } catch {
    precompiled = null; // a broken build artefact: compile instead
  }
  return precompiled;
}

/** Schema files by name relative to schemas/: `config.schema.json`, `api/run-request.schema.json`. */
export function schemaFiles(): string[] {
  const top = readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.schema.json'));
  const api = readdirSync(join(SCHEMA_DIR, 'api'))
    .filter((f) => f.endsWith('.schema.json'))
    .map((f) => `api/${f}`);
  return [...top, ...api];
}

export function loadSchema(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SCHEMA_DIR, name), 'utf8')) as Record<string, unknown>;
}

/** A separate ajv for URL query strings and path parameters, which arrive as text and are coerced. */
let coercing: Ajv2020 | undefined;
function coercingInstance(): Ajv2020 {
  coercing ??= (() => {
    const a = new Ajv2020({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true, coerceTypes: true });
    addFormats(a);
    return a;
  })();
  return coercing;
}

/**
 * A validator for an HTTP request part: the schema file named by its $id when it is one of ours,
 * otherwise the schema object itself. Bodies are validated strictly; query strings and path
 * parameters (always text) are coerced to the schema's types.
 */
export function requestValidator(schema: Record<string, unknown>, part: 'body' | 'text'): ValidateFunction {
  const id = typeof schema.$id === 'string' ? schema.$id.replace('https://ehrbench.local/schemas/', '') : '';
  const known = id !== '' && schemaFiles().includes(id);
  if (part === 'body') return known ? validatorFor(id) : instance().compile(schema);
  const a = coercingInstance();
  const fullId = typeof schema.$id === 'string' ? schema.$id : undefined;
  const existing = fullId ? a.getSchema(fullId) : undefined;
  if (existing) return existing;
  return a.compile(known ? loadSchema(id) : schema);
}

export function validatorFor(schemaFile: string): ValidateFunction {
  const ready = precompiledValidators()?.[schemaFile];
  if (ready) return ready;
  const v = instance().getSchema(schemaFile);
  if (!v) throw new Error(`schema ${schemaFile} is not in ${SCHEMA_DIR}`);
  return v;
}

/**
 * The keys of a `oneOf` whose every branch only requires one key ({ env } or { file }), which reads
 * better as "set exactly one of" than as ajv's "must match exactly one schema in oneOf".
 */
function exactlyOneOf(e: ErrorObject): string[] | undefined {
  if (e.keyword !== 'oneOf' || !Array.isArray(e.schema)) return undefined;
  const keys = (e.schema as { required?: unknown }[]).map((branch) => (Array.isArray(branch.required) && branch.required.length === 1 ? String(branch.required[0]) : undefined));
  return keys.every((k) => k !== undefined) ? (keys as string[]) : undefined;
}

/** One line per problem, e.g. `/runs/concurrency: must be >= 1`. */
export function formatSchemaErrors(errors: ErrorObject[] | null | undefined): string[] {
  const lines: string[] = [];
  // The branches of such a oneOf fail by design; the oneOf's own line says what to do.
  const branches = (errors ?? []).filter((e) => exactlyOneOf(e)).map((e) => `${e.schemaPath}/`);
  for (const e of errors ?? []) {
    const path = e.instancePath || '/';
    if (branches.some((b) => e.schemaPath.startsWith(b))) continue;
    const oneOf = exactlyOneOf(e);
    if (oneOf) {
      lines.push(`${path}: set exactly one of ${oneOf.map((k) => `"${k}"`).join(', ')}`);
      continue;
    }
    switch (e.keyword) {
      case 'additionalProperties':
        lines.push(`${path}: unknown key "${String(e.params.additionalProperty)}" (${allowedKeys(e)})`);
        break;
      case 'required':
        lines.push(`${path}: missing required key "${String(e.params.missingProperty)}"`);
        break;
      case 'enum':
        lines.push(`${path}: must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`);
        break;
      case 'if':
        break; // the failing `then` branch reports the concrete problem
      default:
        lines.push(`${path}: ${e.message ?? e.keyword}`);
    }
  }
  return [...new Set(lines)];
}

function allowedKeys(e: ErrorObject): string {
  const props = (e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties;
  return props ? `allowed: ${Object.keys(props).join(', ')}` : 'no extra keys allowed';
}

/**
 * Validates `data` against a schema; throws a UserError naming `label` (usually the file path) and the
 * first problems. `code` lets callers distinguish config, policy and benchmark errors.
 */
export function validateOrThrow<T>(schemaFile: string, data: unknown, label: string, code: ErrorCode = 'schema.invalid'): T {
  const validate = validatorFor(schemaFile);
  if (validate(data)) return data as T;
  const lines = formatSchemaErrors(validate.errors);
  const more = lines.length > 3 ? ` (and ${lines.length - 3} more)` : '';
  throw new UserError(code, `${label}: ${lines.slice(0, 3).join('; ')}${more}`);
}

/** Reads and parses a JSON file, naming the file and position on a syntax error. */
export function readJsonFile(file: string, code: ErrorCode = 'file.invalid'): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const c = (err as NodeJS.ErrnoException).code;
    throw new UserError(code, `${file}: cannot read (${c ?? 'error'}); check the path and permissions`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    const m = /position (\d+)/.exec((err as Error).message);
    throw new UserError(code, `${file}: not valid JSON${m ? ` near character ${m[1]}` : ''}; fix the syntax`);
  }
}
