/**
 * The composition root: configuration, logger, store, catalog, endpoint allowlist, audit trail and
 * the run engine with its stages, wired once for a command or the daemon.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { statSync } from 'node:fs';
import {
  AuditLog,
  type AuditLogOptions,
  LivePolicy,
  loadMacKeys,
  loadMacKeysIfPresent,
  loadSigningKey,
  lostKeysReason,
  missingRecordingKeys,
  type PolicySource,
  readPolicy,
  recordPolicy,
  trustedKeys,
} from './audit';
import { Catalog, loadSiteData, type SiteData, summarizeSiteData } from './catalog';
import { type Config, type ConfigFile, configPath, type LoadOptions, readConfigFile, resolveConfig, summarizeConfig } from './config';
import { type Database, describeDatabase, openDatabase, pinnedDatabase } from './db';
import { createDeidStage, settingsFrom } from './deid';
import { assertNoForeignCode, assertSafeEgressEnvironment, type EndpointPolicy, loadEndpointPolicy, type PolicyLoadOptions, type Resolver, summarizeEndpoints } from './egress';
import { createLogger, type Logger } from './log';
import { AccessPolicy, ApprovalStore, completeApprovalLedgers, latestApprovalChanges, loadPrincipals, type PrincipalDirectory, STATUS_OF, STOPPED, summarizePrincipals } from './access';
import { createAnnotators, SqlExecutor } from './annotate';
import { ApprovalBudgets, EndpointCapacities, EndpointClients, FingerprintStore, Gateway } from './calls';
import { type Engine, templatePrompt, tokensUnderApproval } from './runs';
import { RatingStudies } from './ratings';
import { CanaryService, RunStore } from './runs';
import { DAEMON_VERSION } from './version';
import { completeLedgers, type LedgerEntry, missingFromLedger, missingFromStore, readLedgers, Revocations, serviceActor } from './identity';

export interface App {
  config: Config;
  logger: Logger;
  db: Database;
  /**
   * The catalog under the site data file in force, re-read when the file changes (IT binds a
   * benchmark). Throws the file's error while no valid version has been loaded.
   */
  catalog(): Catalog;
  /** The endpoint allowlist in force, re-read when endpoints.json changes; throws as catalog() does. */
  endpoints(): EndpointPolicy;
  audit: AuditLog;
  engine: Engine;
  approvals: ApprovalStore;
  /** What endpoints said they served, per endpoint and run (src/calls/fingerprints.ts). */
  fingerprints: FingerprintStore;
  /** Approvals' canaries: baselines, re-runs, drift checks and their review (src/runs/canary.ts). */
  canary: CanaryService;
  /** Rating studies: clinicians' blinded ratings of a jury benchmark's answers (an EHR run's prompts as its model received them). */
  ratings: RatingStudies;
  /** The principal directory, re-read when its file changes (hospital IT edits it). */
  principals(): PrincipalDirectory;
  /** Re-reads the principals file now (recorded first, as on any reload): after this process wrote it. */
  refreshPrincipals(): Promise<void>;
  /**
   * Looks at every live policy file now (principals, site data, endpoints) and waits until a new
   * version is recorded and in force: the daemon does this before each request, so the request after
   * an edit sees it. Says in the log when config.json changed, which only a restart applies.
   */
  refreshPolicies(): Promise<void>;
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
 * de-identification works. Recorded as policy.change before they are used. The configuration is read
 * at start only (it names the store, the keys, the listeners: nothing a running process can swap).
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

/** The site data in force and the catalog built under it: one version, so a binding is checked before it is used. */
interface SiteCatalog {
  site: SiteData;
  catalog: Catalog;
}

/**
 * The site data file, re-read live: hospital IT binds a benchmark's data, `benchmarks check` says it
 * is ready, and the next request runs it. The catalog is rebuilt with each version (a binding is
 * valid only against the benchmarks it names); a version it does not build under is invalid, and the
 * last good one stays in force.
 */
function siteCatalogSource(config: Config): PolicySource<SiteCatalog> {
  return {
    kind: 'site-data',
    file: config.catalogSiteData,
    load: (f) => {
      const site = loadSiteData(f);
      return { site, catalog: Catalog.load(config.catalogDirs, { site, limits: config.catalogLimits, files: config.catalogFiles }) };
    },
    summarize: (v) => summarizeSiteData(v.site),
  };
}

/**
 * config.json is read at start only: when it changes under a running process, the log says once
 * (config.changed-restart-needed) that the change waits for a restart.
 */
function restartOnly(file: string, logger: Logger): () => void {
  const mtimeOf = () => statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? -1;
  const loaded = mtimeOf();
  let said = loaded;
  return () => {
    const now = mtimeOf();
    if (now === said) return;
    said = now;
    if (now !== loaded) logger.warn('config.changed-restart-needed', { file });
  };
}

/**
 * The keys this process records and seals with. A process that only reads (no migration either) opens
 * without them when the keys folder lost them: its trail refuses every record (audit.keys-missing),
 * and listing runs or verifying the chain still works, so a site that lost the folder can see and
 * prove what it still has. Every other process refuses to start, naming the file.
 */
function recordingKeys(keysDir: string, writes: boolean): { keys: AuditLogOptions['keys']; macKeys: Map<string, Buffer> } {
  const missing = missingRecordingKeys(keysDir);
  if (missing.length > 0 && !writes) return { keys: { missing: lostKeysReason(keysDir, missing) }, macKeys: loadMacKeysIfPresent(keysDir) ?? new Map() };
  const macKeys = loadMacKeys(keysDir);
  return { keys: { signingKey: loadSigningKey(keysDir), macKey: macKeys.current }, macKeys: macKeys.all };
}

/**
 * The revocations of the ledgers outside the store (the witness folders) that the store does not hold:
 * a backup older than them was restored, which would have brought the revoked certificates back. Each
 * is put back as it was, after its own audit event (pki.revoke, rule pki.revoke.reinstated); a trail
 * that cannot record stops the process here, before it serves anyone.
 */
async function reinstateRevocations(db: Database, audit: AuditLog, ledgerDirs: string[], logger: Logger): Promise<void> {
  const lost: LedgerEntry[] = await missingFromStore(db, readLedgers(ledgerDirs));
  const revocations = new Revocations(db);
  for (const entry of lost) {
    await audit.record({
      type: 'pki.revoke',
      action: 'C',
      outcome: 'success',
      rule: 'pki.revoke.reinstated',
      reason: 'a revocation the restored store had lost, put back from the ledger outside it',
      actor: serviceActor('ehrbench'),
      detail: { principal: entry.principal, revocationId: entry.revocationId, revokedAt: entry.revokedAt, revokedBy: entry.revokedBy },
    });
    await revocations.reinstate(entry);
  }
  if (lost.length > 0) logger.warn('pki.revocations-reinstated', { count: lost.length });
  // And the other way: revocations an older release made (or made before a witness folder was added)
  // go into every ledger, so that from now on a restore cannot undo them either.
  const unledgered = await missingFromLedger(db, ledgerDirs);
  completeLedgers(ledgerDirs, unledgered);
  if (unledgered.length > 0) logger.info('pki.revocations-ledgered', { count: unledgered.length });
}

/**
 * The approval suspensions and closures of the ledgers outside the store (the witness folders) that
 * the store, at an older version, does not hold: a backup older than them was restored, which would
 * have brought the approvals back active. Each is applied again as a new version, with its own audit
 * event (rule approval.stop-reapplied); a reinstatement never is. A trail that cannot record stops the
 * process here, before it serves anyone.
 */
async function reapplyApprovalStops(approvals: ApprovalStore, audit: AuditLog, ledgerDirs: string[], logger: Logger): Promise<void> {
  let reapplied = 0;
  for (const latest of latestApprovalChanges(ledgerDirs)) {
    if (latest.change === 'reinstate') continue;
    const held = await approvals.get(latest.approvalId);
    if (!held || held.version >= latest.version || STOPPED[held.status] >= STOPPED[STATUS_OF[latest.change]]) continue;
    // In the approval's history as the officer who made it, so separation of duties holds as before
    // the restore (the officer who suspended still cannot reinstate); the trail says who applied it again.
    const changed = await approvals.change(latest.approvalId, latest.change, latest.changedBy, held.version, (tx) =>
      audit.recordIn(tx, {
        type: latest.change === 'close' ? 'approval.close' : 'approval.suspend',
        action: 'U',
        outcome: 'success',
        rule: 'approval.stop-reapplied',
        reason: `${latest.change} by ${latest.changedBy} at ${latest.changedAt}, lost with the restored store, applied again from the ledger`.slice(0, 200),
        actor: serviceActor('ehrbench'),
        subject: { approvalId: latest.approvalId },
      }),
    );
    if (changed) reapplied += 1;
  }
  if (reapplied > 0) logger.warn('approval.stops-reapplied', { count: reapplied });
  // And the other way: approvals an older release stopped (or changed since a folder's latest line)
  // go into every ledger, so that from now on a restore cannot undo them either.
  const ledgered = completeApprovalLedgers(ledgerDirs, await approvals.list());
  if (ledgered > 0) logger.info('approval.changes-ledgered', { count: ledgered });
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
  // The keys before the store: a refusal (a key missing) leaves nothing open behind it.
  const { keys, macKeys } = recordingKeys(config.keysDir, opts.migrate !== false);
  const trusted = trustedKeys(config.keysDir);
  const logger = createLogger({ level: opts.logLevel ?? config.logging.level, file: config.logging.file, console: opts.consoleLog ?? false });
  let db: Database;
  try {
    db = await openDatabase({ ...storeOptions, migrate: opts.migrate === false ? 'require' : true });
  } catch (err) {
    await logger.close();
    throw err;
  }
  const audit = new AuditLog(db, {
    provenance: { siteId: config.site.id, host: hostname(), daemonVersion: DAEMON_VERSION },
    keys,
    macKeys,
    checkpointEvery: config.audit.checkpointEvery,
    witnessDirs: config.audit.witnessDirs,
    legacyWitness: config.audit.legacyWitness,
    // Witnessed checkpoints signed before a key rotation still count.
    trustedKeys: trusted,
    logger,
  });
  // This process as a worker: leases of instances, planning and endpoint slots carry this id.
  const workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const approvals = new ApprovalStore(db);
  const revocations = new Revocations(db);
  // No policy is used before the trail holds it: a change that cannot be recorded opens nothing. A
  // site data or endpoints file that is invalid opens without it: only what needs it is refused.
  let livePrincipals: LivePolicy<PrincipalDirectory>;
  let liveSite: LivePolicy<SiteCatalog>;
  let liveEndpoints: LivePolicy<EndpointPolicy>;
  try {
    await recordPolicy({ db, audit }, 'config', configFile, undefined, 'start');
    liveSite = await LivePolicy.open(siteCatalogSource(config), { db, audit }, logger, { whileInvalid: 'keep' });
    const endpointOptions = { secrets: config.secrets, allowlistWidth: config.egress.allowlistWidth };
    liveEndpoints = await LivePolicy.open(endpointsSource(config.policies.endpoints, endpointOptions), { db, audit }, logger, { whileInvalid: 'keep' });
    livePrincipals = await LivePolicy.open(principalsSource(config.policies.principals), { db, audit }, logger);
    // A process that acts first puts back the revocations a restored store lost; until then it does nothing.
    if (opts.migrate !== false) {
      await reinstateRevocations(db, audit, config.audit.witnessDirs, logger);
      await reapplyApprovalStops(approvals, audit, config.audit.witnessDirs, logger);
    }
  } catch (err) {
    await db.close().catch(() => undefined);
    await logger.close();
    throw err;
  }
  // Said at every start: the policy files are live, this one only a restart applies.
  logger.info('config.loaded', { file: config.file, sha256: configFile.sha256, status: 'applied-until-restart' });
  const configChanged = restartOnly(config.file, logger);
  const principals = () => livePrincipals.get();
  const catalog = () => liveSite.get().catalog;
  const endpoints = () => liveEndpoints.get();
  const live = [livePrincipals, liveSite, liveEndpoints];
  // One client per endpoint (official SDK on its egress-guarded transport) for the model under test,
  // judges and probes alike; only the gateway uses them.
  const clients = new EndpointClients({ ...config.models, ...(opts.env ? { env: opts.env } : {}), ...(opts.resolver ? { resolver: opts.resolver } : {}) });
  const sql = new SqlExecutor();
  const fingerprints = new FingerprintStore(db);
  const calls = new Gateway({
    clients,
    fingerprints,
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
  const canary = new CanaryService(engine, approvals, fingerprints, db, config.export.minCellSize);
  // A call that saw a new model behind an endpoint: the canaries on it look now, not at their next date.
  calls.onFingerprintChanged(() => canary.nudge());
  return {
    config,
    logger,
    db,
    catalog,
    endpoints,
    audit,
    engine,
    approvals,
    fingerprints,
    canary,
    ratings: new RatingStudies(db, engine),
    principals,
    refreshPrincipals: () => livePrincipals.refresh(),
    async refreshPolicies() {
      configChanged();
      await Promise.all(live.map((p) => p.refresh()));
    },
    store: describeDatabase(storeOptions),
    async close() {
      await Promise.all(live.map((p) => p.settled()));
      await calls.close();
      await sql.close();
      // Shutdown seals the trail: a checkpoint over everything recorded, copied to the witnesses.
      // (A trail that stopped itself, keys lost or a rollback found, has said why; a seal would only fail.)
      if (!audit.unavailable()) await audit.seal().catch((err: unknown) => logger.error('audit.seal-failed', { err }));
      await db.close();
      await logger.close();
    },
  };
}
