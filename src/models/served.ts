/**
 * What an endpoint says it served one call: the response's `model` and `system_fingerprint`, the Azure
 * deployment and api-version as configured, and an allowlist of response headers. Ids only: every value
 * is cut to an id-safe pattern (letters, digits, `._:/@+-`, at most 100 characters) so that no header or
 * field can carry content into the store. The fingerprint is the sha256 of this record, canonically.
 */
import { createHash } from 'node:crypto';
import type { Endpoint } from '../contracts';

/** Response headers that name the model or deployment behind an endpoint (OpenAI, Azure OpenAI, Azure ML, vLLM behind a gateway). */
export const FINGERPRINT_HEADERS = ['openai-model', 'openai-version', 'x-ms-deployment-name', 'azureml-model-deployment', 'x-model-version'] as const;

export interface ServedBy {
  model: string | null;
  systemFingerprint: string | null;
  deployment: string | null;
  apiVersion: string | null;
  headers: Record<string, string>;
  /** sha256 of GET /v1/models (self-hosted servers), added by the gateway once per run. */
  modelsSha256?: string | null;
}

const ID_SAFE = /[^A-Za-z0-9._:/@+-]/g;

/** A value as an id: unsafe characters dropped, at most 100 characters; null when nothing is left. */
export function idSafe(value: unknown): string | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const id = String(value).replace(ID_SAFE, '').slice(0, 100);
  return id === '' ? null : id;
}

export function servedBy(endpoint: Endpoint, res: { model?: unknown; systemFingerprint?: unknown; headers: Headers }): ServedBy {
  const headers: Record<string, string> = {};
  for (const name of FINGERPRINT_HEADERS) {
    const v = idSafe(res.headers.get(name));
    if (v) headers[name] = v;
  }
  const azure = endpoint.provider === 'azure-openai';
  return {
    model: idSafe(res.model),
    systemFingerprint: idSafe(res.systemFingerprint),
    deployment: azure ? idSafe(endpoint.deployment) : null,
    apiVersion: azure ? idSafe(endpoint.apiVersion) : null,
    headers,
  };
}

/**
 * sha256 of a models list, sorted so that the server's order does not count. Of each entry the fields
 * that name what is loaded (vLLM: `root` is the weights' path, `parent` the base of an adapter); not
 * `created`, which vLLM sets to the time of each request.
 */
export function modelsSha256(models: readonly Record<string, unknown>[]): string {
  const picked = models.map((m) => [idSafe(m.id), idSafe(m.owned_by), idSafe(m.root), idSafe(m.parent), typeof m.max_model_len === 'number' ? m.max_model_len : null] as const);
  const sorted = picked.map((x) => JSON.stringify(x)).sort();
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex');
}

/** The fingerprint of what was served: sha256 over the record's fields in a fixed order. */
export function fingerprintOf(s: ServedBy): string {
  const headers = Object.keys(s.headers)
    .sort()
    .map((k) => [k, s.headers[k]]);
  return createHash('sha256')
    .update(JSON.stringify([s.model, s.systemFingerprint, s.deployment, s.apiVersion, headers, s.modelsSha256 ?? null]))
    .digest('hex');
}
