/**
 * The daemon's API as an OpenAPI 3.1 document, for hospital integrators who generate clients. It is
 * generated from the routes themselves: routes.ts registers them on a fastify instance that never
 * listens, and each route's request and response schemas (schemas/api) become its operation, so the
 * document cannot say something the daemon does not do. `npm run docs:openapi` writes it to
 * docs/openapi.json (checked in; tests/integration/openapi.test.ts fails when it is stale); the daemon
 * serves the same document at /v1/openapi.json to any authenticated principal.
 */
import Fastify, { type RouteOptions } from 'fastify';
import type { App } from '../app';
import { loadSchema } from '../schema';
import type { Operations } from '../operations';
import type { RunScheduler } from '../runs';
import { DAEMON_VERSION } from '../version';
import { registerRoutes } from './routes';

type Json = Record<string, unknown>;

/** A route's schemas as fastify takes them. */
interface RouteSchema {
  body?: Json;
  params?: Json;
  querystring?: Json;
  response?: Record<string, Json>;
}

export interface ApiRoute {
  method: string;
  url: string;
  schema?: RouteSchema;
}

/** A schema of schemas/api as the daemon's routes use it (no $schema, no title: fastify's serialiser wants neither). */
export function apiSchema(name: string): Json {
  const schema = loadSchema(name);
  delete schema.$schema;
  delete schema.title;
  return schema;
}

/** Routes registered in server/index.ts rather than routes.ts (they need the daemon's own state). */
const DAEMON_ROUTES: { method: string; url: string; operation: Json }[] = [
  {
    method: 'get',
    url: '/metrics',
    operation: {
      summary: 'Prometheus metrics (admin and auditor roles); no patient data in any label',
      responses: { '200': { description: 'OK', content: { 'text/plain': { schema: { type: 'string' } } } }, '4XX': errorResponse(), '5XX': errorResponse() },
    },
  },
  {
    method: 'get',
    url: '/v1/openapi.json',
    operation: {
      summary: 'This document (any authenticated principal)',
      responses: { '200': { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } }, '4XX': errorResponse(), '5XX': errorResponse() },
    },
  },
];

/** Refuses any use of the daemon's state while routes are only being listed. */
function unused(what: string): never {
  return new Proxy(
    {},
    {
      get: (_t, key) => {
        throw new Error(`registerRoutes read ${what}.${String(key)} while registering: routes may use it only when they answer`);
      },
    },
  ) as never;
}

/** Every route routes.ts registers, with its schemas, in registration order. */
export async function apiRoutes(): Promise<ApiRoute[]> {
  const server = Fastify({ logger: false });
  // Listed, never served: nothing is compiled.
  server.setValidatorCompiler(() => () => true);
  server.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const routes: ApiRoute[] = [];
  server.addHook('onRoute', (r: RouteOptions) => {
    for (const method of [r.method].flat()) {
      if (method === 'HEAD') continue; // fastify adds HEAD to every GET
      routes.push({ method: method.toLowerCase(), url: r.url, ...(r.schema ? { schema: r.schema as RouteSchema } : {}) });
    }
  });
  registerRoutes(server, unused('app') as App, unused('ops') as Operations, unused('scheduler') as RunScheduler, apiSchema);
  await server.ready();
  await server.close();
  return routes;
}

const API_ID = /^https:\/\/ehrbench\.local\/schemas\/api\/(.+)\.schema\.json$/;

/**
 * A JSON Schema as the document holds it: a schema file of schemas/api (named by its $id) becomes a
 * reference to components.schemas; inline $ids, which would move the base of references, are dropped.
 */
function documented(value: unknown, components: Record<string, Json>): unknown {
  if (Array.isArray(value)) return value.map((v) => documented(v, components));
  if (!value || typeof value !== 'object') return value;
  const { $id, ...rest } = value as Json;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, documented(v, components)]));
  const file = typeof $id === 'string' ? API_ID.exec($id)?.[1] : undefined;
  if (!file) return out;
  components[file] = out;
  return { $ref: `#/components/schemas/${file}` };
}

function errorResponse(): Json {
  return { description: 'refused or failed: the error code, and for a refusal by a rule, the rule', content: { 'application/json': { schema: { $ref: '#/components/schemas/error' } } } };
}

const RESPONSE_DESCRIPTIONS: Record<string, string> = {
  '200': 'OK',
  '4XX': "refused: the request (schema, size, media type), the caller's identity or role, a rule (named), or the state of what it names",
  '5XX': 'the daemon could not serve it: 503 service.unavailable (its configuration; the detail is in its log), audit.unavailable or db.unavailable (retry later), 502/504 from a model endpoint',
};

/** `/v1/runs/:id` -> `/v1/runs/{id}` */
function pathOf(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** `post /v1/runs/:id/cancel` -> `postRunsIdCancel` */
function operationId(method: string, url: string): string {
  const words = url
    .replace(/^\/v1\//, '/')
    .split(/[/.:_-]+/)
    .filter(Boolean);
  return method + words.map((w) => w[0]?.toUpperCase() + w.slice(1)).join('');
}

function parameters(schema: Json | undefined, where: 'path' | 'query', components: Record<string, Json>): Json[] {
  const properties = (schema?.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema?.required ?? []) as string[]);
  return Object.entries(properties).map(([name, s]) => ({ name, in: where, required: where === 'path' || required.has(name), schema: documented(s, components) }));
}

function operation(route: ApiRoute, components: Record<string, Json>): Json {
  const s = route.schema ?? {};
  const params = [...parameters(s.params, 'path', components), ...parameters(s.querystring, 'query', components)];
  const responses = Object.fromEntries(
    Object.entries(s.response ?? { '200': undefined }).map(([status, schema]) => {
      const key = status.toUpperCase();
      const body = schema ? { content: { 'application/json': { schema: documented(schema, components) } } } : {};
      return [key, { description: RESPONSE_DESCRIPTIONS[key] ?? key, ...body }];
    }),
  );
  if (!responses['200']) responses['200'] = { description: 'OK (a text body: see the route)' };
  const tag = route.url.split('/').filter(Boolean)[route.url.startsWith('/v1/') ? 1 : 0] ?? 'daemon';
  return {
    operationId: operationId(route.method, route.url),
    tags: [tag],
    ...(params.length ? { parameters: params } : {}),
    ...(s.body ? { requestBody: { required: true, content: { 'application/json': { schema: documented(s.body, components) } } } } : {}),
    responses,
  };
}

/** The OpenAPI 3.1 document of the daemon's API. */
export async function openApiDocument(): Promise<Json> {
  const components: Record<string, Json> = {};
  const paths: Record<string, Record<string, Json>> = {};
  const add = (method: string, url: string, op: Json) => ((paths[pathOf(url)] ??= {})[method] = op);
  for (const route of await apiRoutes()) add(route.method, route.url, operation(route, components));
  documented(apiSchema('api/error.schema.json'), components);
  for (const r of DAEMON_ROUTES) add(r.method, r.url, { operationId: operationId(r.method, r.url), tags: ['daemon'], ...r.operation });
  return {
    openapi: '3.1.0',
    info: {
      title: 'ehrbench daemon API',
      version: DAEMON_VERSION,
      description:
        'The HTTPS API of `ehrbench serve`. Every request is authenticated by its TLS client certificate (mutual TLS; issued by the site CA with `ehrbench pki issue` or `pki sign`, or by a CA the site declares external); request bodies are JSON and unknown fields are refused. Generated from the routes and schemas/api: do not edit, run `npm run docs:openapi`.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: 'https://{host}:{port}', variables: { host: { default: 'localhost' }, port: { default: '8443' } } }],
    security: [{ mutualTLS: [] }],
    paths,
    components: {
      securitySchemes: { mutualTLS: { type: 'mutualTLS', description: 'a client certificate mapped to a principal in principals.json' } },
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}

let served: Promise<string> | undefined;

/** The document as the daemon serves it (built once, on first request). */
export function servedOpenApi(): Promise<string> {
  served ??= openApiDocument().then((doc) => `${JSON.stringify(doc, null, 2)}\n`);
  return served;
}
