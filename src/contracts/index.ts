/**
 * The contracts between the engine and the rooms it composes: what a run is to its stages (RunContext),
 * the stage ports, an endpoint's description and what calls cost. Types and pure helpers only, so
 * every room above it may read it without reaching up to the engine (runs/) or the gateway (calls/).
 */
export type { AccessStage, Decision, DeidOutcome, DeidPlanning, DeidStage, JuryPolicy, PromptStage, RunContext, RunDecision, Scores } from './run';
export type { AuthorityDefinition, Endpoint, EndpointDefinition, ReasoningEffort } from './endpoint';
export { costUsd, priceFor, type Price, type PricedEndpoint } from './prices';
export { runPhase } from './phase';
export { AUDIT_EVENT_TYPES, type AuditEventType, type AuditOutcome } from './audit-events';
export { PIN_KINDS, PIN_MEANING, pinDifferenceLine, pinDifferences, type PinDifference, type PinKind, type RunPins } from './pins';
