/**
 * What an endpoint is, as the allowlist (access-policies/endpoints.json, schemas/endpoints.schema.json)
 * describes it: read by every room that names an endpoint. How it is loaded and guarded stays in
 * src/egress.
 */
import type { SecretPlaces } from '../config';
import type { Tier } from '../tiers';

export type ReasoningEffort = 'low' | 'medium' | 'high';

export interface EndpointDefinition {
  id: string;
  description?: string;
  /** A test endpoint (init --test-endpoints): the loopback stand-in, printed as TEST; loopback only. */
  test?: boolean;
  provider: 'azure-openai' | 'openai-compatible';
  url: string;
  deployment?: string;
  apiVersion?: string;
  model?: string;
  addresses?: string[];
  allowedCidrs: string[];
  tls?: { caFile?: string; spkiSha256?: string[]; clientCertFile?: string; clientKeyFile?: string };
  auth: {
    type: 'api-key' | 'apim-key' | 'entra-id' | 'none';
    env?: string;
    file?: string;
    scope?: string;
    tenantId?: string;
    clientId?: string;
    /** entra-id: the token authority, allowlisted like an endpoint (its traffic passes the same guard). */
    authority?: AuthorityDefinition;
  };
  classification: { inVpc: boolean; baa: boolean; maxTier: Tier; development?: boolean };
  limits?: { concurrency?: number; maxResponseBytes?: number; timeoutMs?: number };
  /** A self-hosted server: the sha256 of GET <url>/models joins its calls' fingerprints (once per run). */
  fingerprintModels?: boolean;
  /** The model's family (jury judges of the evaluated model's own family are left out). */
  family?: string;
  /** A reasoning model: its token parameter, default effort and output length (schemas/endpoints.schema.json). */
  reasoning?: { tokenParameter?: 'max_tokens' | 'max_completion_tokens'; effort?: ReasoningEffort; maxOutputTokens?: number };
}

export interface AuthorityDefinition {
  url: string;
  addresses?: string[];
  allowedCidrs: string[];
  tls?: { caFile?: string; spkiSha256?: string[]; clientCertFile?: string; clientKeyFile?: string };
}

/** An endpoint with file references resolved against the policy file's folder. */
export interface Endpoint extends EndpointDefinition {
  policyFile: string;
  /** The places its auth.file was checked against at load, checked again at read; without them none is read. */
  secretPlaces?: SecretPlaces;
}
