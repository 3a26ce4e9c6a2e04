/**
 * The endpoint allowlist (access-policies/endpoints.json, schemas/endpoints.schema.json): the only
 * model endpoints ehrbench may call, with how to reach and trust them and what data they may receive.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { readJsonFile, validateOrThrow } from '../config';
import { UserError } from '../errors';
import type { Tier } from '../tiers';
import { addressAllowed, parseConfigAddress, parseConfigCidr } from './addresses';
import { parseCanonicalUrl } from './url';

/** Longest endpoint URL a policy may hold (the schema says the same). */
const MAX_ENDPOINT_URL_LENGTH = 2048;

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
}

export interface EndpointPolicy {
  file: string;
  endpoints: Endpoint[];
  get(id: string): Endpoint;
}

export function loadEndpointPolicy(file: string): EndpointPolicy {
  const raw = validateOrThrow<{ endpoints: EndpointDefinition[] }>('endpoints.schema.json', readJsonFile(file, 'policy.invalid'), file, 'policy.invalid');
  const base = dirname(file);
  const at = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const seen = new Set<string>();
  const endpoints = raw.endpoints.map((e, i): Endpoint => {
    if (seen.has(e.id)) throw new UserError('policy.invalid', `${file}: /endpoints/${i}/id: duplicate endpoint id "${e.id}"`);
    seen.add(e.id);
    const tls = e.tls ? resolveTlsFiles(e.tls, at) : undefined;
    if (Boolean(tls?.clientCertFile) !== Boolean(tls?.clientKeyFile)) {
      throw new UserError('policy.invalid', `${file}: /endpoints/${i}/tls: clientCertFile and clientKeyFile go together`);
    }
    checkNetworkFields(e, `${file}: /endpoints/${i}`);
    const authority = e.auth.authority;
    if (e.auth.type === 'entra-id') {
      if (!authority || !e.auth.tenantId || !e.auth.clientId) {
        throw new UserError('policy.invalid', `${file}: /endpoints/${i}/auth: entra-id needs tenantId, clientId and authority (the allowlisted token authority)`);
      }
      checkNetworkFields(authority, `${file}: /endpoints/${i}/auth/authority`);
    } else if (authority) {
      throw new UserError('policy.invalid', `${file}: /endpoints/${i}/auth/authority: only entra-id auth has an authority`);
    }
    const auth = {
      ...e.auth,
      ...(e.auth.file ? { file: at(e.auth.file) } : {}),
      ...(authority ? { authority: { ...authority, ...(authority.tls ? { tls: resolveTlsFiles(authority.tls, at) } : {}) } } : {}),
    };
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

/**
 * The network fields are held to one written form at load, so that what a reviewer reads is what the
 * guard enforces: the URL must already be canonical, addresses and CIDRs strict (no octal-looking
 * `010.20.0.5`, no zone ids, no IPv4-embedding IPv6), and every pinned address inside allowedCidrs.
 */
function resolveTlsFiles(t: NonNullable<EndpointDefinition['tls']>, at: (p: string) => string): NonNullable<EndpointDefinition['tls']> {
  return {
    ...t,
    ...(t.caFile ? { caFile: at(t.caFile) } : {}),
    ...(t.clientCertFile ? { clientCertFile: at(t.clientCertFile) } : {}),
    ...(t.clientKeyFile ? { clientKeyFile: at(t.clientKeyFile) } : {}),
  };
}

function checkNetworkFields(e: { url: string; addresses?: string[]; allowedCidrs: string[] }, where: string): void {
  const fail = (path: string, what: string): never => {
    throw new UserError('policy.invalid', `${where}/${path}: ${what}`);
  };
  const parsed = parseCanonicalUrl(e.url, MAX_ENDPOINT_URL_LENGTH);
  if ('problem' in parsed) return fail('url', `${parsed.problem.reason} (rule ${parsed.problem.rule}); write the URL in canonical https form`);
  if (e.url.includes('?')) fail('url', 'must not carry a query string (the SDK adds api-version itself)');
  e.allowedCidrs.forEach((cidr, j) => {
    const c = parseConfigCidr(cidr);
    if ('problem' in c) fail(`allowedCidrs/${j}`, c.problem);
  });
  const literal = parsed.canonical.hostKind !== 'name';
  if (literal && e.addresses) fail('addresses', 'the URL host is already an IP address; remove addresses');
  const pinned = literal ? [parsed.canonical.hostname.replace(/^\[|\]$/g, '')] : (e.addresses ?? []);
  pinned.forEach((address, j) => {
    const path = literal ? 'url' : `addresses/${j}`;
    const a = parseConfigAddress(address);
    if ('problem' in a) return fail(path, a.problem);
    if (a.addr.range() === 'unspecified') return fail(path, 'the unspecified address reaches this machine, not an endpoint');
    if (!addressAllowed(address, e.allowedCidrs)) fail(path, 'address is outside allowedCidrs');
  });
}

/**
 * The secret an endpoint's auth refers to (an API key, an APIM key, an Entra ID client secret): the
 * named environment variable, or the first line of the named file. Never inline in a policy. Errors
 * name the variable or file, never a value; `what` says which secret it is.
 */
export function readSecretReference(endpoint: Endpoint, env: NodeJS.ProcessEnv, what: string): string {
  const auth = endpoint.auth;
  if (auth.env) {
    const value = env[auth.env]?.trim();
    if (!value) throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: environment variable ${auth.env} (${what}) is not set; export it before starting ehrbench`);
    return value;
  }
  if (auth.file) {
    let text: string;
    try {
      text = readFileSync(auth.file, 'utf8');
    } catch (err) {
      throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: ${what} file ${auth.file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const value = text.split(/\r?\n/)[0]?.trim();
    if (!value) throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: ${what} file ${auth.file} is empty`);
    return value;
  }
  throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: auth needs the ${what} in env or file`);
}
