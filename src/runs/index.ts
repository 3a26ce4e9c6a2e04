/** The folder's public surface: other folders import from here only. */
export type { Engine } from './engine';
export { templatePrompt } from './prompt';
export { RunStore } from './store';
export { RunScheduler } from './scheduler';
export type { InstanceCodeRow, InstancePageQuery, InstancePageRow, RunRow, RunSpec } from './store';
export { executeRun } from './engine';
export type { RunSummary } from './engine';
export { approveRun } from './engine';
export { cancelRun, type StoppedRun } from './engine';
export { requestRun } from './engine';
export { summarize } from './engine';
export { tokensUnderApproval } from './store';
export { readProgress, type RunProgress } from './progress';
export { juryPolicyText } from './jury-text';
export { runOutcome, causeMeaning, OUTCOME_LABELS, type RunOutcome, type RunOutcomeKind, type RunCause } from './outcome';
export { benchmarkNamed, benchmarkUnavailable, endpointNamed, shownId } from './named';
export { applyPreset, MEDHELM_LEADERBOARD, RUN_PRESETS, type RunPreset } from './preset';
export { sentPrompt } from './sent-prompt';
