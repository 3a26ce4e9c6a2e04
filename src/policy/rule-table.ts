/**
 * The tables of the compliance officer's guide (audit/README.md), generated from the code so the guide
 * cannot name a rule or a permission the code does not have, or miss one it does: the rule registry,
 * and the gate's table of who may do what.
 */
import { gateTable } from './gate';
import { RULES } from './rules';

export const RULE_TABLE_BEGIN = '<!-- rules: generated from src/policy/rules.ts by `npm run docs:rules`; edit the registry, not this table -->';
export const RULE_TABLE_END = '<!-- end of rules -->';
export const GATE_TABLE_BEGIN = '<!-- gate: generated from src/policy/gate.ts by `npm run docs:rules`; edit the gate, not this table -->';
export const GATE_TABLE_END = '<!-- end of gate -->';

/** The markdown table: one row per rule, in the registry's order. */
export function ruleTable(): string {
  const rows = Object.entries(RULES).map(([id, meaning]) => `| \`${id}\` | ${meaning.replace(/\|/g, '\\|')} |`);
  return ['| Rule | Meaning |', '|---|---|', ...rows].join('\n');
}

/** `readme` with the text between the markers of both tables replaced by the current tables. */
export function withRuleTable(readme: string): string {
  return replaceBetween(replaceBetween(readme, RULE_TABLE_BEGIN, RULE_TABLE_END, ruleTable()), GATE_TABLE_BEGIN, GATE_TABLE_END, gateTable());
}

function replaceBetween(text: string, begin: string, end: string, table: string): string {
  const b = text.indexOf(begin);
  const e = text.indexOf(end);
  if (b < 0 || e < b) throw new Error(`the guide has no table markers (${begin} ... ${end})`);
  return `${text.slice(0, b + begin.length)}\n${table}\n${text.slice(e)}`;
}
