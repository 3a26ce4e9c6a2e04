/** What an endpoint said it served (src/models/served.ts): ids only, an allowlist of headers, a stable fingerprint. */
import type { Endpoint } from '../../src/contracts';
import { fingerprintOf, idSafe, modelsSha256, servedBy } from '../../src/models';

const openai = { id: 'vllm', provider: 'openai-compatible' } as Endpoint;
const azure = { id: 'aoai', provider: 'azure-openai', deployment: 'gpt-4o-prod', apiVersion: '2024-10-21' } as Endpoint;

describe('the fingerprint of a call', () => {
  it('keeps the allowlisted headers only, each cut to an id', () => {
    const headers = new Headers({ 'openai-model': 'gpt-4o-2024-08-06', 'x-ms-deployment-name': 'prod deployment<script>', 'set-cookie': 'secret=1', 'x-request-id': 'abc' });
    const s = servedBy(azure, { model: 'gpt-4o-2024-08-06', systemFingerprint: 'fp_abc123', headers });
    expect(s).toEqual({
      model: 'gpt-4o-2024-08-06',
      systemFingerprint: 'fp_abc123',
      deployment: 'gpt-4o-prod',
      apiVersion: '2024-10-21',
      headers: { 'openai-model': 'gpt-4o-2024-08-06', 'x-ms-deployment-name': 'proddeploymentscript' },
    });
    // The deployment and api-version are the configuration's, and only for Azure.
    expect(servedBy(openai, { model: 'm', headers: new Headers() })).toMatchObject({ deployment: null, apiVersion: null, systemFingerprint: null });
  });

  it('cuts any value to 100 id-safe characters, and an empty one to null', () => {
    expect(idSafe('a'.repeat(500))).toHaveLength(100);
    expect(idSafe('The patient, John Smith, said "hi"')).toBe('ThepatientJohnSmithsaidhi');
    expect(idSafe('  ')).toBeNull();
    expect(idSafe({ text: 'x' })).toBeNull();
  });

  it('changes with what was served, not with the order of headers or models', () => {
    const a = servedBy(openai, { model: 'm', systemFingerprint: 'fp1', headers: new Headers({ 'openai-model': 'm', 'openai-version': '1' }) });
    const b = { ...a, headers: { 'openai-version': '1', 'openai-model': 'm' } };
    expect(fingerprintOf(a)).toBe(fingerprintOf(b));
    expect(fingerprintOf(a)).not.toBe(fingerprintOf({ ...a, systemFingerprint: 'fp2' }));
    expect(fingerprintOf(a)).not.toBe(fingerprintOf({ ...a, modelsSha256: 'f'.repeat(64) }));
    // vLLM sets `created` to the time of each request: it does not count.
    const base = { id: 'llama', owned_by: 'vllm', root: '/models/llama-3.1-8b', created: 1 };
    const lora = { id: 'lora', owned_by: 'vllm', parent: 'llama', created: 1 };
    expect(modelsSha256([base, lora])).toBe(
      modelsSha256([
        { ...lora, created: 2 },
        { ...base, created: 2 },
      ]),
    );
    expect(modelsSha256([base, lora])).not.toBe(modelsSha256([{ ...base, root: '/models/llama-3.1-8b-v2' }, lora]));
  });
});
