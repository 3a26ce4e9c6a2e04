/**
 * Where endpoint secrets may be read from, and the daemon's own secrets they may never be. An endpoint's
 * auth.file is sent to that endpoint as a key: naming the audit MAC key there once sent it out as a
 * bearer token. The egress policy loader (src/egress/secrets.ts) holds every reference to these places.
 */
import { join, resolve } from 'node:path';

/** One of the daemon's own files or folders, with what it is (for the refusal). */
export interface DaemonFile {
  path: string;
  what: string;
}

/** The secrets directory, and the daemon's own keys and credentials, each with what it is. */
export interface SecretPlaces {
  /** config secrets.dir: every auth.file lies inside it (default <home>/secrets). */
  dir: string;
  /** Files and folders that are the daemon's own, refused even inside the secrets directory. */
  daemonFiles: DaemonFile[];
  /** Environment variables that hold the daemon's own credentials, refused as auth.env. */
  daemonVariables: string[];
}

export interface SecretSources {
  dir: string;
  keysDir: string;
  pkiDir: string;
  serverKeyFile: string;
  deidSecretFile: string;
  databaseUrlFile?: string;
  databaseUrlEnv?: string;
}

/**
 * The places from the resolved configuration and the environment. The database password file is
 * libpq's (PGPASSFILE, else ~/.pgpass): under systemd it sits in the credentials folder beside endpoint
 * keys, so a secrets directory pointed there still cannot hand it out.
 */
export function secretPlaces(s: SecretSources, env: NodeJS.ProcessEnv): SecretPlaces {
  const daemonFiles = [
    { path: s.keysDir, what: "the daemon's keys folder (keys.dir: audit signing and MAC keys, export signing key)" },
    { path: s.pkiDir, what: 'the site PKI folder (CA and issued keys)' },
    { path: s.serverKeyFile, what: "the daemon's TLS key (server.keyFile)" },
    { path: s.deidSecretFile, what: 'the de-identification secret (deid.secretFile)' },
  ];
  if (s.databaseUrlFile) daemonFiles.push({ path: s.databaseUrlFile, what: 'the database URL file (database.urlFile)' });
  const pgpass = env.PGPASSFILE?.trim() ? resolve(env.PGPASSFILE.trim()) : env.HOME ? join(env.HOME, '.pgpass') : undefined;
  if (pgpass) daemonFiles.push({ path: pgpass, what: 'the database password file (PGPASSFILE, ~/.pgpass)' });
  if (env.PGSSLKEY?.trim()) daemonFiles.push({ path: resolve(env.PGSSLKEY.trim()), what: 'the database client key (PGSSLKEY)' });
  const daemonVariables = ['EHRBENCH_DATABASE_URL', 'PGPASSWORD', ...(s.databaseUrlEnv ? [s.databaseUrlEnv] : [])];
  return { dir: s.dir, daemonFiles, daemonVariables };
}

/**
 * Where the files a benchmark names may lie: a benchmark definition's files in its own folder, the
 * shipped datasets or `dataDirs` (catalog.dataDirs); a site-data binding's anywhere the site keeps its
 * data. Neither may ever be one of `daemonFiles`: what goes in a prompt leaves the process.
 */
export interface FilePlaces {
  dataDirs: string[];
  daemonFiles: DaemonFile[];
}

export interface DaemonPaths {
  configFile: string;
  policyFiles: string[];
  siteDataFile: string;
  witnessDirs: string[];
  databaseDir: string;
  logFile: string;
}

/** The places of benchmark files: every secret of the daemon, and the files that say what it may do or did. */
export function filePlaces(dataDirs: string[], secrets: SecretPlaces, p: DaemonPaths): FilePlaces {
  const daemonFiles: DaemonFile[] = [
    ...secrets.daemonFiles,
    { path: secrets.dir, what: "the endpoints' secrets folder (secrets.dir)" },
    { path: p.configFile, what: "the daemon's configuration" },
    ...p.policyFiles.map((path) => ({ path, what: 'an access policy file (policies in the config)' })),
    { path: p.siteDataFile, what: 'the site data file (catalog.siteData)' },
    ...p.witnessDirs.map((path) => ({ path, what: 'an audit witness folder (audit.witnessDirs)' })),
    { path: p.databaseDir, what: 'the embedded database folder (database.embeddedDir)' },
    { path: p.logFile, what: "the daemon's log file (logging.file)" },
  ];
  return { dataDirs, daemonFiles };
}
