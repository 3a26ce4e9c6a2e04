/** The rules ehrbench decides by: the registry (id -> meaning), the decision that names one, and the gate (who may do what). */
export { RULES, isRule } from './rules';
export type { RuleId } from './rules';
export { allow, deny } from './decision';
export type { Decision } from './decision';
export { ruleTable, withRuleTable } from './rule-table';
export { PRINCIPAL_ROLES, type PrincipalRole } from './roles';
export { ACTIONS, CONDITIONS, decide, gateTable, mayAttempt, type Action, type ConditionId, type GateCaller, type GateDecision, type Resource } from './gate';
export { instancesVisibility, type InstancesRule, runFiguresVisibility, type RunFiguresRule, type Viewer, type ViewedRun } from './visibility';
