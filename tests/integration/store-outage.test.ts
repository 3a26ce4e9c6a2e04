/**
 * What a worker sees when the store goes away for a moment (a PostgreSQL restart or failover), and
 * the pieces that must come back on their own afterwards. Real databases, real failures: a table
 * renamed under a heartbeat, a backend terminated inside a transaction.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { AuditLog, loadMacKeys, loadSigningKey, readWitness, WITNESS_FILE } from '../../src/audit';
import { type Database, DatabaseUnavailable, isStoreUnavailable } from '../../src/db';
import { createLogger } from '../../src/log';
import { EndpointCapacity, SharedSlots } from '../../src/calls';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher, startTestApp } from '../helpers/app';
import { backends, freshStore, tempDir, type TestStore } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

describe.each(backends())('store outages (%s)', (backend) => {
  let store: TestStore;
  let db: Database;
  beforeEach(async () => {
    store = await freshStore(backend);
    db = await store.open();
  });
  afterEach(async () => {
    await db.close();
    await store.drop();
  });

  it('keeps renewing endpoint slots after a renewal failed', async () => {
    const capacity = new EndpointCapacity(0);
    const slots = new SharedSlots(db, capacity, { endpointId: 'e1', total: 2, perWorker: 2, workerId: 'w1', leaseSeconds: 30 });
    await slots.rebalance();
    expect(capacity.size).toBe(2);
    // The store cannot serve the heartbeat for a moment (a real error of the real store).
    await db.exec('ALTER TABLE endpoint_workers RENAME TO endpoint_workers_away');
    await expect(slots.rebalance()).rejects.toThrow();
    await db.exec('ALTER TABLE endpoint_workers_away RENAME TO endpoint_workers');
    await slots.rebalance();
    expect(capacity.size).toBe(2);
    await slots.leave().catch(() => undefined);
  });

  it('joins an endpoint while the store fails and takes its slots at the next heartbeat', async () => {
    const capacity = new EndpointCapacity(0);
    const slots = new SharedSlots(db, capacity, { endpointId: 'e1', total: 2, perWorker: 2, workerId: 'w1', leaseSeconds: 30 });
    await db.exec('ALTER TABLE endpoint_workers RENAME TO endpoint_workers_away');
    await slots.join();
    expect(capacity.size).toBe(0);
    await db.exec('ALTER TABLE endpoint_workers_away RENAME TO endpoint_workers');
    await slots.rebalance();
    expect(capacity.size).toBe(2);
    await slots.leave();
    expect(capacity.size).toBe(0);
  });

  describe('audit seal with two writers', () => {
    let home: TestHome;
    beforeAll(async () => {
      home = await makeHome();
    });
    afterAll(() => home.cleanup());

    const trail = (witnessDir: string) =>
      new AuditLog(db, {
        provenance: { siteId: 'test-site', host: 'h', daemonVersion: 't' },
        keys: { signingKey: loadSigningKey(join(home.home, 'keys')), macKey: loadMacKeys(join(home.home, 'keys')).current },
        checkpointEvery: 1000,
        witnessDirs: [witnessDir],
        logger: createLogger({}),
      });
    const event = { type: 'daemon.start', action: 'E', outcome: 'success', rule: 'worker.start', actor: { principal: 'svc', role: 'service', authMethod: 'service' } } as const;

    it('writes the checkpoint covering its events to its own witness even when another writer sealed it', async () => {
      const dirA = tempDir('witness-a');
      const dirB = tempDir('witness-b');
      mkdirSync(dirA, { recursive: true });
      const a = trail(dirA);
      const b = trail(dirB);
      await a.record(event);
      await b.record(event);
      // B seals first: its checkpoint covers A's event too; A's seal finds nothing new to sign.
      const byB = await b.sealCovering();
      const byA = await a.sealCovering();
      expect(byA?.checkpointId).toBe(byB?.checkpointId);
      expect(existsSync(join(dirA, WITNESS_FILE))).toBe(true);
      expect(readWitness(join(dirA, WITNESS_FILE)).statement.seq).toBe(2);
      expect(readWitness(join(dirA, WITNESS_FILE)).statement.checkpointId).toBe(byB?.checkpointId);
    });
  });
});

describe.each(backends())('run completion and its audit record (%s)', (backend) => {
  it('commit together: a failed record leaves the run uncompleted, and executing it again completes it once', async () => {
    const t = await startTestApp({ backend });
    try {
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 12 });
      const audit = t.app.engine.audit;
      // The completion's record fails after the completion itself was written in the same transaction.
      t.app.engine.audit = {
        record: (e) => audit.record(e),
        seal: () => audit.seal(),
        recordIn: async (tx, e) => {
          await audit.recordIn(tx, e);
          throw new Error('audit store refused the record');
        },
      };
      await expect(executeRun(t.app.engine, run.run_id)).rejects.toThrow('audit store refused the record');
      expect((await t.app.engine.store.getRun(run.run_id))?.status).toBe('running');
      expect(await t.app.engine.store.results(run.run_id)).toEqual([]);
      t.app.engine.audit = audit;
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.aggregates.length).toBeGreaterThan(0);
      const [events] = await t.app.db.query<{ n: number }>("SELECT count(*)::integer AS n FROM audit_events WHERE event_type = 'run.complete' AND run_id = $1", [run.run_id]);
      expect(events?.n).toBe(1);
    } finally {
      await t.close();
    }
  });
});

const postgresOnly = process.env.TEST_DATABASE_URL ? describe : describe.skip;

postgresOnly('PostgreSQL connection lost', () => {
  let store: TestStore;
  let db: Database;
  let admin: pg.Client;
  beforeEach(async () => {
    store = await freshStore('postgres');
    db = await store.open();
    admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
  });
  afterEach(async () => {
    await admin.end();
    await db.close();
    await store.drop();
  });

  /** What a server restart looks like to a client: its backend is terminated. */
  const terminate = (pid: number) => admin.query('SELECT pg_terminate_backend($1)', [pid]);

  it('fails a transaction whose connection is cut, with DatabaseUnavailable, and keeps the process and pool alive', async () => {
    let pidInTx = 0;
    const outcome = await db
      .transaction(async (tx) => {
        const [row] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        pidInTx = row?.pid as number;
        await terminate(pidInTx);
        // The socket closes with no statement in flight: pg emits 'error' on the checked-out client.
        await new Promise((r) => setTimeout(r, 200));
        return tx.query('SELECT 1');
      })
      .catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(DatabaseUnavailable);
    expect((outcome as DatabaseUnavailable).code).toBe('db.unavailable');
    // The broken client was destroyed, not pooled: the next statements get a live connection.
    for (let i = 0; i < 6; i++) {
      const [row] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(row?.pid).not.toBe(pidInTx);
    }
    await expect(db.transaction((tx) => tx.query('SELECT 1 AS one'))).resolves.toEqual([{ one: 1 }]);
  });

  it('reports a statement on a terminated pooled connection as DatabaseUnavailable', async () => {
    const [row] = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const outcome = await db.query('SELECT pg_terminate_backend(pg_backend_pid())').catch((e: unknown) => e);
    expect(outcome).toBeInstanceOf(DatabaseUnavailable);
    expect(row?.pid).toBeGreaterThan(0);
    await expect(db.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
  });
});

postgresOnly('a run while PostgreSQL restarts', () => {
  it('is interrupted, not failed, and resumes to exactly N results', async () => {
    const N = 150;
    let admin: pg.Client | undefined;
    let outage: Promise<void> | undefined;
    // From the 20th model call on, for a second, every backend of the run's database is terminated
    // (what clients see of a server restart; the shared cluster itself is not restarted).
    const t = await startTestApp({
      backend: 'postgres',
      latencyMs: 10,
      behaviour: (n) => {
        if (n === 20) outage = cutConnections();
        return { kind: 'answer' };
      },
    });
    const dbName = new URL(t.home.store.url as string).pathname.slice(1);
    const cutConnections = async () => {
      admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      const until = Date.now() + 1000;
      while (Date.now() < until) {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [dbName]);
        await new Promise((r) => setTimeout(r, 20));
      }
      await admin.end();
    };
    try {
      t.app.engine.settings.concurrency = 2;
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: N });
      let interruptions = 0;
      for (;;) {
        const outcome = await executeRun(t.app.engine, run.run_id).catch((e: unknown) => e);
        if (!(outcome instanceof Error)) break;
        expect(isStoreUnavailable(outcome)).toBe(true);
        interruptions += 1;
        await outage;
        // Interrupted: still running, never failed, so it can be resumed.
        expect((await t.app.engine.store.getRun(run.run_id))?.status).toBe('running');
        if (interruptions > 20) throw new Error('run never finished');
      }
      expect(interruptions).toBeGreaterThan(0);
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts).toEqual({ pending: 0, claimed: 0, done: N, blocked: 0, failed: 0 });
      expect(summary.aggregates.length).toBeGreaterThan(0);
    } finally {
      await outage?.catch(() => undefined);
      await t.close();
    }
  });
});

postgresOnly('lease heartbeat beside a result write', () => {
  it('renews the leases it can without waiting for rows another statement is writing', async () => {
    const t = await startTestApp({ backend: 'postgres' });
    const other = new pg.Client({ connectionString: t.home.store.url });
    await other.connect();
    try {
      const store = t.app.engine.store;
      const run = await requestRun(t.app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 2 });
      await store.transition(run.run_id, ['approved'], 'running');
      await store.enqueue(
        run.run_id,
        [0, 1].map((i) => ({ itemKey: `k${i}`, ordinal: i, instance: { key: `k${i}`, vars: {}, references: [] } as never })),
      );
      expect(await store.claim(run.run_id, 'w1', 2, 5, 3)).toHaveLength(2);
      // A result write of k1 in progress (its row locked until it commits).
      await other.query('BEGIN');
      await other.query("UPDATE run_items SET latency_ms = 1 WHERE run_id = $1 AND item_key = 'k1'", [run.run_id]);
      // Renews while k1 is still locked. It used to wait for the lock (and with two such multi-row
      // statements, deadlock): seen here as a backend of this database waiting on a lock.
      let settled = false;
      const beat = store.extendLeases(run.run_id, 'w1', 600).finally(() => (settled = true));
      let waitedOnLock = false;
      while (!settled && !waitedOnLock) {
        const [w] = await other.query<{ n: number }>("SELECT count(*)::integer AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").then((r) => r.rows);
        waitedOnLock = (w?.n ?? 0) > 0;
      }
      if (waitedOnLock) await other.query('COMMIT');
      await beat;
      expect(waitedOnLock).toBe(false);
      const leases = await t.app.db.query<{ item_key: string; long: boolean }>(
        "SELECT item_key, lease_expires_at > now() + interval '60 seconds' AS long FROM run_items WHERE run_id = $1 ORDER BY item_key",
        [run.run_id],
      );
      expect(leases).toEqual([
        { item_key: 'k0', long: true },
        { item_key: 'k1', long: false },
      ]);
      await other.query('COMMIT');
    } finally {
      await other.end();
      await t.close();
    }
  });
});
