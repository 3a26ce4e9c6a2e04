/**
 * Reads src/ the way a reviewer would look for rule names and error codes: parsed (swc), so comments
 * and prose never count, and by position, so a string counts as a rule when it is written where a
 * rule goes (a `rule` field, a refusal, a PolicyDenied) and as an error code where a code goes (a
 * UserError, a schema or JSON error code, an error reply). Strings built at run time (template
 * literals) are returned as patterns: the registry must hold at least one value of each.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseSync } from '@swc/core';
import { ROOT } from './paths';

export interface Found {
  /** The literal, or for a template literal its pattern with `*` for each `${...}`. */
  value: string;
  dynamic: boolean;
  file: string;
  line: number;
  /** What made it count: `rule: property`, `new PolicyDenied`, `new UserError`, ... */
  context: string;
}

/** A dotted name in ehrbench's style, or the one bare code `internal`. */
const NAME = /^(internal|[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+)$/;

/**
 * Where detector names live: which detector found a span (name.title, place.cue, site.staff).
 * They are a closed set of their own (src/deid/detect/names.ts NAME_RULES), never a decision, and
 * never reach the audit trail or a refusal.
 */
const DETECTOR_FILES = [/^src\/deid\/detect\//, /^src\/deid\/site-lexicons\.ts$/, /^src\/deid\/deidentifier\.ts$/, /^src\/bench\//];

/** The registries themselves. */
const REGISTRY_FILES = ['src/policy/rules.ts', 'src/error-codes.ts'];

export function sourceFiles(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

type Node = { type: string; span?: { start: number; end: number }; [k: string]: unknown };

function isNode(x: unknown): x is Node {
  return typeof x === 'object' && x !== null && typeof (x as { type?: unknown }).type === 'string';
}

function children(n: Node): Node[] {
  const out: Node[] = [];
  for (const [k, v] of Object.entries(n)) {
    if (k === 'span' || k === 'ctxt') continue;
    if (Array.isArray(v)) {
      for (const item of v) {
        if (isNode(item)) out.push(item);
        else if (item && typeof item === 'object') for (const inner of Object.values(item)) if (isNode(inner)) out.push(inner);
      }
    } else if (isNode(v)) out.push(v);
    else if (v && typeof v === 'object') for (const inner of Object.values(v)) if (isNode(inner)) out.push(inner);
  }
  return out;
}

const name = (n: unknown): string | undefined => {
  if (!isNode(n)) return undefined;
  if (n.type === 'Identifier') return n.value as string;
  if (n.type === 'BindingIdentifier') return n.value as string;
  if (n.type === 'StringLiteral') return n.value as string;
  if (n.type === 'MemberExpression') return name(n.property);
  if (n.type === 'OptionalChainingExpression') return name(n.base);
  if (n.type === 'PrivateName') return name(n.id);
  return undefined;
};

/** The string values an expression can take: literals through ?:, ??, ||, parentheses, `as`. */
function values(n: unknown): { value: string; dynamic: boolean }[] {
  if (!isNode(n)) return [];
  switch (n.type) {
    case 'StringLiteral':
      return [{ value: n.value as string, dynamic: false }];
    case 'TemplateLiteral': {
      const quasis = (n.quasis as Node[]).map((q) => (q.cooked as string | undefined) ?? (q.raw as string));
      return [{ value: quasis.join('*'), dynamic: (n.expressions as unknown[]).length > 0 }];
    }
    case 'ConditionalExpression':
      return [...values(n.consequent), ...values(n.alternate)];
    case 'BinaryExpression':
      return n.operator === '??' || n.operator === '||' ? [...values(n.left), ...values(n.right)] : [];
    case 'ParenthesisExpression':
    case 'TsAsExpression':
    case 'TsConstAssertion':
    case 'TsSatisfiesExpression':
    case 'TsNonNullExpression':
      return values(n.expression);
    case 'ArrayExpression':
      return (n.elements as ({ expression: Node } | null)[]).flatMap((e) => (e ? values(e.expression) : []));
    case 'ObjectExpression':
      return (n.properties as Node[]).flatMap((p) => (p.type === 'KeyValueProperty' ? values(p.value) : []));
    case 'TsLiteralType':
      return values(n.literal);
    case 'TsUnionType':
      return (n.types as Node[]).flatMap(values);
    case 'TsTypeAnnotation':
      return values(n.typeAnnotation);
    default:
      return [];
  }
}

const RULE_CALLS = new Set(['allow', 'deny', 'refuse', 'refusal', 'problem']);
const RULE_ERRORS = new Set(['PolicyDenied', 'EgressDenied']);
const CODE_ERRORS = new Set(['UserError', 'ModelCallError', 'EgressAborted']);
const CODE_BASES = new Set(['UserError']);

export interface Scan {
  rules: Found[];
  codes: Found[];
}

/** Every rule and error code written in src/ (registries and detector files excepted). */
export function scanSource(files = sourceFiles()): Scan {
  const rules: Found[] = [];
  const codes: Found[] = [];
  for (const file of files) {
    const rel = relative(ROOT, file).split('\\').join('/');
    if (REGISTRY_FILES.includes(rel) || DETECTOR_FILES.some((re) => re.test(rel))) continue;
    const text = readFileSync(file, 'utf8');
    // A first statement on the first byte: swc's spans are byte positions from an origin of its own,
    // and the module's span starts at this statement, so it names that origin.
    const module = parseSync(`0;\n${text}`, { syntax: 'typescript', comments: false, target: 'es2022' }) as unknown as Node;
    const base = (module.span as { start: number }).start;
    const bytes = Buffer.from(`0;\n${text}`, 'utf8');
    const lineOf = (n: Node) =>
      bytes
        .subarray(0, Math.max(0, (n.span?.start ?? base) - base))
        .toString('utf8')
        .split('\n').length - 1;
    const add = (into: Found[], context: string, at: Node, expr: unknown) => {
      for (const v of values(expr)) {
        if (!v.dynamic && !NAME.test(v.value)) continue;
        if (v.dynamic && !/^[a-z*][a-z0-9*-]*(\.[a-z0-9*][a-z0-9*-]*)+$/.test(v.value)) continue;
        into.push({ ...v, file: rel, line: lineOf(at), context });
      }
    };
    const visit = (n: Node, cls: { base?: string } | undefined) => {
      switch (n.type) {
        case 'ObjectExpression': {
          // A decision written out ({ allowed: false, rule, reason }) says whether its rule refuses.
          const props = ((n.properties as Node[]) ?? []).filter((p) => p.type === 'KeyValueProperty');
          const allowed = props.find((p) => name(p.key) === 'allowed')?.value as Node | undefined;
          const refusal = allowed?.type === 'BooleanLiteral' ? (allowed.value ? ' (allowed: true)' : ' (allowed: false)') : '';
          for (const p of props) {
            const key = name(p.key);
            // Properties carry no span of their own in swc; their value does.
            if (key === 'rule') add(rules, `rule: property${refusal}`, p.value as Node, p.value);
            if (key === 'error' || key === 'code') add(codes, `${key}: property`, p.value as Node, p.value);
          }
          break;
        }
        case 'VariableDeclarator': {
          const id = n.id as Node;
          const v = name(id);
          const annotation = JSON.stringify(id.typeAnnotation ?? '');
          if (v && (v === 'rule' || /_RULES?$/.test(v) || /"RuleId"/.test(annotation))) add(rules, `${v} =`, n, n.init);
          if (v && /"ErrorCode"/.test(annotation)) add(codes, `${v} =`, n, n.init);
          break;
        }
        case 'AssignmentExpression': {
          const target = name(n.left);
          if (target === 'rule') add(rules, 'rule assignment', n, n.right);
          if (target === 'code' && isNode(n.left) && n.left.type === 'MemberExpression') add(codes, 'code assignment', n, n.right);
          break;
        }
        case 'AssignmentPattern': {
          if (name(n.left) === 'code') add(codes, 'code default', n, n.right);
          if (name(n.left) === 'rule') add(rules, 'rule default', n, n.right);
          break;
        }
        case 'BinaryExpression': {
          if (n.operator === '===' || n.operator === '!==') {
            for (const [a, b] of [
              [n.left, n.right],
              [n.right, n.left],
            ]) {
              const side = name(a);
              const member = isNode(a) && (a.type === 'MemberExpression' || a.type === 'OptionalChainingExpression');
              if (side === 'rule' || (member && side === 'rule')) add(rules, 'rule comparison', n, b);
              if (member && side === 'code') add(codes, 'code comparison', n, b);
            }
          }
          break;
        }
        case 'NewExpression':
        case 'CallExpression': {
          const callee = name(n.callee);
          const first = (n.arguments as { expression: Node }[] | undefined)?.[0]?.expression;
          if (n.type === 'NewExpression' && callee && RULE_ERRORS.has(callee)) add(rules, `new ${callee}`, n, first);
          if (n.type === 'NewExpression' && callee && CODE_ERRORS.has(callee)) add(codes, `new ${callee}`, n, first);
          // refuse(...) or this.refuse(...), never someone else's method of that name.
          const own = isNode(n.callee) && (n.callee.type === 'Identifier' || (n.callee.type === 'MemberExpression' && isNode(n.callee.object) && n.callee.object.type === 'ThisExpression'));
          // Any argument: refuse(rule, reason) and this.refuse(actor, rule, reason) alike; reasons are prose.
          if (n.type === 'CallExpression' && callee && RULE_CALLS.has(callee) && own) for (const a of (n.arguments as { expression: Node }[]) ?? []) add(rules, `${callee}()`, n, a.expression);
          if (n.type === 'CallExpression' && isNode(n.callee) && n.callee.type === 'Super' && cls?.base) {
            if (CODE_BASES.has(cls.base)) add(codes, `super() of a ${cls.base}`, n, first);
            if (RULE_ERRORS.has(cls.base)) add(rules, `super() of a ${cls.base}`, n, first);
          }
          const args = (n.arguments as { expression: Node }[] | undefined) ?? [];
          if (callee === 'validateOrThrow') add(codes, 'validateOrThrow code', n, args[3]?.expression);
          if (callee === 'readJsonFile') add(codes, 'readJsonFile code', n, args[1]?.expression);
          break;
        }
        case 'ClassDeclaration':
        case 'ClassExpression': {
          const base = name(n.superClass);
          const inner = base ? { base } : undefined;
          // A literal union on a constructor parameter of an error class is the set of codes (or rules) it takes.
          for (const m of (n.body as Node[]) ?? []) {
            if (m.type !== 'Constructor') continue;
            for (const p of (m.params as Node[]) ?? []) {
              const param = p.type === 'TsParameterProperty' ? (p.param as Node) : ((p.pat as Node | undefined) ?? p);
              const annotation = param.typeAnnotation;
              if (!annotation || !base) continue;
              if (CODE_BASES.has(base)) add(codes, `${name(n.identifier) ?? 'class'} constructor parameter`, param, annotation);
              if (RULE_ERRORS.has(base)) add(rules, `${name(n.identifier) ?? 'class'} constructor parameter`, param, annotation);
            }
          }
          for (const c of children(n)) visit(c, inner);
          return;
        }
        case 'TsPropertySignature':
        case 'ClassProperty': {
          if (name(n.key) === 'rule') add(rules, 'rule: type', n, n.typeAnnotation);
          break;
        }
      }
      for (const c of children(n)) visit(c, cls);
    };
    visit(module, undefined);
  }
  return { rules, codes };
}

/** A template's pattern (`jury.*`) as a regular expression over registry keys. */
export function patternOf(value: string): RegExp {
  return new RegExp(
    `^${value
      .split('*')
      .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[a-z0-9.-]+')}$`,
  );
}

/** `file:line (context)` for failure messages. */
export const where = (f: Found) => `${f.value} at ${f.file}:${f.line} (${f.context})`;
