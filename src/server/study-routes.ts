/**
 * Rating studies over the API: open, list, read (progress and agreement), close; a clinician's next
 * blinded item and their rating. Each route is a request schema, an operation (src/operations/studies.ts,
 * which asks the policy gate) and a response schema.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Caller } from '../operations';
import type { Operations, RatingInput } from '../operations';
import type { StudySpec } from '../ratings';

type Schema = (name: string) => Record<string, unknown>;

const ID = { type: 'string', pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' };
const STUDY_PARAM = { $id: 'https://ehrbench.local/schemas/api/study-param.inline', type: 'object', additionalProperties: false, required: ['id'], properties: { id: ID } };
const ITEM_PARAM = { $id: 'https://ehrbench.local/schemas/api/study-item-param.inline', type: 'object', additionalProperties: false, required: ['id', 'itemId'], properties: { id: ID, itemId: ID } };

export function registerStudyRoutes(server: FastifyInstance, ops: Operations, schema: Schema): void {
  // Read when a request is answered, not while registering (the OpenAPI listing registers without a daemon).
  const studies = () => ops.studies;
  const error = schema('api/error.schema.json');
  const responses = (ok: Record<string, unknown>) => ({ 200: ok, '4xx': error, '5xx': error });
  const named = (name: string) => ({ $id: `https://ehrbench.local/schemas/${name}`, ...schema(name) });
  const caller = (req: FastifyRequest) => req.caller as Caller;
  const study = schema('api/study.schema.json');

  server.get('/v1/studies', { schema: { response: responses({ type: 'array', items: study }) } }, async (req) => studies().list(caller(req)));
  server.post<{ Body: StudySpec }>('/v1/studies', { schema: { body: named('api/study-open.schema.json'), response: responses(schema('api/study-detail.schema.json')) } }, async (req) =>
    studies().open(caller(req), req.body),
  );
  // The planner is arithmetic on the request only; it is offered to whoever may open a study.
  server.get<{ Querystring: { icc: number; width: number; raters: number; assurance: number; population?: number } }>(
    '/v1/studies/plan',
    { schema: { querystring: named('api/study-plan-query.schema.json'), response: responses(schema('api/study-plan.schema.json')) } },
    async (req) =>
      studies().plan(caller(req), {
        expectedIcc: req.query.icc,
        width: req.query.width,
        raters: req.query.raters,
        assurance: req.query.assurance,
        ...(req.query.population ? { population: req.query.population } : {}),
      }),
  );
  server.get<{ Params: { id: string } }>('/v1/studies/:id', { schema: { params: STUDY_PARAM, response: responses(schema('api/study-detail.schema.json')) } }, async (req) =>
    studies().detail(caller(req), req.params.id),
  );
  server.post<{ Params: { id: string } }>('/v1/studies/:id/close', { schema: { params: STUDY_PARAM, body: named('api/empty.schema.json'), response: responses(study) } }, async (req) =>
    studies().close(caller(req), req.params.id),
  );
  server.get<{ Params: { id: string } }>('/v1/studies/:id/next', { schema: { params: STUDY_PARAM, response: responses(schema('api/study-next.schema.json')) } }, async (req) =>
    studies().next(caller(req), req.params.id),
  );
  server.post<{ Params: { id: string; itemId: string }; Body: RatingInput }>(
    '/v1/studies/:id/items/:itemId',
    { schema: { params: ITEM_PARAM, body: named('api/study-rating.schema.json'), response: responses(schema('api/study-rated.schema.json')) } },
    async (req) => studies().rate(caller(req), req.params.id, req.params.itemId, req.body),
  );
}
