/**
 * The rule table of the compliance officer's guide (audit/README.md), generated from the registry so
 * the guide cannot name a rule the code does not have, or miss one it does.
 */
import { RULES } from './rules';

export const RULE_TABLE_BEGIN = '<!-- rules: generated from src/policy/rules.ts by `npm run docs:rules`; edit the registry, not this table -->';
export const RULE_TABLE_END = '<!-- end of rules -->';

/** The markdown table: one row per rule, in the registry's order. */
export function ruleTable(): string {
  const rows = Object.entries(RULES).map(([id, meaning]) => `| \`${id}\` | ${meaning.replace(/\|/g, '\\|')} |`);
  return ['| Rule | Meaning |', '|---|---|', ...rows].join('\n');
}

/** `readme` with the text between the markers replaced by the current table. */
export function withRuleTable(readme: string): string {
  const begin = readme.indexOf(RULE_TABLE_BEGIN);
  const end = readme.indexOf(RULE_TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`the guide has no rule table markers (${RULE_TABLE_BEGIN} ... ${RULE_TABLE_END})`);
  return `${readme.slice(0, begin + RULE_TABLE_BEGIN.length)}\n${ruleTable()}\n${readme.slice(end)}`;
}
