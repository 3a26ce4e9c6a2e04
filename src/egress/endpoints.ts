/**
 * The endpoint allowlist (access-policies/endpoints.json, schemas/endpoints.schema.json): the only
 * model endpoints ehrbench may call, with how to reach and trust them and what data they may receive.
 */
import { dirname, isAbsolute, join } from 'node:path';
import { readJsonFile, validateOrThrow } from '../config/validate';
import { UserError } from '../errors';
import type { Tier } from '../tiers';

export interface EndpointDefinition {
  id: string;
  description?: string;
  provider: 'azure-openai' | 'openai-compatible';
  url: string;
  deployment?: string;
  apiVersion?: string;
  model?: string;
  addresses?: string[];
  allowedCidrs: string[];
  tls?: { caFile?: string; spkiSha256?: string[]; clientCertFile?: string; clientKeyFile?: string };
  auth: { type: 'api-key' | 'apim-key' | 'entra-id' | 'none'; env?: string; file?: string; scope?: string; tenantId?: string; clientId?: string };
  classification: { inVpc: boolean; baa: boolean; maxTier: Tier; development?: boolean };
  limits?: { concurrency?: number; maxResponseBytes?: number; timeoutMs?: number };
}

/** An endpoint with file references resolved against the policy file's folder. */
export interface Endpoint extends EndpointDefinition {
  policyFile: string;
}

export interface EndpointPolicy {
  file: string;
  endpoints: Endpoint[];
  get(id: string): Endpoint;
}

export function loadEndpointPolicy(file: string): EndpointPolicy {
  const raw = validateOrThrow<{ endpoints: EndpointDefinition[] }>(
    'endpoints.schema.json',
    readJsonFile(file, 'policy.invalid'),
    file,
    'policy.invalid',
  );
  const base = dirname(file);
  const at = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const seen = new Set<string>();
  const endpoints = raw.endpoints.map((e, i): Endpoint => {
    if (seen.has(e.id)) throw new UserError('policy.invalid', `${file}: /endpoints/${i}/id: duplicate endpoint id "${e.id}"`);
    seen.add(e.id);
    const tls = e.tls
      ? {
          ...e.tls,
          ...(e.tls.caFile ? { caFile: at(e.tls.caFile) } : {}),
          ...(e.tls.clientCertFile ? { clientCertFile: at(e.tls.clientCertFile) } : {}),
          ...(e.tls.clientKeyFile ? { clientKeyFile: at(e.tls.clientKeyFile) } : {}),
        }
      : undefined;
    if (Boolean(tls?.clientCertFile) !== Boolean(tls?.clientKeyFile)) {
      throw new UserError('policy.invalid', `${file}: /endpoints/${i}/tls: clientCertFile and clientKeyFile go together`);
    }
    const auth = e.auth.file ? { ...e.auth, file: at(e.auth.file) } : e.auth;
    return { ...e, ...(tls ? { tls } : {}), auth, policyFile: file };
  });
  return {
    file,
    endpoints,
    get(id: string): Endpoint {
      const e = endpoints.find((x) => x.id === id);
      if (!e) throw new UserError('endpoint.unknown', `endpoint "${id}" is not in the allowlist ${file}; see "ehrbench endpoints list"`);
      return e;
    },
  };
}
