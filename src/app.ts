/**
 * The composition root: configuration, logger, store, catalog, endpoint allowlist, audit trail and
 * the run engine with its stages, wired once for a command or the daemon.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { AuditLog, LivePolicy, loadMacKeys, loadSigningKey, type PolicySource, readPolicy, recordPolicy, trustedKeys } from './audit';
import { Catalog, loadSiteData, type SiteData, summarizeSiteData } from './catalog';
import { type Config, type ConfigFile, configPath, type LoadOptions, readConfigFile, resolveConfig, summarizeConfig } from './config';
import { type Database, describeDatabase, openDatabase, pinnedDatabase } from './db';
import { createDeidStage, settingsFrom } from './deid';
import { assertNoForeignCode, assertSafeEgressEnvironment, type EndpointPolicy, loadEndpointPolicy, type PolicyLoadOptions, type Resolver, summarizeEndpoints } from './egress';
import { createLogger, type Logger } from './log';
import { AccessPolicy, ApprovalStore, loadPrincipals, type PrincipalDirectory, summarizePrincipals } from './access';
import { createAnnotators, SqlExecutor } from './annotate';
import { ApprovalBudgets, EndpointCapacities, EndpointClients, Gateway } from './calls';
import { type Engine, templatePrompt, tokensUnderApproval } from './runs';
import { RunStore } from './runs';
import { DAEMON_VERSION } from './version';
import { Revocations } from './identity';

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
  /** Re-reads the principals file now (recorded first, as on any reload): after this process wrote it. */
  refreshPrincipals(): Promise<void>;
  /** Where the store is, for the "store: ..." line: "postgres (SOURCE) at host:port/db" or "embedded at DIR". */
  store: string;
  close(): Promise<void>;
}

export interface OpenOptions extends LoadOptions {
  /** Readable log lines on stderr (off for --json output and in tests). */
  consoleLog?: boolean;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Tests inject a resolver to simulate DNS. */
  resolver?: Resolver;
  /**
   * Whether this process may bring the store's schema up to date (default true: the daemon, workers,
   * commands that write). false: a command that only reads opens the store as it is and refuses one
   * with pending migrations (db.migrations-pending), so a look never migrates a database or seals a
   * checkpoint into the witnesses.
   */
  migrate?: boolean;
}

/**
 * The principals file, re-read when its modification time changes (looked at at most once a second:
 * access is checked before every instance, and a removed or disabled person must lose access within
 * that second, not on the next restart). A new version is recorded as policy.change before it is used.
 */
function principalsSource(file: string): PolicySource<PrincipalDirectory> {
  return { kind: 'principals', file, load: loadPrincipals, summarize: summarizePrincipals };
}

function endpointsSource(file: string, opts: PolicyLoadOptions): PolicySource<EndpointPolicy> {
  return { kind: 'endpoints', file, load: (f) => loadEndpointPolicy(f, opts), summarize: summarizeEndpoints };
}

/**
 * The configuration and the site data file are policy too: they say which folders benchmarks and
 * their files come from, which data a benchmark reads (and so its tier), where witnesses go and how
 * de-identification works. Read at start, recorded as policy.change before they are used.
 */
interface ConfigVersion {
  written: ConfigFile;
  config: Config;
}

function configSource(file: string, env: NodeJS.ProcessEnv): PolicySource<ConfigVersion> {
  return {
    kind: 'config',
    file,
    load: (f) => {
      const written = readConfigFile(f);
      return { written, config: resolveConfig(written, f, env) };
    },
    summarize: (v) => summarizeConfig(v.written),
  };
}

function siteDataSource(file: string): PolicySource<SiteData> {
  return { kind: 'site-data', file, load: loadSiteData, summarize: summarizeSiteData };
}

export async function openApp(opts: OpenOptions = {}): Promise<App> {
  // Before anything else: no proxy or TLS override may weaken the egress guard.
  assertSafeEgressEnvironment(opts.env ?? process.env);
  // Nor may code from outside the installation have been loaded before this point (a preload).
  assertNoForeignCode();
  const env = opts.env ?? process.env;
  const configFile = readPolicy(configSource(configPath(opts), env));
  const config = configFile.value.config;
  // The store the configuration names, or its one-line refusal: never the other backend.
  const storeOptions = pinnedDatabase(config.database);
  const logger = createLogger({ level: opts.logLevel ?? config.logging.level, file: config.logging.file, console: opts.consoleLog ?? false });
  const siteDataFile = readPolicy(siteDataSource(config.catalogSiteData));
  const catalog = Catalog.load(config.catalogDirs, { site: siteDataFile.value, limits: config.catalogLimits, files: config.catalogFiles });
  // Read and checked now (a bad file is reported before the store opens), in use once recorded below.
  const endpointsFile = readPolicy(endpointsSource(config.policies.endpoints, { secrets: config.secrets, allowlistWidth: config.egress.allowlistWidth }));
  const endpoints = endpointsFile.value;
  let db: Database;
  try {
    db = await openDatabase({ ...storeOptions, migrate: opts.migrate === false ? 'require' : true });
  } catch (err) {
    await logger.close();
    throw err;
  }
  const macKeys = loadMacKeys(config.keysDir);
  const audit = new AuditLog(db, {
    provenance: { siteId: config.site.id, host: hostname(), daemonVersion: DAEMON_VERSION },
    signingKey: loadSigningKey(config.keysDir),
    macKey: macKeys.current,
    macKeys: macKeys.all,
    checkpointEvery: config.audit.checkpointEvery,
    witnessDirs: config.audit.witnessDirs,
    // Witnessed checkpoints signed before a key rotation still count.
    trustedKeys: trustedKeys(config.keysDir),
    logger,
  });
  // This process as a worker: leases of instances, planning and endpoint slots carry this id.
  const workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const approvals = new ApprovalStore(db);
  const revocations = new Revocations(db);
  // No policy is used before the trail holds it: a change that cannot be recorded opens nothing.
  let livePrincipals: LivePolicy<PrincipalDirectory>;
  try {
    await recordPolicy({ db, audit }, 'config', configFile, undefined, 'start');
    await recordPolicy({ db, audit }, 'site-data', siteDataFile, undefined, 'start');
    await recordPolicy({ db, audit }, 'endpoints', endpointsFile, undefined, 'start');
    livePrincipals = await LivePolicy.open(principalsSource(config.policies.principals), { db, audit }, logger);
  } catch (err) {
    await db.close().catch(() => undefined);
    await logger.close();
    throw err;
  }
  const principals = () => livePrincipals.get();
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
  const runStore = new RunStore(db);
  const engine: Engine = {
    store: runStore,
    catalog,
    endpoints,
    audit,
    access: new AccessPolicy(principals, approvals, (principal, since) => revocations.blanketSince(principal, since)),
    prompt: templatePrompt,
    deid: createDeidStage(settingsFrom(config.deid), { loadEvidence: (runId) => runStore.loadEvidence(runId) }),
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
    refreshPrincipals: () => livePrincipals.refresh(),
    store: describeDatabase(storeOptions),
    async close() {
      await livePrincipals.settled();
      await calls.close();
      await sql.close();
      // Shutdown seals the trail: a checkpoint over everything recorded, copied to the witnesses.
      await audit.seal().catch((err: unknown) => logger.error('audit.seal-failed', { err }));
      await db.close();
      await logger.close();
    },
  };
}
