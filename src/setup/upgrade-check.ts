/**
 * What an upgrade of this site still needs, read without changing anything (`ehrbench db status`):
 * the steps deploy/README.md lists under Upgrades, each checked on the site itself, so that a step
 * left out is named with the command that does it instead of surfacing later as a refusal.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEGACY_WITNESS_FILE, WITNESS_FILE } from '../audit';
import { commandPrefix } from '../command-prefix';
import type { Config } from '../config';
import { type Database, listMigrations } from '../db';
import { certificateFingerprint, missingFromLedger, siteClientCertificates } from '../identity';

/** One step still to do: what is found, and the command or setting that does it. */
export interface UpgradeNeed {
  check: 'migrations' | 'database-pin' | 'issuance-records' | 'witness-history' | 'revocation-ledger';
  found: string;
  todo: string;
}

export async function upgradeNeeds(config: Config, db: Database): Promise<UpgradeNeed[]> {
  const needs: UpgradeNeed[] = [];
  const pending = await pendingMigrations(db);
  if (pending > 0) {
    needs.push({ check: 'migrations', found: `${pending} pending migration${pending === 1 ? '' : 's'}`, todo: `run "${commandPrefix()} db migrate" as the store's owner` });
    // The other checks read tables the migrations make.
    return [...needs, ...pinNeed(config), ...witnessNeeds(config)];
  }
  return [...needs, ...pinNeed(config), ...(await issuanceNeed(config, db)), ...witnessNeeds(config), ...(await ledgerNeed(config, db))];
}

async function pendingMigrations(db: Database): Promise<number> {
  const applied = await db.query<{ version: string }>('SELECT version FROM schema_migrations').catch(() => []);
  const done = new Set(applied.map((a) => a.version));
  return listMigrations().filter((m) => !done.has(m.version)).length;
}

/** A configuration without database.backend may open another store when the URL is missing. */
function pinNeed(config: Config): UpgradeNeed[] {
  let raw: { database?: { backend?: unknown } };
  try {
    raw = JSON.parse(readFileSync(config.file, 'utf8')) as typeof raw;
  } catch {
    return [];
  }
  if (raw.database?.backend !== undefined) return [];
  return [
    {
      check: 'database-pin',
      found: `${config.file} has no database.backend`,
      todo: 'add "backend": "postgres" (with urlEnv or urlFile) or "embedded" to its "database", so a command without the URL fails instead of opening another store',
    },
  ];
}

/** Client certificates of the site CA that the daemon would refuse: no issuance record (an older release issued them). */
async function issuanceNeed(config: Config, db: Database): Promise<UpgradeNeed[]> {
  if (!existsSync(join(config.pkiDir, 'ca.pem'))) return [];
  let unrecorded = 0;
  for (const cert of siteClientCertificates(config.pkiDir)) {
    const rows = await db.query('SELECT 1 FROM issued_certificates WHERE fingerprint = $1', [certificateFingerprint(cert.certPem)]);
    if (rows.length === 0) unrecorded += 1;
  }
  if (unrecorded === 0) return [];
  return [
    {
      check: 'issuance-records',
      found: `${unrecorded} client certificate${unrecorded === 1 ? '' : 's'} in ${join(config.pkiDir, 'clients')} without an issuance record (the daemon refuses them)`,
      todo: `run "${commandPrefix()} pki record-existing" on the host (never list the site CA in server.externalClientCaFiles)`,
    },
  ];
}

/** Witness folders whose history has not started yet (a release before it wrote only the single checkpoint). */
function witnessNeeds(config: Config): UpgradeNeed[] {
  const legacyOnly = config.audit.witnessDirs.filter((d) => existsSync(join(d, LEGACY_WITNESS_FILE)) && !existsSync(join(d, WITNESS_FILE)));
  if (legacyOnly.length === 0) return [];
  return [
    {
      check: 'witness-history',
      found: `${legacyOnly.length} witness folder(s) hold only ${LEGACY_WITNESS_FILE}, no ${WITNESS_FILE}: ${legacyOnly.join(', ')}`,
      todo: `start the daemon (or run any command that writes): the next seal starts the history; keep audit.legacyWitness true until the site will not roll back`,
    },
  ];
}

/** Revocations an older release made, not yet in the ledger outside the store that a restore cannot undo. */
async function ledgerNeed(config: Config, db: Database): Promise<UpgradeNeed[]> {
  const missing = await missingFromLedger(db, config.audit.witnessDirs);
  if (missing.length === 0) return [];
  return [
    {
      check: 'revocation-ledger',
      found: `${missing.length} revocation(s) in the store are not in the ledger outside it (revocations.jsonl in the witness folders)`,
      todo: 'start the daemon (or run any command that writes): it writes them there first, so that a restore cannot bring those certificates back',
    },
  ];
}
