/**
 * Stacked content codings (issue 27, class 6): an allowlisted endpoint answered with a body declared
 * as 600 stacked gzip codings, each layer capped, the number of layers not, and no deadline while
 * decoding. Live TLS servers on loopback answer with 1, 2, 3 and 600 layers, with layers each under
 * the cap that add up to more, and with a deadline that passes before decoding; the check between two
 * layers is tested on the decoder itself with a deadline that expires after the first.
 */
import { randomBytes } from 'node:crypto';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { createEndpointTransport, EgressAborted, EgressDenied, type EgressEvent, type Endpoint } from '../../src/egress';
import { contentCodings, decodedBody, MAX_CONTENT_CODINGS } from '../../src/egress/guard';
import { ModelClient } from '../../src/models';
import { loopbackEndpoint, startTlsServer, testPki, type Handler } from '../helpers/tls';

const CANARY = 'PATIENT-CANARY-5c1e John Doe MRN 9087';
const MODELS = { object: 'list', data: [{ id: 'test-model', object: 'model', owned_by: 'test' }] };
const opened: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

/** `body` gzipped `layers` times, as a server stacking that many codings would send it. */
function gzipLayers(body: Buffer, layers: number): Buffer {
  let out = body;
  for (let i = 0; i < layers; i++) out = gzipSync(out);
  return out;
}

/** Answers every request with `body` under the given Content-Encoding. */
function answering(body: Buffer, encoding: string, before?: () => void): Handler {
  return (_req, res) => {
    before?.();
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': String(body.length) });
    res.end(body);
  };
}

async function endpointAnswering(handler: Handler, overrides: Partial<Endpoint> = {}, opts: Parameters<typeof createEndpointTransport>[1] = {}) {
  const s = await startTlsServer({ cert: testPki().server, handler });
  opened.push(s);
  const endpoint = loopbackEndpoint(s.port, overrides);
  const events: EgressEvent[] = [];
  const transport = createEndpointTransport(endpoint, { timeoutMs: 10_000, ...opts, onEvent: (e) => events.push(e) });
  opened.push(transport);
  const modelsUrl = `https://model.test:${s.port}/v1/models`;
  return { s, endpoint, transport, events, modelsUrl };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

const stacked = (coding: string, n: number) => Array.from({ length: n }, () => coding).join(', ');

describe('stacked content codings', () => {
  it('refuses an answer of 600 stacked gzip layers by the codings rule, before decoding any', async () => {
    const json = Buffer.from(JSON.stringify({ ...MODELS, note: CANARY }));
    const { s, endpoint, transport, events, modelsUrl } = await endpointAnswering(answering(gzipLayers(json, 600), stacked('gzip', 600)));
    const err = await failure(transport.fetch(modelsUrl));
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe('egress.response-codings');
    expect(err.message).toBe(`denied by rule egress.response-codings: endpoint test-model: answered with 600 stacked content codings; at most ${MAX_CONTENT_CODINGS} are decoded`);
    expect(events).toContainEqual({ type: 'egress.denied', endpointId: 'test-model', rule: 'egress.response-codings' });
    // Through the SDK the refusal arrives as itself, never as a retryable connection failure.
    const client = new ModelClient(endpoint, transport, { timeoutMs: 10_000, maxRetries: 0, maxBackoffMs: 0, env: {} });
    const viaSdk = await failure(client.listModels());
    expect(viaSdk).toBeInstanceOf(EgressDenied);
    expect((viaSdk as EgressDenied).rule).toBe('egress.response-codings');
    expect(viaSdk.message).not.toContain(CANARY);
    expect(s.requests()).toBe(2);
  });

  it('refuses three layers, one more than the guard decodes', async () => {
    const json = Buffer.from(JSON.stringify(MODELS));
    const { transport, modelsUrl } = await endpointAnswering(answering(gzipLayers(json, 3), 'gzip, gzip, gzip'));
    const err = await failure(transport.fetch(modelsUrl));
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe('egress.response-codings');
  });

  it.each([
    ['one gzip layer', (b: Buffer) => gzipSync(b), 'gzip'],
    ['two gzip layers', (b: Buffer) => gzipLayers(b, 2), 'gzip, gzip'],
    ['deflate under brotli', (b: Buffer) => brotliCompressSync(deflateSync(b)), 'deflate, br'],
    ['two layers and identity', (b: Buffer) => gzipLayers(b, 2), 'identity, gzip, Gzip'],
  ])('accepts and decodes %s', async (_what, encode, encoding) => {
    const json = Buffer.from(JSON.stringify(MODELS));
    const { transport, modelsUrl } = await endpointAnswering(answering(encode(json), encoding));
    const answer = await transport.fetch(modelsUrl);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual(MODELS);
    expect(answer.headers.get('content-encoding')).toBeNull();
  });

  it('counts the cap over all layers: two layers each under it that add up to more are refused as too large', async () => {
    const cap = 1024 * 1024;
    const json = Buffer.from(JSON.stringify({ x: randomBytes(600_000).toString('base64') }));
    const inner = gzipSync(json);
    const wire = gzipSync(inner);
    // The fixture's shape: every layer, and the wire, under the cap; the two layers' output over it.
    expect([json.length < cap, inner.length < cap, wire.length < cap, json.length + inner.length > cap]).toEqual([true, true, true, true]);
    const { transport, modelsUrl } = await endpointAnswering(answering(wire, 'gzip, gzip'), { limits: { maxResponseBytes: cap } });
    const err = await failure(transport.fetch(modelsUrl));
    expect(err).toBeInstanceOf(EgressAborted);
    expect((err as EgressAborted).code).toBe('egress.response-too-large');
    // The same body with one layer is under the cap and decoded.
    const single = await endpointAnswering(answering(inner, 'gzip'), { id: 'single-layer', limits: { maxResponseBytes: cap } });
    expect((await single.transport.fetch(single.modelsUrl)).status).toBe(200);
  });

  it('answers the deadline refusal when the deadline has passed once the body is in, before it is decoded', async () => {
    // The clock jumps past the deadline when the server answers: after the call started, before
    // the body arrives. The call's timer (10 s) is far away; only the check before decoding sees it.
    let skew = 0;
    const now = () => Date.now() + skew;
    const json = Buffer.from(JSON.stringify(MODELS));
    const { transport, modelsUrl } = await endpointAnswering(
      answering(gzipLayers(json, 2), 'gzip, gzip', () => {
        skew = 60_000;
      }),
      {},
      { now },
    );
    const err = await failure(transport.fetch(modelsUrl));
    expect(err).toBeInstanceOf(EgressAborted);
    expect((err as EgressAborted).code).toBe('egress.deadline');
    expect(err.message).toBe('endpoint test-model: no complete answer within 10000 ms; call aborted');
  });
});

describe('the decoder between layers', () => {
  const json = Buffer.from(JSON.stringify(MODELS));
  const overdue = new EgressAborted('egress.deadline', 'no complete answer within 1000 ms; call aborted', 'test-model');

  it('reads the deadline before every layer and stops at the first check that finds it passed', async () => {
    // A deadline that passes while the first layer is decoded: the second check refuses.
    let checks = 0;
    const checkDeadline = () => {
      checks += 1;
      if (checks > 1) throw overdue;
    };
    const err = await failure(decodedBody(gzipLayers(json, 2), ['gzip', 'gzip'], { maxBytes: 1024 * 1024, endpointId: 'test-model', checkDeadline }));
    expect(err).toBe(overdue);
    expect(checks).toBe(2);
  });

  it('decodes two layers while the deadline holds, and refuses more than two without checking it', async () => {
    let checks = 0;
    const limits = {
      maxBytes: 1024 * 1024,
      endpointId: 'test-model',
      checkDeadline: () => {
        checks += 1;
      },
    };
    expect(JSON.parse((await decodedBody(gzipLayers(json, 2), ['gzip', 'gzip'], limits)).toString('utf8'))).toEqual(MODELS);
    expect(checks).toBe(2);
    const err = await failure(decodedBody(gzipLayers(json, 3), contentCodings('gzip, gzip, gzip'), limits));
    expect((err as EgressDenied).rule).toBe('egress.response-codings');
    expect(checks).toBe(2);
  });

  it('passes a coding it does not know through as received, inflating nothing', async () => {
    const body = gzipSync(json);
    const limits = { maxBytes: 1024 * 1024, endpointId: 'test-model', checkDeadline: () => undefined };
    expect(await decodedBody(body, contentCodings('gzip, x-unknown'), limits)).toBe(body);
  });
});
