/**
 * Audit review over the API, for compliance officers and auditors who have no shell on the host: the
 * newest events (`audit tail --server`) and an export of the trail (`audit export --server`), the same
 * text a local export writes (JSON lines with the checkpoints, verifiable offline with the public key
 * alone; CSV; FHIR AuditEvent). Events and verification are in routes.ts. Every read is audited first,
 * with what was asked for; no record, no read.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { App } from '../app';
import {
  AUDIT_EVENT_TYPES,
  csvHeader,
  csvRow,
  type ExportFormat,
  fhirAuditEvent,
  jsonlCheckpoint,
  jsonlEvent,
  loadCheckpoints,
  type RecordFilter,
  streamRecords,
  tailRecords,
  toSignedCheckpoint,
} from '../audit';
import { UserError } from '../errors';
import type { Caller, Operations } from '../operations';

type Schema = (name: string) => Record<string, unknown>;

export interface AuditQuery {
  since?: string;
  until?: string;
  actor?: string;
  type?: string;
  run?: string;
  outcome?: string;
  rule?: string;
  export?: string;
}

/** A search of the events: the filter, and which page in which order. */
export interface AuditSearchQuery extends AuditQuery {
  order?: 'oldest' | 'newest';
  before?: number;
  after?: number;
  exclude?: string;
  limit?: number;
}

const KNOWN_TYPES: readonly string[] = AUDIT_EVENT_TYPES;

/** An event type the trail records, or a 400 naming the field and the types there are. */
function eventType(field: string, value: string): string {
  if (!KNOWN_TYPES.includes(value)) throw new UserError('request.invalid', `${field}: '${value.slice(0, 60)}' is not an audit event type; use one of ${KNOWN_TYPES.join(', ')}`);
  return value;
}

/** The filter of a search: the query's, its types checked, and the page (before or after a seq). */
export function searchFilter(q: AuditSearchQuery): RecordFilter {
  if (q.before !== undefined && q.after !== undefined) throw new UserError('request.invalid', 'before and after: give one of them (before pages back newest first, after pages on oldest first)');
  if (q.type) eventType('type', q.type);
  const excludeTypes = q.exclude ? q.exclude.split(',').map((t) => eventType('exclude', t)) : [];
  return {
    ...auditFilter(q),
    ...(q.before !== undefined ? { beforeSeq: q.before } : {}),
    ...(q.after !== undefined ? { afterSeq: q.after } : {}),
    ...(excludeTypes.length ? { excludeTypes } : {}),
  };
}

/** The filter of an audit query (times normalised to UTC ISO-8601). */
export function auditFilter(q: AuditQuery): RecordFilter {
  return {
    ...(q.since ? { since: new Date(q.since).toISOString() } : {}),
    ...(q.until ? { until: new Date(q.until).toISOString() } : {}),
    ...(q.actor ? { actor: q.actor } : {}),
    ...(q.type ? { type: q.type } : {}),
    ...(q.run ? { runId: q.run } : {}),
    ...(q.outcome ? { outcome: q.outcome } : {}),
    ...(q.rule ? { rule: q.rule } : {}),
    ...(q.export ? { exportId: q.export } : {}),
  };
}

/** What an audit.read event says was read (as `ehrbench audit` does locally). */
export function readDetail(filter: RecordFilter, extra: Record<string, string | number> = {}): Record<string, string | number> {
  return {
    ...(filter.since ? { since: filter.since } : {}),
    ...(filter.until ? { until: filter.until } : {}),
    ...(filter.actor ? { actor: filter.actor } : {}),
    ...(filter.type ? { eventType: filter.type } : {}),
    ...(filter.runId ? { runId: filter.runId } : {}),
    ...(filter.outcome ? { outcome: filter.outcome } : {}),
    ...(filter.rule ? { rule: filter.rule } : {}),
    ...(filter.exportId ? { exportId: filter.exportId } : {}),
    ...(filter.beforeSeq !== undefined ? { beforeSeq: filter.beforeSeq } : {}),
    ...(filter.afterSeq !== undefined ? { afterSeq: filter.afterSeq } : {}),
    ...(filter.excludeTypes ? { excluded: filter.excludeTypes.join(',') } : {}),
    ...extra,
  };
}

const CONTENT_TYPES: Record<ExportFormat, string> = { jsonl: 'application/x-ndjson', csv: 'text/csv; charset=utf-8', fhir: 'application/fhir+json' };

/** The export's text, a piece at a time, exactly as `ehrbench audit export` writes it locally. */
async function* exportText(app: App, filter: RecordFilter, format: ExportFormat): AsyncGenerator<string> {
  if (format === 'csv') yield csvHeader();
  if (format === 'fhir') yield '{"resourceType":"Bundle","type":"collection","entry":[\n';
  let count = 0;
  for await (const r of streamRecords(app.db, filter)) {
    if (format === 'jsonl') yield jsonlEvent(r);
    else if (format === 'csv') yield csvRow(r);
    else yield `${count ? ',\n' : ''}${JSON.stringify({ resource: fhirAuditEvent(r) })}`;
    count += 1;
  }
  if (format === 'jsonl') for (const c of await loadCheckpoints(app.db)) yield jsonlCheckpoint(toSignedCheckpoint(c));
  if (format === 'fhir') yield '\n]}\n';
}

const QUERY_PROPERTIES = {
  since: { type: 'string', format: 'date-time' },
  until: { type: 'string', format: 'date-time' },
  actor: { type: 'string', maxLength: 160 },
  type: { type: 'string', maxLength: 60 },
  run: { type: 'string', maxLength: 60 },
  outcome: { enum: ['success', 'failed', 'denied'] },
  rule: { type: 'string', maxLength: 120 },
  export: { type: 'string', maxLength: 60 },
};

export function registerAuditReviewRoutes(server: FastifyInstance, app: App, ops: Operations, schema: Schema): void {
  const error = schema('api/error.schema.json');
  const record = schema('api/audit-event.record.schema.json');
  const caller = (req: FastifyRequest) => req.caller as Caller;
  const readers = async (req: FastifyRequest) => ops.require(caller(req), 'audit.read');

  server.get<{ Querystring: { n?: number } }>(
    '/v1/audit/tail',
    {
      schema: {
        querystring: {
          $id: 'https://ehrbench.local/schemas/api/audit-tail-query.inline',
          type: 'object',
          additionalProperties: false,
          properties: { n: { type: 'integer', minimum: 1, maximum: 10000 } },
        },
        response: { 200: { type: 'array', items: record }, '4xx': error, '5xx': error },
      },
    },
    async (req) => {
      const actor = await readers(req);
      const n = req.query.n ?? 20;
      await app.audit.record({ type: 'audit.read', action: 'R', outcome: 'success', rule: 'audit.read.api', reason: `tail ${n}`, actor, detail: { limit: n } });
      return tailRecords(app.db, n);
    },
  );

  server.get<{ Querystring: AuditQuery & { format?: ExportFormat } }>(
    '/v1/audit/export',
    {
      schema: {
        querystring: {
          $id: 'https://ehrbench.local/schemas/api/audit-export-query.inline',
          type: 'object',
          additionalProperties: false,
          properties: { ...QUERY_PROPERTIES, format: { enum: ['jsonl', 'csv', 'fhir'] } },
        },
        response: { '4xx': error, '5xx': error },
      },
    },
    async (req, reply) => {
      const actor = await readers(req);
      const format = req.query.format ?? 'jsonl';
      const filter = auditFilter(req.query);
      await app.audit.record({ type: 'audit.read', action: 'R', outcome: 'success', rule: 'audit.read.api', reason: `export as ${format}`, actor, detail: readDetail(filter, { format }) });
      // Sealed first, so every exported event up to this read is covered by a signed checkpoint.
      await app.audit.seal();
      // A failure mid-stream breaks the response off: the client keeps no half-written file.
      return reply
        .type(CONTENT_TYPES[format])
        .header('cache-control', 'no-store')
        .send(Readable.from(exportText(app, filter, format)));
    },
  );
}
