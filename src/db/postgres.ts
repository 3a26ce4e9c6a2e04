import pg from 'pg';
import { UserError } from '../errors';
import { connectionLossCode, DatabaseUnavailable } from './errors';
import type { Database, Queryable } from './index';

const INT8_OID = 20;
const DEADLOCK_DETECTED = '40P01';
const DEADLOCK_RETRIES = 3;

/** bigint columns (counts, audit seq) as JS numbers; refuse silently losing precision. */
function parseInt8(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error('bigint value beyond 2^53');
  return n;
}

const types = {
  getTypeParser: ((oid: number, format?: string) => (oid === INT8_OID ? parseInt8 : pg.types.getTypeParser(oid, format as 'text'))) as typeof pg.types.getTypeParser,
};

export async function openPostgres(url: string, poolSize: number, source = 'EHRBENCH_DATABASE_URL'): Promise<Database> {
  let where = 'PostgreSQL';
  try {
    const u = new URL(url);
    where = `PostgreSQL at ${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    throw new UserError('db.url-invalid', `${source} is not a valid postgres:// URL`);
  }
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types, application_name: 'ehrbench' });
  // An idle client that loses its server must not crash the process; the next query reports it.
  pool.on('error', () => undefined);
  // Nor a checked-out one. pg-pool removes its listener at checkout, and a client handed straight
  // from one releaser to a waiting pool.connect() has no listener of ours until that caller resumes
  // (a microtask later), while the rest of the same network read (the server's FATAL "terminating
  // connection") is parsed synchronously and emits 'error'. The error still reaches the statement in
  // flight, and a client that saw it is no longer queryable: pg-pool destroys it on release.
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    const c = await pool.connect();
    c.release();
  } catch (err) {
    await pool.end().catch(() => undefined);
    const code = (err as { code?: string }).code ?? 'error';
    const failure = new UserError('db.unreachable', `${where}: cannot connect (${code}); check ${source} and that the server runs`);
    // A server that is down or restarting is worth waiting for (a worker does); a refused login is not.
    const lost = connectionLossCode(err);
    if (lost) failure.cause = new DatabaseUnavailable(where, lost);
    throw failure;
  }

  // A lost server becomes one classifiable error; any other error (SQL, constraint) passes unchanged.
  const classify = (err: unknown): unknown => {
    const lost = connectionLossCode(err);
    return lost ? new DatabaseUnavailable(where, lost) : err;
  };
  const run = async <R>(q: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[], arrays = false): Promise<R[]> => {
    try {
      const result = arrays ? await q.query({ text: sql, values: params as unknown[], rowMode: 'array' }) : await q.query(sql, params as unknown[]);
      return result.rows as R[];
    } catch (err) {
      throw classify(err);
    }
  };
  const connect = async (): Promise<pg.PoolClient> => {
    try {
      return await pool.connect();
    } catch (err) {
      throw classify(err);
    }
  };

  /**
   * A statement outside a transaction that PostgreSQL chose as a deadlock victim (40P01) changed
   * nothing and is simply run again; a few times at most. Inside a transaction only the caller can
   * retry, so `transaction` does not.
   */
  const standalone = async <R>(sql: string, params?: readonly unknown[], arrays = false): Promise<R[]> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await run<R>(pool, sql, params, arrays);
      } catch (err) {
        if ((err as { code?: unknown }).code !== DEADLOCK_DETECTED || attempt >= DEADLOCK_RETRIES) throw err;
      }
    }
  };

  const db: Database = {
    backend: 'postgres',
    query: (sql, params) => standalone(sql, params),
    queryArrays: (sql, params) => standalone(sql, params, true),
    exec: async (sql) => {
      await run(pool, sql);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const client = await connect();
      // pg-pool removes its own error listener while a client is checked out: a connection lost
      // mid-transaction would emit 'error' with no listener and crash the process. Keep the error
      // instead; the statement in flight fails with it, and the client is destroyed, not pooled.
      let broken: unknown;
      const onError = (err: unknown) => {
        broken ??= err;
      };
      client.on('error', onError);
      try {
        await run(client, 'BEGIN');
        const result = await fn({
          query: (sql, params) => run(client, sql, params),
          exec: async (sql) => {
            await run(client, sql);
          },
        });
        await run(client, 'COMMIT');
        return result;
      } catch (err) {
        if (broken === undefined) await client.query('ROLLBACK').catch((e: unknown) => onError(e));
        // When the connection broke, that is the cause, whatever error it surfaced as in `fn`.
        const lost = broken === undefined || err instanceof DatabaseUnavailable ? undefined : classify(broken);
        throw lost instanceof DatabaseUnavailable ? lost : err;
      } finally {
        client.off('error', onError);
        // release(err) destroys the client: a connection in an unknown state never goes back to the pool.
        client.release(broken === undefined ? undefined : broken instanceof Error ? broken : true);
      }
    },
    close: () => pool.end(),
  };
  // Not enumerable: a store object that is logged or serialised does not carry the URL (it may hold a password).
  Object.defineProperty(db, 'connectionUrl', { value: url, enumerable: false });
  return db;
}
