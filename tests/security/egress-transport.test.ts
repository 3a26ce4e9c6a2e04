/**
 * The guard on the wire (Checklist A 14-24): live TLS servers on loopback with node-forge
 * certificates. Every refusal must happen before any HTTP request reaches the server; the
 * legitimate endpoint must work end to end through the official SDK.
 */
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';

/**
 * The bombs, made once and fast: compressed at the test's own quality (brotli's default, 11, spends
 * seconds on 50 MB, and that time counted against the call's 5 s deadline on a loaded host).
 */
let bombs: { gzip: Buffer; br: Buffer } | undefined;
function bomb(kind: 'gzip' | 'br'): Buffer {
  const spaces = Buffer.alloc(50 * 1024 * 1024, 0x20);
  bombs ??= { gzip: gzipSync(spaces, { level: 1 }), br: brotliCompressSync(spaces, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } }) };
  return bombs[kind];
}
import { createEndpointTransport, EgressDenied, type Endpoint, type EgressEvent, type Resolver, spkiSha256 } from '../../src/egress';
import { ModelCallError, ModelClient } from '../../src/models';
import { loopbackEndpoint, openAiHandler, startTlsServer, testPki, type Handler, type TlsServer } from '../helpers/tls';

const CANARY = 'PATIENT-CANARY-7f3a Jane Roe MRN 4411';
const request = { prompt: `Question about ${CANARY}?\nA. yes\nB. no`, maxTokens: 1, temperature: 0 };
const opened: { close(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

async function server(opts: Parameters<typeof startTlsServer>[0]): Promise<TlsServer> {
  const s = await startTlsServer(opts);
  opened.push(s);
  return s;
}

function clientFor(endpoint: Endpoint, opts: Parameters<typeof createEndpointTransport>[1] = {}) {
  const events: EgressEvent[] = [];
  const transport = createEndpointTransport(endpoint, { timeoutMs: 5000, ...opts, onEvent: (e) => events.push(e) });
  opened.push(transport);
  const client = new ModelClient(endpoint, transport, { timeoutMs: 5000, maxRetries: 0, maxBackoffMs: 0, env: {} });
  return { client, transport, events };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

function pinOf(pem: string): string {
  return spkiSha256(Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64'));
}

describe('TLS trust', () => {
  it('works end to end through the SDK with the right CA and pin, keeping the name for SNI', async () => {
    const pki = testPki();
    const s = await server({ cert: pki.server });
    const endpoint = loopbackEndpoint(s.port, { tls: { caFile: pki.caFile, spkiSha256: [pinOf(pki.rogueCa.certPem), pinOf(pki.server.certPem)] } });
    const { client, events } = clientFor(endpoint);
    const completion = await client.complete(request);
    expect(completion.text).toBe('B');
    expect(s.bodies[0]).toContain(CANARY);
    expect(await client.listModels()).toEqual(['test-model']);
    expect(events[0]).toMatchObject({
      type: 'egress.connected',
      endpointId: 'test-model',
      address: '127.0.0.1',
      cidr: '127.0.0.1/32',
      resolution: 'addresses',
      trust: 'endpoint-ca',
      pinChecked: true,
      serverSpkiSha256: pinOf(pki.server.certPem),
    });
  });

  it.each([
    ['a wrong SPKI pin', () => ({ cert: testPki().server, endpoint: { tls: { caFile: testPki().caFile, spkiSha256: [pinOf(testPki().rogueCa.certPem)] } } }), 'egress.tls.pin-mismatch'],
    ['an unknown CA', () => ({ cert: testPki().issue({ by: testPki().rogueCa }), endpoint: {} }), 'egress.tls.untrusted'],
    ['an expired certificate', () => ({ cert: testPki().issue({ notBefore: new Date(Date.now() - 10 * 86_400_000), days: 2 }), endpoint: {} }), 'egress.tls.expired'],
    ['a certificate not yet valid', () => ({ cert: testPki().issue({ notBefore: new Date(Date.now() + 5 * 86_400_000) }), endpoint: {} }), 'egress.tls.not-yet-valid'],
    ['a certificate for another name', () => ({ cert: testPki().issue({ commonName: 'other.test', dnsNames: ['other.test'], ipAddresses: [] }), endpoint: {} }), 'egress.tls.name-mismatch'],
    ['a self-signed certificate', () => ({ cert: testPki().rogueCa, endpoint: {} }), 'egress.tls.untrusted'],
  ])('refuses %s before any request byte', async (_what, setup, rule) => {
    const { cert, endpoint: overrides } = setup();
    const s = await server({ cert });
    const { client, events } = clientFor(loopbackEndpoint(s.port, overrides as Partial<Endpoint>));
    const err = await failure(client.complete(request));
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe(rule);
    expect(err.message).toContain('endpoint test-model');
    expect(err.message).toContain('127.0.0.1');
    expect(err.message).not.toContain(CANARY);
    expect(s.requests()).toBe(0);
    expect(s.bodies).toEqual([]);
    expect(events).toContainEqual(expect.objectContaining({ type: 'egress.denied', rule, address: '127.0.0.1' }));
  });

  it('trusts only Node bundled roots when no caFile is given, so a private CA is refused', async () => {
    const s = await server({ cert: testPki().server });
    const { client } = clientFor(loopbackEndpoint(s.port, { tls: {} }));
    const err = await failure(client.complete(request));
    expect((err as EgressDenied).rule).toBe('egress.tls.untrusted');
    expect(s.requests()).toBe(0);
  });

  it('presents the client certificate for mTLS, and without it the server refuses before any request', async () => {
    const pki = testPki();
    const s = await server({ cert: pki.server, clientCaPem: pki.ca.certPem });
    const withCert = clientFor(loopbackEndpoint(s.port, { tls: { caFile: pki.caFile, clientCertFile: pki.clientCertFile, clientKeyFile: pki.clientKeyFile } }));
    expect((await withCert.client.complete(request)).text).toBe('B');
    expect(s.requests()).toBe(1);
    const without = clientFor(loopbackEndpoint(s.port, { id: 'no-client-cert' }));
    const err = await failure(without.client.complete(request));
    expect(err).toBeInstanceOf(Error);
    expect(s.requests()).toBe(1);
  });

  it('checks an IP-literal endpoint against the certificate IP address', async () => {
    const s = await server({ cert: testPki().server });
    const { client } = clientFor(loopbackEndpoint(s.port, { url: `https://127.0.0.1:${s.port}/v1`, addresses: undefined }));
    expect((await client.complete(request)).text).toBe('B');
  });
});

describe('resolution on the wire', () => {
  /** Answers from a list in turn, counting the queries. */
  function scripted(answers: string[][]): Resolver & { calls: number } {
    const r = Object.assign(
      async () => {
        const a = answers[Math.min(r.calls, answers.length - 1)] as string[];
        r.calls++;
        return a;
      },
      { calls: 0 },
    );
    return r;
  }
  const closeEach: Handler = (req, res, body) => {
    res.setHeader('connection', 'close');
    openAiHandler(req, res, body);
  };

  it('DNS rebinding never reaches an unchecked address: one resolution per connection, socket to the checked address', async () => {
    const pki = testPki();
    const good = await server({ cert: pki.server, handler: closeEach });
    // The attacker's server holds a certificate the endpoint trusts: only the address check stops it.
    const evil = await server({ cert: pki.server, host: '127.0.0.2', port: good.port, handler: closeEach });
    const resolver = scripted([['127.0.0.1'], ['127.0.0.2'], ['127.0.0.1']]);
    const { client, events } = clientFor(loopbackEndpoint(good.port, { addresses: undefined }), { resolver });
    expect((await client.complete(request)).text).toBe('B');
    const err = await failure(client.complete(request));
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe('egress.address.not-allowed');
    expect((err as EgressDenied).address).toBe('127.0.0.2');
    expect((await client.complete(request)).text).toBe('B');
    expect(resolver.calls).toBe(3);
    expect(good.connections()).toBe(2);
    expect(evil.connections()).toBe(0);
    expect(evil.requests()).toBe(0);
    expect(events.filter((e) => e.type === 'egress.connected').map((e) => (e as { address: string }).address)).toEqual(['127.0.0.1', '127.0.0.1']);
  });

  it('refuses a DNS answer mixing an allowed and a public address without connecting', async () => {
    const s = await server({ cert: testPki().server });
    const { client } = clientFor(loopbackEndpoint(s.port, { addresses: undefined }), { resolver: scripted([['127.0.0.1', '93.184.216.34']]) });
    const err = await failure(client.complete(request));
    expect((err as EgressDenied).rule).toBe('egress.address.not-allowed');
    expect((err as EgressDenied).address).toBe('93.184.216.34');
    expect(s.connections()).toBe(0);
  });

  it('refuses when DNS fails or hangs, within the DNS timeout, without retrying another way', async () => {
    const s = await server({ cert: testPki().server });
    const failing = clientFor(loopbackEndpoint(s.port, { addresses: undefined }), { resolver: async () => Promise.reject(new Error('SERVFAIL')) });
    expect(((await failure(failing.client.complete(request))) as EgressDenied).rule).toBe('egress.dns.failed');
    const hanging = clientFor(loopbackEndpoint(s.port, { id: 'hanging-dns', addresses: undefined }), { resolver: () => new Promise(() => undefined), dnsTimeoutMs: 200 });
    const err = await failure(hanging.client.complete(request));
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe('egress.dns.failed');
    expect(s.connections()).toBe(0);
  });

  it('keeps connections per endpoint: two endpoints on one origin never share a socket', async () => {
    const s = await server({ cert: testPki().server });
    const a = clientFor(loopbackEndpoint(s.port, { id: 'endpoint-a' }));
    const b = clientFor(loopbackEndpoint(s.port, { id: 'endpoint-b' }));
    await a.client.complete(request);
    await a.client.complete(request);
    const afterA = s.connections();
    expect(afterA).toBeGreaterThanOrEqual(1);
    // B's dispatcher has no socket of its own yet: it must open one, never borrow A's.
    await b.client.complete(request);
    expect(s.connections()).toBe(afterA + 1);
  });
});

describe('responses', () => {
  it('never follows a redirect to an outside host', async () => {
    const pki = testPki();
    const outside = await server({ cert: pki.server, host: '127.0.0.2' });
    const s = await server({
      cert: pki.server,
      handler: (_req, res) => {
        res.writeHead(302, { location: `https://127.0.0.2:${outside.port}/v1/chat/completions` });
        res.end();
      },
    });
    const { client } = clientFor(loopbackEndpoint(s.port));
    const err = await failure(client.complete(request));
    expect((err as EgressDenied).rule).toBe('egress.redirect.refused');
    expect(err.message).toContain(`127.0.0.2:${outside.port}`);
    expect(outside.connections()).toBe(0);
    expect(s.requests()).toBe(1);
  });

  const huge: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.from(`{"x":"${CANARY}${' '.repeat(65_000)}`);
    let sent = 0;
    const pump = () => {
      while (sent < 50 * 1024 * 1024) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('error', () => undefined);
    pump();
  };

  it.each([
    ['a 50 MB streamed body', huge],
    [
      'a declared 50 MB body',
      ((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(50 * 1024 * 1024) });
        res.write(`{"x":"${CANARY}`);
      }) as Handler,
    ],
    [
      'a gzip bomb (50 MB inflated from a small body)',
      ((_req, res) => {
        const body = bomb('gzip');
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) });
        res.end(body);
      }) as Handler,
    ],
    [
      'a brotli bomb, unasked for and without a length (50 MB inflated)',
      ((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'br' });
        res.end(bomb('br'));
      }) as Handler,
    ],
  ])('aborts %s at the size cap and records only the error code', async (_what, handler) => {
    const s = await server({ cert: testPki().server, handler });
    const { client } = clientFor(loopbackEndpoint(s.port, { limits: { maxResponseBytes: 1024 * 1024 } }));
    const err = await failure(client.complete(request));
    expect(err).toBeInstanceOf(ModelCallError);
    expect((err as ModelCallError).code).toBe('model.response-too-large');
    expect((err as ModelCallError).retryable).toBe(false);
    expect(err.message).toBe('endpoint test-model: response exceeded the size cap');
  });

  it.each([
    ['a server that never answers', ((_req, _res) => undefined) as Handler],
    [
      'a server that drips one byte at a time',
      ((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const timer = setInterval(() => res.write(' '), 50);
        res.on('close', () => clearInterval(timer));
      }) as Handler,
    ],
  ])('aborts %s at the total deadline', async (_what, handler) => {
    const s = await server({ cert: testPki().server, handler });
    const { client } = clientFor(loopbackEndpoint(s.port, { limits: { timeoutMs: 600 } }));
    const err = await failure(client.complete(request));
    expect(err).toBeInstanceOf(ModelCallError);
    expect((err as ModelCallError).code).toBe('model.timeout');
    expect(err.message).toBe('endpoint test-model: call timed out');
  });

  it('refuses a caller-set Host header and a streamed body before opening any connection', async () => {
    const s = await server({ cert: testPki().server });
    const { transport } = clientFor(loopbackEndpoint(s.port));
    await expect(transport.fetch(`https://model.test:${s.port}/v1/models`, { headers: { Host: 'other.test' } })).rejects.toThrow(/may not set its own Host header/);
    const streamed = { method: 'POST', body: new ReadableStream(), duplex: 'half' } as unknown as RequestInit;
    await expect(transport.fetch(`https://model.test:${s.port}/v1/chat/completions`, streamed)).rejects.toThrow(/string or byte bodies only/);
    expect(s.connections()).toBe(0);
  });

  it('asks for no compression, and decodes a compressed answer under the cap all the same', async () => {
    const seen: (string | undefined)[] = [];
    const handler: Handler = (req, res) => {
      seen.push(req.headers['accept-encoding'] as string | undefined);
      const body = gzipSync(JSON.stringify({ object: 'list', data: [] }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(body.length) });
      res.end(body);
    };
    const s = await server({ cert: testPki().server, handler });
    const { transport } = clientFor(loopbackEndpoint(s.port));
    const answer = await transport.fetch(`https://model.test:${s.port}/v1/models`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ object: 'list', data: [] });
    // Handed on decoded: the encoding and the length of the compressed body no longer apply.
    expect(answer.headers.get('content-encoding')).toBeNull();
    expect(answer.headers.get('content-length')).toBeNull();
    expect(seen).toEqual([undefined]);
  });

  it('refuses a request URL outside the endpoint before opening any connection', async () => {
    const s = await server({ cert: testPki().server });
    const { transport } = clientFor(loopbackEndpoint(s.port));
    await expect(transport.fetch(`https://model.test:${s.port}/admin`)).rejects.toThrow(/egress\.url\.path/);
    await expect(transport.fetch(`https://127.0.0.1:${s.port}/v1/models`)).rejects.toThrow(/egress\.url\.ip-literal/);
    await expect(transport.fetch(`https://model.test:${s.port}/v1/%2e%2e/admin`)).rejects.toThrow(/egress\.url\.path-not-canonical/);
    expect(s.connections()).toBe(0);
  });
});
