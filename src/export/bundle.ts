/**
 * Signing and verifying bundles. A bundle file is exactly the RFC 8785 canonical JSON of the bundle
 * and a newline; its `signature` is a detached Ed25519 signature over the canonical JSON of the bundle
 * without that field. So any change of any byte is caught: it breaks the JSON, changes a signed
 * value, leaves the canonical form, or changes the signature. Verification needs the file and the
 * site's public key only: no database, no configuration.
 */
import { sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../canonical';
import { formatSchemaErrors, validatorFor } from '../schema';
import { UserError } from '../errors';
import { valueDenominator } from './disclosure';
import { metricDisparity } from './disparity';
import { keyFingerprint, type ExportSigningKey } from './keys';
import { packetProblems } from './packet';
import type { Bundle, CountRange, ExportResult, MetricCell, Subgroup, UnsignedBundle } from './types';

export const BUNDLE_SCHEMA = 'export-bundle.schema.json';
export const BUNDLE_FILE = 'bundle.json';

/** Signs a bundle; refuses (a programming error) to sign anything the bundle schema rejects. */
export function signBundle(unsigned: UnsignedBundle, key: ExportSigningKey): { bundle: Bundle; text: string } {
  const payload = canonicalJson(unsigned);
  const bundle: Bundle = {
    ...unsigned,
    signature: { algorithm: 'Ed25519', keyFingerprint: key.fingerprint, value: sign(null, Buffer.from(payload, 'utf8'), key.privateKey).toString('hex') },
  };
  const validate = validatorFor(BUNDLE_SCHEMA);
  if (!validate(bundle)) {
    throw new UserError('export.bundle-invalid', `the bundle does not match ${BUNDLE_SCHEMA} (${formatSchemaErrors(validate.errors).join('; ')}); nothing was released`);
  }
  const problems = disclosureProblems(bundle);
  if (problems.length) throw new UserError('export.bundle-invalid', `the bundle breaks disclosure control (${problems.join('; ')}); nothing was released`);
  return { bundle, text: canonicalJson(bundle) + '\n' };
}

export interface VerifyReport {
  ok: boolean;
  /** One line per problem, each naming its check. */
  problems: string[];
  exportId?: string;
  keyFingerprint?: string;
  results?: number;
}

/** Checks a bundle file's text with a public key: form, schema, signature, disclosure invariants. */
export function verifyBundle(text: string, publicKey: KeyObject): VerifyReport {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { ok: false, problems: ['format: not JSON'] };
  }
  let canonical: string;
  try {
    canonical = canonicalJson(parsed) + '\n';
  } catch {
    return { ok: false, problems: ['format: cannot be canonicalised'] };
  }
  const problems: string[] = [];
  if (canonical !== text) problems.push('format: not the canonical form ehrbench writes (RFC 8785 JSON and one newline); the file was changed');
  const validate = validatorFor(BUNDLE_SCHEMA);
  if (!validate(parsed)) {
    return { ok: false, problems: [...problems, ...formatSchemaErrors(validate.errors).map((e) => `schema: ${e}`)] };
  }
  const bundle = parsed as Bundle;
  const fingerprint = keyFingerprint(publicKey);
  if (bundle.signature.keyFingerprint !== fingerprint) {
    problems.push(`signature: signed by key ${bundle.signature.keyFingerprint.slice(0, 16)}..., not by the given key ${fingerprint.slice(0, 16)}...`);
  } else {
    const { signature, ...unsigned } = bundle;
    let valid = false;
    try {
      valid = verify(null, Buffer.from(canonicalJson(unsigned), 'utf8'), publicKey, Buffer.from(signature.value, 'hex'));
    } catch {
      valid = false;
    }
    if (!valid) problems.push('signature: does not verify; the bundle was changed after signing');
  }
  problems.push(...disclosureProblems(bundle));
  return { ok: problems.length === 0, problems, exportId: bundle.exportId, keyFingerprint: bundle.signature.keyFingerprint, results: bundle.results.length };
}

/**
 * A field's disparity must be what its released cells give: the same worst and best groups, ratios and
 * flags, recomputed here from the cells (so it can neither state a hidden value nor contradict them).
 */
function disparityProblems(sg: Subgroup, where: string): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const d of sg.disparity ?? []) {
    if (seen.has(d.metric)) problems.push(`disclosure: ${where} states the disparity of ${d.metric} twice`);
    seen.add(d.metric);
    const expected = metricDisparity(sg.cells, d.metric, d.lowerIsBetter);
    if (!expected || canonicalJson(expected) !== canonicalJson(d)) problems.push(`disclosure: ${where} disparity of ${d.metric} is not what its released cells give`);
  }
  return problems;
}

/**
 * What the schema cannot express: counts are 0 or ranges at or above k, values no finer than their
 * range allows (policy v2), no partition has exactly one hidden non-empty cell, the releaser is not
 * the requester, the checkpoint covers the release event; an evidence packet's own rules (packet.ts).
 */
export function disclosureProblems(b: Pick<Bundle, 'disclosure' | 'results' | 'requestedBy' | 'releasedBy' | 'auditCheckpoint' | 'irbProtocol' | 'packet'>): string[] {
  const k = b.disclosure.k;
  const problems: string[] = [];
  const checkRange = (r: CountRange, where: string) => {
    const zero = r.low === 0 && r.high === 0;
    if (!zero && (r.low < k || r.high < r.low)) problems.push(`disclosure: ${where} count ${r.low}-${r.high} is below k = ${k}`);
  };
  const d = b.disclosure;
  const checkValue = (value: number, low: number, where: string) => {
    if (d.policyId !== 'ehrbench.min-cell-size.v2') return;
    const denominator = valueDenominator(low, d.valueDecimals);
    if (Math.abs(value * denominator - Math.round(value * denominator)) > 1e-6) problems.push(`disclosure: ${where} value ${value} is finer than 1/${denominator}, the resolution of its count range`);
  };
  const checkMetrics = (metrics: MetricCell[], where: string) => {
    for (const m of metrics) {
      if (!('value' in m)) continue;
      checkRange(m.n, `${where} metric ${m.name}`);
      checkValue(m.value, m.n.low, `${where} metric ${m.name}`);
    }
  };
  b.results.forEach((r: ExportResult, i) => {
    const where = `results[${i}]`;
    if ('suppressed' in r.n) {
      if (r.metrics.some((m) => 'value' in m) || r.subgroups.length > 0 || r.usage !== null) problems.push(`disclosure: ${where} has a suppressed count but releases aggregates`);
      return;
    }
    checkRange(r.n, where);
    checkMetrics(r.metrics, where);
    for (const sg of r.subgroups) {
      const hidden = sg.cells.filter((c) => 'suppressed' in c).length;
      if (hidden === 1) problems.push(`disclosure: ${where} subgroup ${sg.field} hides exactly one cell (no complementary suppression)`);
      for (const c of sg.cells) {
        if ('suppressed' in c) continue;
        checkRange(c.n, `${where} subgroup ${sg.field}`);
        checkMetrics(c.metrics, `${where} subgroup ${sg.field}`);
      }
      problems.push(...disparityProblems(sg, `${where} subgroup ${sg.field}`));
    }
  });
  if (b.releasedBy === b.requestedBy) problems.push('approval: released by its requester');
  if (b.auditCheckpoint.seq < b.auditCheckpoint.releaseEventSeq) problems.push('audit: the checkpoint does not cover the export.release event');
  // The packet's counts and values pass the same rules, and its pointers must name figures of this bundle.
  if (b.packet) problems.push(...packetProblems(b.packet, b));
  return problems;
}
