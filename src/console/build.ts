/**
 * Part of `npm run build`: the console's pages, bundled once with esbuild into dist/console-pages
 * (index.html, app.js, app.css). Preact and the pages are one script file served by the daemon;
 * nothing is loaded from another origin at run time. The forms' validators are ajv's standalone code
 * for the API's own request schemas, so the page and the daemon cannot disagree on what is valid.
 */
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { _ } from 'ajv';
import standaloneCode from 'ajv/dist/standalone';
import { build } from 'esbuild';
import { newAjv, loadSchema, schemaFiles } from '../schema';
import { PACKAGE_ROOT } from '../paths';

const CLIENT = join(PACKAGE_ROOT, 'src', 'console', 'client');
const OUT = join(PACKAGE_ROOT, 'dist', 'console-pages');
const WORK = join(PACKAGE_ROOT, 'dist', 'console-build');

/** The request schemas the console's forms send, by the name the client imports them under. */
const FORMS = { runRequest: 'api/run-request.schema.json', approvalCreate: 'api/approval-create.schema.json', certificateRequest: 'api/certificate-request.schema.json' };

function writeValidators(): string {
  const ajv = newAjv({ code: { source: true, esm: true, formats: _`require("ajv-formats/dist/formats").fullFormats` } });
  for (const f of schemaFiles()) ajv.addSchema(loadSchema(f), f);
  const file = join(WORK, 'validators.mjs');
  writeFileSync(file, standaloneCode(ajv, FORMS));
  return file;
}

async function main(): Promise<void> {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  mkdirSync(WORK, { recursive: true });
  const validators = writeValidators();
  await build({
    entryPoints: [join(CLIENT, 'main.tsx')],
    outfile: join(OUT, 'app.js'),
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    alias: { 'ehrbench:validators': validators },
    legalComments: 'none',
    logLevel: 'warning',
  });
  copyFileSync(join(CLIENT, 'index.html'), join(OUT, 'index.html'));
  copyFileSync(join(CLIENT, 'app.css'), join(OUT, 'app.css'));
  process.stdout.write('console pages built\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`console build failed: ${(err as Error).message}\n`);
  process.exit(1);
});
