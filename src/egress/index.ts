export { loadEndpointPolicy, readSecretReference } from './endpoints';
export { summarizeEndpoints } from './policy-summary';
export type { EndpointPolicy, PolicyLoadOptions } from './endpoints';
// Tests name endpoints through the guard's room; src/ reads the description from src/contracts.
export type { Endpoint, EndpointDefinition, ReasoningEffort } from '../contracts';
export type { SecretPlaces } from './secrets';
export { EgressAborted, EgressDenied } from './errors';
export { addressAllowed, parseConfigAddress, parseConfigCidr } from './addresses';
export { MAX_URL_LENGTH, parseCanonicalUrl } from './url';
export { DEFAULT_DNS_TIMEOUT_MS, endpointOrigin, resolveChecked, systemResolver } from './resolve';
export type { Resolution, Resolver } from './resolve';
export { DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT_MS, checkRequestUrl, createEndpointTransport, spkiSha256 } from './guard';
export type { EgressEvent, EndpointTransport, TransportOptions } from './guard';
export { ALLOW_RULE, decideUrl } from './decide';
export type { EgressDecision } from './decide';
export { assertSafeEgressEnvironment, refusedNodeFlag, splitNodeOptions } from './environment';
export { assertNoForeignCode, foreignModules } from './preload';
