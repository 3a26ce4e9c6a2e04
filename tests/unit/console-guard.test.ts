/** The console's cross-site rules as pure decisions (src/console/guard.ts). */
import { decideBrowserRequest, isBrowserRequest, needsToken, ownOrigins } from '../../src/console';

const own = ownOrigins('DNS:localhost, DNS:ehr.hospital.example, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1', 8443);

describe("the daemon's own origins", () => {
  it('are the names of its certificate on its port, IPv6 compressed in brackets', () => {
    expect([...own].sort()).toEqual(['https://127.0.0.1:8443', 'https://[::1]:8443', 'https://ehr.hospital.example:8443', 'https://localhost:8443'].sort());
  });
  it('include the bare name on port 443', () => {
    expect(ownOrigins('DNS:ehr.example', 443)).toEqual(new Set(['https://ehr.example:443', 'https://ehr.example']));
  });
});

describe('a browser request', () => {
  it('is one that sends Origin, Sec-Fetch-Site or a cookie; the CLI sends none', () => {
    expect(isBrowserRequest({})).toBe(false);
    expect(isBrowserRequest({ origin: 'https://x' })).toBe(true);
    expect(isBrowserRequest({ secFetchSite: 'same-origin' })).toBe(true);
    expect(isBrowserRequest({ cookie: 'a=b' })).toBe(true);
  });

  it('from the CLI passes and needs no token', () => {
    const d = decideBrowserRequest({}, own);
    expect(d).toEqual({ allowed: true, browser: false });
    expect(needsToken('POST', false)).toBe(false);
  });

  it.each(['cross-site', 'same-site'])('started by another site (Sec-Fetch-Site: %s) is refused, reads too', (site) => {
    expect(decideBrowserRequest({ secFetchSite: site, origin: 'https://localhost:8443' }, own)).toMatchObject({ allowed: false, rule: 'console.cross-site' });
  });

  it("opened from a link on another site reaches the console's page only: never an API route, never a POST", () => {
    const link = { secFetchSite: 'cross-site', secFetchMode: 'navigate' };
    expect(decideBrowserRequest(link, own, { method: 'GET', path: '/console/' })).toEqual({ allowed: true, browser: true });
    expect(decideBrowserRequest({ ...link, secFetchSite: 'same-site' }, own, { method: 'GET', path: '/' })).toEqual({ allowed: true, browser: true });
    expect(decideBrowserRequest(link, own, { method: 'GET', path: '/v1/audit/export?format=csv' })).toMatchObject({ allowed: false, rule: 'console.cross-site' });
    expect(decideBrowserRequest(link, own, { method: 'GET', path: '/console/app.js' })).toMatchObject({ allowed: false, rule: 'console.cross-site' });
    expect(decideBrowserRequest(link, own, { method: 'POST', path: '/console/' })).toMatchObject({ allowed: false, rule: 'console.cross-site' });
    expect(decideBrowserRequest({ ...link, secFetchMode: 'no-cors' }, own, { method: 'GET', path: '/console/' })).toMatchObject({ allowed: false, rule: 'console.cross-site' });
    expect(decideBrowserRequest({ ...link, origin: 'https://evil.example' }, own, { method: 'GET', path: '/console/' })).toMatchObject({ allowed: false, rule: 'console.cross-site' });
  });

  it('from a foreign origin is refused, whatever the case of its spelling', () => {
    expect(decideBrowserRequest({ origin: 'https://evil.example' }, own)).toMatchObject({ allowed: false, rule: 'console.origin-mismatch' });
    expect(decideBrowserRequest({ origin: 'https://localhost:9443' }, own)).toMatchObject({ allowed: false, rule: 'console.origin-mismatch' });
    expect(decideBrowserRequest({ origin: 'null' }, own)).toMatchObject({ allowed: false, rule: 'console.origin-mismatch' });
    expect(decideBrowserRequest({ origin: 'HTTPS://LOCALHOST:8443' }, own)).toEqual({ allowed: true, browser: true });
  });

  it('of the console itself passes; its state-changing methods need the token', () => {
    expect(decideBrowserRequest({ secFetchSite: 'same-origin', origin: 'https://localhost:8443', cookie: 'x=y' }, own)).toEqual({ allowed: true, browser: true });
    expect(decideBrowserRequest({ secFetchSite: 'none' }, own)).toEqual({ allowed: true, browser: true });
    for (const m of ['POST', 'put', 'PATCH', 'DELETE']) expect(needsToken(m, true)).toBe(true);
    for (const m of ['GET', 'HEAD', 'OPTIONS']) expect(needsToken(m, true)).toBe(false);
  });

  it('refusals quote the header printable and short', () => {
    const d = decideBrowserRequest({ origin: `https://evil.example/${'\u0007'.repeat(3)}${'a'.repeat(200)}` }, own);
    expect(d.allowed).toBe(false);
    if (!d.allowed) {
      expect(d.reason).not.toMatch(/[\u0000-\u001f]/);
      expect(d.reason.length).toBeLessThan(200);
    }
  });
});
