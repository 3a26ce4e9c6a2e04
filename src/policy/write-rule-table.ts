/** `npm run docs:rules`: rewrites the rule table of audit/README.md from the registry. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths';
import { withRuleTable } from './rule-table';
import { RULES } from './rules';

const file = join(PACKAGE_ROOT, 'audit', 'README.md');
writeFileSync(file, withRuleTable(readFileSync(file, 'utf8')));
process.stdout.write(`${file}: ${Object.keys(RULES).length} rules\n`);
