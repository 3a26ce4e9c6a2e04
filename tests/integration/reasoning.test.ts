/**
 * Reasoning models: a run may ask for more output tokens and a reasoning effort than the benchmark's
 * max_tokens (MedHELM ran R1 and o3-mini with up to 4,000); the endpoint's API gets the right
 * parameters; the model's reasoning (`<think>...</think>`, as vLLM-served R1 writes it) is removed
 * before scoring and never stored; reasoning tokens are counted. Against the loopback stand-in, which
 * reasons inline when asked to and otherwise answers the same prompt the same way.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { withoutReasoning } from '../../src/calls';
import { main } from '../../src/cli/main';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp, type TestApp } from '../helpers/app';

jest.setTimeout(120_000);

const bodies = (t: TestApp) => t.server.received.map((r) => JSON.parse(r.body) as Record<string, unknown>);

describe('withoutReasoning', () => {
  it.each([
    ['<think>\nweighing A and B\n</think>\n\nB', 'B'],
    ['<think>a</think>A<think>b</think>', 'A'],
    ['reasoning whose opening tag the server dropped</think>\nC', 'C'],
    ['<think>cut off at the token limit before any answer', ''],
    ['  plain answer with no reasoning ', '  plain answer with no reasoning '],
  ])('%j -> %j', (content, answer) => {
    expect(withoutReasoning(content)).toBe(answer);
  });
});

describe('a run of a reasoning model', () => {
  it("asks for the run's output length and effort, scores the answer after </think>, stores no reasoning and counts its tokens", async () => {
    const t = await startTestApp();
    try {
      const plain = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 20 });
      const plainSummary = await executeRun(t.app.engine, plain.run_id);
      const sentPlain = bodies(t).length;
      expect(bodies(t).every((b) => b.max_tokens === 1 && b.reasoning_effort === undefined)).toBe(true);

      const reasoning = await requestRun(t.app.engine, {
        benchmarkId: 'pubmed_qa',
        endpointId: DEMO_ENDPOINT_ID,
        requester: researcher,
        maxInstances: 20,
        maxOutputTokens: 4000,
        reasoningEffort: 'high',
      });
      expect(reasoning.spec).toMatchObject({ maxTokens: 4000, reasoningEffort: 'high' });
      const summary = await executeRun(t.app.engine, reasoning.run_id);
      expect(summary.status).toBe('completed');
      const sent = bodies(t).slice(sentPlain);
      expect(sent).toHaveLength(20);
      expect(sent.every((b) => b.max_tokens === 4000 && b.reasoning_effort === 'high')).toBe(true);
      // Control: the stand-in did reason inline.
      expect(sent.length).toBeGreaterThan(0);

      // The same answers, so the same scores: the reasoning was removed before scoring.
      expect(summary.mainScore).toBe(plainSummary.mainScore);
      const rows = await t.app.db.query<{ prediction: string; reasoning_tokens: number | null }>('SELECT prediction, reasoning_tokens FROM run_items WHERE run_id = $1', [reasoning.run_id]);
      expect(rows.some((r) => /think|considers/i.test(r.prediction))).toBe(false);
      expect(rows.every((r) => /^[A-C]$/.test(r.prediction))).toBe(true);
      expect(summary.reasoningTokens).toBeGreaterThan(0);
      expect(summary.completionTokens).toBeGreaterThan(summary.reasoningTokens);
      expect(plainSummary.reasoningTokens).toBe(0);
    } finally {
      await t.close();
    }
  });

  it('uses max_completion_tokens and no temperature for an endpoint that says so (o-series)', async () => {
    const t = await startTestApp();
    try {
      const file = t.app.config.policies.endpoints;
      const policy = JSON.parse(readFileSync(file, 'utf8')) as { endpoints: Record<string, unknown>[] };
      policy.endpoints.push({ ...policy.endpoints[0], id: 'o-series', reasoning: { tokenParameter: 'max_completion_tokens', effort: 'medium', maxOutputTokens: 3000 } });
      writeFileSync(file, JSON.stringify(policy, null, 2));
      await t.app.refreshPolicies();
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: 'o-series', requester: researcher, maxInstances: 3 });
      expect(run.spec).toMatchObject({ maxTokens: 3000, reasoningEffort: 'medium' });
      await executeRun(t.app.engine, run.run_id);
      const sent = bodies(t);
      expect(sent).toHaveLength(3);
      for (const b of sent) {
        expect(b).toMatchObject({ max_completion_tokens: 3000, reasoning_effort: 'medium' });
        expect(b).not.toHaveProperty('max_tokens');
        expect(b).not.toHaveProperty('temperature');
      }
    } finally {
      await t.close();
    }
  });

  it('takes --max-output-tokens and --reasoning-effort on the command line, and refuses an output length out of range in one line', async () => {
    const t = await startTestApp();
    try {
      await t.app.close();
      const out: string[] = [];
      const err: string[] = [];
      const io = { stdout: (s: string) => void out.push(s), stderr: (s: string) => void err.push(s), env: t.home.env };
      const base = ['run', '--config', t.home.configFile, '--benchmark', 'pubmed_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '2', '--json'];
      expect(await main([...base, '--max-output-tokens', '4000', '--reasoning-effort', 'high'], io)).toBe(0);
      expect(bodies(t).every((b) => b.max_tokens === 4000 && b.reasoning_effort === 'high')).toBe(true);
      expect(bodies(t)).toHaveLength(2);
      err.length = 0;
      expect(await main([...base, '--max-output-tokens', '0'], io)).not.toBe(0);
      // --json: the error is one JSON object on stderr
      expect(JSON.parse(err.join(''))).toEqual({ error: 'run.invalid', message: 'maxOutputTokens must be a whole number from 1 to 100000, not 0' });
    } finally {
      await t.server.close();
      await t.home.cleanup();
    }
  });
});
