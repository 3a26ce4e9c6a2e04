/**
 * The console's defences on the real daemon, with the requests a browser (or a page forging one)
 * would send: fetch metadata and Origin checks, the session token bound to principal and
 * certificate, security headers on every answer, and the console switched off by configuration.
 * The CLI's requests (no Origin, no cookie) are not affected.
 */
import { Agent, fetch } from 'undici';
import { startDaemon } from '../../src/server';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const APPROVAL = { principalInvestigator: 'alice', personnel: ['alice'], tiers: ['private'], purpose: 'csrf test' };

describe('the console on the daemon', () => {
  let t: TestDaemon;
  let own: string;
  const agents: Agent[] = [];
  beforeAll(async () => {
    t = await startTestDaemon();
    own = `https://localhost:${t.daemon.port}`;
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await t.close();
  });

  async function send(who: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
    const id = t.ids[who]!;
    const agent = new Agent({ connect: { ca: t.ca, cert: id.cert, key: id.key, servername: 'localhost' } });
    agents.push(agent);
    const res = await fetch(`${own}${path}`, {
      method,
      dispatcher: agent,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text, headers: res.headers };
  }

  const approvals = async () => (await t.app.approvals.list()).length;
  const denials = async (rule: string) => (await t.app.db.query("SELECT 1 FROM audit_events WHERE event_type = 'access.denied' AND rule = $1", [rule])).length;

  it('lets the CLI post as before: no Origin, no cookie, no token', async () => {
    const r = await send('carol', 'POST', '/v1/approvals', {}, { ...APPROVAL, protocolNumber: 'CLI-1' });
    expect(r.status).toBe(200);
  });

  it('refuses a post from another origin, records nothing, audits the refusal with its rule', async () => {
    const before = await approvals();
    const r = await send('carol', 'POST', '/v1/approvals', { origin: 'https://evil.example' }, { ...APPROVAL, protocolNumber: 'EVIL-1' });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ error: 'policy.denied', rule: 'console.origin-mismatch' });
    expect(await approvals()).toBe(before);
    expect(await denials('console.origin-mismatch')).toBe(1);
  });

  it('refuses a request another site started, a read too', async () => {
    const post = await send('carol', 'POST', '/v1/approvals', { 'sec-fetch-site': 'cross-site' }, { ...APPROVAL, protocolNumber: 'EVIL-2' });
    expect(post.json).toMatchObject({ rule: 'console.cross-site' });
    const read = await send('alice', 'GET', '/v1/runs', { 'sec-fetch-site': 'cross-site' });
    expect(read.status).toBe(403);
    expect(read.json).toMatchObject({ rule: 'console.cross-site' });
  });

  it('refuses a same-origin post without the session token, and one with another session or principal', async () => {
    const before = await approvals();
    const none = await send('carol', 'POST', '/v1/approvals', { origin: own, 'sec-fetch-site': 'same-origin' }, { ...APPROVAL, protocolNumber: 'NOTOKEN' });
    expect(none.json).toMatchObject({ rule: 'console.csrf-token' });

    const session = await send('carol', 'GET', '/v1/console/session', { 'sec-fetch-site': 'same-origin' });
    expect(session.status).toBe(200);
    expect(session.json).toMatchObject({ principal: 'carol', roles: ['compliance'], tokenHeader: 'x-ehrbench-csrf' });
    const setCookie = session.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^__Host-ehrbench-console=[^;]+; Path=\/; HttpOnly; Secure; SameSite=Strict/);
    const cookie = setCookie.split(';')[0]!;
    const browser = { origin: own, 'sec-fetch-site': 'same-origin', cookie };

    const wrong = await send('carol', 'POST', '/v1/approvals', { ...browser, 'x-ehrbench-csrf': `${session.json.csrfToken}x` }, { ...APPROVAL, protocolNumber: 'BADTOKEN' });
    expect(wrong.json).toMatchObject({ rule: 'console.csrf-token' });
    // Dave holds the same role; carol's cookie and token are still no use to him (bound to her).
    const dave = await send('dave', 'POST', '/v1/approvals', { ...browser, 'x-ehrbench-csrf': session.json.csrfToken }, { ...APPROVAL, protocolNumber: 'STOLEN' });
    expect(dave.json).toMatchObject({ rule: 'console.csrf-token' });
    expect(await approvals()).toBe(before);

    const ok = await send('carol', 'POST', '/v1/approvals', { ...browser, 'x-ehrbench-csrf': session.json.csrfToken }, { ...APPROVAL, protocolNumber: 'CONSOLE-OK' });
    expect(ok.status).toBe(200);
    expect(await approvals()).toBe(before + 1);
  });

  it('accepts a console session at another daemon of the same site (replicas behind one address), a restart too', async () => {
    const session = await send('carol', 'GET', '/v1/console/session', { 'sec-fetch-site': 'same-origin' });
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
    // A second daemon on the same configuration and keys, as a replica (or the same one restarted) is.
    const replica = await startDaemon(t.app, { port: 0 });
    try {
      const agent = new Agent({ connect: { ca: t.ca, cert: t.ids.carol!.cert, key: t.ids.carol!.key, servername: 'localhost' } });
      agents.push(agent);
      const post = async (token: string, protocolNumber: string) =>
        fetch(`https://localhost:${replica.port}/v1/approvals`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json', origin: `https://localhost:${replica.port}`, 'sec-fetch-site': 'same-origin', cookie, 'x-ehrbench-csrf': token },
          body: JSON.stringify({ ...APPROVAL, protocolNumber }),
        });
      const before = await approvals();
      expect((await post(session.json.csrfToken, 'REPLICA-OK')).status).toBe(200);
      expect(await approvals()).toBe(before + 1);
      // Still bound to its session: an altered token is refused there as here.
      const wrong = await post(`${session.json.csrfToken}x`, 'REPLICA-BAD');
      expect(wrong.status).toBe(403);
      expect(await wrong.json()).toMatchObject({ rule: 'console.csrf-token' });
      expect(await approvals()).toBe(before + 1);
    } finally {
      await replica.close();
    }
  });

  it('answers with a strict policy: no inline script or style, no framing, no sniffing, API answers not cached', async () => {
    const page = await send('alice', 'GET', '/console/', { 'sec-fetch-site': 'none' });
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).toMatch(/style-src 'self'(;|$)/);
    expect(csp).toMatch(/frame-ancestors 'none'/);
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:\/\//);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    // The page has no inline script: its one script is the daemon's own file.
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc="\/console\/app\.js")/);
    expect(page.text).not.toMatch(/\sstyle=|https?:\/\//);

    const api = await send('alice', 'GET', '/v1/runs');
    expect(api.headers.get('cache-control')).toBe('no-store');
    expect(api.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    const svg = await send('ivan', 'GET', '/v1/pictures/endpoints/vpc-private/calls.svg');
    expect(svg.status).toBe(200);
    expect(svg.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(svg.text).not.toMatch(/<script|\sstyle=|<style|href=/);
  });

  it('serves pictures only from what the caller may see', async () => {
    const run = await send('alice', 'POST', '/v1/runs', {}, { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 2 });
    expect(run.status).toBe(200);
    expect((await send('alice', 'GET', `/v1/pictures/runs/${run.json.runId}/progress.svg`)).status).toBe(200);
    const other = await send('bob', 'GET', `/v1/pictures/runs/${run.json.runId}/progress.svg`);
    expect(other.status).toBe(404);
    expect(other.json).toMatchObject({ error: 'run.not-found' });
    expect((await send('alice', 'GET', '/v1/pictures/endpoints/vpc-private/calls.svg')).json).toMatchObject({ rule: 'rbac.admin-required' });
  });
});

describe('the console switched off (server.console false)', () => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ prepare: (_home, config) => (config.server.console = false) });
  });
  afterAll(() => t.close());

  it('serves no page and no session; the API and its forgery checks stay', async () => {
    expect((await t.call('alice', 'GET', '/console/')).status).toBe(404);
    expect((await t.call('alice', 'GET', '/v1/console/session')).status).toBe(404);
    expect((await t.call('alice', 'GET', '/v1/runs')).status).toBe(200);
  });
});
