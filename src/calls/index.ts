/**
 * The outbound gateway: the only way out of the process to a model endpoint, and the only importer of
 * src/models. See gateway.ts for the order of its checks.
 */
export { Gateway, RunStopped, type Answer, type CallPurpose, type CapacityLease, type FingerprintListener, type GatewayOptions, type GatewayPorts, type OutboundCall, type RunGate } from './gateway';
export { EndpointClients, type ClientOptions } from './clients';
export { deidentifiedPrompt, plainPrompt, SendablePrompt } from '../prompt';
export { ApprovalBudgets, unpricedUnderBudget, type BudgetDecision, type ModelTokens, type TokenSum, type BudgetHold, type BudgetRequest, type BudgetStage } from './budget';
export { EndpointCapacities, EndpointCapacity } from './capacity';
export { SharedSlots } from './slots';
export { chargedUsage, promptTokenBound, type UsageProblem } from './cost';
// operations and the tests price calls through the gateway's room; the prices live in src/contracts.
export { costUsd, priceFor, type Price, type PricedEndpoint } from '../contracts';
export { ModelCallError, withoutReasoning, type Completion } from '../models';
export { FingerprintStore, type RecordedFingerprint, type SeenFingerprint } from './fingerprints';
