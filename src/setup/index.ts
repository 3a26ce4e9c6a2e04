/** The folder's public surface: other folders import from here only. */
export { initHome } from './init';
export { DEMO_ENDPOINT_ID } from './init';
