/**
 * Which store a configuration names (database.backend), and the URL of a postgres store resolved from
 * its reference. A command opens that store or none: a postgres site whose URL cannot be found must
 * not quietly get a fresh embedded store, where a revocation or an audit check would see nothing of
 * the site (issue 15, item 5).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type DatabaseBackend = 'embedded' | 'postgres';

/** The variable a postgres URL is read from when database.urlEnv and database.urlFile are not given. */
export const DEFAULT_DATABASE_URL_ENV = 'EHRBENCH_DATABASE_URL';

/** The database section as written (schemas/config.schema.json). */
export interface DatabaseSection {
  backend?: DatabaseBackend;
  urlEnv?: string;
  urlFile?: string;
  embeddedDir?: string;
  poolSize?: number;
}

/**
 * The store this configuration names. With `refusal` set no store may be opened, and whoever opens one
 * throws it (config.database); commands that need no store never see it. `pinned` is false for a file
 * written before database.backend existed.
 */
export interface DatabaseChoice {
  backend: DatabaseBackend;
  pinned: boolean;
  /** postgres: the URL, resolved from its reference (never written in the file). */
  url?: string;
  /** postgres: where the URL came from, for messages: the variable's name or "file PATH". */
  urlSource?: string;
  embeddedDir: string;
  poolSize: number;
  refusal?: string;
  /** One line for stderr: the file does not pin its store. */
  warning?: string;
}

type Resolved = Pick<DatabaseChoice, 'url' | 'urlSource' | 'refusal'>;

export function chooseDatabase(raw: DatabaseSection, file: string, at: (p: string) => string, env: NodeJS.ProcessEnv): DatabaseChoice {
  const base = { embeddedDir: at(raw.embeddedDir ?? 'db'), poolSize: raw.poolSize ?? 10 };
  if (raw.backend === 'postgres') return { ...base, backend: 'postgres', pinned: true, ...postgresUrl(raw, file, at, env) };
  if (raw.urlEnv || raw.urlFile) {
    const field = raw.urlEnv ? 'urlEnv' : 'urlFile';
    return {
      ...base,
      backend: 'embedded',
      pinned: raw.backend !== undefined,
      refusal: `${file}: database.${field} names a PostgreSQL URL, but database.backend is not "postgres"; set database.backend to "postgres" or remove database.${field}`,
    };
  }
  if (raw.backend === 'embedded') {
    // The environment says PostgreSQL, the file says embedded: which store the site means is unknown.
    const refusal = env[DEFAULT_DATABASE_URL_ENV]?.trim()
      ? `${file}: database.backend is "embedded" but ${DEFAULT_DATABASE_URL_ENV} is set; set database.backend to "postgres" to use that server, or unset ${DEFAULT_DATABASE_URL_ENV}`
      : undefined;
    return { ...base, backend: 'embedded', pinned: true, ...(refusal ? { refusal } : {}) };
  }
  return unpinned(file, base, env);
}

function postgresUrl(raw: DatabaseSection, file: string, at: (p: string) => string, env: NodeJS.ProcessEnv): Resolved {
  if (raw.urlEnv && raw.urlFile) return { refusal: `${file}: database.urlEnv and database.urlFile both name the PostgreSQL URL; keep one` };
  if (raw.urlFile) return urlFromFile(file, at(raw.urlFile));
  const name = raw.urlEnv ?? DEFAULT_DATABASE_URL_ENV;
  const url = env[name]?.trim();
  if (url) return { url, urlSource: name };
  return {
    urlSource: name,
    refusal: `${file}: database.backend is "postgres" but database.urlEnv names ${name}, which is not set; export it (postgres://user@host:port/db) or name the URL's variable or file in database.urlEnv / database.urlFile`,
  };
}

function urlFromFile(file: string, path: string): Resolved {
  const urlSource = `file ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { urlSource, refusal: `${file}: database.urlFile ${path} cannot be read (${code}); its first line must be the postgres:// URL` };
  }
  const url = text.split(/\r?\n/)[0]?.trim();
  if (!url) return { urlSource, refusal: `${file}: database.urlFile ${path} is empty; its first line must be the postgres:// URL` };
  return { url, urlSource };
}

/**
 * A file without database.backend (written before it existed) keeps its meaning, PostgreSQL when
 * EHRBENCH_DATABASE_URL is set and the embedded store otherwise, with a warning, except for the
 * one case that caused the split: it never creates a new embedded store. A postgres site's shell
 * without the variable finds no store in the data directory and is refused.
 */
function unpinned(file: string, base: { embeddedDir: string; poolSize: number }, env: NodeJS.ProcessEnv): DatabaseChoice {
  const url = env[DEFAULT_DATABASE_URL_ENV]?.trim();
  const pin = 'set database.backend ("embedded", or "postgres" with database.urlEnv) to pin the store';
  if (url) {
    return {
      ...base,
      backend: 'postgres',
      pinned: false,
      url,
      urlSource: DEFAULT_DATABASE_URL_ENV,
      warning: `${file}: database.backend is not set; using PostgreSQL from ${DEFAULT_DATABASE_URL_ENV}; ${pin}`,
    };
  }
  if (!existsSync(join(base.embeddedDir, 'PG_VERSION'))) {
    return {
      ...base,
      backend: 'embedded',
      pinned: false,
      refusal: `${file}: database.backend is not set, ${DEFAULT_DATABASE_URL_ENV} is not set and there is no embedded store at ${base.embeddedDir}; ${pin} (a PostgreSQL site: export ${DEFAULT_DATABASE_URL_ENV})`,
    };
  }
  return { ...base, backend: 'embedded', pinned: false, warning: `${file}: database.backend is not set; using the embedded store at ${base.embeddedDir}; ${pin}` };
}
