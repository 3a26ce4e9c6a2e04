/**
 * HealthBench's meta-evaluation end to end: a site benchmark of synthetic meta-eval lines (adapter
 * health_bench_meta; never OpenAI's file) runs through the real engine, the model under evaluation
 * being a grader on the loopback server that answers each criterion by a marker in its text (met, not
 * met, malformed). `runs meta-eval` then gives the grader's and the physicians' pairwise agreement.
 * The arithmetic is checked against the reference in tests/unit/health-bench-meta.test.ts; here, that
 * the run feeds it exactly the fixture's labels and the grader's answers, on both stores, and that only
 * figures come out.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { metaEvaluation } from '../../src/annotate';
import { Catalog } from '../../src/catalog';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { Operations } from '../../src/operations';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp } from '../helpers/app';
import { backends } from '../helpers/db';

jest.setTimeout(180_000);

const BENCHMARK = 'site_health_bench_meta';

/** Synthetic lines: the grader's answer is the marker in the criterion; two categories, three physicians. */
const LINES = [
  { c: 'Advises rest {m:1}', labels: [true, true, false], ids: ['p1', 'p2', 'p3'], category: 'cluster_a' },
  { c: 'Mentions fluids {m:1}', labels: [true, true], ids: ['p1', 'p3'], category: 'cluster_a' },
  { c: 'Suggests antibiotics {m:0}', labels: [false, false, true], ids: ['p2', 'p3', 'p1'], category: 'cluster_a' },
  { c: 'Refers to a clinic {m:0}', labels: [true, false], ids: ['p2', 'p1'], category: 'cluster_b' },
  { c: 'Asks about allergies {m:1}', labels: [false, false], ids: ['p3', 'p2'], category: 'cluster_b' },
  { c: 'Names a dose {m:x}', labels: [true, true, true], ids: ['p1', 'p2', 'p3'], category: 'cluster_b' },
].map((l, i) => ({
  prompt: [{ role: 'user', content: `Synthetic question ${i + 1} about a cold.` }],
  completion: `Synthetic answer ${i + 1}.`,
  rubric: l.c,
  binary_labels: l.labels,
  anonymized_physician_ids: l.ids,
  category: l.category,
}));

const marker = (text: string) => /\{m:([01x])\}/.exec(text)?.[1];

describe.each(backends())('HealthBench meta-evaluation (%s)', (backend) => {
  it("compares the grader's labels with the physicians' as the reference does, and shows figures only", async () => {
    let closed = false;
    const t = await startTestApp({
      backend,
      behaviour: (_n, prompt) => {
        const m = marker(prompt);
        return { kind: 'answer', text: m === 'x' ? 'It probably does.' : JSON.stringify({ explanation: 'synthetic', criteria_met: m === '1' }) };
      },
    });
    try {
      const dir = join(t.home.home, 'site-benchmarks', BENCHMARK);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'meta.jsonl'), LINES.map((l) => JSON.stringify(l)).join('\n') + '\n');
      writeFileSync(join(dir, 'prompt.txt'), '(Not used: each instance is the grader prompt as one user turn.)\n');
      writeFileSync(
        join(dir, 'benchmark.json'),
        JSON.stringify({
          id: BENCHMARK,
          version: '1.0.0',
          displayName: 'Grader meta-evaluation (synthetic)',
          category: 'Clinical Decision Support',
          subcategory: 'Providing Clinical Knowledge Support',
          tier: 'public',
          dataset: { origin: 'shipped', files: [{ path: 'meta.jsonl' }], format: 'jsonl', adapter: 'health_bench_meta' },
          prompt: { templateFile: 'prompt.txt', maxTokens: 256 },
          references: "the physicians' labels, compared by runs meta-eval",
          metrics: { main: 'meta_grader_criteria_met' },
          split: 'test',
          lowerIsBetter: null,
        }),
      );
      const catalog = Catalog.load([join(t.home.home, 'site-benchmarks')]);
      t.app.engine.catalog = () => catalog;
      t.app.catalog = () => catalog;

      const run = await requestRun(t.app.engine, { benchmarkId: BENCHMARK, endpointId: DEMO_ENDPOINT_ID, requester: researcher });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 6, failed: 0, blocked: 0 });
      // The grader saw GRADER_TEMPLATE about the conversation with the completion as its last turn.
      expect(
        t.server.received.some((r) => r.prompt.includes('user: Synthetic question 1 about a cold.\n\nassistant: Synthetic answer 1.') && r.prompt.includes('# Rubric item\nAdvises rest {m:1}')),
      ).toBe(true);

      const caller = { principal: { id: researcher.principal, roles: ['researcher' as const], status: 'active' as const }, authMethod: 'mtls' as const };
      const got = await new Operations(t.app).metaEvaluation(caller, run.run_id);
      const graderLabel = (m: string | undefined) => (m === '1' ? true : m === '0' ? false : undefined);
      const expected = metaEvaluation(
        LINES.map((l) => ({ row: { binaryLabels: l.binary_labels, physicianIds: l.anonymized_physician_ids, category: l.category }, graderLabel: graderLabel(marker(l.rubric)) })),
      );
      expect(got).toEqual({ runId: run.run_id, notDone: 0, ...expected });
      expect(got).toMatchObject({ rows: 6, ungraded: 1, physicians: 3 });
      // By hand: the grader said met on rows 1, 2, 5 (7 physician labels, 4 of them met).
      expect(got.model.overall.pos.precision).toEqual({ n: 7, value: 4 / 7 });
      // Only figures: no physician id, rubric or conversation text.
      const text = JSON.stringify(got);
      for (const leak of ['p1', 'Advises rest', 'Synthetic']) expect(text).not.toContain(leak);

      // The CLI says the same in a table (the embedded store admits one process: the app steps aside).
      await t.app.close();
      closed = true;
      let out = '';
      let err = '';
      const io: Io = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), env: t.home.env };
      process.exitCode = undefined;
      await main(['runs', 'meta-eval', run.run_id, '--config', t.home.configFile], io);
      process.exitCode = undefined;
      expect(err).not.toMatch(/ehrbench:/);
      expect(out).toContain(`run ${run.run_id}: 6 graded criteria (1 with a malformed grade, left out), 0 not finished, 3 physicians`);
      expect(out).toMatch(/grader\s+overall\s+/);
    } finally {
      if (closed) {
        await t.server.close();
        await t.home.cleanup();
      } else await t.close();
    }
  });

  it('refuses a run that is not a meta-evaluation, naming the adapter', async () => {
    const t = await startTestApp({ backend });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'medec', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 2, sample: 'first' });
      await executeRun(t.app.engine, run.run_id);
      const caller = { principal: { id: researcher.principal, roles: ['researcher' as const], status: 'active' as const }, authMethod: 'mtls' as const };
      await expect(new Operations(t.app).metaEvaluation(caller, run.run_id)).rejects.toMatchObject({ code: 'run.not-meta-eval' });
    } finally {
      await t.close();
    }
  });
});
