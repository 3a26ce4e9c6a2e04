/**
 * Entra ID tokens for `auth.type: "entra-id"`, with the token traffic on the same guard as the model
 * traffic. The endpoint's `auth.authority` is itself an allowlist entry (URL, addresses, CIDRs, TLS);
 * @azure/identity's ClientSecretCredential is given an HttpClient whose only way out is that
 * authority's guarded transport, so the OpenID discovery and the token request are checked like any
 * model call: canonical URL under the authority, resolution into its CIDRs, its CA or Node's bundled
 * roots, no redirects. Instance discovery is off (it would call other hosts).
 *
 * Only the client-secret flow is offered: managed identity talks plain http to 169.254.169.254,
 * which the guard refuses by design, and DefaultAzureCredential tries many routes at once.
 */
import { createHttpHeaders, type HttpClient, type PipelineRequest, type PipelineResponse } from '@azure/core-rest-pipeline';
import { ClientSecretCredential, getBearerTokenProvider } from '@azure/identity';
import { UserError } from '../errors';
import type { Endpoint } from '../contracts';
import { readSecretReference } from './endpoints';
import { EgressAborted, EgressDenied } from './errors';
import type { EndpointTransport } from './guard';

export const DEFAULT_ENTRA_SCOPE = 'https://cognitiveservices.azure.com/.default';

/** The authority of an entra-id endpoint as an endpoint of its own, for the guard. */
export function authorityEndpoint(endpoint: Endpoint): Endpoint {
  const authority = endpoint.auth.authority;
  if (endpoint.auth.type !== 'entra-id' || !authority) {
    throw new UserError('policy.invalid', `endpoint ${endpoint.id}: entra-id auth needs auth.authority (the allowlisted token authority)`);
  }
  return {
    id: `${endpoint.id}.token-authority`,
    description: `Entra ID token authority of ${endpoint.id}`,
    provider: endpoint.provider,
    url: authority.url,
    ...(authority.addresses ? { addresses: authority.addresses } : {}),
    allowedCidrs: authority.allowedCidrs,
    ...(authority.tls ? { tls: authority.tls } : {}),
    auth: { type: 'none' },
    classification: { inVpc: false, baa: false, maxTier: 'public' },
    policyFile: endpoint.policyFile,
  };
}

/** An @azure/core-rest-pipeline HttpClient whose only transport is the guarded fetch. */
function guardedHttpClient(transport: EndpointTransport, onGuardError: (e: EgressDenied | EgressAborted) => void): HttpClient {
  return {
    async sendRequest(request: PipelineRequest): Promise<PipelineResponse> {
      const body = request.body;
      if (body !== undefined && body !== null && typeof body !== 'string' && !Buffer.isBuffer(body)) {
        throw new UserError('egress.token-request-body', 'token requests carry a string body only');
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of request.headers) headers[name] = value;
      try {
        const response = await transport.fetch(request.url, {
          method: request.method,
          headers,
          ...(body !== undefined && body !== null ? { body: body as string } : {}),
          ...(request.abortSignal ? { signal: request.abortSignal as AbortSignal } : {}),
        });
        const responseHeaders = createHttpHeaders();
        response.headers.forEach((value, name) => responseHeaders.set(name, value));
        return { request, status: response.status, headers: responseHeaders, bodyAsText: await response.text() };
      } catch (err) {
        if (err instanceof EgressDenied || err instanceof EgressAborted) onGuardError(err);
        throw err;
      }
    },
  };
}

/**
 * A bearer-token function for the AzureOpenAI SDK. A failure surfaces as the guard's refusal when
 * the guard refused, else as one line naming the endpoint (Entra's error text is not quoted).
 */
export function entraTokenProvider(endpoint: Endpoint, authorityTransport: EndpointTransport, env: NodeJS.ProcessEnv = process.env): () => Promise<string> {
  const auth = endpoint.auth;
  if (!auth.tenantId || !auth.clientId) {
    throw new UserError('policy.invalid', `endpoint ${endpoint.id}: entra-id auth needs tenantId and clientId`);
  }
  let guardError: EgressDenied | EgressAborted | undefined;
  const credential = new ClientSecretCredential(auth.tenantId, auth.clientId, readSecretReference(endpoint, env, 'Entra ID client secret'), {
    authorityHost: authorityTransport.endpoint.url,
    disableInstanceDiscovery: true,
    httpClient: guardedHttpClient(authorityTransport, (e) => {
      guardError = e;
    }),
    // The pipeline's own retries would hide a refusal behind three more attempts.
    retryOptions: { maxRetries: 0 },
  });
  const provider = getBearerTokenProvider(credential, auth.scope ?? DEFAULT_ENTRA_SCOPE);
  return async () => {
    guardError = undefined;
    try {
      return await provider();
    } catch (err) {
      if (guardError) throw guardError;
      const name = typeof (err as { name?: unknown })?.name === 'string' ? (err as { name: string }).name : 'Error';
      throw new UserError('endpoint.auth-failed', `endpoint ${endpoint.id}: Entra ID token request failed (${name}); check tenantId, clientId, the secret and auth.authority`);
    }
  };
}
