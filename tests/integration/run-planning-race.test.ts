/**
 * A worker works on a run while the run is being planned, and stops once nothing is left to claim and
 * planning is over. A claim that found nothing while the last batch was still being enqueued says
 * nothing about the queue: if planning finished while that claim was out, the worker must claim again,
 * not stop with instances still pending (seen in CI as a run left "running" after executeRun returned,
 * once small datasets were planned in a few milliseconds). The store here is real; the test only holds
 * the first claim's empty answer back until planning has finished, to make that order certain.
 */
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp } from '../helpers/app';
import { backends } from '../helpers/db';

jest.setTimeout(120_000);

describe.each(backends())('planning and claiming on %s', (backend) => {
  it('claims again when planning finished while a claim that found nothing was out', async () => {
    const t = await startTestApp({ backend });
    try {
      const store = t.app.engine.store;
      const realClaim = store.claim.bind(store);
      const realEnqueue = store.enqueue.bind(store);
      const realMarkPlanned = store.markPlanned.bind(store);
      let firstClaimLooked = () => undefined as void;
      const looked = new Promise<void>((resolve) => (firstClaimLooked = resolve));
      let runPlanned = () => undefined as void;
      const planned = new Promise<void>((resolve) => (runPlanned = resolve));
      let held = 0;
      // Planning enqueues only once the worker's first claim has looked, and found nothing...
      store.enqueue = async (...args: Parameters<typeof realEnqueue>) => {
        await looked;
        return realEnqueue(...args);
      };
      store.markPlanned = async (...args: Parameters<typeof realMarkPlanned>) => {
        await realMarkPlanned(...args);
        runPlanned();
      };
      // ...and that empty answer reaches the worker only after planning has finished.
      store.claim = async (...args: Parameters<typeof realClaim>) => {
        const items = await realClaim(...args);
        if (held === 0 && items.length === 0) {
          held += 1;
          firstClaimLooked();
          await planned;
          // Planning's end reaches the worker (its own turns of the event loop) before this answer does.
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        return items;
      };

      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 30 });
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(held).toBe(1);
      expect(summary.status).toBe('completed');
      expect(summary.counts).toEqual({ pending: 0, claimed: 0, done: 30, blocked: 0, failed: 0 });
      expect(t.server.requestCount()).toBe(30);
    } finally {
      await t.close();
    }
  });
});
