#!/usr/bin/env node
'use strict';
// Entry point of the `ehrbench` command. The TypeScript sources are compiled to dist/ by `npm run build`
// (run automatically by `npm ci` / `npm install` through the prepare script).
const { main } = require('../dist/cli/main.js');
main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
