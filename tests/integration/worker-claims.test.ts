/**
 * How much a worker claims at once: alone on its endpoint, a whole batch (fewer round trips); sharing
 * it with other worker processes, one round of calls, so that no worker ends a run holding instances it
 * cannot start while the others sit idle. How many loops a worker runs on an LLM-jury benchmark: loops
 * for every judge endpoint's share too (an instance holds one endpoint's slot at a time, model first,
 * then each judge). Every instance is still done exactly once.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp, type App } from '../../src/app';
import { judgeBehaviour } from '../../src/demo/model-server-main';
import { type ModelServer, startModelServer } from '../../src/demo/model-server';
import { executeRun, requestRun } from '../../src/runs/engine';
import { PIPELINE_DEPTH } from '../../src/runs/worker';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp } from '../helpers/app';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

/** The `limit` of every claim the engine's store is asked for. */
function recordClaims(app: App): number[] {
  const limits: number[] = [];
  const claim = app.engine.store.claim.bind(app.engine.store);
  app.engine.store.claim = (runId, workerId, limit, ...rest) => {
    limits.push(limit);
    return claim(runId, workerId, limit, ...rest);
  };
  return limits;
}

describe('worker claims', () => {
  it.each([
    ['alone on the endpoint, a whole batch', 0],
    ['beside another worker process, one round of calls', 1],
  ])('claims %s, and does every instance exactly once', async (_what, others) => {
    const concurrency = 3;
    const t = await startTestApp({ settings: { concurrency, claimBatch: 20 } });
    try {
      // Another worker process on the same endpoint, as its heartbeat would have registered it.
      if (others) await t.app.db.query(`INSERT INTO endpoint_workers (endpoint_id, worker_id, seen_at) VALUES ($1, 'other-host:4242', now())`, [DEMO_ENDPOINT_ID]);
      const limits = recordClaims(t.app);
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 40 });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 40, pending: 0, claimed: 0, failed: 0 });
      expect(new Set(limits)).toEqual(new Set([others ? concurrency : 20]));
      const rows = await t.app.db.query<{ n: number; keys: number }>(
        `SELECT count(*)::integer AS n, count(DISTINCT item_key)::integer AS keys FROM run_items WHERE run_id = $1::uuid AND state = 'done'`,
        [run.run_id],
      );
      expect(rows[0]).toEqual({ n: 40, keys: 40 });
    } finally {
      await t.close();
    }
  });

  describe('on an LLM-jury benchmark', () => {
    let home: TestHome;
    let server: ModelServer;
    let app: App;
    beforeAll(async () => {
      home = await makeHome('pglite');
      server = await startModelServer({
        certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
        keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
        port: home.port,
        behaviour: judgeBehaviour,
      });
      const policyFile = join(home.home, 'access-policies', 'endpoints.json');
      const policy = JSON.parse(readFileSync(policyFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
      const demo = policy.endpoints[0] as Record<string, unknown>;
      for (const id of ['judge-gpt', 'judge-llama', 'judge-claude']) policy.endpoints.push({ ...demo, id, description: `judge ${id}`, model: id });
      writeFileSync(policyFile, JSON.stringify(policy, null, 2));
      writeFileSync(join(home.home, 'site-data.json'), JSON.stringify({ benchmarks: {}, jury: { judges: ['judge-gpt', 'judge-llama', 'judge-claude'] } }));
      app = await openApp({ file: home.configFile, env: home.env });
    });
    afterAll(async () => {
      await app.close();
      await server.close();
      await home.cleanup();
    });

    it('runs loops for the judges too: its first claim fills a loop per call of an instance (model and three judges)', async () => {
      const concurrency = 2;
      Object.assign(app.engine.settings, { concurrency, claimBatch: 4 });
      const limits = recordClaims(app);
      const run = await requestRun(app.engine, { benchmarkId: 'aci_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 6 });
      const summary = await executeRun(app.engine, run.run_id);
      expect(summary.counts).toMatchObject({ done: 6, failed: 0 });
      expect(limits[0]).toBe(concurrency * PIPELINE_DEPTH * 4);
      // Every instance judged by all three (valid verdicts from the stand-in judges).
      const rows = await app.db.query<{ used: number }>(`SELECT (scores->>'jury_judges_used')::integer AS used FROM run_items WHERE run_id = $1::uuid`, [run.run_id]);
      expect(rows.map((r) => r.used)).toEqual([3, 3, 3, 3, 3, 3]);
    });
  });
});
