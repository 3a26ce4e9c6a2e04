import canonicalize from 'canonicalize';
import { canonicalRecord, rowHash } from '../../src/audit/record';

const AWKWARD = ['', 'plain', 'quote " and backslash \\', 'new\nline\ttab', '\u0000\u001f\u007f', 'ünïcödé — ✓', '\u2028\u2029', '😀 astral', '</script>', '{"a":1}'];

function record(i: number) {
  const pick = (k: number) => AWKWARD[(i + k) % AWKWARD.length] as string;
  return {
    seq: i + 1,
    event_id: '7f1c9a52-3f0e-4d6a-9a43-1b0c2d3e4f50',
    schema_version: 1,
    recorded_at: new Date(1_700_000_000_000 + i * 1234).toISOString(),
    event_type: 'endpoint.call',
    action: 'E' as const,
    outcome: 'success' as const,
    rule: i % 3 ? pick(1) : null,
    reason: pick(2),
    actor_principal: pick(3),
    actor_role: 'service',
    actor_auth: 'service',
    purpose: i % 2 ? pick(4) : null,
    irb_protocol: null,
    run_id: pick(5),
    benchmark_id: null,
    tier: 'private',
    endpoint_id: pick(6),
    export_id: null,
    approval_id: null,
    address: '10.20.4.7:443',
    detail: { zeta: i, alpha: pick(7), Beta: true, mid_1: -0.5 * i, _x: 2 ** 53 - i, ['ü' + i]: 1e21 + i },
    site_id: 'site',
    host: pick(8),
    daemon_version: '0.1.0',
    prev_hash: 'ab'.repeat(32),
  };
}

describe('canonical audit record', () => {
  it('equals the general RFC 8785 implementation on records with awkward strings and numbers', () => {
    for (let i = 0; i < 500; i++) {
      const r = record(i);
      expect(canonicalRecord(r)).toBe(canonicalize(r));
    }
  });

  it('changes its hash when any covered field changes', () => {
    const base = record(7);
    const h = rowHash(base);
    for (const key of Object.keys(base) as (keyof typeof base)[]) {
      const changed = { ...base, [key]: key === 'detail' ? { ...base.detail, zeta: 99 } : key === 'seq' || key === 'schema_version' ? 999 : 'changed' };
      expect(rowHash(changed as typeof base)).not.toBe(h);
    }
  });
});
