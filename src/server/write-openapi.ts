/**
 * `npm run docs:openapi`: writes the API's OpenAPI document (openapi.ts) to docs/openapi.json, the
 * checked-in copy integrators read; tests/integration/openapi.test.ts fails when it is stale.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../paths';
import { servedOpenApi } from './openapi';

const OPENAPI_FILE = join(PACKAGE_ROOT, 'docs', 'openapi.json');

void servedOpenApi().then((text) => {
  mkdirSync(join(PACKAGE_ROOT, 'docs'), { recursive: true });
  writeFileSync(OPENAPI_FILE, text);
  process.stdout.write(`${OPENAPI_FILE}: ${Object.keys((JSON.parse(text) as { paths: object }).paths).length} paths\n`);
});
