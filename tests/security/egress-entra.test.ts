/**
 * Entra ID tokens pass the same guard as the model traffic: the OpenID discovery and the token
 * request go to the allowlisted authority only, over its trusted TLS, and a discovery document
 * that points the token request elsewhere is refused before the model endpoint is called.
 */
import { createEndpointTransport, EgressDenied, type Endpoint } from '../../src/egress';
import { UserError } from '../../src/errors';
import { ModelClient } from '../../src/models';
import { type Handler, startTlsServer, testPki, type TlsServer } from '../helpers/tls';

const TENANT = 'contoso-tenant';
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

function authorityHandler(tokenHost: () => string): Handler {
  return (req, res) => {
    res.setHeader('content-type', 'application/json');
    const url = req.url ?? '';
    if (req.method === 'GET' && url.startsWith(`/${TENANT}/v2.0/.well-known/openid-configuration`)) {
      const base = `https://${tokenHost()}/${TENANT}`;
      res.end(
        JSON.stringify({
          issuer: `${base}/v2.0`,
          authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
          token_endpoint: `${base}/oauth2/v2.0/token`,
          end_session_endpoint: `${base}/oauth2/v2.0/logout`,
          jwks_uri: `${base}/discovery/v2.0/keys`,
          response_types_supported: ['code'],
        }),
      );
      return;
    }
    if (req.method === 'POST' && url.startsWith(`/${TENANT}/oauth2/v2.0/token`)) {
      res.end(JSON.stringify({ token_type: 'Bearer', expires_in: 3600, ext_expires_in: 3600, access_token: 'token-from-guarded-authority' }));
      return;
    }
    res.statusCode = 404;
    res.end('{}');
  };
}

interface Setup {
  tokenHost?: (authority: TlsServer) => string;
  redirectTo?: string;
  /** When given, the authority is resolved by DNS (this answer) instead of its addresses pin. */
  authorityDns?: string[];
}

async function setup(opts: Setup = {}) {
  const tokenHost = opts.tokenHost ?? ((a: TlsServer) => `login.test:${a.port}`);
  const pki = testPki();
  const model = await startTlsServer({ cert: pki.server });
  let authority: TlsServer | undefined;
  authority = await startTlsServer({
    cert: pki.issue({ commonName: 'login.test', dnsNames: ['login.test'], ipAddresses: [] }),
    handler: opts.redirectTo
      ? (_req, res) => {
          res.writeHead(302, { location: opts.redirectTo });
          res.end();
        }
      : authorityHandler(() => tokenHost(authority as TlsServer)),
  });
  opened.push(model, authority);
  const endpoint: Endpoint = {
    id: 'aoai-entra',
    provider: 'azure-openai',
    url: `https://model.test:${model.port}/openai`,
    deployment: 'gpt-4o',
    apiVersion: '2024-10-21',
    addresses: ['127.0.0.1'],
    allowedCidrs: ['127.0.0.1/32'],
    tls: { caFile: pki.caFile },
    auth: {
      type: 'entra-id',
      tenantId: TENANT,
      clientId: '11111111-1111-1111-1111-111111111111',
      env: 'ENTRA_SECRET',
      authority: { url: `https://login.test:${authority.port}`, ...(opts.authorityDns ? {} : { addresses: ['127.0.0.1'] }), allowedCidrs: ['127.0.0.1/32'], tls: { caFile: pki.caFile } },
    },
    classification: { inVpc: true, baa: true, maxTier: 'private' },
    policyFile: '/dev/null',
  };
  const transport = createEndpointTransport(endpoint, { timeoutMs: 5000, resolver: async () => opts.authorityDns ?? ['127.0.0.1'] });
  opened.push(transport);
  const client = new ModelClient(endpoint, transport, { timeoutMs: 5000, maxRetries: 0, maxBackoffMs: 0, env: { ENTRA_SECRET: 'client-secret' } });
  return { model, authority, client };
}

const request = { prompt: 'Question?\nA. yes\nB. no', maxTokens: 1, temperature: 0 };

describe('entra-id auth through the guard', () => {
  it('fetches the token from the allowlisted authority through the guard and sends it as a bearer token', async () => {
    const { model, authority, client } = await setup();
    expect((await client.complete(request)).text).toBe('B');
    expect(authority.paths).toEqual([
      `GET /${TENANT}/v2.0/.well-known/openid-configuration`,
      expect.stringMatching(new RegExp(`^POST /${TENANT}/oauth2/v2.0/token(\\?client-request-id=[0-9a-f-]+)?$`)),
    ]);
    expect(authority.bodies[1]).toContain('grant_type=client_credentials');
    expect(model.authorizations).toEqual(['Bearer token-from-guarded-authority']);
  });

  it('refuses a discovery document that sends the token request to another host, and never calls the model', async () => {
    const { model, authority, client } = await setup({ tokenHost: (a) => `evil.test:${a.port}` });
    const err = await client.complete(request).catch((e: unknown) => e);
    // MSAL itself rejects the foreign token endpoint; the guard would refuse the host either way.
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('endpoint.auth-failed');
    expect((err as Error).message).toBe('endpoint aoai-entra: Entra ID token request failed (CredentialUnavailableError); check tenantId, clientId, the secret and auth.authority');
    expect(authority.paths.filter((p) => p.startsWith('POST'))).toEqual([]);
    expect(model.requests()).toBe(0);
  });

  it('refuses a redirect from the authority with the guard rule, naming the authority', async () => {
    const { model, authority, client } = await setup({ redirectTo: 'https://evil.test/token' });
    const err = await client.complete(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe('egress.redirect.refused');
    expect((err as EgressDenied).endpointId).toBe('aoai-entra.token-authority');
    expect(authority.requests()).toBe(1);
    expect(model.requests()).toBe(0);
  });

  it('refuses an authority whose DNS answer lies outside its allowedCidrs, before connecting', async () => {
    const { model, authority, client } = await setup({ authorityDns: ['20.190.151.7'] });
    const err = await client.complete(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EgressDenied);
    expect((err as EgressDenied).rule).toBe('egress.address.not-allowed');
    expect((err as EgressDenied).address).toBe('20.190.151.7');
    expect(authority.connections()).toBe(0);
    expect(model.requests()).toBe(0);
  });
});
