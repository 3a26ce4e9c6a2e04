/**
 * The test profile of `ehrbench init --test-endpoints`: one loopback endpoint per tier, served by
 * `ehrbench demo-server`, so IT can run a public, an approval-required and a private run end to end on
 * the daemon before a real model is connected. Each is marked `test: true` and described as such:
 *   test-public              development endpoint, public tier
 *   test-approval-required   development endpoint, approval-required tier
 *   test-private             NOT a development endpoint: the rules refuse development endpoints for
 *                            private data (endpoint.development-not-private), so it claims the in-VPC
 *                            and BAA classification the private tier needs. What keeps that claim
 *                            harmless is the `test` marker: loopback addresses only, refused otherwise
 *                            at load (policy.test-endpoint-not-loopback); reached by EHR-tier data only
 *                            under an IRB approval naming it (approval.test-endpoint-not-named); printed
 *                            as TEST by `endpoints list` and `runs show`; a warning in the daemon log at
 *                            start-up.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { readJsonFile } from '../schema';

export const TEST_ENDPOINT_DESCRIPTION = 'TEST ENDPOINT: loopback stand-in, never real data';
export const TEST_ENDPOINT_IDS = ['test-public', 'test-approval-required', 'test-private'] as const;

/** The three test endpoints on the loopback stand-in's port (the demo endpoint's). */
export function testEndpointDefinitions(port: number): Record<string, unknown>[] {
  const loopback = {
    provider: 'openai-compatible',
    url: `https://localhost:${port}/v1`,
    model: 'ehrbench-demo-standin',
    addresses: ['127.0.0.1'],
    allowedCidrs: ['127.0.0.1/32'],
    tls: { caFile: '../keys/dev-ca.pem' },
    auth: { type: 'none' },
    test: true,
  };
  const described = (tier: string) => `${TEST_ENDPOINT_DESCRIPTION} (${tier} tier; serve it with "${commandPrefix()} demo-server")`;
  return [
    { id: 'test-public', description: described('public'), ...loopback, classification: { inVpc: true, baa: false, maxTier: 'public', development: true } },
    {
      id: 'test-approval-required',
      description: described('approval-required'),
      ...loopback,
      classification: { inVpc: true, baa: false, maxTier: 'approval-required', development: true },
    },
    { id: 'test-private', description: described('private'), ...loopback, classification: { inVpc: true, baa: true, maxTier: 'private' } },
  ];
}

/** The port of an endpoint's https URL, when it has one written. */
function portOf(url: unknown): number | undefined {
  if (typeof url !== 'string') return undefined;
  try {
    const port = Number(new URL(url).port);
    return port > 0 ? port : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Adds the test endpoints that are missing to the policy file (an endpoint already there under one of
 * their ids is kept as it is). Returns whether the file changed. The port is the one asked for, else
 * the demo endpoint's, so one `demo-server` serves them all.
 */
export function addTestEndpoints(file: string, demoEndpointId: string, fallbackPort: number, port?: number): boolean {
  const policy = (existsSync(file) ? readJsonFile(file, 'policy.invalid') : { endpoints: [] }) as { endpoints?: { id?: unknown; url?: unknown }[] };
  const endpoints = Array.isArray(policy.endpoints) ? policy.endpoints : [];
  const present = new Set(endpoints.map((e) => e.id));
  const onPort = port ?? portOf(endpoints.find((e) => e.id === demoEndpointId)?.url) ?? fallbackPort;
  const missing = testEndpointDefinitions(onPort).filter((e) => !present.has(e.id));
  if (missing.length === 0) return false;
  // Written whole and renamed into place: a reader (the daemon reloading its policy) never sees half.
  const next = `${file}.${process.pid}.tmp`;
  writeFileSync(next, JSON.stringify({ ...policy, endpoints: [...endpoints, ...missing] }, null, 2) + '\n', { mode: 0o644 });
  renameSync(next, file);
  return true;
}
