/** Endpoint secrets by reference: an environment variable or a file, never inline in a policy. */
import type { Endpoint } from '../contracts';
import { readSecretReference } from '../egress';

export function resolveApiKey(endpoint: Endpoint, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const auth = endpoint.auth;
  if (auth.type === 'none' || auth.type === 'entra-id') return undefined;
  return readSecretReference(endpoint, env, auth.type === 'apim-key' ? 'APIM subscription key' : 'API key');
}
