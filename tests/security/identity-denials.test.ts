/**
 * Refused identities cannot flood the trail (issue 15, item 9): refusals are rate-limited per client
 * address and per presented certificate before they are audited (429 after server.rateLimit.deniedMax
 * refusals in a window), and the refusals of one window are one audit event plus one with their
 * count. The API server has request, header and idle timeouts.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadConfig } from '../../src/config';
import { backends } from '../helpers/db';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { makeHome } from '../helpers/home';

jest.setTimeout(120_000);

// Long enough for 60 refused requests on a loaded host: each is a TLS handshake of its own, since a
// refused certificate's connection is closed with its answer.
const WINDOW_SECONDS = 8;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

describe.each(backends())('refused identities (%s)', (backend) => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 0, prepare: (_home, config) => (config.server.rateLimit.windowSeconds = WINDOW_SECONDS) });
  });
  afterAll(() => t.close());

  const denials = (rule: string) =>
    t.app.db.query<{ count: number | null; rate_limited: number | null; address: string | null; actor: string }>(
      `SELECT (detail->>'count')::int AS count, (detail->>'rateLimited')::int AS rate_limited, address, actor_principal AS actor
         FROM audit_events WHERE event_type = 'access.denied' AND rule = $1 ORDER BY seq`,
      [rule],
    );
  /** Waits until every limiter window opened so far has closed and been written (swept once a second). */
  const nextWindow = () => sleep(WINDOW_SECONDS * 1000 + 1200);

  it('answers 429 after the limit and audits 60 refusals of one certificate as one event and one count', async () => {
    await nextWindow();
    expect((await t.call('ivan', 'POST', '/v1/principals/bob/revoke', { reason: 'left the hospital' })).status).toBe(200);
    // Sent together, within one window: the first ten refusals are answered 403, the rest 429.
    const statuses = (await Promise.all(Array.from({ length: 60 }, () => t.call('bob', 'GET', '/v1/whoami')))).map((r) => r.status);
    expect(statuses.filter((s) => s === 403)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(50);
    // Within the window: the first refusal only.
    expect((await denials('pki.certificate-revoked')).map((d) => d.count)).toEqual([1]);
    // Once the window has closed, the rest is one event with its count.
    await nextWindow();
    const rows = await denials('pki.certificate-revoked');
    expect(rows.map((d) => [d.count, d.rate_limited])).toEqual([
      [1, 0],
      [59, 50],
    ]);
    expect(rows.every((d) => d.address !== null)).toBe(true);
    // Whose revoked certificate it was, not the daemon.
    expect(rows.map((d) => d.actor)).toEqual(['bob', 'bob']);
  });

  it('limits refusals per client address across certificates, and never the principals that are accepted', async () => {
    await nextWindow();
    const strangers: Identity[] = [];
    for (const id of ['mallory', 'trudy', 'oscar', 'eve']) strangers.push(await t.issue(id));
    const statuses: number[] = [];
    for (let round = 0; round < 4; round++) for (const s of strangers) statuses.push((await t.call(s, 'GET', '/v1/whoami')).status);
    // No certificate was refused more than four times; their address was refused sixteen times.
    expect(statuses.filter((s) => s === 403)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
    expect((await t.call('alice', 'GET', '/v1/whoami')).status).toBe(200);
  });

  it('writes the pending count when the daemon stops', async () => {
    await nextWindow();
    const stranger = await t.issue('wanda');
    for (let i = 0; i < 5; i++) expect((await t.call(stranger, 'GET', '/v1/whoami')).status).toBe(403);
    const app = t.app;
    await t.daemon.close();
    const rows = await app.db.query<{ count: number }>(
      `SELECT (detail->>'count')::int AS count FROM audit_events WHERE event_type = 'access.denied' AND rule = 'identity.unknown-principal' AND detail->>'serial' = $1 ORDER BY seq`,
      [serialOf(stranger)],
    );
    expect(rows.map((r) => r.count)).toEqual([1, 4]);
  });
});

function serialOf(id: Identity): string {
  return new X509Certificate(id.cert).serialNumber.toLowerCase();
}

describe('API server timeouts', () => {
  it('sets request, header, keep-alive and idle timeouts by default', async () => {
    const t = await startTestDaemon({ workers: 0 });
    try {
      const s = t.daemon.server;
      expect(s.headersTimeout).toBe(10_000);
      expect(s.requestTimeout).toBe(30_000);
      expect(s.keepAliveTimeout).toBe(5_000);
      expect(s.timeout).toBe(60_000);
    } finally {
      await t.close();
    }
  });

  it('takes them from server.timeouts', async () => {
    const t = await startTestDaemon({
      workers: 0,
      prepare: (_home, config) => (config.server.timeouts = { headersSeconds: 3, requestSeconds: 7, keepAliveSeconds: 2, idleSeconds: 11 }),
    });
    try {
      const s = t.daemon.server;
      expect([s.headersTimeout, s.requestTimeout, s.keepAliveTimeout, s.timeout]).toEqual([3000, 7000, 2000, 11_000]);
    } finally {
      await t.close();
    }
  });

  it('refuses a header timeout longer than the request timeout, naming both fields', async () => {
    const home = await makeHome('pglite');
    try {
      const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
      config.server = { ...config.server, timeouts: { headersSeconds: 40, requestSeconds: 30 } };
      writeFileSync(home.configFile, JSON.stringify(config));
      expect(() => loadConfig({ file: home.configFile, env: home.env })).toThrow(/server\.timeouts\.headersSeconds \(40\) .*server\.timeouts\.requestSeconds \(30\)/);
    } finally {
      await home.cleanup();
    }
  });
});
