/** The folder's public surface: other folders import from here only. */
export type { Engine } from './engine';
export { templatePrompt } from './prompt';
export { RunStore } from './store';
export { RunScheduler } from './scheduler';
export type { RunContext } from './stages';
export type { AccessStage } from './stages';
export type { Decision } from './stages';
export type { InstanceCodeRow, InstancePageQuery, InstancePageRow, RunRow } from './store';
export { executeRun } from './engine';
export type { RunSummary } from './engine';
export { approveRun } from './engine';
export { cancelRun, type StoppedRun } from './engine';
export { requestRun } from './engine';
export { summarize } from './engine';
export type { DeidPlanning, DeidStage } from './stages';
export { tokensUnderApproval } from './store';
export { readProgress, runPhase, type RunProgress } from './progress';
export { runOutcome, causeMeaning, OUTCOME_LABELS, type RunOutcome, type RunOutcomeKind, type RunCause } from './outcome';
