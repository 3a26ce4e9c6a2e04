/**
 * The run pipeline against the real loopback HTTPS model server, on every storage backend:
 * complete runs, interrupted runs that resume without double counting, transient failures.
 */
import { renderTemplate, type Instance } from '../../src/catalog';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { backends } from '../helpers/db';
import { researcher, startTestApp } from '../helpers/app';

jest.setTimeout(120_000);

describe.each(backends())('run engine on %s', (backend) => {
  it('runs a benchmark end to end and stores one result per instance', async () => {
    const t = await startTestApp({ backend });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'medec', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 40 });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts).toEqual({ pending: 0, claimed: 0, done: 40, blocked: 0, failed: 0 });
      expect(t.server.requestCount()).toBe(40);
      const rows = await t.app.db.query<{ n: number; scored: number }>(
        "SELECT count(*)::int AS n, count(*) FILTER (WHERE scores ? 'medec_error_flag_accuracy')::int AS scored FROM run_items WHERE run_id = $1",
        [run.run_id],
      );
      expect(rows[0]).toEqual({ n: 40, scored: 40 });
      expect(summary.mainScore).not.toBeNull();
      expect(summary.promptTokens).toBeGreaterThan(0);
      const stored = await t.app.engine.store.getRun(run.run_id);
      expect(stored?.benchmark_hash).toBe(t.app.catalog().get('medec').definitionHash);
      expect(stored?.template_hash).toBe(t.app.catalog().get('medec').templateHash);
    } finally {
      await t.close();
    }
  });

  it('resumes an interrupted run: exactly N results and the same aggregate as an uninterrupted run', async () => {
    const N = 120;
    // Uninterrupted reference run.
    const ref = await startTestApp({ backend });
    let reference;
    try {
      const run = await requestRun(ref.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: N });
      reference = await executeRun(ref.app.engine, run.run_id);
    } finally {
      await ref.close();
    }

    const controller = new AbortController();
    const t = await startTestApp({
      backend,
      latencyMs: 5,
      // Interrupt the run after 50 calls reached the model server.
      behaviour: (n) => {
        if (n === 50) controller.abort();
        return { kind: 'answer' };
      },
    });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: N });
      const partial = await executeRun(t.app.engine, run.run_id, { signal: controller.signal });
      expect(partial.status).toBe('running');
      expect(partial.counts.done).toBeGreaterThan(0);
      expect(partial.counts.done).toBeLessThan(N);
      expect(partial.counts.claimed).toBe(0);
      const doneBefore = await t.app.db.query<{ payload: Instance }>("SELECT payload FROM run_items WHERE run_id = $1 AND state = 'done'", [run.run_id]);
      const bench = t.app.catalog().get('pubmed_qa');
      const donePrompts = new Set(doneBefore.map((r) => renderTemplate(bench.template, r.payload, 'test')));
      const resumeStart = t.server.received.length;

      const resumed = await executeRun(t.app.engine, run.run_id);
      expect(resumed.status).toBe('completed');
      expect(resumed.counts).toEqual({ pending: 0, claimed: 0, done: N, blocked: 0, failed: 0 });
      // Instances finished before the interruption were not sent again.
      const resent = t.server.received.slice(resumeStart).filter((r) => donePrompts.has(r.prompt));
      expect(resent).toEqual([]);
      expect(t.server.received.length - resumeStart).toBeGreaterThanOrEqual(N - doneBefore.length);
      expect(resumed.mainScore).toBeCloseTo(reference.mainScore as number, 10);
      expect(resumed.aggregates).toEqual(reference.aggregates);
      // Executing a completed run again sends nothing and changes nothing.
      const before = t.server.requestCount();
      const again = await executeRun(t.app.engine, run.run_id);
      expect(again.counts.done).toBe(N);
      expect(t.server.requestCount()).toBe(before);
    } finally {
      await t.close();
    }
  });

  it('retries transient 429/500 answers and records instances that keep failing as failed', async () => {
    const seen = new Map<string, number>();
    const t = await startTestApp({
      backend,
      settings: { maxAttempts: 2 },
      behaviour: (_n, prompt) => {
        const k = (seen.get(prompt) ?? 0) + 1;
        seen.set(prompt, k);
        if (prompt.includes('ms-test-3\n') || prompt.includes('0 A 45-year-old')) return { kind: 'status', status: 500 };
        if (k === 1) return { kind: 'status', status: 429, retryAfter: '0' };
        return { kind: 'answer' };
      },
    });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'medec', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 10 });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts.done + summary.counts.failed).toBe(10);
      expect(summary.counts.done).toBeGreaterThanOrEqual(1);
      // Every prompt that answered was first refused with 429 and then retried.
      for (const [, calls] of seen) expect(calls).toBeGreaterThanOrEqual(2);
    } finally {
      await t.close();
    }
  });
});
