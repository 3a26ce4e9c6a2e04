/** The model client on the official SDK through the guarded transport, against a live HTTPS server. */
import { getEventListeners } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Behaviour, startModelServer, type ModelServer } from '../../src/demo/model-server';
import { createEndpointTransport, EgressDenied, loadEndpointPolicy, type Endpoint } from '../../src/egress';
import { ModelCallError, ModelClient } from '../../src/models';
import { makeHome, type TestHome } from '../helpers/home';

let home: TestHome;
let endpoint: Endpoint;

beforeAll(async () => {
  home = await makeHome();
  endpoint = loadEndpointPolicy(join(home.home, 'access-policies', 'endpoints.json')).get('demo-loopback');
});
afterAll(() => home.cleanup());

async function withServer<T>(behaviour: (n: number) => Behaviour, fn: (server: ModelServer, client: ModelClient, sleeps: number[]) => Promise<T>): Promise<T> {
  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
    record: true,
    behaviour,
  });
  const transport = createEndpointTransport(endpoint, { timeoutMs: 2000 });
  const sleeps: number[] = [];
  const client = new ModelClient(endpoint, transport, {
    timeoutMs: 1500,
    maxRetries: 3,
    maxBackoffMs: 5000,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  try {
    return await fn(server, client, sleeps);
  } finally {
    await transport.close();
    await server.close();
  }
}

const request = { prompt: 'Question?\nA. yes\nB. no', maxTokens: 1, temperature: 0 };

describe('model client', () => {
  it('returns the completion with token usage and latency', async () => {
    await withServer(
      () => ({ kind: 'answer', text: 'B' }),
      async (server, client) => {
        const c = await client.complete(request);
        expect(c).toMatchObject({ text: 'B', attempts: 1, finishReason: 'stop' });
        expect(c.promptTokens).toBeGreaterThan(0);
        expect(c.completionTokens).toBe(1);
        expect(server.received[0]?.path).toBe('/v1/chat/completions');
      },
    );
  });

  it('honours Retry-After on 429 and retries 5xx with backoff', async () => {
    await withServer(
      (n) => (n === 1 ? { kind: 'status', status: 429, retryAfter: '2' } : n === 2 ? { kind: 'status', status: 503 } : { kind: 'answer', text: 'A' }),
      async (_server, client, sleeps) => {
        const c = await client.complete(request);
        expect(c.text).toBe('A');
        expect(c.attempts).toBe(3);
        expect(sleeps[0]).toBe(2000);
        expect(sleeps[1]).toBeGreaterThan(0);
      },
    );
  });

  it('does not retry a client error and reports only the status', async () => {
    await withServer(
      () => ({ kind: 'status', status: 400, body: '{"error":{"message":"Patient Jane Roe is not allowed"}}' }),
      async (server, client) => {
        const err = await client.complete(request).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ModelCallError);
        expect((err as Error).message).toBe('endpoint demo-loopback: HTTP 400');
        expect(server.requestCount()).toBe(1);
      },
    );
  });

  it('gives up when Retry-After asks for longer than the configured maximum', async () => {
    await withServer(
      () => ({ kind: 'status', status: 429, retryAfter: '3600' }),
      async (server, client) => {
        await expect(client.complete(request)).rejects.toThrow('HTTP 429');
        expect(server.requestCount()).toBe(1);
      },
    );
  });

  it('runs the audit hook before every attempt and makes no call when it fails', async () => {
    await withServer(
      (n) => (n === 1 ? { kind: 'status', status: 500 } : { kind: 'answer', text: 'A' }),
      async (server, client) => {
        const attempts: number[] = [];
        await client.complete(request, { beforeAttempt: async (a) => void attempts.push(a) });
        expect(attempts).toEqual([1, 2]);
        const before = server.requestCount();
        await expect(client.complete(request, { beforeAttempt: async () => Promise.reject(new Error('audit store down')) })).rejects.toThrow('audit store down');
        expect(server.requestCount()).toBe(before);
      },
    );
  });

  it('never follows a redirect and does not retry it', async () => {
    await withServer(
      () => ({ kind: 'redirect', location: 'https://example.com/v1/chat/completions' }),
      async (server, client) => {
        await expect(client.complete(request)).rejects.toThrow(/denied by rule egress\.redirect\.refused/);
        expect(server.requestCount()).toBe(1);
      },
    );
  });

  it('refuses a URL outside the endpoint before any byte is sent, and does not retry the refusal', async () => {
    const transport = createEndpointTransport({ ...endpoint, url: `https://localhost:${home.port}/v1` }, {});
    await expect(transport.fetch(`https://localhost:${home.port}/admin`)).rejects.toBeInstanceOf(EgressDenied);
    await expect(transport.fetch(`https://evil.example/v1/chat/completions`)).rejects.toThrow(/egress\.url\.host/);
    await transport.close();
  });
  it("leaves no abort listener on the caller's signal after each call, answered or failed", async () => {
    // A worker passes one long-lived signal to every call; each call must take its listeners away.
    await withServer(
      (n) => (n % 3 === 0 ? { kind: 'status', status: 503 } : { kind: 'answer', text: 'A' }),
      async (_server, client) => {
        const controller = new AbortController();
        for (let i = 0; i < 12; i++) await client.complete(request, { signal: controller.signal });
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      },
    );
  });

  it("stops backing off when the caller's signal aborts, instead of waiting out Retry-After", async () => {
    const server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
      behaviour: () => ({ kind: 'status', status: 429, retryAfter: '3600' }),
    });
    const transport = createEndpointTransport(endpoint, { timeoutMs: 2000 });
    let backingOff: () => void = () => undefined;
    const entered = new Promise<void>((resolve) => (backingOff = resolve));
    // A back-off that never ends by itself: only the abort can end this call.
    const client = new ModelClient(endpoint, transport, { timeoutMs: 1500, maxRetries: 3, maxBackoffMs: 3_600_000, sleep: () => (backingOff(), new Promise<void>(() => undefined)) });
    try {
      const controller = new AbortController();
      const call = client.complete(request, { signal: controller.signal });
      await entered;
      controller.abort();
      const err = await call.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelCallError);
      expect((err as ModelCallError).code).toBe('model.aborted');
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  it("still aborts a call in flight through the caller's signal", async () => {
    await withServer(
      () => ({ kind: 'hang' }),
      async (_server, client) => {
        const controller = new AbortController();
        const call = client.complete(request, { signal: controller.signal });
        setImmediate(() => controller.abort());
        const err = await call.catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ModelCallError);
        expect((err as ModelCallError).code).toBe('model.aborted');
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      },
    );
  });
});
