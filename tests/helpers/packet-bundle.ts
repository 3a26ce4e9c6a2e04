/**
 * A bundle with an evidence packet, signed by the real bundle builder (signBundle: schema, disclosure
 * and packet checks) with a throwaway key: what `export request --packet` then a release would make,
 * with every part of the packet present. `hostile` goes into the one free-text field, intendedUse.
 */
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { type Bundle, COMMITTEE_FIELDS, keyFingerprint, signBundle, type UnsignedBundle } from '../../src/export';
import type { ExportSigningKey } from '../../src/export/keys';

export function newSigningKey(): ExportSigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const publicKey = createPublicKey(privateKey);
  return { privateKey, publicKey, fingerprint: keyFingerprint(publicKey) };
}

const HASH = 'a'.repeat(64);
export const PACKET_EXPORT_ID = '0b6f7c52-8f0e-4d43-9d4a-3f3d2b1c0a99';
const RUN_ID = '7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

export function packetUnsigned(intendedUse = 'Summarise discharge notes for the ward team, reviewed by a clinician before use.'): UnsignedBundle {
  return {
    format: 'ehrbench.export-bundle',
    schemaVersion: 1,
    exportId: PACKET_EXPORT_ID,
    siteId: 'test-site',
    runIds: [RUN_ID],
    tier: 'private',
    irbProtocol: 'IRB-2026-0042',
    duaId: null,
    requestedBy: 'alice',
    requestedOn: '2026-11-30',
    disclosure: {
      policyId: 'ehrbench.min-cell-size.v2',
      k: 11,
      countRangeWidth: 10,
      complementarySuppression: true,
      valueDecimals: 3,
      valueResolution: '1/D, D the largest of 1000, 500, 200, 100, 50, 20, 10, 5, 2, 1 at most the low end of the count range',
      ci: 'widest wilson-95 over the count range and the values that round to the released one ([0, 1] metrics); none (others)',
      differencing: 'every released cell of a benchmark differs from every other by 0 or at least k instances, whatever its name',
    },
    results: [
      {
        runId: RUN_ID,
        benchmark: {
          id: 'site_discharge',
          version: '1.0.0',
          category: 'Clinical Note Generation',
          subcategory: 'Documentation',
          tier: 'private',
          helmGroup: null,
          split: 'test',
          lowerIsBetter: false,
          definitionHash: HASH,
          templateHash: HASH,
        },
        model: { endpointId: 'vpc-private', provider: 'openai-compatible', deployment: null, model: 'site-llm-7b', maxTokens: 512, temperature: 0 },
        scoring: 'corrected',
        deidVersion: 'deid-2.1.0',
        mainMetric: 'exact_match',
        n: { low: 40, high: 49 },
        metrics: [{ name: 'exact_match', value: 0.6, n: { low: 40, high: 49 }, ci95: { low: 0.44, high: 0.74 } }],
        subgroups: [
          {
            field: 'sex',
            cells: [
              { label: 'female', n: { low: 20, high: 29 }, metrics: [{ name: 'exact_match', value: 0.65, n: { low: 20, high: 29 }, ci95: { low: 0.42, high: 0.83 } }] },
              { label: 'male', n: { low: 20, high: 29 }, metrics: [{ name: 'exact_match', value: 0.45, n: { low: 20, high: 29 }, ci95: { low: 0.25, high: 0.66 } }] },
              { label: '(other)', n: { low: 0, high: 0 }, metrics: [] },
            ],
          },
        ],
        usage: { promptTokens: 12000, completionTokens: 3000, estimatedCostUsd: 0.03 },
      },
    ],
    totals: { promptTokens: 12000, completionTokens: 3000, estimatedCostUsd: 0.03 },
    packet: {
      kind: 'ehrbench.evidence-packet.v1',
      model: { endpointId: 'vpc-private', provider: 'openai-compatible', deployment: null, model: 'site-llm-7b' },
      approval: {
        approvalId: '5a1e2d3c-4b5a-4f6e-8d7c-6b5a4f3e2d1c',
        protocol: 'IRB-2026-0042',
        intendedUse,
        startsOn: '2026-10-01',
        expiresOn: '2027-09-30',
        tiers: ['private'],
        benchmarks: ['site_discharge'],
      },
      stability: [
        {
          benchmarkId: 'site_discharge',
          metric: 'exact_match',
          repeats: 3,
          instances: { low: 20, high: 29 },
          exactAgreement: { value: 0.9, ci95: { low: 0.68, high: 0.98 } },
          scoreSpread: { sd: 0.05, min: 0.55, max: 0.65 },
        },
      ],
      deid: { gold: { evaluatedOn: '2026-09-20', recall: 0.97, precision: 0.91, phiInstances: { low: 100, high: 109 } }, residualBlocked: { suppressed: '<k' } },
      fingerprints: [{ endpointId: 'vpc-private', model: 'site-llm-7b', systemFingerprint: 'fp_0a1b2c', firstSeenOn: '2026-10-02', lastSeenOn: '2026-11-29' }],
      drift: [
        {
          on: '2026-11-15',
          benchmarkId: 'site_discharge',
          metric: 'exact_match',
          test: 'exact-mcnemar',
          instances: { low: 20, high: 29 },
          baseline: 0.6,
          canary: 0.4,
          pValue: 0.012,
          threshold: 0.05,
          minDifference: 0.05,
          outcome: 'changed',
          reviewedOn: '2026-11-20',
        },
      ],
      evidence: [
        { figure: '/results/0/metrics', auditSeq: 57 },
        { figure: '/results/0/subgroups/0', auditSeq: 57 },
        { figure: '/packet/drift/0', auditSeq: 101 },
      ],
      committeeFields: [...COMMITTEE_FIELDS],
    },
    createdOn: '2026-12-01',
    releasedBy: 'carol',
    daemonVersion: '0.1.0',
    auditCheckpoint: { checkpointId: 4, seq: 120, headHash: HASH, keyFingerprint: HASH, releaseEventSeq: 119 },
    helm: [],
  };
}

/** The packet bundle signed, as a released export's bundle.json holds it. */
export function packetBundle(intendedUse?: string, key: ExportSigningKey = newSigningKey()): { bundle: Bundle; text: string; key: ExportSigningKey } {
  return { ...signBundle(packetUnsigned(intendedUse), key), key };
}
