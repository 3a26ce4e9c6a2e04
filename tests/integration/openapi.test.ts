/**
 * The API's OpenAPI 3.1 document (issue 17, item 9): generated from the routes and schemas/api,
 * checked in as docs/openapi.json (this test fails when it is stale: run `npm run docs:openapi`),
 * served at /v1/openapi.json to authenticated principals only, naming every route the daemon serves
 * and no other, and well-formed: paths, methods, parameters, request bodies, responses, and every
 * schema a valid JSON Schema 2020-12 whose references resolve.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { apiRoutes, servedOpenApi } from '../../src/server/openapi';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

type Json = Record<string, any>;
const FILE = join(ROOT, 'docs', 'openapi.json');
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

const checkedIn = () => readFileSync(FILE, 'utf8');
const doc = (): Json => JSON.parse(checkedIn());
const operations = (d: Json) => Object.entries(d.paths as Record<string, Json>).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op: op as Json })));

describe('docs/openapi.json', () => {
  it('is what the routes generate now (else: npm run docs:openapi)', async () => {
    expect(checkedIn()).toBe(await servedOpenApi());
  });

  it('names every route routes.ts registers, with its method and request schemas', async () => {
    const d = doc();
    const routes = await apiRoutes();
    expect(routes.length).toBeGreaterThan(20);
    for (const r of routes) {
      const op = d.paths[r.url.replace(/:(\w+)/g, '{$1}')]?.[r.method];
      expect([r.method, r.url, op !== undefined]).toEqual([r.method, r.url, true]);
      expect([r.url, op.requestBody !== undefined]).toEqual([r.url, r.schema?.body !== undefined]);
      const named = (op.parameters ?? []).map((p: Json) => `${p.in}:${p.name}`).sort();
      const declared = [...Object.keys(r.schema?.params?.properties ?? {}).map((n) => `path:${n}`), ...Object.keys(r.schema?.querystring?.properties ?? {}).map((n) => `query:${n}`)].sort();
      expect([r.url, named]).toEqual([r.url, declared]);
    }
    // And the daemon's own routes (server/index.ts).
    expect(d.paths['/metrics']?.get).toBeDefined();
    expect(d.paths['/v1/openapi.json']?.get).toBeDefined();
  });

  it('is an OpenAPI 3.1 document: paths, methods, parameters, request bodies and responses', () => {
    const d = doc();
    expect(d.openapi).toMatch(/^3\.1\.\d+$/);
    expect(typeof d.info.title).toBe('string');
    expect(typeof d.info.version).toBe('string');
    expect(d.components.securitySchemes.mutualTLS.type).toBe('mutualTLS');
    expect(d.security).toEqual([{ mutualTLS: [] }]);
    const ids = new Set<string>();
    for (const { path, method, op } of operations(d)) {
      const where = `${method} ${path}`;
      expect([where, path.startsWith('/'), METHODS.includes(method)]).toEqual([where, true, true]);
      expect([where, typeof op.operationId]).toEqual([where, 'string']);
      expect([where, ids.has(op.operationId)]).toEqual([where, false]);
      ids.add(op.operationId);
      // Every {name} in the path is a required path parameter, and every path parameter is in the path.
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
      const params = (op.parameters ?? []) as Json[];
      expect([
        where,
        params
          .filter((p) => p.in === 'path')
          .map((p) => p.name)
          .sort(),
      ]).toEqual([where, inPath]);
      for (const p of params) {
        expect([where, p.name, ['path', 'query'].includes(p.in), typeof p.schema]).toEqual([where, p.name, true, 'object']);
        if (p.in === 'path') expect(p.required).toBe(true);
      }
      if (op.requestBody) {
        expect([where, op.requestBody.required, typeof op.requestBody.content?.['application/json']?.schema]).toEqual([where, true, 'object']);
        expect([where, method]).toEqual([where, 'post']);
      }
      const responses = Object.entries(op.responses as Record<string, Json>);
      expect([where, responses.some(([code]) => code === '200')]).toEqual([where, true]);
      for (const [code, response] of responses) {
        expect([where, code, /^[1-5](\d\d|XX)$/.test(code), typeof response.description]).toEqual([where, code, true, 'string']);
        for (const media of Object.values((response.content ?? {}) as Record<string, Json>)) expect(typeof media.schema).toBe('object');
      }
    }
    // Every POST that takes a body says so (a client generator needs it).
    expect(operations(d).filter(({ method, op }) => method === 'post' && !op.requestBody)).toEqual([]);
  });

  it('holds only valid JSON Schemas 2020-12, whose references all resolve', () => {
    const d = doc();
    const ajv = new Ajv2020({ strict: true, strictRequired: false, allowUnionTypes: true });
    addFormats(ajv);
    const resolve = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(resolve)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === '$ref' && typeof x === 'string' ? x.replace('#/components/schemas/', 'https://openapi.test/') : resolve(x)]))
          : v;
    for (const [name, schema] of Object.entries(d.components.schemas as Record<string, Json>)) ajv.addSchema(resolve(schema) as Json, `https://openapi.test/${name}`);
    const schemas: Json[] = [];
    for (const { op } of operations(d)) {
      for (const p of op.parameters ?? []) schemas.push(p.schema);
      if (op.requestBody) schemas.push(op.requestBody.content['application/json'].schema);
      for (const r of Object.values(op.responses as Record<string, Json>)) for (const m of Object.values((r.content ?? {}) as Record<string, Json>)) schemas.push(m.schema);
    }
    for (const s of schemas) expect(() => ajv.compile(resolve(s) as Json)).not.toThrow();
    for (const name of Object.keys(d.components.schemas)) expect(() => ajv.getSchema(`https://openapi.test/${name}`)).not.toThrow();
    // A run request as the CLI sends it is valid under the document's schema.
    const runRequest = ajv.compile(resolve(d.paths['/v1/runs'].post.requestBody.content['application/json'].schema) as Json);
    expect(runRequest({ benchmarkId: 'pubmed_qa', endpointId: 'demo-loopback', maxInstances: 10 })).toBe(true);
    expect(runRequest({ benchmarkId: 'pubmed_qa', endpointId: 'demo-loopback', unknownField: 1 })).toBe(false);
  });
});

describe('/v1/openapi.json on the daemon', () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ workers: 0 });
  });
  afterAll(() => t?.close());

  it('serves the checked-in document to an authenticated principal, whatever the role', async () => {
    for (const who of ['alice', 'carol', 'erin', 'ivan']) {
      const r = await t.call(who, 'GET', '/v1/openapi.json');
      expect([who, r.status]).toEqual([who, 200]);
      expect(r.json).toEqual(doc());
    }
  });

  it('serves it to no one without a principal', async () => {
    const stranger = await t.issue('mallory');
    const r = await t.call(stranger, 'GET', '/v1/openapi.json');
    expect(r.status).toBe(403);
    expect(r.json.error).toBe('identity.denied');
  });

  it('lists no route the daemon does not serve', async () => {
    for (const { path, method } of operations(doc())) {
      const url = path.replace(/\{principal\}/g, 'nobody').replace(/\{\w+\}/g, '00000000-0000-4000-8000-000000000000');
      const r = await t.call('alice', method.toUpperCase(), url, method === 'post' ? {} : undefined);
      expect([method, path, r.json?.error]).not.toEqual([method, path, 'route.not-found']);
    }
  });
});
