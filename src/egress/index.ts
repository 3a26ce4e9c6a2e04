export { loadEndpointPolicy } from './endpoints';
export type { Endpoint, EndpointDefinition, EndpointPolicy } from './endpoints';
export {
  EgressDenied,
  addressAllowed,
  checkRequestUrl,
  createEndpointTransport,
  resolveChecked,
  spkiSha256,
  systemResolver,
} from './guard';
export type { EndpointTransport, Resolver, TransportOptions } from './guard';
