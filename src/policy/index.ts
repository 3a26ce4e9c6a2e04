/** The rules ehrbench decides by: the registry (id -> meaning) and the decision that names one. */
export { RULES, isRule } from './rules';
export type { RuleId } from './rules';
export { allow, deny } from './decision';
export type { Decision } from './decision';
export { ruleTable, withRuleTable } from './rule-table';
export { instancesVisibility, type InstancesRule, runFiguresVisibility, type RunFiguresRule, type Viewer, type ViewedRun } from './visibility';
