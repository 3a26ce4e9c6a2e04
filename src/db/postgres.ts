import pg from 'pg';
import { UserError } from '../errors';
import type { Database, Queryable } from './index';

const INT8_OID = 20;

/** bigint columns (counts, audit seq) as JS numbers; refuse silently losing precision. */
function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error('bigint value beyond 2^53');
  return n;
}

const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export async function openPostgres(url: string, poolSize: number): Promise<Database> {
  let where = 'PostgreSQL';
  try {
    const u = new URL(url);
    where = `PostgreSQL at ${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    throw new UserError('db.url-invalid', 'EHRBENCH_DATABASE_URL is not a valid postgres:// URL');
  }
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types, application_name: 'ehrbench' });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  try {
    const c = await pool.connect();
    c.release();
  } catch (err) {
    await pool.end().catch(() => undefined);
    const code = (err as { code?: string }).code ?? 'error';
    throw new UserError('db.unreachable', `${where}: cannot connect (${code}); check EHRBENCH_DATABASE_URL and that the server runs`);
  }

  const run = async <R>(q: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[]): Promise<R[]> =>
    (await q.query(sql, params as unknown[])).rows as R[];

  return {
    backend: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    exec: async (sql) => {
      await pool.query(sql);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({
          query: (sql, params) => run(client, sql, params),
          exec: async (sql) => {
            await client.query(sql);
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
