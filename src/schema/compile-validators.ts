/**
 * Part of `npm run build`: ajv's standalone code for every schema in schemas/, written to
 * dist/schema/schema-validators.js, so a command validates its files without compiling schemas at
 * start-up (a tenth of a second that `ehrbench deid` and every other command would pay each time). The
 * module records the sha256 of the schemas it was built from; validate.ts uses it only if they still
 * match, and compiles otherwise.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { _ } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import { newAjv, schemaFiles, schemasSha256, loadSchema, PRECOMPILED_FILE } from './validate';

const ajv = newAjv({ code: { source: true, formats: _`require("ajv-formats/dist/formats").fullFormats` } });
const files = schemaFiles();
for (const f of files) ajv.addSchema(loadSchema(f), f);
const code = standaloneCode(ajv, Object.fromEntries(files.map((f) => [f, f])));
writeFileSync(join(__dirname, PRECOMPILED_FILE), `${code}\nexports.__schemasSha256 = ${JSON.stringify(schemasSha256())};\n`);
process.stdout.write(`${files.length} schema validators precompiled\n`);
