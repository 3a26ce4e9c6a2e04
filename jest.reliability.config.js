/**
 * The reliability suite (npm run test:reliability): spawns worker processes from dist/, so it runs
 * after a build, one file at a time, with room for a whole chaotic run.
 */
const base = require('./jest.config.js');

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  roots: ['<rootDir>/tests/reliability'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 15 * 60_000,
  maxWorkers: 1,
};
