/**
 * The bundle as a recipient sees it, with no database: closed schema at every level, a detached
 * signature that catches any byte change, and the disclosure invariants the schema cannot express.
 */
import { createPublicKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { canonicalJson } from '../../src/canonical';
import { type Bundle, keyFingerprint, signBundle, type UnsignedBundle, verifyBundle } from '../../src/export';
import type { ExportSigningKey } from '../../src/export/keys';

function newKey(): ExportSigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, fingerprint: keyFingerprint(publicKey) };
}

const HASH = 'a'.repeat(64);

/** A bundle with every optional part present (interval, subgroups, HELM refs), as a release makes it. */
function sampleUnsigned(): UnsignedBundle {
  return {
    format: 'ehrbench.export-bundle',
    schemaVersion: 1,
    exportId: '0b6f7c52-8f0e-4d43-9d4a-3f3d2b1c0a99',
    siteId: 'test-site',
    runIds: ['7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d'],
    tier: 'private',
    irbProtocol: 'IRB-2024-0042',
    duaId: null,
    requestedBy: 'alice',
    requestedOn: '2026-03-14',
    disclosure: {
      policyId: 'ehrbench.min-cell-size.v1',
      k: 11,
      countRangeWidth: 10,
      complementarySuppression: true,
      valueDecimals: 3,
      ci: 'wilson-95 (0/1 metrics), normal-95 (others)',
      differencing: 'released cohorts of a benchmark differ by 0 or at least k instances',
    },
    results: [
      {
        runId: '7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
        benchmark: {
          id: 'site_private',
          version: '1.0.0',
          category: 'Administration and Workflow',
          subcategory: 'Care Coordination and Planning',
          tier: 'private',
          helmGroup: null,
          split: 'test',
          lowerIsBetter: false,
          definitionHash: HASH,
          templateHash: HASH,
        },
        model: { endpointId: 'vpc-private', provider: 'openai-compatible', deployment: null, model: 'ehrbench-demo-standin', maxTokens: 1, temperature: 0 },
        scoring: 'corrected',
        deidVersion: null,
        mainMetric: 'exact_match',
        n: { low: 40, high: 49 },
        metrics: [{ name: 'exact_match', value: 0.5, n: { low: 40, high: 49 }, ci95: { low: 0.35, high: 0.65 } }],
        subgroups: [
          {
            field: 'unit',
            cells: [
              { label: 'ward', n: { low: 30, high: 39 }, metrics: [{ name: 'exact_match', value: 0.5, n: { low: 30, high: 39 }, ci95: { low: 0.3, high: 0.7 } }] },
              { label: 'icu', suppressed: '<k' },
              { label: '(other)', suppressed: 'complementary' },
            ],
          },
        ],
        usage: { promptTokens: 12000, completionTokens: 0, estimatedCostUsd: 0.03 },
      },
    ],
    totals: { promptTokens: 12000, completionTokens: 0, estimatedCostUsd: 0.03 },
    createdOn: '2026-03-15',
    releasedBy: 'carol',
    daemonVersion: '0.1.0',
    auditCheckpoint: { checkpointId: 4, seq: 120, headHash: HASH, keyFingerprint: HASH, releaseEventSeq: 119 },
    helm: [{ runName: 'site_private:model=ehrbench-demo-standin', runSpecSha256: HASH, statsSha256: HASH }],
  };
}

/** Every object inside a value, with a path, so a test can add a field at each level. */
function objectsOf(value: unknown, path = '$'): { path: string; obj: Record<string, unknown> }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => objectsOf(v, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return [{ path, obj }, ...Object.entries(obj).flatMap(([k, v]) => objectsOf(v, `${path}.${k}`))];
  }
  return [];
}

/** Signs whatever it is given, bypassing signBundle's own refusal: what a forger with the key could make. */
function forceSign(b: object, key: ExportSigningKey): string {
  const { signature: _drop, ...unsigned } = b as Bundle;
  const value = sign(null, Buffer.from(canonicalJson(unsigned)), key.privateKey).toString('hex');
  return canonicalJson({ ...unsigned, signature: { algorithm: 'Ed25519', keyFingerprint: key.fingerprint, value } }) + '\n';
}

describe('export bundle', () => {
  const key = newKey();
  const signed = signBundle(sampleUnsigned(), key);

  it('verifies with the site public key and nothing else', () => {
    const report = verifyBundle(signed.text, key.publicKey);
    expect(report).toEqual({ ok: true, problems: [], exportId: sampleUnsigned().exportId, keyFingerprint: key.fingerprint, results: 1 });
  });

  it('is written as canonical JSON and one newline', () => {
    expect(signed.text).toBe(canonicalJson(JSON.parse(signed.text)) + '\n');
  });

  it('rejects an extra field at every object level, even when validly signed', () => {
    const levels = objectsOf(JSON.parse(signed.text));
    expect(levels.length).toBeGreaterThan(20);
    for (const { path } of levels) {
      for (const field of ['note', 'min', 'latencyMs']) {
        const copy = JSON.parse(signed.text) as Bundle;
        const target = objectsOf(copy).find((o) => o.path === path)?.obj as Record<string, unknown>;
        target[field] = field === 'note' ? 'free text' : 3;
        // The signature object itself cannot be re-signed; an extra field there must fail all the same.
        const text = path === '$.signature' ? canonicalJson(copy) + '\n' : forceSign(copy, key);
        const report = verifyBundle(text, key.publicKey);
        expect({ path, field, ok: report.ok }).toEqual({ path, field, ok: false });
        expect(report.problems.some((p) => p.startsWith('schema:'))).toBe(true);
        // And ehrbench itself refuses to sign it.
        if (path === '$.signature') continue;
        const { signature: _s, ...unsigned } = copy;
        expect(() => signBundle(unsigned as UnsignedBundle, key)).toThrow(/does not match export-bundle.schema.json/);
      }
    }
  });

  it.each([
    ['per-instance rows', (b: Bundle) => Object.assign(b.results[0] as object, { instances: [{ id: 'x', score: 1 }] })],
    ['a prediction', (b: Bundle) => Object.assign(b.results[0]?.metrics[0] as object, { prediction: 'yes' })],
    ['min and max of a small group', (b: Bundle) => Object.assign(b.results[0]?.subgroups[0]?.cells[0] as object, { min: 0, max: 1 })],
    ['per-instance latency', (b: Bundle) => Object.assign(b.results[0]?.usage as object, { latencyMs: [12, 15] })],
    ['a time finer than a day', (b: Bundle) => Object.assign(b, { createdOn: '2026-03-15T10:22:01Z' })],
    ['free text as a subgroup label', (b: Bundle) => Object.assign(b.results[0]?.subgroups[0]?.cells[1] as object, { label: 'Mr. Smith, bed 4: "tired"' })],
    ['an exact count below k', (b: Bundle) => Object.assign(b.results[0] as object, { n: 7 })],
  ])('refuses %s', (_what, mutate) => {
    const copy = JSON.parse(signed.text) as Bundle;
    mutate(copy);
    expect(verifyBundle(forceSign(copy, key), key.publicKey).ok).toBe(false);
  });

  it('fails verification when any single byte of the file changes', () => {
    const bytes = Buffer.from(signed.text, 'utf8');
    let failures = 0;
    for (let i = 0; i < bytes.length; i++) {
      const changed = Buffer.from(bytes);
      // A different printable byte: every position, including whitespace, quotes and the signature.
      changed[i] = bytes[i] === 0x41 ? 0x42 : 0x41;
      const report = verifyBundle(changed.toString('utf8'), key.publicKey);
      if (!report.ok) failures += 1;
      else throw new Error(`byte ${i} changed and the bundle still verifies`);
    }
    expect(failures).toBe(bytes.length);
    // Dropping or adding the trailing newline, or re-indenting, is a change too.
    expect(verifyBundle(signed.text.trimEnd(), key.publicKey).ok).toBe(false);
    expect(verifyBundle(JSON.stringify(JSON.parse(signed.text), null, 2) + '\n', key.publicKey).ok).toBe(false);
  });

  it('fails with another key, and names the signing key', () => {
    const other: KeyObject = newKey().publicKey;
    const report = verifyBundle(signed.text, other);
    expect(report.ok).toBe(false);
    expect(report.problems.join(' ')).toMatch(/^signature: signed by key [0-9a-f]{16}\.\.\., not by the given key/);
  });

  it('catches what the schema cannot: counts below k, a lone hidden cell, self-release, an uncovered release event', () => {
    const cases: [string, (b: Bundle) => void, RegExp][] = [
      ['range below k', (b) => Object.assign(b.results[0] as object, { n: { low: 5, high: 9 } }), /count 5-9 is below k = 11/],
      ['lone hidden cell', (b) => b.results[0]?.subgroups[0]?.cells.splice(2, 1), /hides exactly one cell/],
      ['self-release', (b) => Object.assign(b, { releasedBy: 'alice' }), /released by its requester/],
      ['uncovered', (b) => Object.assign(b.auditCheckpoint, { seq: 100 }), /checkpoint does not cover/],
    ];
    for (const [what, mutate, problem] of cases) {
      const copy = JSON.parse(signed.text) as Bundle;
      mutate(copy);
      const report = verifyBundle(forceSign(copy, key), key.publicKey);
      expect({ what, ok: report.ok }).toEqual({ what, ok: false });
      expect(report.problems.join('\n')).toMatch(problem);
      const { signature: _s, ...unsigned } = copy;
      expect(() => signBundle(unsigned as UnsignedBundle, key)).toThrow(/breaks disclosure control/);
    }
  });
});
