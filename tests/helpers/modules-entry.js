'use strict';
// Runs the ehrbench binary and, when it exits, writes the modules it loaded (require.cache) to the file
// named first: `node tests/helpers/modules-entry.js OUT <ehrbench arguments>`. It lives in the package
// root, so the binary's foreign-code check (src/egress/preload.ts) accepts it as part of the
// installation, where a `-r` preload from a temporary folder is refused.
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const [out, ...args] = process.argv.slice(2);
process.on('exit', () => writeFileSync(out, JSON.stringify(Object.keys(require.cache))));
const bin = join(__dirname, '..', '..', 'bin', 'ehrbench.js');
process.argv = [process.argv[0], bin, ...args];
require(bin);
