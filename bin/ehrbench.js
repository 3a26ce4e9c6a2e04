#!/usr/bin/env node
'use strict';
// Entry point of the `ehrbench` command. The TypeScript sources are compiled to dist/ by `npm run build`
// (run automatically by `npm ci` / `npm install` through the prepare script).
// Before any command is loaded: a preload can hide from NODE_OPTIONS and process.execArgv, so refuse to
// start when a module from outside the installation is already in this process (src/egress/preload.ts).
const { describeError, errorEntry } = require('../dist/errors.js');
let refused;
try {
  require('../dist/egress/preload.js').assertNoForeignCode();
} catch (err) {
  refused = describeError(err);
}
if (refused) {
  // As the CLI reports any error: one JSON object with --json, else one line.
  const json = process.argv.includes('--json');
  process.stderr.write(json ? `${JSON.stringify({ error: refused.code, message: refused.message })}\n` : `ehrbench: ${refused.message}\n`);
  process.exitCode = errorEntry(refused.code).exit;
} else {
  const { main } = require('../dist/cli/main.js');
  main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
  });
}
