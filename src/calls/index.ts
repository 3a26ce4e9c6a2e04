/**
 * The outbound gateway: the only way out of the process to a model endpoint, and the only importer of
 * src/models. See gateway.ts for the order of its checks.
 */
export { Gateway, RunStopped, type Answer, type CallPurpose, type CapacityLease, type GatewayOptions, type GatewayPorts, type OutboundCall, type RunGate } from './gateway';
export { EndpointClients, type ClientOptions } from './clients';
export { deidentifiedPrompt, plainPrompt, SendablePrompt } from '../prompt';
export { ApprovalBudgets, unpricedUnderBudget, type BudgetDecision, type ModelTokens, type TokenSum, type BudgetHold, type BudgetRequest, type BudgetStage } from './budget';
export { EndpointCapacities, EndpointCapacity } from './capacity';
export { SharedSlots } from './slots';
export { chargedUsage, costUsd, priceFor, promptTokenBound, type Price, type PricedEndpoint, type UsageProblem } from './cost';
export { ModelCallError, withoutReasoning, type Completion } from '../models';
