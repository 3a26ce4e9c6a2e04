/**
 * npm run bench:audit [-- --json] [--events N] [--writers W] [--verify N]
 * Audit trail throughput on PostgreSQL (a fresh database on $BENCH_DATABASE_URL, default the local
 * server's `test` database's cluster): appended events/s with W concurrent writers (each its own
 * connection pool and group commit, as separate daemon processes would be, 32 callers each), and
 * verification events/s over the whole chain (hash, MAC, signatures, read from the database): as
 * `ehrbench audit verify` does on this host (postgres_verify_events_per_s), and both ways it can: in
 * parallel segments (worker threads, every link still checked) and streamed by one thread; and the
 * process's peak resident memory during the first (sampled), which must not grow with --events.
 * Also the same on the embedded PGlite with one writer. A measurement, not a test.
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { AuditLog, type AuditEventInput, chainOf, loadCheckpoints, loadMacKeys, loadSigningKey, streamChain, trustedKeys, verifyAudit } from '../audit';
import { type Database, openDatabase } from '../db';
import { silentLogger } from '../log';
import { argFlag, argNumber, benchHome, type ScratchDatabase, scratchDatabase } from './harness';

const actor = { principal: 'bench', role: 'service', authMethod: 'service' } as const;
const event = (i: number): AuditEventInput => ({
  type: 'endpoint.call',
  action: 'E',
  outcome: 'success',
  rule: 'egress.allowlisted-endpoint',
  actor,
  subject: { runId: '7f1c9a52-3f0e-4d6a-9a43-1b0c2d3e4f50', benchmarkId: 'pubmed_qa', tier: 'public', endpointId: 'demo-loopback' },
  detail: { ordinal: i, attempt: 1, requestBytes: 2048, requestSha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
});

async function append(dbs: Database[], keysDir: string, witnessDir: string, events: number): Promise<number> {
  const signingKey = loadSigningKey(keysDir);
  const macKey = loadMacKeys(keysDir).current;
  const logs = dbs.map(
    (db) =>
      new AuditLog(db, {
        provenance: { siteId: 'bench', host: hostname(), daemonVersion: 'bench' },
        keys: { signingKey, macKey },
        checkpointEvery: 1000,
        witnessDirs: [witnessDir],
        logger: silentLogger,
      }),
  );
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    logs.flatMap((log) =>
      Array.from({ length: 32 }, async () => {
        while (next < events) await log.record(event(next++));
      }),
    ),
  );
  const seconds = (performance.now() - t0) / 1000;
  await logs[0]?.seal();
  return events / seconds;
}

/**
 * `how`: as `ehrbench audit verify` reads this store on this host (chainOf), in parallel segments
 * whatever the cores, or streamed by one thread.
 */
async function verifyRate(db: Database, keysDir: string, how: 'as-verify' | 'parallel' | 'sequential' = 'as-verify'): Promise<{ events: number; perSecond: number; ok: boolean; rssMb: number }> {
  // The process's resident memory through the verification, sampled (worker threads included): it must
  // not grow with the chain (compare --events 100000 and 600000).
  let rss = process.memoryUsage.rss();
  const sampler = setInterval(() => (rss = Math.max(rss, process.memoryUsage.rss())), 100);
  const t0 = performance.now();
  try {
    const report = await verifyAudit({
      ...(how === 'sequential' ? { records: streamChain(db) } : chainOf(db, how === 'parallel' ? Number.POSITIVE_INFINITY : undefined)),
      checkpoints: await loadCheckpoints(db),
      witnesses: [],
      trustedKeys: trustedKeys(keysDir),
      macKeys: loadMacKeys(keysDir).all,
    });
    const perSecond = report.events / ((performance.now() - t0) / 1000);
    return { events: report.events, perSecond, ok: report.ok, rssMb: Math.round(Math.max(rss, process.memoryUsage.rss()) / 1024 / 1024) };
  } finally {
    clearInterval(sampler);
  }
}

async function bench(): Promise<void> {
  const events = argNumber('events', 100_000);
  const writers = argNumber('writers', 8);
  const json = argFlag('json');
  const home = await benchHome('bench-audit');
  const keysDir = join(home.home, 'keys');
  const figures: Record<string, unknown> = { events, writers };

  const admin = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  let scratch: ScratchDatabase | undefined;
  try {
    scratch = await scratchDatabase(admin, 'BENCH_DATABASE_URL', 'bench');
    const url = scratch.url;
    const first = await openDatabase({ url, embeddedDir: '', poolSize: 4 });
    const rest = await Promise.all(Array.from({ length: writers - 1 }, () => openDatabase({ url, embeddedDir: '', poolSize: 4, migrate: false })));
    try {
      figures.postgres_append_events_per_s = Math.round(await append([first, ...rest], keysDir, join(home.home, 'audit'), events));
      const v = await verifyRate(first, keysDir);
      figures.postgres_verify_events_per_s = Math.round(v.perSecond);
      figures.postgres_verified_ok = v.ok;
      figures.postgres_verify_peak_rss_mb = v.rssMb;
      figures.postgres_verify_parallel_events_per_s = Math.round((await verifyRate(first, keysDir, 'parallel')).perSecond);
      figures.postgres_verify_sequential_events_per_s = Math.round((await verifyRate(first, keysDir, 'sequential')).perSecond);
    } finally {
      await Promise.all([first, ...rest].map((d) => d.close()));
    }
  } catch (err) {
    figures.postgres_error = scratch ? `${scratch.server} failed (${(err as { code?: string }).code ?? 'error'})` : (err as Error).message;
  } finally {
    await scratch?.drop().catch(() => undefined);
  }

  const embedded = await openDatabase({ embeddedDir: join(home.home, 'db') });
  try {
    // Its own witness folder: the PostgreSQL chain's witnessed checkpoints are not this chain's (it would stop as rolled back).
    figures.pglite_append_events_per_s = Math.round(await append([embedded], keysDir, join(home.home, 'audit-embedded'), Math.min(events, 20_000)));
    const v = await verifyRate(embedded, keysDir);
    figures.pglite_verify_events_per_s = Math.round(v.perSecond);
    figures.pglite_verified_ok = v.ok;
  } finally {
    await embedded.close();
    home.remove();
  }

  if (json) process.stdout.write(JSON.stringify(figures) + '\n');
  else for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(32)} ${String(v)}\n`);
}

bench().catch((err: unknown) => {
  process.stderr.write(`bench:audit failed: ${(err as Error).message}\n`);
  process.exit(1);
});
