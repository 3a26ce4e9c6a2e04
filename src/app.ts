/**
 * The composition root: configuration, logger, store, catalog, endpoint allowlist, audit trail and
 * the run engine with its stages, wired once for a command or the daemon.
 */
import { passThroughAudit, type AuditTrail } from './audit';
import { Catalog } from './catalog';
import { type Config, loadConfig, type LoadOptions } from './config';
import { type Database, openDatabase } from './db';
import { createDeidStage, settingsFrom } from './deid';
import { type EndpointPolicy, loadEndpointPolicy, type Resolver } from './egress';
import { createLogger, type Logger } from './log';
import { tierGate } from './policy';
import { type Engine } from './runs/engine';
import { EndpointModels } from './runs/model-stage';
import { templatePrompt } from './runs/prompt';
import { benchmarkScoring } from './runs/scoring';
import { RunStore } from './runs/store';

export interface App {
  config: Config;
  logger: Logger;
  db: Database;
  catalog: Catalog;
  endpoints: EndpointPolicy;
  audit: AuditTrail;
  engine: Engine;
  close(): Promise<void>;
}

export interface OpenOptions extends LoadOptions {
  /** Readable log lines on stderr (off for --json output and in tests). */
  consoleLog?: boolean;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Tests inject a resolver to simulate DNS. */
  resolver?: Resolver;
}

export async function openApp(opts: OpenOptions = {}): Promise<App> {
  const config = loadConfig(opts);
  const logger = createLogger({ level: opts.logLevel ?? config.logging.level, file: config.logging.file, console: opts.consoleLog ?? false });
  const catalog = Catalog.load(config.catalogDirs);
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
  const audit = passThroughAudit;
  const models = new EndpointModels({ ...config.models, ...(opts.env ? { env: opts.env } : {}), ...(opts.resolver ? { resolver: opts.resolver } : {}) });
  const engine: Engine = {
    store: new RunStore(db),
    catalog,
    endpoints,
    audit,
    access: tierGate,
    prompt: templatePrompt,
    deid: createDeidStage(settingsFrom(config.deid)),
    models,
    scoring: benchmarkScoring,
    logger,
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
    async close() {
      await models.close();
      await db.close();
      await logger.close();
    },
  };
}
