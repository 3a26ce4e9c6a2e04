/**
 * One registry of rules (src/policy/rules.ts): every rule written anywhere in src/ is in it, every
 * entry in it is used, the values of rules built at run time are all registered, and the audit guide's
 * rule table is the registry's. A new rule string outside the registry fails here (and, where the
 * code passes a literal, in tsc).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROLES } from '../../src/identity/actor';
import { type Decision, deny, isRule, RULES, ruleTable, withRuleTable } from '../../src/policy';
import { RULE_TABLE_BEGIN, RULE_TABLE_END } from '../../src/policy/rule-table';
import { ROOT } from '../helpers/paths';
import { patternOf, scanSource, sourceFiles, where } from '../helpers/source-scan';

const scan = scanSource();
const registered = new Set(Object.keys(RULES));
const literals = scan.rules.filter((f) => !f.dynamic);
const templates = scan.rules.filter((f) => f.dynamic);

/** The rules the access stage refuses with (a judge's endpoint refused is `jury.<one of these>`). */
const accessDenials = [...new Set(scan.rules.filter((f) => f.file.startsWith('src/access/') && (f.context === 'deny()' || f.context.endsWith('(allowed: false)'))).map((f) => f.value))];

/** Every rule built at run time, by its template, with the values it can take and where they come from. */
const DYNAMIC: Record<string, string[]> = {
  // src/operations: Operations.as, the role a caller lacks (any role a principal can hold).
  'rbac.*-required': ROLES.filter((r) => r !== 'service').map((r) => `rbac.${r}-required`),
  // src/operations: changeApproval, one per ApprovalChange (the routes' suspend, reinstate, close).
  'approval.*': ['suspend', 'reinstate', 'close'].map((c) => `approval.${c}`),
  // src/calls: a judge's endpoint refused by the access stage.
  'jury.*': accessDenials.map((r) => `jury.${r}`),
};

describe('the rule registry', () => {
  it('holds every rule written in src/', () => {
    // The scan must see the places rules are written, or this test proves nothing.
    expect(literals.length).toBeGreaterThan(150);
    for (const file of ['src/access/rules.ts', 'src/export/service.ts', 'src/operations/index.ts', 'src/server/identity.ts', 'src/egress/url.ts']) {
      expect(literals.some((f) => f.file === file)).toBe(true);
    }
    const missing = literals.filter((f) => !registered.has(f.value)).map(where);
    expect(missing).toEqual([]);
  });

  it('knows every rule built at run time, and holds all of its values', () => {
    const unknown = templates.filter((f) => !(f.value in DYNAMIC)).map(where);
    expect(unknown).toEqual([]);
    for (const [template, values] of Object.entries(DYNAMIC)) {
      expect(values.length).toBeGreaterThan(0);
      expect(values.filter((v) => !patternOf(template).test(v))).toEqual([]);
      expect(values.filter((v) => !registered.has(v))).toEqual([]);
    }
  });

  it('registers a jury refusal for exactly the rules the access stage refuses with', () => {
    expect(accessDenials).toEqual(expect.arrayContaining(['endpoint.no-baa', 'approval.none', 'principal.unknown-or-disabled', 'tier.private.run-not-approved']));
    const jury = Object.keys(RULES)
      .filter((r) => r.startsWith('jury.'))
      .sort();
    expect(jury).toEqual(accessDenials.map((r) => `jury.${r}`).sort());
  });

  it('has no dead entries: each rule is written in src/ or is a value of a rule built at run time', () => {
    const text = sourceFiles()
      .filter((f) => !f.endsWith(join('src', 'policy', 'rules.ts')))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const built = new Set(Object.values(DYNAMIC).flat());
    const unused = Object.keys(RULES).filter((id) => {
      if (built.has(id)) return false;
      const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return !new RegExp(`(?<![a-z0-9.-])${escaped}(?![a-z0-9-]|\\.[a-z0-9])`).test(text);
    });
    expect(unused).toEqual([]);
  });

  it('gives every rule a one-line meaning, and ids in the dotted style of metric labels', () => {
    for (const [id, meaning] of Object.entries(RULES)) {
      expect(id).toMatch(/^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*){1,4}$/);
      expect(meaning.length).toBeGreaterThan(10);
      expect(meaning).not.toMatch(/\n/);
    }
  });

  it('answers isRule for registered ids only', () => {
    expect(isRule('tier.public')).toBe(true);
    expect(isRule('jury.endpoint.no-baa')).toBe(true);
    expect(isRule('tier.publik')).toBe(false);
    expect(isRule('toString')).toBe(false);
    expect(isRule(undefined)).toBe(false);
  });

  it('makes decisions that name a registered rule', () => {
    const d: Decision = deny('approval.none', 'no approval');
    expect(d).toEqual({ allowed: false, rule: 'approval.none', reason: 'no approval' });
    expect(isRule(d.rule)).toBe(true);
  });
});

describe("the audit guide's rule table", () => {
  const readme = readFileSync(join(ROOT, 'audit', 'README.md'), 'utf8');

  it('is the registry, row for row (regenerate with npm run docs:rules)', () => {
    const begin = readme.indexOf(RULE_TABLE_BEGIN);
    const end = readme.indexOf(RULE_TABLE_END);
    expect(begin).toBeGreaterThan(0);
    expect(end).toBeGreaterThan(begin);
    expect(readme.slice(begin + RULE_TABLE_BEGIN.length, end).trim()).toBe(ruleTable());
    expect(withRuleTable(readme)).toBe(readme);
  });

  it('lists each rule once with its meaning', () => {
    const rows = ruleTable().split('\n').slice(2);
    expect(rows).toHaveLength(Object.keys(RULES).length);
    expect(rows).toContain('| `sod.releaser-is-requester` | the requester of an export may not release it |');
  });
});
