/**
 * The audit writer's one-statement append: a writer alone on its store chains each batch onto the
 * head it left, in one statement that moves the head only from exactly there. Several writers on one
 * store still make one unbroken chain (a writer that finds the head moved takes the locked way), and
 * a head moved back under a writer still stops the trail as a rollback. Both backends.
 */
import { hostname } from 'node:os';
import { openApp, type App } from '../../src/app';
import { AuditLog, type AuditEventInput, loadMacKeys, loadSigningKey } from '../../src/audit';
import type { Database } from '../../src/db';
import { silentLogger } from '../../src/log';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { problems, verifyApp } from '../helpers/audit';

jest.setTimeout(120_000);

const actor = { principal: 'alice', role: 'researcher', authMethod: 'mtls' } as const;
const event = (i: number): AuditEventInput => ({
  type: 'endpoint.call',
  action: 'E',
  outcome: 'success',
  rule: 'egress.allowlisted-endpoint',
  actor,
  subject: { runId: 'run-1', benchmarkId: 'medec', tier: 'public', endpointId: 'demo-loopback' },
  detail: { ordinal: i, attempt: 1 },
});

/** The store as a writer sees it, counting what it is asked: statements on their own, and transactions. */
function counted(db: Database): { db: Database; n: { statements: number; transactions: number } } {
  const n = { statements: 0, transactions: 0 };
  return {
    n,
    db: {
      ...db,
      backend: db.backend,
      query: (sql, params) => {
        n.statements += 1;
        return db.query(sql, params);
      },
      transaction: (fn) => {
        n.transactions += 1;
        return db.transaction(fn);
      },
      close: () => db.close(),
    },
  };
}

function writer(app: App, db: Database): AuditLog {
  const keysDir = app.config.keysDir;
  return new AuditLog(db, {
    provenance: { siteId: 'test', host: hostname(), daemonVersion: 'test' },
    keys: { signingKey: loadSigningKey(keysDir), macKey: loadMacKeys(keysDir).current },
    checkpointEvery: 1000,
    witnessDirs: app.config.audit.witnessDirs,
    logger: silentLogger,
  });
}

describe.each(backends())('audit appends on %s', (backend) => {
  let home: TestHome;
  let app: App;
  beforeEach(async () => {
    home = await makeHome(backend);
    app = await openApp({ file: home.configFile, env: home.env });
  });
  afterEach(async () => {
    await app.close();
    await home.cleanup();
  });

  it('a lone writer appends each batch in one statement once it has seen the head where it left it', async () => {
    const { db, n } = counted(app.db);
    const log = writer(app, db);
    // The first batch checks the witnesses and locks the head; the second finds the head where the
    // first left it; from then on a batch is one statement, no transaction.
    await log.record(event(1));
    await log.record(event(2));
    expect(n.transactions).toBe(2);
    const before = { ...n };
    for (let i = 3; i <= 6; i++) await log.record(event(i));
    await Promise.all(Array.from({ length: 20 }, (_, i) => log.record(event(7 + i))));
    expect(n.transactions).toBe(before.transactions);
    expect(n.statements).toBeGreaterThanOrEqual(before.statements + 5);
    await log.seal();
    expect(problems(await verifyApp(app))).toEqual([]);
  });

  it('several writers on one store keep one chain: a writer that finds the head moved takes the locked way', async () => {
    const logs = [writer(app, app.db), writer(app, app.db), writer(app, app.db)];
    const [head] = await app.db.query<{ seq: number }>('SELECT seq FROM audit_head');
    let next = 0;
    await Promise.all(
      logs.flatMap((log) =>
        Array.from({ length: 4 }, async () => {
          while (next < 90) await log.record(event(next++));
        }),
      ),
    );
    await logs[0]?.seal();
    const rows = await app.db.query<{ n: number; lo: number; hi: number; ordinals: number }>(
      "SELECT count(*)::integer AS n, min(seq) AS lo, max(seq) AS hi, count(DISTINCT detail->>'ordinal')::integer AS ordinals FROM audit_events WHERE seq > $1",
      [head?.seq ?? 0],
    );
    // Every event once, at consecutive seqs.
    expect(rows[0]).toEqual({ n: 90, lo: (head?.seq ?? 0) + 1, hi: (head?.seq ?? 0) + 90, ordinals: 90 });
    expect(problems(await verifyApp(app))).toEqual([]);
  });

  it('a head moved back under a lone writer stops the trail: the batch is refused, nothing is written', async () => {
    const log = writer(app, app.db);
    for (let i = 1; i <= 5; i++) await log.record(event(i));
    const [head] = await app.db.query<{ seq: number }>('SELECT seq FROM audit_head');
    const at = (head?.seq ?? 0) - 2;
    const [back] = await app.db.query<{ row_hash: string }>('SELECT row_hash FROM audit_events WHERE seq = $1', [at]);
    // A restore from an older backup: the last two rows gone, the head back where it was then.
    await app.db.transaction(async (tx) => {
      await tx.query('ALTER TABLE audit_events DISABLE TRIGGER USER');
      await tx.query('DELETE FROM audit_events WHERE seq > $1', [at]);
      await tx.query('ALTER TABLE audit_events ENABLE TRIGGER USER');
      await tx.query('UPDATE audit_head SET seq = $1, row_hash = $2 WHERE singleton', [at, back?.row_hash]);
    });
    await expect(log.record(event(6))).rejects.toMatchObject({ code: 'audit.unavailable', rule: 'audit.rollback-detected' });
    const [after] = await app.db.query<{ seq: number }>('SELECT max(seq) AS seq FROM audit_events');
    expect(after?.seq).toBe(at);
  });
});
