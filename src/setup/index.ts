/** The folder's public surface: other folders import from here only. */
export { initHome } from './init';
export type { InitOptions, InitReport } from './init';
export { DEFAULT_DEMO_PORT, DEMO_ENDPOINT_ID } from './init';
export { TEST_ENDPOINT_DESCRIPTION, TEST_ENDPOINT_IDS } from './test-endpoints';
export { type UpgradeNeed, upgradeNeeds } from './upgrade-check';
