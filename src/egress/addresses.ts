/**
 * IP addresses and CIDR ranges, strictly. Everything here goes through ipaddr.js, but ipaddr.js is
 * lenient by design (it accepts classful, octal and hex IPv4 forms and IPv6 zone ids), so config
 * values are first held to one written form: IPv4 as four decimal parts without leading zeros
 * (`010.20.0.5` would otherwise mean 8.20.0.5), IPv6 without zone ids and without an embedded IPv4
 * address (IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo), which would let an
 * IPv6 rule reach IPv4 hosts it does not name.
 */
import ipaddr from 'ipaddr.js';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type Cidr = [Address, number];

/** IPv6 ranges whose addresses carry an IPv4 address inside them. */
const EMBEDDING_RANGES: { name: string; cidr: string }[] = [
  { name: 'IPv4-mapped', cidr: '::ffff:0:0/96' },
  { name: 'IPv4-translated', cidr: '::ffff:0:0:0/96' },
  { name: 'NAT64', cidr: '64:ff9b::/96' },
  { name: 'NAT64 local-use', cidr: '64:ff9b:1::/48' },
  { name: '6to4', cidr: '2002::/16' },
  { name: 'Teredo', cidr: '2001::/32' },
];
/** IPv4-compatible `::a.b.c.d` (deprecated); `::` and `::1` in the same /96 are not embeddings. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];
const NOT_COMPATIBLE = ipaddr.parseCIDR('::/127') as [ipaddr.IPv6, number];

const parsedEmbedding = EMBEDDING_RANGES.map((r) => ({ name: r.name, range: ipaddr.parseCIDR(r.cidr) as [ipaddr.IPv6, number] }));

/** The name of the IPv4-embedding range an IPv6 address lies in, if any. */
export function ipv4Embedding(addr: Address): string | undefined {
  if (addr.kind() !== 'ipv6') return undefined;
  const v6 = addr as ipaddr.IPv6;
  for (const e of parsedEmbedding) if (v6.match(e.range)) return e.name;
  if (v6.match(IPV4_COMPATIBLE) && !v6.match(NOT_COMPATIBLE)) return 'IPv4-compatible';
  return undefined;
}

function contains(range: Cidr, addr: Address): boolean {
  return range[0].kind() === addr.kind() && addr.match(range as [ipaddr.IPv4, number] & [ipaddr.IPv6, number]);
}

/** True when two ranges share at least one address. */
function overlaps(a: Cidr, b: Cidr): boolean {
  return a[1] <= b[1] ? contains(a, b[0]) : contains(b, a[0]);
}

const FOUR_PART = /^(0|[1-9]\d{0,2})(\.(0|[1-9]\d{0,2})){3}$/;
const PREFIX = /^(0|[1-9]\d{0,2})$/;

/**
 * Parses one address as written in a policy; returns a reason instead when it is not in the one
 * accepted form. Never throws.
 */
export function parseConfigAddress(text: string): { addr: Address } | { problem: string } {
  const parsed = parseWritten(text);
  if ('problem' in parsed) return parsed;
  const embedded = ipv4Embedding(parsed.addr);
  if (embedded) return { problem: `this IPv6 address embeds an IPv4 address (${embedded}); write the IPv4 address` };
  return parsed;
}

/** The written-form checks shared by addresses and CIDR bases. */
function parseWritten(text: string): { addr: Address } | { problem: string } {
  if (typeof text !== 'string') return { problem: 'not an address' };
  if (text.includes('%')) return { problem: 'zone ids are not allowed' };
  if (text.includes(':')) {
    if (!ipaddr.IPv6.isValid(text)) return { problem: 'not a valid IPv6 address' };
    return { addr: ipaddr.IPv6.parse(text) };
  }
  if (!FOUR_PART.test(text) || !ipaddr.IPv4.isValidFourPartDecimal(text)) {
    return { problem: 'IPv4 must be four decimal parts without leading zeros (a leading 0 means octal to some resolvers)' };
  }
  return { addr: ipaddr.IPv4.parse(text) };
}

/** Parses one CIDR as written in a policy, with the same strictness; never throws. */
export function parseConfigCidr(text: string): { cidr: Cidr } | { problem: string } {
  const slash = typeof text === 'string' ? text.indexOf('/') : -1;
  if (slash < 0 || text.indexOf('/', slash + 1) >= 0) return { problem: 'write a range as ADDRESS/PREFIX' };
  if (typeof text !== 'string') return { problem: 'not a range' };
  const base = parseWritten(text.slice(0, slash));
  if ('problem' in base) return base;
  const prefixText = text.slice(slash + 1);
  const max = base.addr.kind() === 'ipv4' ? 32 : 128;
  if (!PREFIX.test(prefixText) || Number(prefixText) > max) return { problem: `prefix length must be 0-${max}` };
  const bits = Number(prefixText);
  if (bits === 0) return { problem: 'a /0 range allows every address; list the endpoint subnet' };
  const cidr: Cidr = [base.addr, bits];
  const network = base.addr.kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(text) : ipaddr.IPv6.networkAddressFromCIDR(text);
  if (network.toString() !== base.addr.toString()) return { problem: `host bits are set; write ${network.toString()}/${bits}` };
  if (base.addr.kind() === 'ipv6') {
    for (const e of parsedEmbedding) {
      if (overlaps(cidr, e.range)) return { problem: `overlaps the ${e.name} range ${e.range[0].toString()}/${e.range[1]}, which embeds IPv4 addresses` };
    }
    if (overlaps(cidr, IPV4_COMPATIBLE) && !(bits >= 127 && contains(NOT_COMPATIBLE, base.addr))) {
      return { problem: 'overlaps the IPv4-compatible range ::/96, which embeds IPv4 addresses' };
    }
  }
  return { cidr };
}

/**
 * Parses an address from a resolver or a socket. IPv4-mapped IPv6 answers are unwrapped (the socket
 * would reach the IPv4 host); anything unparseable is undefined. Never throws.
 */
export function parseAnswer(text: string): Address | undefined {
  try {
    if (typeof text !== 'string' || text.includes('%')) return undefined;
    if (!ipaddr.isValid(text)) return undefined;
    if (!text.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
    return ipaddr.process(text);
  } catch {
    return undefined;
  }
}

/**
 * True only when `address` lies in one of the CIDRs. Unwraps IPv4-mapped IPv6 first. The unspecified
 * address (0.0.0.0, ::) is never allowed: connecting to it reaches this machine. Never throws: any
 * problem is a refusal.
 */
export function addressAllowed(address: string, cidrs: readonly string[]): boolean {
  return matchingCidr(address, cidrs) !== undefined;
}

/** The first CIDR that contains the address (for decisions that name their rule), or undefined. */
export function matchingCidr(address: string, cidrs: readonly string[]): string | undefined {
  try {
    const addr = parseAnswer(address);
    if (!addr || addr.range() === 'unspecified') return undefined;
    if (!Array.isArray(cidrs)) return undefined;
    return cidrs.find((text) => {
      const parsed = parseConfigCidr(text);
      return 'cidr' in parsed && contains(parsed.cidr, addr);
    });
  } catch {
    return undefined;
  }
}

/** The canonical text of an address (IPv4 dotted decimal, IPv6 compressed), unwrapping IPv4-mapped. */
export function canonicalAddress(address: string): string | undefined {
  return parseAnswer(address)?.toString();
}

export { ipaddr };

/** An address as an unsigned integer (32 bits for IPv4, 128 for IPv6). */
function addressValue(addr: Address): bigint {
  return addr.toByteArray().reduce((n, byte) => (n << 8n) | BigInt(byte), 0n);
}

/**
 * How many addresses the ranges cover together, per family, each address counted once however many
 * ranges hold it: `0.0.0.0/1` and `128.0.0.0/1` are all of IPv4, as a /0 would be.
 */
export function coveredAddresses(cidrs: readonly Cidr[]): { ipv4: bigint; ipv6: bigint } {
  const total = { ipv4: 0n, ipv6: 0n };
  for (const family of ['ipv4', 'ipv6'] as const) {
    const bits = family === 'ipv4' ? 32 : 128;
    const spans = cidrs
      .filter(([base]) => base.kind() === family)
      .map(([base, prefix]) => ({ start: addressValue(base), end: addressValue(base) + (1n << BigInt(bits - prefix)) }))
      .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    let end = 0n;
    for (const span of spans) {
      // Only the part past what earlier ranges already covered counts.
      const from = span.start > end ? span.start : end;
      if (span.end > from) total[family] += span.end - from;
      if (span.end > end) end = span.end;
    }
  }
  return total;
}
