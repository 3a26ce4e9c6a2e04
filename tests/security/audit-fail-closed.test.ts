/**
 * No audit record, no action: when the audit trail cannot record, no model call is made and the run
 * stops with a clear error. The invariant checked: every request the model server received has its
 * endpoint.call event in the trail, written before the request was sent.
 */
import { AuditUnavailable } from '../../src/audit';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp } from '../helpers/app';
import { backends } from '../helpers/db';

const REFUSE_INSERTS = `CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()`;

describe.each(backends())('fail-closed auditing on %s', (backend) => {
  it('makes no model call when the audit store refuses the run start', async () => {
    const t = await startTestApp({ backend });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'medec', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 10 });
      await t.app.db.query(REFUSE_INSERTS);
      const err = await executeRun(t.app.engine, run.run_id).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuditUnavailable);
      expect((err as Error).message).toMatch(/^the audit trail cannot record events \(.*\); the action was not performed$/);
      expect(t.server.requestCount()).toBe(0);
    } finally {
      await t.app.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events');
      await t.close();
    }
  });

  it('stops a run mid-way when the audit store goes down, sending nothing unaudited', async () => {
    let trip: Promise<unknown> | undefined;
    const t = await startTestApp({
      backend,
      latencyMs: 10,
      behaviour: (n) => {
        if (n === 15 && !trip) trip = t.app.db.query(REFUSE_INSERTS);
        return { kind: 'answer' };
      },
    });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 200 });
      const err = await executeRun(t.app.engine, run.run_id).catch((e: unknown) => e);
      await trip;
      expect(err).toBeInstanceOf(AuditUnavailable);
      const received = t.server.requestCount();
      expect(received).toBeGreaterThanOrEqual(15);
      expect(received).toBeLessThan(200);
      const [calls] = await t.app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE event_type = 'endpoint.call' AND run_id = $1", [run.run_id]);
      expect(received).toBe(calls?.n);
      const stored = await t.app.engine.store.getRun(run.run_id);
      expect(stored?.status).toBe('failed');
      expect(stored?.error_code).toBe('audit.unavailable');
    } finally {
      await t.app.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events');
      await t.close();
    }
  });
});
