/**
 * `npm run docs:console-types`: writes src/console/client/types.ts, the types of the API's answers as
 * the console reads them, from the response schemas in schemas/api (json-schema-to-typescript). The
 * schemas are what the daemon's serialiser sends; a console written against types of its own drifted
 * from them (a field the API never sent, fields assumed present that the schema made optional).
 * tests/unit/console-api-types.test.ts fails when the file is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import prettier from 'prettier';
import { PACKAGE_ROOT, SCHEMA_DIR } from '../paths';

/** Each type the console imports, by the response schema it is. */
export const CONSOLE_TYPES: Record<string, string> = {
  Run: 'api/run.schema.json',
  RunInstances: 'api/run-instances.schema.json',
  Approval: 'api/approval.schema.json',
  ApprovalDetail: 'api/approval-detail.schema.json',
  DriftCheck: 'api/drift-check.schema.json',
  Benchmark: 'api/benchmark-summary.schema.json',
  Endpoint: 'api/endpoint-summary.schema.json',
  ExportView: 'api/export-view.schema.json',
  AuditEvent: 'api/audit-event.record.schema.json',
  VerifyReport: 'api/audit-report.schema.json',
  AuditHealth: 'api/audit-health.schema.json',
  SignedCertificate: 'api/certificate.schema.json',
  PrincipalView: 'api/principal-view.schema.json',
  StudyView: 'api/study.schema.json',
  StudyDetail: 'api/study-detail.schema.json',
  StudyNext: 'api/study-next.schema.json',
  StudyPlan: 'api/study-plan.schema.json',
};

export const CONSOLE_TYPES_FILE = join(PACKAGE_ROOT, 'src', 'console', 'client', 'types.ts');

const HEADER = `/**
 * The API's answers as the console reads them. Generated from the response schemas in schemas/api by
 * \`npm run docs:console-types\` (src/console/write-api-types.ts): do not edit; change the schema.
 */
`;

/** The file's text: one interface per schema, named by the console (not by the schema's title). */
export async function consoleTypes(): Promise<string> {
  let out = HEADER;
  for (const [name, file] of Object.entries(CONSOLE_TYPES)) {
    const { $id: _id, $schema: _meta, title: _title, ...schema } = JSON.parse(readFileSync(join(SCHEMA_DIR, file), 'utf8')) as JSONSchema & { $schema?: string };
    out += `\n/** ${file} */\n`;
    out += await compile({ ...schema, title: name }, name, { bannerComment: '', additionalProperties: false, format: false, strictIndexSignatures: true, cwd: dirname(join(SCHEMA_DIR, file)) });
  }
  out += `\n/** Instances per state of a run (its counts, when not withheld). */\nexport type Counts = NonNullable<Run['counts']>;\n`;
  const options = await prettier.resolveConfig(CONSOLE_TYPES_FILE);
  return prettier.format(out, { ...options, filepath: CONSOLE_TYPES_FILE });
}

if (require.main === module) {
  consoleTypes().then(
    (text) => {
      writeFileSync(CONSOLE_TYPES_FILE, text);
      process.stdout.write(`${CONSOLE_TYPES_FILE}: ${Object.keys(CONSOLE_TYPES).length + 1} types\n`);
    },
    (err: unknown) => {
      process.stderr.write(`docs:console-types failed: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
