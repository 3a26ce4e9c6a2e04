/** The daemon's routes: each a request schema, an operation, a response schema. */
import type { FastifyInstance } from 'fastify';
import type { App } from '../app';
import { type ApprovalChange, type ApprovalInput, endpointDecision } from '../access';
import type { Endpoint } from '../contracts';
import { TIERS, type Tier } from '../tiers';
import { chainOf, lastProbes, loadCheckpoints, loadMacKeysIfPresent, loadWitnesses, type RecordFilter, streamRecords, tailRecords, trustedKeys, verifyAudit, type AuditRecord } from '../audit';
import type { InstancesQuery, Operations, RunRequestInput } from '../operations';
import type { RunScheduler } from '../runs';
import { type AuditSearchQuery, readDetail, registerAuditReviewRoutes, searchFilter } from './audit-routes';
import { registerConsoleApiRoutes } from './console-routes';
import { registerStudyRoutes } from './study-routes';

type Schema = (name: string) => Record<string, unknown>;

/** The tiers an endpoint may never receive, whoever asks, each with its rule (the request form offers it for the others only). */
function refusedTiers(endpoint: Endpoint): { tier: Tier; rule: string; reason: string }[] {
  return TIERS.flatMap((tier) => {
    const d = endpointDecision(tier, endpoint);
    return d && !d.allowed ? [{ tier, rule: d.rule, reason: d.reason }] : [];
  });
}

const UUID_PARAM = {
  $id: 'https://ehrbench.local/schemas/api/id-param.inline',
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' } },
};

export function registerRoutes(server: FastifyInstance, app: App, ops: Operations, scheduler: RunScheduler, schema: Schema): void {
  const error = schema('api/error.schema.json');
  const responses = (ok: Record<string, unknown>) => ({ 200: ok, '4xx': error, '5xx': error });
  const list = (item: Record<string, unknown>) => ({ type: 'array', items: item });
  const body = (name: string) => ({ $id: `https://ehrbench.local/schemas/${name}`, ...schema(name) });
  const query = (name: string) => ({ $id: `https://ehrbench.local/schemas/${name}`, ...schema(name) });
  const caller = (req: { caller?: unknown }) => req.caller as NonNullable<import('fastify').FastifyRequest['caller']>;
  const run = schema('api/run.schema.json');
  const approval = schema('api/approval.schema.json');

  // A trail that stopped itself (a rollback) keeps the process alive, so that it can say why: /health
  // names the rule, /ready refuses with it; a restart would only stop again.
  const health = { type: 'object', properties: { status: { type: 'string' }, rule: { type: 'string' } } };
  server.get('/health', { schema: { response: { 200: health } } }, async () => {
    const stopped = app.audit.unavailable();
    return stopped ? { status: 'audit-stopped', rule: stopped.rule } : { status: 'ok' };
  });
  server.get('/ready', { schema: { response: { 200: health, '5xx': error } } }, async (_req, reply) => {
    const stopped = app.audit.unavailable();
    if (stopped) return reply.code(503).send({ error: stopped.code, ...(stopped.rule ? { rule: stopped.rule } : {}), message: stopped.message });
    await app.db.query('SELECT seq FROM audit_head');
    return { status: 'ready' };
  });

  server.get('/v1/whoami', { schema: { response: responses(schema('api/whoami.schema.json')) } }, async (req) => ops.whoami(caller(req)));

  server.post<{ Body: RunRequestInput }>('/v1/runs', { schema: { body: body('api/run-request.schema.json'), response: responses(run) } }, async (req) => {
    const view = await ops.requestRun(caller(req), req.body);
    scheduler.nudge();
    return view;
  });
  server.get<{ Querystring: { limit?: number } }>('/v1/runs', { schema: { querystring: query('api/list-query.schema.json'), response: responses(list(run)) } }, async (req) =>
    ops.listRuns(caller(req), req.query.limit ?? 50),
  );
  server.get<{ Params: { id: string } }>('/v1/runs/:id', { schema: { params: UUID_PARAM, response: responses(run) } }, async (req) => ops.showRun(caller(req), req.params.id));
  // A run's instances, as policy/visibility shows them to the caller; the read is audited (instance.read).
  server.get<{ Params: { id: string }; Querystring: InstancesQuery }>(
    '/v1/runs/:id/instances',
    { schema: { params: UUID_PARAM, querystring: query('api/instances-query.schema.json'), response: responses(schema('api/run-instances.schema.json')) } },
    async (req) => ops.listInstances(caller(req), req.params.id, req.query),
  );
  // HealthBench's meta-evaluation of a completed run: figures only, to whoever may see the run's figures.
  server.get<{ Params: { id: string } }>('/v1/runs/:id/stability', { schema: { params: UUID_PARAM, response: responses(schema('api/run-stability.schema.json')) } }, async (req) =>
    ops.stability(caller(req), req.params.id),
  );
  server.get<{ Params: { id: string } }>('/v1/runs/:id/meta-evaluation', { schema: { params: UUID_PARAM, response: responses(schema('api/run-meta-evaluation.schema.json')) } }, async (req) =>
    ops.metaEvaluation(caller(req), req.params.id),
  );
  server.post<{ Params: { id: string } }>('/v1/runs/:id/approve', { schema: { params: UUID_PARAM, body: body('api/empty.schema.json'), response: responses(run) } }, async (req) => {
    const view = await ops.approveRun(caller(req), req.params.id);
    scheduler.nudge();
    return view;
  });
  server.post<{ Params: { id: string }; Body: { reason: string } }>(
    '/v1/runs/:id/cancel',
    { schema: { params: UUID_PARAM, body: body('api/reason.schema.json'), response: responses(run) } },
    async (req) => ops.cancelRun(caller(req), req.params.id, req.body.reason),
  );

  server.post<{ Body: ApprovalInput }>('/v1/approvals', { schema: { body: body('api/approval-create.schema.json'), response: responses(approval) } }, async (req) =>
    ops.createApproval(caller(req), req.body),
  );
  server.get('/v1/approvals', { schema: { response: responses(list(approval)) } }, async (req) => ops.listApprovals(caller(req)));
  server.get<{ Params: { id: string } }>('/v1/approvals/:id', { schema: { params: UUID_PARAM, response: responses(schema('api/approval-detail.schema.json')) } }, async (req) =>
    ops.showApproval(caller(req), req.params.id),
  );
  for (const change of ['suspend', 'reinstate', 'close'] as ApprovalChange[]) {
    server.post<{ Params: { id: string }; Body: { reason: string } }>(
      `/v1/approvals/:id/${change}`,
      { schema: { params: UUID_PARAM, body: body('api/reason.schema.json'), response: responses(approval) } },
      async (req) => ops.changeApproval(caller(req), req.params.id, change, req.body.reason),
    );
  }

  // Drift under approvals (src/runs/canary.ts): the checks the console's notice reads, and their review.
  server.get('/v1/drift', { schema: { response: responses(list(schema('api/drift-check.schema.json'))) } }, async (req) => ops.driftChecks(caller(req)));
  server.post<{ Params: { id: string }; Body: { note?: string } }>(
    '/v1/approvals/:id/review-drift',
    { schema: { params: UUID_PARAM, body: body('api/drift-review.schema.json'), response: responses(schema('api/drift-reviewed.schema.json')) } },
    async (req) => ops.reviewDrift(caller(req), req.params.id, req.body.note),
  );

  server.get('/v1/benchmarks', { schema: { response: responses(list(schema('api/benchmark-summary.schema.json'))) } }, async () =>
    app
      .catalog()
      .list()
      .map((b) => ({
        ...b.definition,
        mainMetric: b.definition.metrics.main,
        definitionHash: b.definitionHash,
        templateHash: b.templateHash,
      })),
  );
  server.get('/v1/endpoints', { schema: { response: responses(list(schema('api/endpoint-summary.schema.json'))) } }, async () => {
    const probes = await lastProbes(app.db);
    return app.endpoints().endpoints.map((e) => ({ ...e, deployment: e.deployment ?? null, model: e.model ?? null, lastProbeAt: probes.get(e.id) ?? null, refusedTiers: refusedTiers(e) }));
  });

  server.get('/v1/audit/verify', { schema: { response: responses(schema('api/audit-report.schema.json')) } }, async (req) => {
    const actor = await ops.require(caller(req), 'audit.verify');
    await app.audit.record({ type: 'audit.verify', action: 'E', outcome: 'success', rule: 'audit.verify.api', actor });
    const { witnesses, problems, notes } = loadWitnesses(app.config.audit.witnessDirs);
    const macKeys = loadMacKeysIfPresent(app.config.keysDir);
    const report = await verifyAudit({
      // PostgreSQL on a host with 2 cores or more: read and checked in parallel segments (worker threads); otherwise streamed.
      ...chainOf(app.db),
      checkpoints: await loadCheckpoints(app.db),
      witnesses,
      witnessProblems: problems,
      witnessNotes: notes,
      trustedKeys: trustedKeys(app.config.keysDir),
      ...(macKeys ? { macKeys } : {}),
    });
    // What it found, kept in the trail so that the next reader sees the chain's state and who last checked
    // it. A trail that refuses the record (stopped) still gets its answer: that is when it is needed most.
    await app.audit
      .record({
        type: 'audit.verify',
        action: 'E',
        outcome: report.ok ? 'success' : 'failed',
        rule: 'audit.verify.outcome',
        actor,
        detail: { events: report.events, findings: report.findings.length, checkpoints: report.checkpoints },
      })
      .catch(() => undefined);
    return report;
  });
  server.get<{ Querystring: AuditSearchQuery }>(
    '/v1/audit/events',
    { schema: { querystring: query('api/audit-query.schema.json'), response: responses(list(schema('api/audit-event.record.schema.json'))) } },
    async (req) => {
      const actor = await ops.require(caller(req), 'audit.read');
      const q = req.query;
      const filter: RecordFilter = searchFilter(q);
      const limit = q.limit ?? 100;
      const order = q.order ?? 'oldest';
      await app.audit.record({ type: 'audit.read', action: 'R', outcome: 'success', rule: 'audit.read.api', reason: 'search', actor, detail: readDetail(filter, { limit, order }) });
      // Newest first: the last `limit` matches, the newest at the top (a trail of thousands opens on today).
      if (order === 'newest') return (await tailRecords(app.db, limit, filter)).reverse();
      const found: AuditRecord[] = [];
      for await (const r of streamRecords(app.db, filter)) {
        found.push(r);
        if (found.length >= limit) break;
      }
      return found;
    },
  );

  registerAuditReviewRoutes(server, app, ops, schema);
  registerConsoleApiRoutes(server, app, ops, schema);

  // Exports: the only door out. Request (researcher), review (compliance), release (compliance, not the
  // requester), download (requester or compliance). Bundles travel as text, byte for byte as signed.
  const exportView = schema('api/export-view.schema.json');
  const exportFiles = schema('api/export-files.schema.json');
  const nested = (s: Record<string, unknown>) => {
    const { $id: _id, ...rest } = s;
    return rest;
  };
  server.post<{ Body: { runIds: string[]; allowMixedData?: boolean; packet?: boolean } }>(
    '/v1/exports',
    { schema: { body: body('api/export-request.schema.json'), response: responses(exportView) } },
    async (req) => ops.requestExport(caller(req), req.body.runIds, { ...(req.body.allowMixedData === true ? { allowMixedData: true } : {}), ...(req.body.packet === true ? { packet: true } : {}) }),
  );
  server.get<{ Querystring: { limit?: number } }>('/v1/exports', { schema: { querystring: query('api/list-query.schema.json'), response: responses(list(exportView)) } }, async (req) =>
    ops.listExports(caller(req), req.query.limit ?? 50),
  );
  server.get<{ Params: { id: string } }>('/v1/exports/:id', { schema: { params: UUID_PARAM, response: responses(exportView) } }, async (req) => ops.showExport(caller(req), req.params.id));
  server.post<{ Params: { id: string }; Body: { format?: 'bundle' | 'helm' } }>(
    '/v1/exports/:id/release',
    {
      schema: {
        params: UUID_PARAM,
        body: body('api/export-release.schema.json'),
        response: responses({ type: 'object', additionalProperties: false, required: ['export', 'files'], properties: { export: nested(exportView), files: nested(exportFiles) } }),
      },
    },
    async (req) => ops.releaseExport(caller(req), req.params.id, req.body.format ?? 'bundle'),
  );
  server.post<{ Params: { id: string }; Body: { reason: string } }>(
    '/v1/exports/:id/withdraw',
    { schema: { params: UUID_PARAM, body: body('api/reason.schema.json'), response: responses(exportView) } },
    async (req) => ops.withdrawExport(caller(req), req.params.id, req.body.reason),
  );
  server.get<{ Params: { id: string } }>('/v1/exports/:id/files', { schema: { params: UUID_PARAM, response: responses(exportFiles) } }, async (req) => ops.downloadExport(caller(req), req.params.id));

  // Break-glass: halt every active run and revoke a principal's certificates. Narrows access only.
  server.post<{ Body: { reason: string } }>('/v1/breakglass/halt', { schema: { body: body('api/reason.schema.json'), response: responses(list(run)) } }, async (req) => {
    const c = caller(req);
    const active = (await app.engine.store.listRuns(1000)).filter((r) => ['requested', 'approved', 'running'].includes(r.status));
    return Promise.all(active.map((r) => ops.cancelRun(c, r.run_id, `break-glass: ${req.body.reason}`)));
  });
  server.post<{ Params: { principal: string }; Body: { reason: string } }>(
    '/v1/principals/:principal/revoke',
    {
      schema: {
        params: {
          $id: 'https://ehrbench.local/schemas/api/principal-param.inline',
          type: 'object',
          additionalProperties: false,
          required: ['principal'],
          properties: { principal: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,62}$' } },
        },
        body: body('api/reason.schema.json'),
        response: responses({
          type: 'object',
          additionalProperties: false,
          properties: { principal: { type: 'string' }, revoked: { type: 'integer' }, stoppedRuns: { type: 'array', items: { type: 'string' } } },
        }),
      },
    },
    async (req) => ops.revokePrincipal(caller(req), req.params.principal, req.body.reason),
  );
  registerStudyRoutes(server, ops, schema);
}
