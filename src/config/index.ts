/**
 * Loads the one configuration file, validates it against schemas/config.schema.json (unknown keys are
 * errors) and resolves defaults and relative paths. Nothing else in ehrbench reads configuration files.
 */
import { commandPrefix } from '../command-prefix';
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { UserError } from '../errors';
import { dataHome } from '../paths';
import { chooseDatabase, type DatabaseBackend, type DatabaseChoice } from './database';
import { type FilePlaces, filePlaces, type SecretPlaces, secretPlaces } from './secrets';
import { type ServerTimeouts, type ServerTimeoutsFile, serverTimeouts } from './server-timeouts';
import { readJsonFile, validateOrThrow } from '../schema';

export type { DaemonFile, FilePlaces, SecretPlaces } from './secrets';
export { DEFAULT_DATABASE_URL_ENV } from './database';
export { connectionsCheckingIntervalMs } from './server-timeouts';
export type { DatabaseBackend, DatabaseChoice } from './database';

/** The file as written (see the schema for each field's meaning). */
export interface ConfigFile {
  configVersion: 1;
  site: { id: string; name?: string };
  database?: { backend?: DatabaseBackend; urlEnv?: string; urlFile?: string; embeddedDir?: string; poolSize?: number };
  policies?: { endpoints?: string; principals?: string };
  catalog?: { dirs?: string[]; dataDirs?: string[]; siteData?: string; maxInstanceBytes?: number; maxRecordBytes?: number };
  keys?: { dir?: string };
  secrets?: { dir?: string };
  egress?: { allowlistWidth?: { ipv4?: number; ipv6?: number } };
  logging?: { level?: 'debug' | 'info' | 'warn' | 'error'; file?: string };
  runs?: { concurrencyPerEndpoint?: number; maxAttempts?: number; leaseSeconds?: number; claimBatch?: number };
  models?: { timeoutMs?: number; maxRetries?: number; maxBackoffMs?: number };
  audit?: { checkpointEvery?: number; witnessDirs?: string[]; retentionYears?: number; legacyWitness?: boolean };
  export?: { minCellSize?: number; countRangeWidth?: number; dir?: string; prices?: PriceEntry[] };
  server?: {
    host?: string;
    port?: number;
    certFile?: string;
    keyFile?: string;
    clientCaFiles?: string[];
    externalClientCaFiles?: string[];
    healthPort?: number;
    healthPortMetrics?: boolean;
    console?: boolean;
    bodyLimitBytes?: number;
    maxConnections?: number;
    maxConnectionsPerCertificate?: number;
    rateLimit?: { max?: number; windowSeconds?: number; deniedMax?: number };
    timeouts?: ServerTimeoutsFile;
    workers?: number;
    pollSeconds?: number;
  };
  worker?: { healthPort?: number; healthPortMetrics?: boolean };
  deid?: { mode?: 'surrogate' | 'tag'; maxShiftDays?: number; restrictedZip3?: string[]; secretFile?: string; siteLexicons?: Partial<Record<'staff' | 'facilities' | 'places' | 'streets', string>> };
}

/** A price in USD per million tokens, for an endpoint id or a model (the endpoint's model or deployment). */
export interface PriceEntry {
  endpoint?: string;
  model?: string;
  inputUsdPerMillion: number;
  outputUsdPerMillion: number;
}

/** The configuration in force: defaults applied, paths absolute. */
export interface Config {
  file: string;
  home: string;
  site: { id: string; name: string };
  database: DatabaseChoice;
  policies: { endpoints: string; principals: string };
  catalogDirs: string[];
  /** Where the site binds data, databases and judges to benchmarks (site-data.json). */
  catalogSiteData: string;
  /** Size limits of one record and one instance, as configured; the catalog applies its defaults to what is absent. */
  catalogLimits: { maxInstanceBytes?: number; maxRecordBytes?: number };
  /** Where the files a benchmark names may lie (catalog.dataDirs), and the daemon's own files they may never be. */
  catalogFiles: FilePlaces;
  keysDir: string;
  /** Where endpoint secrets (auth.file) may lie, and the daemon's own secrets they may never be. */
  secrets: SecretPlaces;
  /** The widest allowlist one endpoint may have, as prefix lengths per family (policy load). */
  egress: { allowlistWidth: { ipv4: number; ipv6: number } };
  logging: { level: 'debug' | 'info' | 'warn' | 'error'; file: string };
  runs: { concurrencyPerEndpoint: number; maxAttempts: number; leaseSeconds: number; claimBatch: number };
  models: { timeoutMs: number; maxRetries: number; maxBackoffMs: number };
  /**
   * witnessDirs always starts with the data directory's audit/ folder. legacyWitness: also keep the
   * single-checkpoint witness releases before the history format read, so a rollback to one is detected.
   */
  audit: { checkpointEvery: number; witnessDirs: string[]; retentionYears: number; legacyWitness: boolean };
  /** Disclosure control of exports (k, count ranges), where bundles go, and the price table. */
  export: { minCellSize: number; countRangeWidth: number; dir: string; prices: PriceEntry[] };
  server: {
    host: string;
    port: number;
    certFile: string;
    keyFile: string;
    clientCaFiles: string[];
    /** CAs of the site's own PKI: trusted like clientCaFiles, their certificates issued outside ehrbench (no issuance record). */
    externalClientCaFiles: string[];
    healthPort?: number;
    /** Serve /metrics on the loopback health port too (off by default). */
    healthPortMetrics: boolean;
    /** Serve the web console at /console/ (on by default). */
    console: boolean;
    bodyLimitBytes: number;
    /** Connections held open at once: in total (handshakes included), and with one client certificate. */
    maxConnections: number;
    maxConnectionsPerCertificate: number;
    /** max: requests per principal; deniedMax: refused requests per client address and per certificate. */
    rateLimit: { max: number; windowSeconds: number; deniedMax: number };
    timeouts: ServerTimeouts;
    workers: number;
    pollSeconds: number;
  };
  /**
   * `ehrbench worker`: its own loopback health port, when it has one (never server.healthPort, which
   * the daemon on the same host holds); `--health-port` overrides it.
   */
  worker: { healthPort?: number; healthPortMetrics: boolean };
  /** Where `ehrbench pki` keeps the site CA and issued certificates. */
  pkiDir: string;
  /** De-identification; restrictedZip3 absent means the built-in 2000 Census list (src/deid). */
  deid: { mode: 'surrogate' | 'tag'; maxShiftDays: number; restrictedZip3?: string[]; secretFile: string; siteLexicons?: Partial<Record<'staff' | 'facilities' | 'places' | 'streets', string>> };
}

export const CONFIG_FILE_NAME = 'config.json';

export interface LoadOptions {
  /** Explicit config file (--config); otherwise EHRBENCH_HOME/config.json. */
  file?: string;
  env?: NodeJS.ProcessEnv;
}

export function configPath(opts: LoadOptions = {}): string {
  return opts.file ? resolve(opts.file) : join(dataHome(opts.env), CONFIG_FILE_NAME);
}

export function loadConfig(opts: LoadOptions = {}): Config {
  const file = configPath(opts);
  return resolveConfig(readConfigFile(file), file, opts.env ?? process.env);
}

/** The file as written, validated (its policy.change summary is of this, src/config/policy-summary.ts). */
export function readConfigFile(file: string): ConfigFile {
  if (!existsSync(file)) {
    throw new UserError('config.missing', `${file}: no configuration found; run "${commandPrefix()} init" first (or pass --config FILE)`);
  }
  return validateOrThrow<ConfigFile>('config.schema.json', readJsonFile(file, 'config.invalid'), file, 'config.invalid');
}

export function resolveConfig(raw: ConfigFile, file: string, env: NodeJS.ProcessEnv = process.env): Config {
  const home = dirname(file);
  const at = (p: string) => (isAbsolute(p) ? p : join(home, p));
  const keysDir = at(raw.keys?.dir ?? 'keys');
  const serverKeyFile = at(raw.server?.keyFile ?? 'pki/server.key.pem');
  const deidSecretFile = raw.deid?.secretFile ? at(raw.deid.secretFile) : join(keysDir, 'deid-secret.hex');
  const pkiDir = join(home, 'pki');
  // The database URL by reference (file or variable) is a daemon credential too.
  const secretSources = {
    dir: at(raw.secrets?.dir ?? 'secrets'),
    keysDir,
    pkiDir,
    serverKeyFile,
    deidSecretFile,
    ...(raw.database?.urlFile ? { databaseUrlFile: at(raw.database.urlFile) } : {}),
    ...(raw.database?.urlEnv ? { databaseUrlEnv: raw.database.urlEnv } : {}),
  };
  const secrets = secretPlaces(secretSources, env);
  const database = chooseDatabase(raw.database ?? {}, file, at, env);
  const policies = {
    endpoints: at(raw.policies?.endpoints ?? 'access-policies/endpoints.json'),
    principals: at(raw.policies?.principals ?? 'access-policies/principals.json'),
  };
  const catalogSiteData = at(raw.catalog?.siteData ?? 'site-data.json');
  const witnessDirs = [join(home, 'audit'), ...(raw.audit?.witnessDirs ?? []).map(at)];
  const logFile = at(raw.logging?.file ?? 'logs/ehrbench.log');
  return {
    file,
    home,
    site: { id: raw.site.id, name: raw.site.name ?? raw.site.id },
    database,
    policies,
    catalogDirs: (raw.catalog?.dirs ?? []).map(at),
    catalogSiteData,
    catalogLimits: {
      ...(raw.catalog?.maxInstanceBytes ? { maxInstanceBytes: raw.catalog.maxInstanceBytes } : {}),
      ...(raw.catalog?.maxRecordBytes ? { maxRecordBytes: raw.catalog.maxRecordBytes } : {}),
    },
    catalogFiles: filePlaces((raw.catalog?.dataDirs ?? []).map(at), secrets, {
      configFile: file,
      policyFiles: [policies.endpoints, policies.principals],
      siteDataFile: catalogSiteData,
      witnessDirs,
      databaseDir: database.embeddedDir,
      logFile,
    }),
    keysDir,
    secrets,
    egress: { allowlistWidth: { ipv4: raw.egress?.allowlistWidth?.ipv4 ?? 16, ipv6: raw.egress?.allowlistWidth?.ipv6 ?? 64 } },
    logging: { level: raw.logging?.level ?? 'info', file: logFile },
    runs: {
      concurrencyPerEndpoint: raw.runs?.concurrencyPerEndpoint ?? 16,
      maxAttempts: raw.runs?.maxAttempts ?? 3,
      leaseSeconds: raw.runs?.leaseSeconds ?? 300,
      claimBatch: raw.runs?.claimBatch ?? 32,
    },
    models: {
      timeoutMs: raw.models?.timeoutMs ?? 120_000,
      maxRetries: raw.models?.maxRetries ?? 4,
      maxBackoffMs: raw.models?.maxBackoffMs ?? 30_000,
    },
    audit: {
      checkpointEvery: raw.audit?.checkpointEvery ?? 1000,
      witnessDirs,
      retentionYears: raw.audit?.retentionYears ?? 6,
      legacyWitness: raw.audit?.legacyWitness ?? true,
    },
    export: {
      minCellSize: raw.export?.minCellSize ?? 11,
      countRangeWidth: raw.export?.countRangeWidth ?? 10,
      dir: at(raw.export?.dir ?? 'exports'),
      prices: raw.export?.prices ?? [],
    },
    server: {
      host: raw.server?.host ?? '127.0.0.1',
      port: raw.server?.port ?? 8443,
      certFile: at(raw.server?.certFile ?? 'pki/server.pem'),
      keyFile: serverKeyFile,
      clientCaFiles: (raw.server?.clientCaFiles ?? ['pki/ca.pem']).map(at),
      externalClientCaFiles: (raw.server?.externalClientCaFiles ?? []).map(at),
      ...(raw.server?.healthPort ? { healthPort: raw.server.healthPort } : {}),
      healthPortMetrics: raw.server?.healthPortMetrics ?? false,
      console: raw.server?.console ?? true,
      bodyLimitBytes: raw.server?.bodyLimitBytes ?? 65_536,
      maxConnections: raw.server?.maxConnections ?? 512,
      maxConnectionsPerCertificate: raw.server?.maxConnectionsPerCertificate ?? 32,
      rateLimit: { max: raw.server?.rateLimit?.max ?? 300, windowSeconds: raw.server?.rateLimit?.windowSeconds ?? 60, deniedMax: raw.server?.rateLimit?.deniedMax ?? 10 },
      timeouts: serverTimeouts(raw.server?.timeouts, file),
      workers: raw.server?.workers ?? 2,
      pollSeconds: raw.server?.pollSeconds ?? 1,
    },
    worker: {
      ...(raw.worker?.healthPort ? { healthPort: raw.worker.healthPort } : {}),
      healthPortMetrics: raw.worker?.healthPortMetrics ?? false,
    },
    pkiDir,
    deid: {
      mode: raw.deid?.mode ?? 'surrogate',
      maxShiftDays: raw.deid?.maxShiftDays ?? 365,
      ...(raw.deid?.restrictedZip3 ? { restrictedZip3: raw.deid.restrictedZip3 } : {}),
      secretFile: deidSecretFile,
      ...(raw.deid?.siteLexicons ? { siteLexicons: Object.fromEntries(Object.entries(raw.deid.siteLexicons).map(([k, v]) => [k, at(v as string)])) } : {}),
    },
  };
}
export { summarizeConfig } from './policy-summary';
