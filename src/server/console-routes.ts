/**
 * Routes the console's pages needed that the CLI had no call for: the principals directory with
 * issued certificates and signing a certification request (admin; `pki sign` on the host does the
 * same), the audit chain's health (compliance, auditor), and pictures (SVG,
 * src/pictures). API routes like any other: a role check through operations, a response schema, the
 * read audited where it reads the trail. A picture is drawn from the same views the JSON routes
 * answer (a run's withheld figures stay withheld in its picture), never from the store directly.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { App } from '../app';
import { chainHealth, streamRecords } from '../audit';
import { UserError } from '../errors';
import { heatmapSvg, leaderboardOf, scoresFromRuns, toScoreTable } from '../export';
import type { Caller, CertificateRequestInput, Operations, RunView } from '../operations';
import { bucketCallsAsync, callsOverTimeSvg, categoryScoresSvg, costPerModel, costWinRatePoints, costWinRateSvg, runProgressSvg } from '../pictures';

type Schema = (name: string) => Record<string, unknown>;

const ID = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const RUNS_QUERY = {
  $id: 'https://ehrbench.local/schemas/api/picture-runs-query.inline',
  type: 'object',
  additionalProperties: false,
  required: ['runs'],
  properties: { runs: { type: 'string', minLength: 36, maxLength: 3700, pattern: '^[0-9a-f-]{36}(,[0-9a-f-]{36}){0,99}$' } },
};
const SVG = 'image/svg+xml; charset=utf-8';

/** The chosen runs' views, as `leaderboard --runs` reads them: only what the caller may see. */
async function runViews(ops: Operations, caller: Caller, runs: string): Promise<RunView[]> {
  return Promise.all(runs.split(',').map((id) => ops.showRun(caller, id)));
}

function boardOf(views: RunView[]) {
  const table = toScoreTable(scoresFromRuns(views), 'runs');
  if (table.models.length === 0) throw new UserError('request.invalid', 'none of these runs is completed with a score you may see; choose completed runs');
  return { table, board: leaderboardOf(table) };
}

export function registerConsoleApiRoutes(server: FastifyInstance, app: App, ops: Operations, schema: Schema): void {
  const error = schema('api/error.schema.json');
  const caller = (req: FastifyRequest) => req.caller as Caller;

  server.get('/v1/principals', { schema: { response: { 200: { type: 'array', items: schema('api/principal-view.schema.json') }, '4xx': error, '5xx': error } } }, async (req) =>
    ops.listPrincipals(caller(req)),
  );

  server.get('/v1/audit/health', { schema: { response: { 200: schema('api/audit-health.schema.json'), '4xx': error, '5xx': error } } }, async (req) => {
    const actor = await ops.require(caller(req), 'audit.read');
    await app.audit.record({ type: 'audit.read', action: 'R', outcome: 'success', rule: 'audit.read.api', reason: 'health', actor });
    return { ...(await chainHealth(app.db, app.config.audit.witnessDirs)), stopped: app.audit.unavailable()?.rule ?? null };
  });

  // Pictures: image/svg+xml, drawn from the views above. No script, style or reference in any of them.
  server.get<{ Params: { id: string }; Querystring: { v?: string } }>(
    '/v1/pictures/runs/:id/progress.svg',
    {
      schema: {
        params: {
          $id: 'https://ehrbench.local/schemas/api/picture-run-param.inline',
          type: 'object',
          additionalProperties: false,
          required: ['id'],
          properties: { id: { type: 'string', pattern: ID } },
        },
        querystring: { $id: 'https://ehrbench.local/schemas/api/picture-version-query.inline', type: 'object', additionalProperties: false, properties: { v: { type: 'string', maxLength: 40 } } },
        response: { '4xx': error, '5xx': error },
      },
    },
    async (req, reply) => reply.type(SVG).send(runProgressSvg(await ops.showRun(caller(req), req.params.id))),
  );
  server.get<{ Querystring: { runs: string } }>('/v1/pictures/leaderboard.svg', { schema: { querystring: RUNS_QUERY, response: { '4xx': error, '5xx': error } } }, async (req, reply) => {
    const views = await runViews(ops, caller(req), req.query.runs);
    const { table, board } = boardOf(views);
    // A row is an endpoint; it is labelled "model (endpoint)" so the reader finds the model.
    const models = new Map(views.map((v) => [v.endpointId, v.model]));
    const label = (endpoint: string) => (models.get(endpoint) ? `${models.get(endpoint)} (${endpoint})` : endpoint);
    return reply.type(SVG).send(heatmapSvg(table, board, 'Scores per benchmark, one row per endpoint', label));
  });
  server.get<{ Querystring: { runs: string } }>('/v1/pictures/categories.svg', { schema: { querystring: RUNS_QUERY, response: { '4xx': error, '5xx': error } } }, async (req, reply) => {
    const { board } = boardOf(await runViews(ops, caller(req), req.query.runs));
    return reply.type(SVG).send(categoryScoresSvg(board.models));
  });
  server.get<{ Querystring: { runs: string } }>('/v1/pictures/cost-win-rate.svg', { schema: { querystring: RUNS_QUERY, response: { '4xx': error, '5xx': error } } }, async (req, reply) => {
    const views = await runViews(ops, caller(req), req.query.runs);
    const { board } = boardOf(views);
    return reply.type(SVG).send(costWinRateSvg(costWinRatePoints(board.models, costPerModel(views))));
  });
  server.get<{ Params: { endpoint: string }; Querystring: { hours?: number } }>(
    '/v1/pictures/endpoints/:endpoint/calls.svg',
    {
      schema: {
        params: {
          $id: 'https://ehrbench.local/schemas/api/picture-endpoint-param.inline',
          type: 'object',
          additionalProperties: false,
          required: ['endpoint'],
          properties: { endpoint: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,62}$' } },
        },
        querystring: {
          $id: 'https://ehrbench.local/schemas/api/picture-hours-query.inline',
          type: 'object',
          additionalProperties: false,
          properties: { hours: { type: 'integer', minimum: 1, maximum: 720 } },
        },
        response: { '4xx': error, '5xx': error },
      },
    },
    async (req, reply) => {
      // Counts of the trail's call events: read from the trail, so audited like any read of it.
      const actor = await ops.require(caller(req), 'calls.read');
      const hours = req.query.hours ?? 24;
      const to = new Date();
      const from = new Date(to.getTime() - hours * 3600_000);
      const filter = { type: 'endpoint.call', endpointId: req.params.endpoint, since: from.toISOString() };
      await app.audit.record({
        type: 'audit.read',
        action: 'R',
        outcome: 'success',
        rule: 'audit.read.api',
        reason: 'calls picture',
        actor,
        detail: { eventType: 'endpoint.call', endpointId: req.params.endpoint, hours },
      });
      const buckets = await bucketCallsAsync(streamRecords(app.db, filter), {
        endpointId: req.params.endpoint,
        from: from.toISOString(),
        to: to.toISOString(),
        bucketSeconds: hours <= 24 ? 900 : 3600 * Math.ceil(hours / 96),
      });
      return reply.type(SVG).send(callsOverTimeSvg(buckets));
    },
  );

  // A certificate for a certification request made on its holder's machine (admin): returned, not written.
  server.post<{ Body: CertificateRequestInput }>(
    '/v1/certificates',
    { schema: { body: schema('api/certificate-request.schema.json'), response: { 200: schema('api/certificate.schema.json'), '4xx': error, '5xx': error } } },
    async (req) => ops.signCertificate(caller(req), req.body),
  );
}
