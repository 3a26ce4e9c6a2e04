/**
 * Hostile URLs against the guard's URL and allowlist decision (security-reference 3.3, Checklist A
 * 1-13). Each case must be refused with its rule, by the transport's own check (before any socket)
 * and by `decideUrl` (what `ehrbench endpoints check` prints).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkRequestUrl, decideUrl, EgressDenied, loadEndpointPolicy, type EndpointPolicy, type Resolver } from '../../src/egress';
import { addressAllowed } from '../../src/egress/addresses';
import { tempDir } from '../helpers/db';

const POLICY = {
  endpoints: [
    {
      id: 'aoai',
      provider: 'azure-openai',
      url: 'https://aoai.internal/openai',
      deployment: 'gpt-4o',
      apiVersion: '2024-10-21',
      addresses: ['10.20.4.7'],
      allowedCidrs: ['10.20.0.0/16'],
      auth: { type: 'api-key', env: 'AOAI_KEY' },
      classification: { inVpc: true, baa: true, maxTier: 'private' },
    },
    {
      id: 'vllm',
      provider: 'openai-compatible',
      url: 'https://vllm.internal:8443/v1',
      allowedCidrs: ['10.30.5.0/24'],
      auth: { type: 'none' },
      classification: { inVpc: true, baa: true, maxTier: 'private' },
    },
    {
      id: 'literal-v4',
      provider: 'openai-compatible',
      url: 'https://10.40.0.5:8443/v1',
      allowedCidrs: ['10.40.0.0/24'],
      auth: { type: 'none' },
      classification: { inVpc: true, baa: true, maxTier: 'private' },
    },
    {
      id: 'literal-v6',
      provider: 'openai-compatible',
      url: 'https://[fd00:40::5]/v1',
      allowedCidrs: ['fd00:40::/64'],
      auth: { type: 'none' },
      classification: { inVpc: true, baa: true, maxTier: 'private' },
    },
  ],
};

let policy: EndpointPolicy;
const dnsQueries: string[] = [];
/** vllm.internal is in its CIDR; every other name resolves to a public address. */
const resolver: Resolver = async (name) => {
  dnsQueries.push(name);
  return name === 'vllm.internal' ? ['10.30.5.20'] : ['93.184.216.34'];
};

beforeAll(() => {
  const file = join(tempDir('egress-url'), 'endpoints.json');
  writeFileSync(file, JSON.stringify(POLICY));
  policy = loadEndpointPolicy(file);
});

const long = (n: number) => 'a'.repeat(n);

/** [description, URL, rule]. */
const HOSTILE: [string, string, string][] = [
  ['scheme downgrade to http', 'http://aoai.internal/openai/models', 'egress.url.scheme'],
  ['file scheme', 'file:///etc/passwd', 'egress.url.scheme'],
  ['ftp scheme', 'ftp://aoai.internal/openai', 'egress.url.scheme'],
  ['data scheme', 'data:text/plain,hello', 'egress.url.scheme'],
  ['javascript scheme', 'javascript:alert(1)', 'egress.url.scheme'],
  ['scheme without slashes', 'https:aoai.internal/openai/models', 'egress.url.not-canonical'],
  ['upper-case scheme', 'HTTPS://aoai.internal/openai/models', 'egress.url.not-canonical'],
  ['userinfo naming the allowed host', 'https://aoai.internal@evil.example/openai', 'egress.url.userinfo'],
  ['userinfo with an allowed address and port', 'https://10.20.0.5:443@169.254.169.254/openai', 'egress.url.userinfo'],
  ['user and password', 'https://user:secret@aoai.internal/openai/models', 'egress.url.userinfo'],
  ['empty userinfo', 'https://@aoai.internal/openai/models', 'egress.url.userinfo'],
  ['backslash before @', 'https://aoai.internal\\@evil.example/openai', 'egress.url.bad-characters'],
  ['fragment hiding the real host', 'https://evil.example#@aoai.internal/openai', 'egress.url.fragment'],
  ['fragment after the path', 'https://aoai.internal/openai/models#top', 'egress.url.fragment'],
  ['spaces and @ (parser confusion)', 'https://1.1.1.1 &@2.2.2.2# @3.3.3.3/', 'egress.url.bad-characters'],
  ['NUL in the path', 'https://aoai.internal/openai/\u0000models', 'egress.url.bad-characters'],
  ['tab in the host', 'https://aoai.inter\tnal/openai', 'egress.url.bad-characters'],
  ['newline in the path', 'https://aoai.internal/openai/\nmodels', 'egress.url.bad-characters'],
  ['C1 control character', 'https://aoai.internal/openai/\u0085', 'egress.url.bad-characters'],
  ['trailing dot', 'https://aoai.internal./openai/models', 'egress.url.host-trailing-dot'],
  ['upper-case host', 'https://AOAI.internal/openai/models', 'egress.url.host-not-canonical'],
  ['full-width host (IDNA mapping)', 'https://ａｏａｉ.internal/openai/models', 'egress.url.host-not-ascii'],
  ['Cyrillic look-alike', 'https://аоаі.internal/openai/models', 'egress.url.host-not-ascii'],
  ['punycode look-alike', 'https://xn--80aa0cbo65f.internal/openai/models', 'egress.url.not-allowlisted'],
  ['allowed name as a suffix', 'https://aoai.internal.evil.example/openai/models', 'egress.url.not-allowlisted'],
  ['another host', 'https://evil.example/openai/models', 'egress.url.not-allowlisted'],
  ['percent-encoded host', 'https://%61oai.internal/openai/models', 'egress.url.host-percent-encoded'],
  ['percent-encoded dot after an IP', 'https://10.20.1.2%2e/openai', 'egress.url.host-percent-encoded'],
  ['hex IPv4', 'https://0x7f.1/', 'egress.url.ipv4-non-canonical'],
  ['octal IPv4', 'https://0177.0.0.1/', 'egress.url.ipv4-non-canonical'],
  ['dword IPv4', 'https://2130706433/', 'egress.url.ipv4-non-canonical'],
  ['shortened IPv4', 'https://127.1/', 'egress.url.ipv4-non-canonical'],
  ['octal dword IPv4', 'https://017700000001/', 'egress.url.ipv4-non-canonical'],
  ['hex form of the pinned private address', 'https://0x0a.0x14.4.7/openai/models', 'egress.url.ipv4-non-canonical'],
  ['zero as a host', 'https://0/', 'egress.url.ipv4-non-canonical'],
  ['unspecified IPv4', 'https://0.0.0.0/', 'egress.url.unspecified-address'],
  ['unspecified IPv6', 'https://[::]/', 'egress.url.unspecified-address'],
  ['pinned address as a literal for a name endpoint', 'https://10.20.4.7/openai/models', 'egress.url.ip-literal'],
  ['metadata service literal', 'https://169.254.169.254/latest/meta-data', 'egress.url.ip-literal'],
  ['loopback literal', 'https://127.0.0.1:8443/v1/models', 'egress.url.ip-literal'],
  ['IPv6 loopback literal', 'https://[::1]/v1/models', 'egress.url.ip-literal'],
  ['IPv4-mapped IPv6 of an allowed address', 'https://[::ffff:10.20.4.7]/openai', 'egress.url.ipv6-embedded-ipv4'],
  ['IPv4-mapped loopback', 'https://[::ffff:7f00:1]/', 'egress.url.ipv6-embedded-ipv4'],
  ['IPv4-compatible IPv6', 'https://[::10.40.0.5]:8443/v1', 'egress.url.ipv6-embedded-ipv4'],
  ['NAT64 embedding', 'https://[64:ff9b::a28:5]:8443/v1', 'egress.url.ipv6-embedded-ipv4'],
  ['6to4 embedding', 'https://[2002:a28:5::1]:8443/v1', 'egress.url.ipv6-embedded-ipv4'],
  ['Teredo embedding', 'https://[2001:0:a28:5::1]/v1', 'egress.url.ipv6-embedded-ipv4'],
  ['zone id', 'https://[fe80::1%25eth0]/', 'egress.url.host-zone-id'],
  ['non-compressed IPv6 of an allowed literal', 'https://[fd00:40:0:0:0:0:0:5]/v1/models', 'egress.url.ipv6-not-canonical'],
  ['another IPv4 literal in no endpoint', 'https://10.40.0.6:8443/v1/models', 'egress.url.ip-literal'],
  ['other port', 'https://aoai.internal:444/openai/models', 'egress.url.port'],
  ['port 0', 'https://aoai.internal:0/openai/models', 'egress.url.port'],
  ['explicit default port', 'https://aoai.internal:443/openai/models', 'egress.url.port-not-canonical'],
  ['port with leading zero', 'https://vllm.internal:08443/v1/models', 'egress.url.port-not-canonical'],
  ['empty port', 'https://aoai.internal:/openai/models', 'egress.url.port-not-canonical'],
  ['dot-dot escape', 'https://aoai.internal/openai/../admin', 'egress.url.path-not-canonical'],
  ['encoded dot-dot escape', 'https://aoai.internal/openai/%2e%2e/admin', 'egress.url.path-not-canonical'],
  ['upper-case encoded dot-dot', 'https://aoai.internal/openai/%2E%2E/admin', 'egress.url.path-not-canonical'],
  ['mixed dot-dot', 'https://aoai.internal/openai/.%2e/admin', 'egress.url.path-not-canonical'],
  ['single dot segment', 'https://aoai.internal/openai/./models', 'egress.url.path-not-canonical'],
  ['encoded slash', 'https://aoai.internal/openai%2f..%2fadmin', 'egress.url.path-encoded'],
  ['encoded backslash', 'https://aoai.internal/openai/%5c..%5cadmin', 'egress.url.path-encoded'],
  ['path outside the endpoint', 'https://aoai.internal/admin', 'egress.url.path'],
  ['path sharing only a prefix', 'https://aoai.internal/openaiX/models', 'egress.url.path'],
  ['path outside an IP-literal endpoint', 'https://10.40.0.5:8443/v2/models', 'egress.url.path'],
  ['10 KB host name', `https://${long(10_000)}.internal/`, 'egress.url.too-long'],
  ['over-long path', `https://aoai.internal/openai/${long(5000)}`, 'egress.url.too-long'],
  ['empty URL', '', 'egress.url.unparseable'],
  ['unparseable host', 'https://[zz::1]/v1', 'egress.url.unparseable'],
];

const ALLOWED: [string, string, string, string][] = [
  ['Azure chat completions with api-version', 'https://aoai.internal/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21', 'aoai', '10.20.4.7'],
  ['DNS-resolved vLLM', 'https://vllm.internal:8443/v1/chat/completions', 'vllm', '10.30.5.20'],
  ['IPv4-literal endpoint', 'https://10.40.0.5:8443/v1/models', 'literal-v4', '10.40.0.5'],
  ['IPv6-literal endpoint', 'https://[fd00:40::5]/v1/models', 'literal-v6', 'fd00:40::5'],
];

describe('egress URL decisions', () => {
  it('holds a table of at least 40 hostile URLs', () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
  });

  it.each(HOSTILE)('refuses %s', async (_what, url, rule) => {
    const before = dnsQueries.length;
    const decision = await decideUrl(policy, url, { resolver });
    expect(decision).toMatchObject({ allowed: false, rule });
    // A URL refused for its form or its host never reaches DNS.
    expect(dnsQueries.length).toBe(before);
    // The transport's own check refuses it for every endpoint, before any socket.
    for (const endpoint of policy.endpoints) {
      expect(() => checkRequestUrl(endpoint, url)).toThrow(EgressDenied);
    }
    // Bounded, and never the URL itself.
    expect(decision.reason.length).toBeLessThan(300);
    if (url.length > 30) expect(decision.reason).not.toContain(url);
  });

  it.each(ALLOWED)('allows %s', async (_what, url, endpoint, address) => {
    const decision = await decideUrl(policy, url, { resolver });
    expect(decision).toMatchObject({ allowed: true, endpoint, rule: 'egress.allowlisted-endpoint' });
    expect(decision.addresses?.map((a) => a.address)).toEqual([address]);
    expect(checkRequestUrl(policy.get(endpoint), url).href).toBe(url);
  });

  it('refuses an allowlisted name whose DNS answer is public, naming the address and the CIDR rule', async () => {
    const publicDns: Resolver = async () => ['20.42.0.1'];
    const decision = await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: publicDns });
    expect(decision).toMatchObject({ allowed: false, endpoint: 'vllm', rule: 'egress.address.not-allowed' });
    expect(decision.reason).toContain('20.42.0.1');
  });

  it('refuses a DNS answer that mixes an allowed and a public address', async () => {
    const mixed: Resolver = async () => ['10.30.5.20', '93.184.216.34'];
    const decision = await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: mixed });
    expect(decision).toMatchObject({ allowed: false, rule: 'egress.address.not-allowed' });
    expect(decision.reason).toContain('93.184.216.34');
  });

  it('unwraps an IPv4-mapped DNS answer before the CIDR check', async () => {
    const mapped: Resolver = async () => ['::ffff:10.30.5.20'];
    expect(await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: mapped })).toMatchObject({ allowed: true, addresses: [{ address: '10.30.5.20', cidr: '10.30.5.0/24' }] });
    const mappedLoopback: Resolver = async () => ['::ffff:127.0.0.1'];
    expect(await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: mappedLoopback })).toMatchObject({ allowed: false, rule: 'egress.address.not-allowed' });
  });

  it.each([
    ['loopback', ['127.0.0.1']],
    ['link-local metadata address', ['169.254.169.254']],
    ['unspecified address', ['0.0.0.0']],
    ['NAT64 form of an allowed address', ['64:ff9b::a1e:514']],
    ['a non-address answer', ['10.30.5.20.evil']],
    ['an octal-looking answer', ['012.30.5.20']],
    ['no answer', []],
  ])('refuses a DNS answer with %s', async (_what, answers) => {
    const decision = await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: async () => answers });
    expect(decision.allowed).toBe(false);
    expect(decision.rule).toMatch(/^egress\.(address\.not-allowed|dns\.empty)$/);
  });

  it('refuses when DNS fails or does not answer in time', async () => {
    const failing: Resolver = async () => Promise.reject(Object.assign(new Error('queryA ESERVFAIL'), { code: 'ESERVFAIL' }));
    expect(await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: failing })).toMatchObject({ allowed: false, rule: 'egress.dns.failed' });
    const hanging: Resolver = () => new Promise(() => undefined);
    expect(await decideUrl(policy, 'https://vllm.internal:8443/v1/models', { resolver: hanging, dnsTimeoutMs: 100 })).toMatchObject({ allowed: false, rule: 'egress.dns.failed' });
  });

  it('refuses a name the hosts file maps to loopback when loopback is not in allowedCidrs (system resolver)', async () => {
    const file = join(tempDir('egress-url'), 'endpoints.json');
    writeFileSync(file, JSON.stringify({ endpoints: [{ ...POLICY.endpoints[1], id: 'hosts-file', url: 'https://localhost:8443/v1' }] }));
    const decision = await decideUrl(loadEndpointPolicy(file), 'https://localhost:8443/v1/models');
    expect(decision).toMatchObject({ allowed: false, endpoint: 'hosts-file', rule: 'egress.address.not-allowed' });
    expect(decision.reason).toMatch(/address (127\.0\.0\.1|::1)\)/);
  });

  it('never throws from the CIDR check: malformed input is a refusal', () => {
    expect(addressAllowed('10.20.4.7', ['10.20.0.0/16'])).toBe(true);
    expect(addressAllowed('10.20.4.7', ['fd00::/8'])).toBe(false);
    expect(addressAllowed('fd00::1', ['10.0.0.0/8'])).toBe(false);
    expect(addressAllowed('::ffff:10.20.4.7', ['10.20.0.0/16'])).toBe(true);
    expect(addressAllowed('fe80::1%eth0', ['fe80::/10'])).toBe(false);
    expect(addressAllowed('not an address', ['10.0.0.0/8'])).toBe(false);
    expect(addressAllowed('10.20.4.7', ['garbage', '10.20.0.0/99', '010.20.0.0/16'])).toBe(false);
    expect(addressAllowed(undefined as unknown as string, ['10.0.0.0/8'])).toBe(false);
  });
});
