/**
 * The composition root: configuration, logger, store, catalog, endpoint allowlist, audit trail and
 * the run engine with its stages, wired once for a command or the daemon.
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { hostname } from 'node:os';
import { AuditLog, loadMacKeys, loadSigningKey } from './audit';
import { Catalog } from './catalog';
import { type Config, loadConfig, type LoadOptions } from './config';
import { type Database, openDatabase } from './db';
import { createDeidStage, settingsFrom } from './deid';
import { assertSafeEgressEnvironment, type EndpointPolicy, loadEndpointPolicy, type Resolver } from './egress';
import { createLogger, type Logger } from './log';
import { AccessPolicy, ApprovalStore, loadPrincipals, type PrincipalDirectory } from './access';
import { createAnnotators, SqlExecutor } from './annotate';
import { ApprovalBudgets, EndpointCapacities, EndpointClients, Gateway } from './calls';
import { type Engine, templatePrompt, tokensUnderApproval } from './runs';
import { RunStore } from './runs';
import { DAEMON_VERSION } from './version';

export interface App {
  config: Config;
  logger: Logger;
  db: Database;
  catalog: Catalog;
  endpoints: EndpointPolicy;
  audit: AuditLog;
  engine: Engine;
  approvals: ApprovalStore;
  /** The principal directory, re-read when its file changes (hospital IT edits it). */
  principals(): PrincipalDirectory;
  close(): Promise<void>;
}

export interface OpenOptions extends LoadOptions {
  /** Readable log lines on stderr (off for --json output and in tests). */
  consoleLog?: boolean;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Tests inject a resolver to simulate DNS. */
  resolver?: Resolver;
}

/**
 * Loads the principals file, and again when its modification time changes. The file is looked at
 * at most once a second: access is checked before every instance, and a removed or disabled person
 * must lose access within that second, not on the next restart.
 */
function principalsLoader(file: string): () => PrincipalDirectory {
  let loaded: { mtimeMs: number; checkedAt: number; directory: PrincipalDirectory } | undefined;
  return () => {
    const now = Date.now();
    if (loaded && now - loaded.checkedAt < 1000) return loaded.directory;
    const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? -1;
    if (!loaded || loaded.mtimeMs !== mtimeMs) loaded = { mtimeMs, checkedAt: now, directory: loadPrincipals(file) };
    else loaded.checkedAt = now;
    return loaded.directory;
  };
}

export async function openApp(opts: OpenOptions = {}): Promise<App> {
  // Before anything else: no proxy or TLS override may weaken the egress guard.
  assertSafeEgressEnvironment(opts.env ?? process.env);
  const config = loadConfig(opts);
  const logger = createLogger({ level: opts.logLevel ?? config.logging.level, file: config.logging.file, console: opts.consoleLog ?? false });
  const catalog = Catalog.load(config.catalogDirs, { siteDataFile: config.catalogSiteData });
  const endpoints = loadEndpointPolicy(config.policies.endpoints);
  let db: Database;
  try {
    db = await openDatabase({
      ...(config.database.url ? { url: config.database.url } : {}),
      embeddedDir: config.database.embeddedDir,
      poolSize: config.database.poolSize,
    });
  } catch (err) {
    await logger.close();
    throw err;
  }
  const audit = new AuditLog(db, {
    provenance: { siteId: config.site.id, host: hostname(), daemonVersion: DAEMON_VERSION },
    signingKey: loadSigningKey(config.keysDir),
    macKey: loadMacKeys(config.keysDir).current,
    checkpointEvery: config.audit.checkpointEvery,
    witnessDirs: config.audit.witnessDirs,
    logger,
  });
  // This process as a worker: leases of instances, planning and endpoint slots carry this id.
  const workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const approvals = new ApprovalStore(db);
  const principals = principalsLoader(config.policies.principals);
  // One client per endpoint (official SDK on its egress-guarded transport) for the model under test,
  // judges and probes alike; only the gateway uses them.
  const clients = new EndpointClients({ ...config.models, ...(opts.env ? { env: opts.env } : {}), ...(opts.resolver ? { resolver: opts.resolver } : {}) });
  const sql = new SqlExecutor();
  const calls = new Gateway({
    clients,
    capacities: new EndpointCapacities(db, workerId, () => config.runs.leaseSeconds),
    // Read when a call is made: the engine's stages are the gateway's (tests may wrap them).
    ports: () => engine,
    concurrency: () => engine.settings.concurrency,
  });
  const engine: Engine = {
    store: new RunStore(db),
    catalog,
    endpoints,
    audit,
    access: new AccessPolicy(principals, approvals),
    prompt: templatePrompt,
    deid: createDeidStage(settingsFrom(config.deid)),
    budget: new ApprovalBudgets(db, config.export.prices, config.runs.leaseSeconds, tokensUnderApproval),
    calls,
    annotate: createAnnotators(sql),
    logger,
    workerId,
    settings: {
      concurrency: config.runs.concurrencyPerEndpoint,
      maxAttempts: config.runs.maxAttempts,
      leaseSeconds: config.runs.leaseSeconds,
      claimBatch: config.runs.claimBatch,
    },
  };
  return {
    config,
    logger,
    db,
    catalog,
    endpoints,
    audit,
    engine,
    approvals,
    principals,
    async close() {
      await calls.close();
      await sql.close();
      // Shutdown seals the trail: a checkpoint over everything recorded, copied to the witnesses.
      await audit.seal().catch((err: unknown) => logger.error('audit.seal-failed', { err }));
      await db.close();
      await logger.close();
    },
  };
}
