/** Who may run what: principals and roles, IRB approvals, the tier rules, the pipeline's access stage. */
export { loadPrincipals, savePrincipals, actAs } from './principals';
export { summarizePrincipals } from './policy-summary';
export type { Principal, PrincipalDirectory, PrincipalRole } from './principals';
export { ApprovalStore, approvalBudget, CANARY_DEFAULTS } from './approvals';
export { APPROVAL_LEDGER_FILE, appendApprovalChange, completeApprovalLedgers, latestApprovalChanges, STATUS_OF, STOPPED, type ApprovalLedgerEntry } from './approval-ledger';
export { coverageOf, coverageText } from './coverage';
export type { Approval, ApprovalInput, ApprovalStatus, ApprovalChange, Canary, CanaryInput } from './approvals';
export { approvalStatusAt, decideRunAccess, endpointDecision } from './rules';
export type { RunAccessDecision, RunAccessRequest } from './rules';
export { AccessPolicy } from './stage';
