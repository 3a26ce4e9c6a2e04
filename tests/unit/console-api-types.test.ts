/**
 * The console's types of the API's answers are the response schemas', generated (npm run
 * docs:console-types), and what the daemon's routes return fits them. The console used to declare
 * its own: one of them read a field the API never sent (an endpoint's lastProbe), and the schemas
 * promised fewer fields than the console relied on.
 *
 * Two halves: the test below fails when src/console/client/types.ts is stale against schemas/api;
 * the `Fits` lines fail `npm run typecheck` (run by `npm test` before jest) when a route's answer type
 * no longer fits its schema, e.g. a field the schema requires made optional on the daemon's side.
 */
import { readFileSync } from 'node:fs';
import type {
  ApprovalDetail as SchemaApprovalDetail,
  Approval as SchemaApproval,
  AuditEvent,
  AuditHealth,
  ExportView as SchemaExportView,
  PrincipalView as SchemaPrincipalView,
  Run,
  RunInstances as SchemaRunInstances,
  SignedCertificate,
  VerifyReport as SchemaVerifyReport,
} from '../../src/console/client/types';
import { CONSOLE_TYPES, CONSOLE_TYPES_FILE, consoleTypes } from '../../src/console/write-api-types';
import type { Approval } from '../../src/access/approvals';
import type { AuditRecord, ChainHealth, VerifyReport } from '../../src/audit';
import type { ExportView, Operations, PrincipalView, RunInstances, StoppedRunView } from '../../src/operations';

/** Compiles only when A is assignable to B: what a route returns (A) fits its response schema (B). */
type Fits<A extends B, B> = [A, B];

export type RouteAnswersFitTheirSchemas = [
  Fits<StoppedRunView, Run>,
  Fits<RunInstances, SchemaRunInstances>,
  Fits<Approval, SchemaApproval>,
  Fits<Awaited<ReturnType<Operations['showApproval']>>, SchemaApprovalDetail>,
  Fits<ExportView, SchemaExportView>,
  Fits<AuditRecord, AuditEvent>,
  Fits<VerifyReport, SchemaVerifyReport>,
  Fits<ChainHealth & { stopped: string | null }, AuditHealth>,
  Fits<PrincipalView, SchemaPrincipalView>,
  Fits<Awaited<ReturnType<Operations['signCertificate']>>, SignedCertificate>,
];

describe('the console types', () => {
  it('are the response schemas as they are now (run npm run docs:console-types after changing one)', async () => {
    expect(readFileSync(CONSOLE_TYPES_FILE, 'utf8')).toBe(await consoleTypes());
  });

  it('cover every response schema the console reads, each file once', () => {
    const files = Object.values(CONSOLE_TYPES);
    expect(new Set(files).size).toBe(files.length);
    for (const file of files) expect(file).toMatch(/^api\/[a-z.-]+\.schema\.json$/);
  });
});
