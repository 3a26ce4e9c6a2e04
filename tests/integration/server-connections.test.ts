/**
 * What a client can hold of the daemon's sockets (issue 27, class 7). server.timeouts.headersSeconds
 * of 2 held a dripping client for 30 s: Node looks for expired headers every 30 s unless told
 * otherwise. Now it looks at least every second, and a client certificate, or all clients together,
 * hold only so many connections; a refused certificate's socket goes with its answer.
 *
 * The clients here are raw TLS sockets with real client certificates of the site CA, on the daemon's
 * own mutual-TLS listener (port 0): the HTTP clients of other tests pool and retry connections,
 * which is exactly what these tests must see plainly.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import tls, { type TLSSocket } from 'node:tls';
import { Revocations } from '../../src/identity/revocations';
import { metricsText } from '../../src/observability';
import { normalizeFingerprint } from '../../src/server/identity';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(120_000);

const HEADERS_SECONDS = 1;
const MAX_CONNECTIONS = 6;
const PER_CERTIFICATE = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls a condition (a server-side count, a log line); fails naming what never came. */
async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await condition()) return;
    await sleep(50);
  }
  throw new Error(`never: ${what}`);
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A complete HTTP/1.1 answer in `raw`, or undefined while it is still arriving. */
function parseAnswer(raw: string): Answer | undefined {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const body = raw.slice(end + 4);
  if (Buffer.byteLength(body) < Number(headers['content-length'] ?? 0)) return undefined;
  return { status: Number(statusLine?.split(' ')[1]), headers, body };
}

/** One TLS connection to the daemon, presenting `id`'s certificate. */
class RawClient {
  readonly socket: TLSSocket;
  /** Resolves once the socket is closed, by either side. */
  readonly closed: Promise<void>;
  /** 'secure' when the handshake completed, 'closed' when the socket closed before it did. */
  readonly ready: Promise<'secure' | 'closed'>;
  private raw = '';

  constructor(port: number, ca: string, id: Identity) {
    this.socket = tls.connect({ host: '127.0.0.1', port, ca, cert: id.cert, key: id.key, servername: 'localhost' });
    this.socket.on('data', (d: Buffer) => (this.raw += d.toString('latin1')));
    // A socket the server closes is reset or ends early: its close is what the tests wait for.
    this.socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.ready = Promise.race([new Promise<'secure'>((resolve) => this.socket.once('secureConnect', () => resolve('secure'))), this.closed.then(() => 'closed' as const)]);
  }

  received(): string {
    return this.raw;
  }

  /** Sends a request and waits for its whole answer, or for the socket to close without one. */
  async get(path: string): Promise<Answer | 'closed'> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    const answered = new Promise<Answer>((resolve) => {
      const check = () => {
        const answer = parseAnswer(this.raw);
        if (!answer) return;
        this.socket.off('data', check);
        resolve(answer);
      };
      this.socket.on('data', check);
    });
    return Promise.race([answered, this.closed.then(() => parseAnswer(this.raw) ?? ('closed' as const))]);
  }
}

let t: TestDaemon;
const clients: RawClient[] = [];

function client(id: Identity): RawClient {
  const c = new RawClient(t.daemon.port, t.ca, id);
  clients.push(c);
  return c;
}

/** A connection with a request served: the server has counted it, and keeps it (keep-alive). */
async function served(id: Identity): Promise<RawClient> {
  const c = client(id);
  expect(await c.ready).toBe('secure');
  const answer = await c.get('/v1/whoami');
  expect(answer).toMatchObject({ status: 200 });
  return c;
}

const serverConnections = () => new Promise<number>((resolve, reject) => t.daemon.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

async function refusals(rule: string): Promise<number> {
  const line = (await metricsText()).body.split('\n').find((l) => l.startsWith(`ehrbench_connection_refusals_total{rule="${rule}"}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** A daemon whose idle and keep-alive sockets stay for a minute: only the header timeout and the caps close them here. */
function startDaemon(caps: Record<string, number>): Promise<TestDaemon> {
  return startTestDaemon({
    workers: 0,
    prepare: (_home, config) => {
      config.server.timeouts = { headersSeconds: HEADERS_SECONDS, requestSeconds: 2, keepAliveSeconds: 60, idleSeconds: 60 };
      Object.assign(config.server, caps);
    },
  });
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy();
  if (t) await until('the daemon holds no connection', async () => (await serverConnections()) === 0);
});

describe('a daemon with short timeouts and the default caps', () => {
  beforeAll(async () => {
    t = await startDaemon({});
  });
  afterAll(() => t?.close());

  it(`closes a client that drips its headers within headersSeconds (${HEADERS_SECONDS} s) and one second`, async () => {
    const c = client(t.ids.alice as Identity);
    expect(await c.ready).toBe('secure');
    const head = 'GET /v1/whoami HTTP/1.1\r\nHost: localhost\r\nX-Slow: ';
    let sent = 0;
    const drip = () => c.socket.write(sent < head.length ? head.charAt(sent++) : 'a');
    const startedAt = Date.now();
    drip();
    const dripping = setInterval(drip, 200);
    try {
      await c.closed;
    } finally {
      clearInterval(dripping);
    }
    // The one timing bound the issue asks for, an upper bound only: the close was awaited above.
    expect(Date.now() - startedAt).toBeLessThanOrEqual(HEADERS_SECONDS * 1000 + 1000);
    expect(c.received()).not.toMatch(/^HTTP\/1\.1 200/);
  });

  it('answers a revoked certificate 403 and closes its socket with the answer, so it cannot hold one with refused requests', async () => {
    const dave = t.ids.dave as Identity;
    await new Revocations(t.app.db).revokeAll(normalizeFingerprint(new X509Certificate(t.ca).fingerprint256), 'dave', 'left the hospital', 'local:test', t.app.config.audit.witnessDirs);
    const c = client(dave);
    expect(await c.ready).toBe('secure');
    const answer = await c.get('/v1/whoami');
    expect(answer).toMatchObject({ status: 403, headers: { connection: 'close' } });
    expect(JSON.parse((answer as Answer).body)).toMatchObject({ error: 'identity.denied', rule: 'pki.certificate-revoked' });
    await c.closed;
  });
});

describe(`a daemon holding ${MAX_CONNECTIONS} connections, ${PER_CERTIFICATE} per client certificate`, () => {
  beforeAll(async () => {
    t = await startDaemon({ maxConnections: MAX_CONNECTIONS, maxConnectionsPerCertificate: PER_CERTIFICATE });
  });
  afterAll(() => t?.close());

  it('closes the connection over the cap right after its handshake, without an answer; another certificate is served', async () => {
    const before = await refusals('identity.connections-per-certificate');
    for (let i = 0; i < PER_CERTIFICATE; i++) await served(t.ids.alice as Identity);
    const over = client(t.ids.alice as Identity);
    expect(await over.ready).toBe('secure');
    expect(await over.get('/v1/whoami')).toBe('closed');
    expect(over.received()).toBe('');
    expect(await refusals('identity.connections-per-certificate')).toBe(before + 1);
    // Bob's certificate has its own count.
    await served(t.ids.bob as Identity);
    // Alice's count falls as her sockets close: a new connection is served again.
    await until("alice's connections and bob's", async () => (await serverConnections()) === PER_CERTIFICATE + 1);
    clients[0]?.socket.destroy();
    await until('alice holds one connection less', async () => (await serverConnections()) === PER_CERTIFICATE);
    await served(t.ids.alice as Identity);
  });

  it('logs the refusal with the certificate and the address, never a request byte', async () => {
    for (let i = 0; i < PER_CERTIFICATE; i++) await served(t.ids.carol as Identity);
    const over = client(t.ids.carol as Identity);
    expect(await over.ready).toBe('secure');
    over.socket.write('GET /v1/whoami?marker=PATIENT-CANARY-2b7d HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await over.closed;
    const logFile = join(t.home.home, 'logs', 'ehrbench.log');
    const refusedLines = () =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"server.connection-refused"'))
        .map((l) => JSON.parse(l));
    await until('the refusal is logged', () => refusedLines().some((l) => l.commonName === 'carol'));
    expect(refusedLines().find((l) => l.commonName === 'carol')).toMatchObject({
      level: 'warn',
      rule: 'identity.connections-per-certificate',
      reasonCode: 'identity.connections-per-certificate',
      address: '127.0.0.1',
      issuerFingerprint: normalizeFingerprint(new X509Certificate(t.ca).fingerprint256),
    });
    expect(readFileSync(logFile, 'utf8')).not.toContain('PATIENT-CANARY-2b7d');
  });

  it('closes a connection over the total before its handshake, and serves again once one closes', async () => {
    const before = await refusals('daemon.connections-total');
    const who = ['alice', 'bob', 'erin'] as const;
    for (let i = 0; i < MAX_CONNECTIONS; i++) await served(t.ids[who[i % who.length] as string] as Identity);
    const over = client(t.ids.ivan as Identity);
    expect(await over.ready).toBe('closed');
    expect(over.received()).toBe('');
    expect(await refusals('daemon.connections-total')).toBe(before + 1);
    await until('the daemon holds its maximum', async () => (await serverConnections()) === MAX_CONNECTIONS);
    clients[0]?.socket.destroy();
    await until('one connection less', async () => (await serverConnections()) === MAX_CONNECTIONS - 1);
    await served(t.ids.ivan as Identity);
  });
});
