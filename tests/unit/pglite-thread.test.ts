/**
 * The embedded store runs PGlite in a worker thread (its WASM statements do not hold the event loop
 * that serves model calls and leases), creates a new store's data directory in a short-lived child
 * process (initdb's second PGlite instance never lives in this process), and keeps PostgreSQL's
 * shared buffers small. Statements, errors and transactions behave as they did in-process.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/db';
import { freshStore, tempDir } from '../helpers/db';

jest.setTimeout(120_000);

describe('the embedded store', () => {
  it('creates a new store without a PGlite instance in this process, and keeps its shared buffers small', async () => {
    const memories: unknown[] = [];
    const Memory = WebAssembly.Memory;
    // Any WASM memory made in this isolate (PGlite in-process makes one per instance, initdb another).
    WebAssembly.Memory = new Proxy(Memory, {
      construct(target, args: [WebAssembly.MemoryDescriptor]) {
        memories.push(args[0]);
        return new target(...args);
      },
    });
    const dir = join(tempDir('pglite-new'), 'db');
    try {
      const db = await openDatabase({ embeddedDir: dir, migrate: false });
      try {
        expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
        expect(await db.query('SELECT 1 + 1 AS two')).toEqual([{ two: 2 }]);
        expect(await db.query('SHOW shared_buffers')).toEqual([{ shared_buffers: '16MB' }]);
      } finally {
        await db.close();
      }
    } finally {
      WebAssembly.Memory = Memory;
    }
    expect(memories).toEqual([]);
  });

  describe('on an existing store', () => {
    let store: Awaited<ReturnType<typeof freshStore>>;
    beforeAll(async () => {
      store = await freshStore('pglite');
    });
    afterAll(async () => {
      await store.drop();
    });

    it('does not hold the event loop while a statement runs', async () => {
      const db = await store.open(false);
      try {
        const order: string[] = [];
        const slow = db.query('SELECT pg_sleep(0.3)').then(() => order.push('statement'));
        await new Promise((resolve) => setImmediate(resolve));
        order.push('event loop');
        await slow;
        // In-process, PGlite runs the statement synchronously before the loop turns again.
        expect(order).toEqual(['event loop', 'statement']);
      } finally {
        await db.close();
      }
    });

    it('keeps bigint parsing, SQLSTATE codes, commits and rollbacks as in-process', async () => {
      const db = await store.open(false);
      try {
        await db.exec('CREATE TABLE t (id integer PRIMARY KEY, n bigint, at timestamptz, j jsonb)');
        await db.query('INSERT INTO t VALUES ($1, $2, now(), $3::jsonb)', [1, 9007199254740991, JSON.stringify({ a: [1, 'x'] })]);
        const [row] = await db.query<{ n: number; at: Date; j: unknown }>('SELECT n, at, j FROM t WHERE id = 1');
        expect(row?.n).toBe(9007199254740991);
        // A Date (of this process's realm: under jest's sandbox, not the sandbox's own Date).
        expect(Object.prototype.toString.call(row?.at)).toBe('[object Date]');
        expect(row?.j).toEqual({ a: [1, 'x'] });
        await expect(db.query('INSERT INTO t (id) VALUES (1)')).rejects.toMatchObject({ code: '23505' });

        await expect(
          db.transaction(async (tx) => {
            await tx.query('INSERT INTO t (id) VALUES (2)');
            throw new Error('changed my mind');
          }),
        ).rejects.toThrow('changed my mind');
        const seen = await db.transaction(async (tx) => {
          await tx.query('INSERT INTO t (id) VALUES (3)');
          return (await tx.query<{ id: number }>('SELECT id FROM t ORDER BY id')).map((r) => r.id);
        });
        expect(seen).toEqual([1, 3]);
        // A statement outside the transaction waits for it (one session), then sees its commit.
        const [inside, outside] = await Promise.all([
          db.transaction(async (tx) => {
            await tx.query('INSERT INTO t (id) VALUES (4)');
            await tx.query('SELECT pg_sleep(0.05)');
            return 'committed';
          }),
          db.query<{ n: number }>('SELECT count(*)::integer AS n FROM t'),
        ]);
        expect(inside).toBe('committed');
        expect(outside).toEqual([{ n: 3 }]);
      } finally {
        await db.close();
      }
    });
  });
});
