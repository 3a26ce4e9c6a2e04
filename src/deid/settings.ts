/**
 * De-identification settings (the `deid` section of the configuration) and their version: a hash of
 * everything that decides what is found and how it is replaced (algorithm revision, mode, shift range,
 * restricted ZIP prefixes, lexicon contents). The per-site secret is not configuration: it keys the
 * surrogates and the date shift, lives in its own 0600 file, and is never logged or hashed into the
 * version.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { canonicalHash } from '../canonical';
import { UserError } from '../errors';
import { lexicons } from './lexicons';
import { SITE_LEXICON_KINDS, type SiteLexiconFiles } from './site-lexicons';

/** Bump when detection or replacement changes in a way the configuration does not show. */
export const DEID_ALGORITHM = 'ehrbench-deid/5';

/**
 * Three-digit ZIP prefixes whose area held 20,000 people or fewer in the 2000 Census, which Safe Harbor
 * requires be written 000 (HHS, Guidance Regarding Methods for De-identification of PHI, 2012, section
 * 2.4; 67 FR 53182). A site with a newer Census list sets `deid.restrictedZip3`.
 */
export const RESTRICTED_ZIP3_2000 = ['036', '059', '063', '102', '203', '556', '692', '790', '821', '823', '830', '831', '878', '879', '884', '890', '893'];

export type ReplacementMode = 'surrogate' | 'tag';

export interface DeidSettings {
  /** `surrogate`: realistic consistent fakes and shifted dates; `tag`: [NAME], [DATE]... */
  mode: ReplacementMode;
  /** Dates of one subject move by the same secret number of days, 1..maxShiftDays, back or forward. */
  maxShiftDays: number;
  restrictedZip3: string[];
  /** File holding the per-site secret (created with mode 0600 on first use). */
  secretFile: string;
  /** The site's own lists (staff, facilities, places, streets), one entry a line; absolute paths. */
  siteLexicons?: SiteLexiconFiles;
}

export function defaultSettings(secretFile: string): DeidSettings {
  return { mode: 'surrogate', maxShiftDays: 365, restrictedZip3: RESTRICTED_ZIP3_2000, secretFile };
}

/** Settings from the configuration's `deid` section (src/config), defaults filled in. */
export function settingsFrom(c: { mode: ReplacementMode; maxShiftDays: number; restrictedZip3?: string[]; secretFile: string; siteLexicons?: SiteLexiconFiles }): DeidSettings {
  return {
    mode: c.mode,
    maxShiftDays: c.maxShiftDays,
    restrictedZip3: c.restrictedZip3 ?? RESTRICTED_ZIP3_2000,
    secretFile: c.secretFile,
    ...(c.siteLexicons ? { siteLexicons: c.siteLexicons } : {}),
  };
}

/** sha256 of each configured site lexicon's contents (a file that cannot be read fails when the lexicons load). */
function siteLexiconHashes(files: SiteLexiconFiles | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kind of SITE_LEXICON_KINDS) {
    const file = files?.[kind];
    if (!file) continue;
    try {
      out[kind] = createHash('sha256').update(readFileSync(file)).digest('hex');
    } catch {
      out[kind] = 'unreadable';
    }
  }
  return out;
}

export function settingsVersion(s: DeidSettings): string {
  const lex = lexicons();
  const hash = canonicalHash({
    algorithm: DEID_ALGORITHM,
    mode: s.mode,
    maxShiftDays: s.maxShiftDays,
    restrictedZip3: [...s.restrictedZip3].sort(),
    lexicons: lex.hashes,
    siteLexicons: siteLexiconHashes(s.siteLexicons),
  });
  return `${DEID_ALGORITHM}:${hash.slice(0, 16)}`;
}

/** Reads the site secret, creating it (32 random bytes, hex, mode 0600) if it does not exist yet. */
export function loadSecret(file: string): Buffer {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    try {
      writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw new UserError('deid.secret-unwritable', `${file}: cannot create the de-identification secret (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the keys folder`);
      }
    }
  }
  let text: string;
  try {
    if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
      throw new UserError('deid.secret-permissions', `${file}: the de-identification secret is readable by others; chmod 600 it`);
    }
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError('deid.secret-unreadable', `${file}: cannot read the de-identification secret (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!/^[0-9a-f]{64,}$/i.test(text)) throw new UserError('deid.secret-invalid', `${file}: the de-identification secret must be at least 64 hex characters`);
  return Buffer.from(text, 'hex');
}
