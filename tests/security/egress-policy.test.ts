/**
 * The endpoint policy at load: network fields held to one written form (Checklist A 1-3, 10), the
 * shipped example valid against the schema, and the environment check (Checklist A 20-21).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { validatorFor } from '../../src/schema/validate';
import { assertSafeEgressEnvironment, loadEndpointPolicy } from '../../src/egress';
import { UserError } from '../../src/errors';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

const base = {
  id: 'aoai',
  provider: 'azure-openai',
  url: 'https://aoai.internal/openai',
  deployment: 'gpt-4o',
  apiVersion: '2024-10-21',
  addresses: ['10.20.4.7'],
  allowedCidrs: ['10.20.0.0/16'],
  auth: { type: 'api-key', env: 'AOAI_KEY' },
  classification: { inVpc: true, baa: true, maxTier: 'private' },
};

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

function load(endpoint: Record<string, unknown>) {
  const file = join(tempDir('egress-policy'), 'endpoints.json');
  writeFileSync(file, JSON.stringify({ endpoints: [{ ...base, ...endpoint }] }));
  return loadEndpointPolicy(file);
}

describe('endpoint policy network fields', () => {
  it('loads the canonical base entry', () => {
    expect(load({}).get('aoai').addresses).toEqual(['10.20.4.7']);
  });

  it.each([
    ['octal-looking address (would resolve to 8.20.0.5)', { addresses: ['010.20.0.5'] }, /addresses\/0: IPv4 must be four decimal parts without leading zeros/],
    ['hex address', { addresses: ['0x0a.20.4.7'] }, /addresses\/0: IPv4 must be four decimal parts/],
    ['three-part address', { addresses: ['10.20.1031'] }, /addresses\/0: IPv4 must be four decimal parts/],
    ['integer address', { addresses: ['169090311'] }, /addresses\/0: IPv4 must be four decimal parts/],
    ['address with a zone id', { addresses: ['fe80::1%eth0'], allowedCidrs: ['fe80::/10'] }, /addresses\/0: zone ids are not allowed/],
    ['IPv4-mapped address', { addresses: ['::ffff:10.20.4.7'] }, /addresses\/0: this IPv6 address embeds an IPv4 address \(IPv4-mapped\)/],
    ['unspecified address', { addresses: ['0.0.0.0'], allowedCidrs: ['0.0.0.0/8'] }, /addresses\/0: the unspecified address/],
    ['address outside allowedCidrs', { addresses: ['10.21.0.1'] }, /addresses\/0: address is outside allowedCidrs/],
    ['octal-looking CIDR', { allowedCidrs: ['010.20.0.0/16'] }, /allowedCidrs\/0: IPv4 must be four decimal parts/],
    ['CIDR with host bits', { allowedCidrs: ['10.20.4.7/16'] }, /allowedCidrs\/0: host bits are set; write 10\.20\.0\.0\/16/],
    ['CIDR /0', { allowedCidrs: ['0.0.0.0/0'] }, /allowedCidrs\/0: a \/0 range allows every address/],
    ['IPv6 /0', { allowedCidrs: ['::/0'] }, /allowedCidrs\/0: a \/0 range/],
    ['prefix with a leading zero', { allowedCidrs: ['10.20.0.0/016'] }, /allowedCidrs\/0: prefix length must be 0-32/],
    ['prefix too long', { allowedCidrs: ['10.20.0.0/33'] }, /allowedCidrs\/0: prefix length must be 0-32/],
    ['6to4 range', { allowedCidrs: ['10.20.0.0/16', '2002::/16'] }, /allowedCidrs\/1: overlaps the 6to4 range/],
    ['NAT64 range', { allowedCidrs: ['10.20.0.0/16', '64:ff9b::/96'] }, /allowedCidrs\/1: overlaps the NAT64 range/],
    ['range containing Teredo', { allowedCidrs: ['10.20.0.0/16', '2000::/3'] }, /allowedCidrs\/1: overlaps the (6to4|Teredo|NAT64) range/],
    ['IPv4-mapped range', { allowedCidrs: ['10.20.0.0/16', '::ffff:0:0/96'] }, /allowedCidrs\/1: .*(IPv4-mapped|embeds)/],
    ['not a range', { allowedCidrs: ['10.20.0.0'] }, /allowedCidrs\/0: write a range as ADDRESS\/PREFIX/],
    ['http URL', { url: 'http://aoai.internal/openai' }, /\/url: only https URLs are allowed/],
    ['upper-case host', { url: 'https://AOAI.internal/openai' }, /\/url: host is not in canonical form/],
    ['trailing dot', { url: 'https://aoai.internal./openai' }, /\/url: host ends with a dot/],
    ['explicit default port', { url: 'https://aoai.internal:443/openai' }, /\/url: port is not in canonical form/],
    ['userinfo', { url: 'https://me@aoai.internal/openai' }, /\/url: URL carries userinfo/],
    ['query string', { url: 'https://aoai.internal/openai?api-version=1' }, /\/url: must not carry a query string/],
    ['dot segment', { url: 'https://aoai.internal/openai/../x' }, /\/url: path changes under normalisation/],
    ['hex IPv4 host', { url: 'https://0x7f.1/v1', addresses: undefined, allowedCidrs: ['127.0.0.0/8'] }, /\/url: IPv4 host is not in four-part decimal form/],
    ['IP-literal host outside allowedCidrs', { url: 'https://10.99.0.1/openai', addresses: undefined }, /\/url: address is outside allowedCidrs/],
    ['IP-literal host with addresses', { url: 'https://10.20.4.7/openai' }, /\/addresses: the URL host is already an IP address/],
    [
      'entra-id without an authority',
      { auth: { type: 'entra-id', env: 'SECRET', tenantId: 't', clientId: 'c' } },
      /auth: (entra-id needs tenantId, clientId and authority|missing required key "authority")/,
    ],
    [
      'entra-id authority with an octal-looking CIDR',
      { auth: { type: 'entra-id', env: 'SECRET', tenantId: 't', clientId: 'c', authority: { url: 'https://login.microsoftonline.com', allowedCidrs: ['020.190.128.0/18'] } } },
      /auth\/authority\/allowedCidrs\/0: IPv4 must be four decimal parts/,
    ],
  ])('refuses %s at load', (_what, change, message) => {
    let err: unknown;
    try {
      load(change);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('policy.invalid');
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message.split('\n')).toHaveLength(1);
  });

  // Issue 15 item 13: two /1 halves are all of IPv4, although a /0 is refused. An endpoint's CIDRs are
  // merged per family and counted; together they may cover at most a /16 (IPv4) and a /64 (IPv6).
  it.each([
    ['all of IPv4 as two /1 halves', { allowedCidrs: ['0.0.0.0/1', '128.0.0.0/1'] }, 'allowedCidrs', /4294967296 IPv4/],
    ['two /16 ranges', { allowedCidrs: ['10.20.0.0/16', '10.21.0.0/16'] }, 'allowedCidrs', /131072/],
    ['one /15', { allowedCidrs: ['10.20.0.0/15'] }, 'allowedCidrs', /131072/],
    ['an IPv6 /63 beside the IPv4 range', { allowedCidrs: ['10.20.0.0/16', 'fd00::/63'] }, 'allowedCidrs', /IPv6/],
    ['many narrow ranges that add up', { allowedCidrs: ['10.20.0.0/16', ...Array.from({ length: 4 }, (_, i) => `10.${30 + i}.0.0/24`)] }, 'allowedCidrs', /66560/],
    [
      'an entra-id authority covering too much',
      { auth: { type: 'entra-id', env: 'SECRET', tenantId: 't', clientId: 'c', authority: { url: 'https://login.microsoftonline.com', allowedCidrs: ['20.0.0.0/8'] } } },
      'auth/authority/allowedCidrs',
      /16777216/,
    ],
  ])('refuses %s at load, naming the endpoint and the rule', (_what, change, path, count) => {
    const err = errorOf(() => load(change));
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('policy.invalid');
    const message = (err as Error).message;
    expect(message).toContain(`/endpoints/0/${path}: `);
    expect(message).toContain('endpoint "aoai"');
    expect(message).toContain('(rule policy.allowlist-too-wide)');
    expect(message).not.toMatch(/\n/);
    expect(message).toMatch(count);
  });

  it.each([
    ['overlapping ranges, counted once', ['10.20.0.0/16', '10.20.4.0/24', '10.20.4.7/32']],
    ['two halves of one /16', ['10.20.0.0/17', '10.20.128.0/17']],
    ['a /16 and an IPv6 /64 (each family within its own limit)', ['10.20.0.0/16', 'fd00:30:5::/64']],
    ['an IPv6 /64 covered twice', ['10.20.0.0/16', 'fd00:30:5::/64', 'fd00:30:5::/96']],
  ])('accepts %s', (_what, allowedCidrs) => {
    expect(load({ allowedCidrs }).get('aoai').allowedCidrs).toEqual(allowedCidrs);
  });

  it('takes a narrower or wider limit from the configuration', () => {
    const file = join(tempDir('egress-policy'), 'endpoints.json');
    writeFileSync(file, JSON.stringify({ endpoints: [{ ...base, allowedCidrs: ['10.20.0.0/16', 'fd00:30:5::/64'] }] }));
    expect(errorOf(() => loadEndpointPolicy(file, { allowlistWidth: { ipv4: 24, ipv6: 64 } })).message).toMatch(
      /allowedCidrs: endpoint "aoai" allows 65536 IPv4 addresses, more than the 256 of one \/24 .*\(rule policy\.allowlist-too-wide\)$/,
    );
    expect(errorOf(() => loadEndpointPolicy(file, { allowlistWidth: { ipv4: 16, ipv6: 80 } })).message).toMatch(/allowedCidrs: .*IPv6.*\(rule policy\.allowlist-too-wide\)/);
    writeFileSync(file, JSON.stringify({ endpoints: [{ ...base, allowedCidrs: ['10.20.0.0/15'] }] }));
    expect(loadEndpointPolicy(file, { allowlistWidth: { ipv4: 15, ipv6: 64 } }).get('aoai').allowedCidrs).toEqual(['10.20.0.0/15']);
  });

  it('reads the limit from config.json (egress.allowlistWidth), defaulting to a /16 and a /64', () => {
    const home = tempDir('egress-policy');
    const file = join(home, 'config.json');
    writeFileSync(file, JSON.stringify({ configVersion: 1, site: { id: 's1' } }));
    expect(loadConfig({ file, env: {} }).egress.allowlistWidth).toEqual({ ipv4: 16, ipv6: 64 });
    writeFileSync(file, JSON.stringify({ configVersion: 1, site: { id: 's1' }, egress: { allowlistWidth: { ipv4: 20 } } }));
    expect(loadConfig({ file, env: {} }).egress.allowlistWidth).toEqual({ ipv4: 20, ipv6: 64 });
    writeFileSync(file, JSON.stringify({ configVersion: 1, site: { id: 's1' }, egress: { allowlistWidth: { ipv4: 0 } } }));
    expect(errorOf(() => loadConfig({ file, env: {} })).message).toMatch(/egress\/allowlistWidth\/ipv4/);
  });

  it('ships an example policy that the schema and the loader accept, covering every auth type', () => {
    const file = join(ROOT, 'access-policies', 'endpoints.example.json');
    // Under the shipped configuration: its keys live in that configuration's secrets directory.
    const config = loadConfig({ file: join(ROOT, 'deploy', 'systemd', 'config.example.json'), env: {} });
    // Its CA and client files are /etc/ehrbench paths of the host it describes, not of this one.
    const policy = loadEndpointPolicy(file, { secrets: config.secrets, allowlistWidth: config.egress.allowlistWidth, checkFiles: false });
    const validate = validatorFor('endpoints.schema.json');
    expect(validate(JSON.parse(require('node:fs').readFileSync(file, 'utf8')))).toBe(true);
    expect(new Set(policy.endpoints.map((e) => e.auth.type))).toEqual(new Set(['api-key', 'apim-key', 'entra-id', 'none']));
    expect(policy.endpoints.some((e) => e.tls?.spkiSha256 && e.tls.clientCertFile)).toBe(true);
  });
});

describe('environment check', () => {
  const REFUSED: [string, NodeJS.ProcessEnv, string[], RegExp][] = [
    ['HTTPS_PROXY', { HTTPS_PROXY: 'http://10.99.0.1:3128' }, [], /variable HTTPS_PROXY is set/],
    ['https_proxy (lower case)', { https_proxy: 'http://10.99.0.1:3128' }, [], /variable https_proxy is set/],
    ['HTTP_PROXY', { HTTP_PROXY: 'http://proxy:3128' }, [], /variable HTTP_PROXY is set/],
    ['http_proxy', { http_proxy: 'http://proxy:3128' }, [], /variable http_proxy is set/],
    ['ALL_PROXY', { ALL_PROXY: 'socks5://proxy:1080' }, [], /variable ALL_PROXY is set/],
    ['all_proxy', { all_proxy: 'socks5://proxy:1080' }, [], /variable all_proxy is set/],
    ['an empty proxy variable', { HTTPS_PROXY: '' }, [], /variable HTTPS_PROXY is set/],
    ['NODE_USE_ENV_PROXY', { NODE_USE_ENV_PROXY: '1' }, [], /variable NODE_USE_ENV_PROXY is set/],
    ['NODE_TLS_REJECT_UNAUTHORIZED=0', { NODE_TLS_REJECT_UNAUTHORIZED: '0' }, [], /variable NODE_TLS_REJECT_UNAUTHORIZED is set/],
    ['OPENSSL_CONF', { OPENSSL_CONF: '/tmp/weak.cnf' }, [], /variable OPENSSL_CONF is set/],
    ['--use-env-proxy in NODE_OPTIONS', { NODE_OPTIONS: '--max-old-space-size=4096 --use-env-proxy' }, [], /NODE_OPTIONS holds --use-env-proxy/],
    ['--tls-keylog', { NODE_OPTIONS: '--tls-keylog=/tmp/keys.log' }, [], /NODE_OPTIONS holds --tls-keylog/],
    ['--tls-min-v1.0', { NODE_OPTIONS: '--tls-min-v1.0' }, [], /NODE_OPTIONS holds --tls-min-v1\.0/],
    ['--tls-cipher-list', { NODE_OPTIONS: '"--tls-cipher-list=NULL"' }, [], /NODE_OPTIONS holds --tls-cipher-list/],
    ['underscore spelling --tls_keylog', { NODE_OPTIONS: '--tls_keylog=/tmp/k' }, [], /NODE_OPTIONS holds --tls-keylog/],
    ['--openssl-legacy-provider', { NODE_OPTIONS: '--openssl-legacy-provider' }, [], /NODE_OPTIONS holds --openssl-legacy-provider/],
    ['--openssl-config', { NODE_OPTIONS: '--openssl-config=/tmp/x.cnf' }, [], /NODE_OPTIONS holds --openssl-config/],
    ['--use-openssl-ca', { NODE_OPTIONS: '--use-openssl-ca' }, [], /NODE_OPTIONS holds --use-openssl-ca/],
    ['--use-system-ca', { NODE_OPTIONS: '--use-system-ca' }, [], /NODE_OPTIONS holds --use-system-ca/],
    ['--insecure-http-parser', { NODE_OPTIONS: '--insecure-http-parser' }, [], /NODE_OPTIONS holds --insecure-http-parser/],
    ['--require preload', { NODE_OPTIONS: '--require /tmp/patch-tls.js' }, [], /NODE_OPTIONS holds --require/],
    ['-r preload', { NODE_OPTIONS: '-r /tmp/patch-tls.js' }, [], /NODE_OPTIONS holds -r/],
    ['--import preload', { NODE_OPTIONS: '--import=/tmp/patch.mjs' }, [], /NODE_OPTIONS holds --import/],
    ['--inspect', { NODE_OPTIONS: '--inspect=0.0.0.0:9229' }, [], /NODE_OPTIONS holds --inspect/],
    ['--use-env-proxy on the command line', {}, ['--use-env-proxy'], /node was started with --use-env-proxy/],
    ['--tls-min-v1.1 on the command line', {}, ['--tls-min-v1.1'], /node was started with --tls-min-v1\.1/],
  ];

  it.each(REFUSED)('refuses to start with %s, in one line naming it', (_what, env, argv, message) => {
    let err: unknown;
    try {
      assertSafeEgressEnvironment(env, argv);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).code).toBe('egress.unsafe-environment');
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message.split('\n')).toHaveLength(1);
  });

  it.each([
    ['NODE_EXTRA_CA_CERTS (every connection carries its own trust set)', { NODE_EXTRA_CA_CERTS: '/etc/ssl/certs/ca-certificates.crt' }, []],
    ['NO_PROXY without a proxy', { NO_PROXY: 'localhost', no_proxy: '*' }, []],
    ['SSL_CERT_FILE', { SSL_CERT_FILE: '/etc/ssl/cert.pem' }, []],
    ['harmless NODE_OPTIONS from CI tooling', { NODE_OPTIONS: '--max-old-space-size=4096 --enable-source-maps --dns-result-order=ipv4first --use-bundled-ca' }, []],
    ['empty NODE_OPTIONS', { NODE_OPTIONS: '' }, []],
    ["jest's own command line", {}, ['--experimental-vm-modules', '--disable-warning=ExperimentalWarning']],
    ['a quoted value that mentions a flag', { NODE_OPTIONS: '--title="--tls-keylog is not a flag here"' }, []],
  ])('accepts %s', (_what, env, argv) => {
    expect(() => assertSafeEgressEnvironment(env as NodeJS.ProcessEnv, argv as string[])).not.toThrow();
  });

  it('the process the tests run in passes (or this suite would be meaningless)', () => {
    expect(() => assertSafeEgressEnvironment(process.env, process.execArgv)).not.toThrow();
  });

  it('openApp refuses before reading any configuration', async () => {
    const missing = join(tempDir('egress-env'), 'no-such-config.json');
    await expect(openApp({ file: missing, env: { HTTPS_PROXY: 'http://10.99.0.1:3128' } })).rejects.toThrow(/environment variable HTTPS_PROXY is set/);
    // Without the variable the same call fails on the missing config instead.
    await expect(openApp({ file: missing, env: {} })).rejects.not.toThrow(/HTTPS_PROXY/);
  });
});
