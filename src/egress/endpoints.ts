/**
 * The endpoint allowlist (access-policies/endpoints.json, schemas/endpoints.schema.json): the only
 * model endpoints ehrbench may call, with how to reach and trust them and what data they may receive.
 */
import { commandPrefix } from '../command-prefix';
import { statSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { readJsonFile, validateOrThrow } from '../schema';
import { UserError } from '../errors';
import type { RuleId } from '../policy';
import type { Tier } from '../tiers';
import { addressAllowed, type Cidr, coveredAddresses, parseConfigAddress, parseConfigCidr } from './addresses';
import { readSecretFile, refuseSecret, type SecretPlaces, secretFileProblem, secretVariableProblem } from './secrets';
import { parseCanonicalUrl } from './url';
import type { Endpoint, EndpointDefinition } from '../contracts';

/** Longest endpoint URL a policy may hold (the schema says the same). */
const MAX_ENDPOINT_URL_LENGTH = 2048;

const ALLOWLIST_RULE: RuleId = 'policy.allowlist-too-wide';
const TEST_LOOPBACK_RULE: RuleId = 'policy.test-endpoint-not-loopback';

/** The widest allowlist without a configuration: a /16 of IPv4, one /64 subnet of IPv6 (config egress.allowlistWidth). */
const DEFAULT_ALLOWLIST_WIDTH = { ipv4: 16, ipv6: 64 };

/** What a policy is held to besides its schema, from the configuration (config secrets, egress). */
export interface PolicyLoadOptions {
  /** Where auth.file may lie; without it, no auth.file is accepted. */
  secrets?: SecretPlaces;
  /** Prefix lengths: an endpoint's allowedCidrs may cover at most one range of each size. */
  allowlistWidth?: { ipv4: number; ipv6: number };
  /** Whether the TLS files named must exist (default true); false only to read an example policy of another host. */
  checkFiles?: boolean;
}

export interface EndpointPolicy {
  file: string;
  endpoints: Endpoint[];
  get(id: string): Endpoint;
}

export function loadEndpointPolicy(file: string, opts: PolicyLoadOptions = {}): EndpointPolicy {
  const width = opts.allowlistWidth ?? DEFAULT_ALLOWLIST_WIDTH;
  const raw = validateOrThrow<{ endpoints: EndpointDefinition[] }>('endpoints.schema.json', readJsonFile(file, 'policy.invalid'), file, 'policy.invalid');
  const base = dirname(file);
  const at = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const seen = new Set<string>();
  const endpoints = raw.endpoints.map((e, i): Endpoint => {
    if (seen.has(e.id)) throw new UserError('policy.invalid', `${file}: /endpoints/${i}/id: duplicate endpoint id "${e.id}"`);
    seen.add(e.id);
    const tls = e.tls ? resolveTlsFiles(e.tls, at) : undefined;
    if (tls && opts.checkFiles !== false) checkTlsFiles(tls, `${file}: /endpoints/${i}/tls`);
    if (Boolean(tls?.clientCertFile) !== Boolean(tls?.clientKeyFile)) {
      throw new UserError('policy.invalid', `${file}: /endpoints/${i}/tls: clientCertFile and clientKeyFile go together`);
    }
    checkNetworkFields(e, `${file}: /endpoints/${i}`, width);
    if (e.test) checkTestEndpoint(e, `${file}: /endpoints/${i}`);
    const authority = e.auth.authority;
    if (e.auth.type === 'entra-id') {
      if (!authority || !e.auth.tenantId || !e.auth.clientId) {
        throw new UserError('policy.invalid', `${file}: /endpoints/${i}/auth: entra-id needs tenantId, clientId and authority (the allowlisted token authority)`);
      }
      checkNetworkFields({ ...authority, id: e.id }, `${file}: /endpoints/${i}/auth/authority`, width);
      if (authority.tls && opts.checkFiles !== false) checkTlsFiles(resolveTlsFiles(authority.tls, at), `${file}: /endpoints/${i}/auth/authority/tls`);
    } else if (authority) {
      throw new UserError('policy.invalid', `${file}: /endpoints/${i}/auth/authority: only entra-id auth has an authority`);
    }
    const auth = {
      ...e.auth,
      ...(e.auth.file ? { file: at(e.auth.file) } : {}),
      ...(authority ? { authority: { ...authority, ...(authority.tls ? { tls: resolveTlsFiles(authority.tls, at) } : {}) } } : {}),
    };
    checkSecretReference(auth, `${file}: /endpoints/${i}/auth`, opts.secrets);
    return { ...e, ...(tls ? { tls } : {}), auth, policyFile: file, ...(opts.secrets ? { secretPlaces: opts.secrets } : {}) };
  });
  return {
    file,
    endpoints,
    get(id: string): Endpoint {
      const e = endpoints.find((x) => x.id === id);
      // Never the allowlist's path: this answers the daemon's requesters too (who list the endpoints with the command).
      if (!e) throw new UserError('endpoint.unknown', `endpoint "${id}" is not in the site's endpoint allowlist; see "${commandPrefix()} endpoints list"`);
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

/**
 * The files a TLS block names exist when the policy is loaded: a missing caFile would otherwise pass
 * `endpoints list` and fail only when a run first calls the endpoint. (Whether the daemon's account may
 * read them is seen when they are read: the operator listing the policy may be another account.)
 */
function checkTlsFiles(t: NonNullable<EndpointDefinition['tls']>, where: string): void {
  for (const field of ['caFile', 'clientCertFile', 'clientKeyFile'] as const) {
    const path = t[field];
    if (!path) continue;
    let problem: string | undefined;
    try {
      if (!statSync(path).isFile()) problem = 'is not a file';
    } catch (err) {
      problem = `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
    }
    if (problem) throw new UserError('policy.file-unreadable', `${where}/${field}: ${path} ${problem}; fix the path (relative to the policy file) or add the file`);
  }
}

function checkNetworkFields(e: { id: string; url: string; addresses?: string[]; allowedCidrs: string[] }, where: string, width: { ipv4: number; ipv6: number }): void {
  const fail = (path: string, what: string): never => {
    throw new UserError('policy.invalid', `${where}/${path}: ${what}`);
  };
  const parsed = parseCanonicalUrl(e.url, MAX_ENDPOINT_URL_LENGTH);
  if ('problem' in parsed) return fail('url', `${parsed.problem.reason} (rule ${parsed.problem.rule}); write the URL in canonical https form`);
  if (e.url.includes('?')) fail('url', 'must not carry a query string (the SDK adds api-version itself)');
  const cidrs: Cidr[] = e.allowedCidrs.map((cidr, j) => {
    const c = parseConfigCidr(cidr);
    return 'problem' in c ? fail(`allowedCidrs/${j}`, c.problem) : c.cidr;
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
  checkAllowlistWidth(e.id, cidrs, where, width);
}

/**
 * No endpoint may allow so many addresses that the CIDR check stops meaning anything: a /0 is refused
 * as written, and so is its equivalent in pieces (two /1 halves). The ranges are merged per family and
 * counted exactly.
 */
function checkAllowlistWidth(id: string, cidrs: Cidr[], where: string, width: { ipv4: number; ipv6: number }): void {
  const covered = coveredAddresses(cidrs);
  for (const [family, name, bits] of [['ipv4', 'IPv4', 32] as const, ['ipv6', 'IPv6', 128] as const]) {
    const limit = 1n << BigInt(bits - width[family]);
    if (covered[family] > limit) {
      throw new UserError(
        'policy.invalid',
        `${where}/allowedCidrs: endpoint "${id}" allows ${covered[family]} ${name} addresses, more than the ${limit} of one /${width[family]} (config egress.allowlistWidth.${family}); list only the endpoint's own subnet (rule ${ALLOWLIST_RULE})`,
      );
    }
  }
}

/**
 * A test endpoint reaches only this machine: every allowedCidrs range lies in loopback (127.0.0.0/8,
 * ::1). Its classification claims what the tier rules ask (the private one a BAA) for a stand-in, so
 * the label must never be able to cover a real endpoint.
 */
function checkTestEndpoint(e: { allowedCidrs: string[] }, where: string): void {
  for (const text of e.allowedCidrs) {
    const parsed = parseConfigCidr(text);
    const loopback = 'cidr' in parsed && parsed.cidr[0].range() === 'loopback' && parsed.cidr[1] >= (parsed.cidr[0].kind() === 'ipv4' ? 8 : 128);
    if (!loopback) {
      throw new UserError('policy.invalid', `${where}/allowedCidrs: a test endpoint reaches only this machine (loopback); ${text} is not loopback (rule ${TEST_LOOPBACK_RULE})`);
    }
  }
}

/** The endpoint's secret reference, held to its places at load (src/egress/secrets.ts). */
function checkSecretReference(auth: { env?: string; file?: string }, where: string, places: SecretPlaces | undefined): void {
  if (auth.env) refuseSecret(`${where}/env`, secretVariableProblem(auth.env, places));
  if (auth.file) refuseSecret(`${where}/file`, secretFileProblem(auth.file, places));
}

/**
 * The secret an endpoint's auth refers to (an API key, an APIM key, an Entra ID client secret): the
 * named environment variable, or the first line of the named file (in the secrets directory, checked
 * again on the file opened). Never inline in a policy. Errors name the variable or file, never a value;
 * `what` says which secret it is.
 */
export function readSecretReference(endpoint: Endpoint, env: NodeJS.ProcessEnv, what: string): string {
  const auth = endpoint.auth;
  if (auth.env) {
    refuseSecret(`endpoint ${endpoint.id}: auth.env`, secretVariableProblem(auth.env, endpoint.secretPlaces));
    const value = env[auth.env]?.trim();
    if (!value) throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: environment variable ${auth.env} (${what}) is not set; export it before starting ehrbench`);
    return value;
  }
  if (auth.file) {
    const text = readSecretFile(endpoint.id, auth.file, endpoint.secretPlaces, what);
    const value = text.split(/\r?\n/)[0]?.trim();
    if (!value) throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: ${what} file ${auth.file} is empty`);
    return value;
  }
  throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: auth needs the ${what} in env or file`);
}
