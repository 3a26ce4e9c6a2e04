/**
 * A capped run takes HELM's instances: `maxInstances` samples as HELM's runner does (numpy seed 0,
 * choice without replacement) unless the request asks for the first N, and the run records how. The
 * records a dataset leaves out (MEDEC's rows without text, as HELM leaves them out) are counted and
 * shown with the run. On the shipped MedCalc-Bench and MEDEC data, on every storage backend, and
 * through the daemon's API schema.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { localCaller, Operations } from '../../src/operations';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp, type TestApp } from '../helpers/app';
import { startTestDaemon } from '../helpers/daemon';
import { backends } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

const expected = JSON.parse(readFileSync(join(ROOT, 'tests', 'fixtures', 'helm-sampling', 'expected.json'), 'utf8')) as { choices: { benchmark: string; k: number; ids: string[] }[] };
/** HELM's 1,000 MedCalc-Bench instances, in its order; a smaller cap takes a prefix (numpy's permutation). */
const HELM_MEDCALC = (expected.choices.find((c) => c.benchmark === 'medcalc_bench' && c.k === 1000) as { ids: string[] }).ids;

async function plannedKeys(t: TestApp, runId: string): Promise<string[]> {
  const rows = await t.app.db.query<{ item_key: string }>('SELECT item_key FROM run_items WHERE run_id = $1 ORDER BY item_key', [runId]);
  return rows.map((r) => r.item_key).sort();
}

describe.each(backends())('capped runs on %s', (backend) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ backend });
  });

  afterAll(async () => {
    await t?.close();
  });

  it("take HELM's sample by default, and record the method and the seed", async () => {
    const run = await requestRun(t.app.engine, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 12 });
    expect(run.spec.sample).toEqual({ method: 'helm', seed: 0, maxInstances: 12 });
    const summary = await executeRun(t.app.engine, run.run_id);
    expect(summary.counts.done).toBe(12);
    expect(await plannedKeys(t, run.run_id)).toEqual(HELM_MEDCALC.slice(0, 12).sort());
    const view = await new Operations(t.app).showRun(localCaller(t.app), run.run_id);
    expect(view.sample).toEqual({ method: 'helm', seed: 0, maxInstances: 12 });
  });

  it('take the first N in dataset order when asked', async () => {
    const run = await requestRun(t.app.engine, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 12, sample: 'first' });
    expect(run.spec.sample).toEqual({ method: 'first', maxInstances: 12 });
    await executeRun(t.app.engine, run.run_id);
    expect(await plannedKeys(t, run.run_id)).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)).sort());
  });

  it('record no sample without a cap, and refuse an unknown method or a method without a cap', async () => {
    const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher });
    expect(run.spec.sample).toBeUndefined();
    await expect(requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 2, sample: 'random' as never })).rejects.toThrow(
      /sample must be helm or first/,
    );
    await expect(requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, sample: 'first' })).rejects.toThrow(/only under a cap/);
  });

  it("count the records the dataset leaves out (MEDEC's 328 rows without text) and show them with the run", async () => {
    const run = await requestRun(t.app.engine, { benchmarkId: 'medec', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 5 });
    const summary = await executeRun(t.app.engine, run.run_id);
    expect(summary.skipped).toEqual({ 'dataset.skip.blank-column': 328 });
    const view = await new Operations(t.app).showRun(localCaller(t.app), run.run_id);
    expect([view.instanceCount, view.skipped]).toEqual([5, { 'dataset.skip.blank-column': 328 }]);
  });
});

describe('the run request API', () => {
  it('takes sample helm or first, refuses anything else, and shows the recorded sample', async () => {
    const t = await startTestDaemon();
    try {
      const ok = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, maxInstances: 3, sample: 'first' });
      expect(ok.status).toBe(200);
      expect(ok.json.sample).toEqual({ method: 'first', maxInstances: 3 });
      const bad = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, maxInstances: 3, sample: 'random' });
      expect(bad.status).toBe(400);
    } finally {
      await t.close();
    }
  });
});
