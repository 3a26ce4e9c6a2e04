/** `npm run docs:fidelity`: rewrites the fidelity table of README.md from the benchmark definitions. */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths';
import { withFidelityTable } from './fidelity-table';
import { Catalog } from './index';

const definitions = Catalog.load()
  .list()
  .map((b) => b.definition);
const file = join(PACKAGE_ROOT, 'README.md');
writeFileSync(file, withFidelityTable(readFileSync(file, 'utf8'), definitions));
process.stdout.write(`${file}: ${definitions.length} benchmarks\n`);
