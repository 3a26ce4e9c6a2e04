/**
 * Revocations kept outside the store. A revocation lives in `revoked_certificates`; a database restored
 * from a backup older than it would bring the revoked certificates back, silently. So each revocation
 * is also appended, before the store holds it, as one JSON line to `revocations.jsonl` in every witness
 * folder (the data directory's audit/ folder and `audit.witnessDirs`): the places the compliance office
 * keeps outside the database. Before a process that acts opens, every line must be in the store; one
 * that is not (a restore) is put back, with its own audit event, and until that is done nothing is served.
 *
 * The file is only ever appended to. Removing a line undoes nothing (the store still holds the row);
 * adding one can only revoke more. Lines are not signed: whoever can write the witness folders can
 * revoke a certificate (deny service), not restore one.
 */
import type { Queryable } from '../db';
import { UserError } from '../errors';
import { appendLedgerLine, ledgerLines } from '../ledger-file';

export const REVOCATION_LEDGER_FILE = 'revocations.jsonl';

/** One revocation as the store holds it. */
export interface LedgerEntry {
  revocationId: string;
  issuerFingerprint: string;
  /** '*': every certificate of the principal issued until `revokedAt`. */
  serial: string;
  principal: string;
  reason: string;
  revokedBy: string;
  /** ISO 8601, the time the store records. */
  revokedAt: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const FIELDS: (keyof LedgerEntry)[] = ['revocationId', 'issuerFingerprint', 'serial', 'principal', 'reason', 'revokedBy', 'revokedAt'];

/** Appends the entry to every folder's ledger and syncs it to disk; throws (naming the file) if one cannot be written. */
export function appendRevocation(dirs: string[], entry: LedgerEntry): void {
  const line = JSON.stringify(Object.fromEntries(FIELDS.map((f) => [f, entry[f]])));
  appendLedgerLine(
    dirs,
    REVOCATION_LEDGER_FILE,
    line,
    (file, code) =>
      new UserError('pki.ledger-unwritable', `${file}: the revocation cannot be written outside the store (${code}); nothing was revoked: make the witness folder writable and revoke again`),
  );
}

function parseLine(text: string, where: string): LedgerEntry {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new UserError('pki.ledger-invalid', `${where}: not a JSON line; restore the file from a copy (a line cut short by a crash may be removed)`);
  }
  const entry = raw as Record<string, unknown>;
  for (const f of FIELDS) {
    if (typeof entry[f] !== 'string') throw new UserError('pki.ledger-invalid', `${where}: field ${f} must be a string; restore the file from a copy`);
  }
  if (!UUID.test(entry.revocationId as string)) throw new UserError('pki.ledger-invalid', `${where}: revocationId is not a UUID; restore the file from a copy`);
  if (Number.isNaN(Date.parse(entry.revokedAt as string))) throw new UserError('pki.ledger-invalid', `${where}: revokedAt is not a date; restore the file from a copy`);
  return entry as unknown as LedgerEntry;
}

/** Every revocation of every folder's ledger, once each (by id), oldest first. */
export function readLedgers(dirs: string[]): LedgerEntry[] {
  const byId = new Map<string, LedgerEntry>();
  for (const { text, where } of ledgerLines(dirs, REVOCATION_LEDGER_FILE)) {
    const entry = parseLine(text, where);
    byId.set(entry.revocationId, entry);
  }
  return [...byId.values()].sort((a, b) => a.revokedAt.localeCompare(b.revokedAt));
}

/** The ledger's revocations the store does not hold (a backup older than them was restored). */
export async function missingFromStore(db: Queryable, entries: LedgerEntry[]): Promise<LedgerEntry[]> {
  if (entries.length === 0) return [];
  const rows = await db.query<{ revocation_id: string }>('SELECT revocation_id::text AS revocation_id FROM revoked_certificates WHERE revocation_id = ANY($1::uuid[])', [
    entries.map((e) => e.revocationId),
  ]);
  const held = new Set(rows.map((r) => r.revocation_id));
  return entries.filter((e) => !held.has(e.revocationId));
}

/**
 * The store's revocations that no ledger holds: made by a release before the ledger, or while a
 * witness folder was not configured yet. Each folder must hold every one (any folder may be the copy
 * that survives), so one missing from a folder counts.
 */
export async function missingFromLedger(db: Queryable, dirs: string[]): Promise<LedgerEntry[]> {
  const rows = await db.query<{ revocation_id: string; issuer_fingerprint: string; serial: string; principal: string | null; reason: string; revoked_by: string; revoked_at: Date | string }>(
    'SELECT revocation_id::text AS revocation_id, issuer_fingerprint, serial, principal, reason, revoked_by, revoked_at FROM revoked_certificates ORDER BY revoked_at, revocation_id',
  );
  const held = dirs.map((d) => new Set(readLedgers([d]).map((e) => e.revocationId)));
  return rows
    .filter((r) => held.some((ids) => !ids.has(r.revocation_id)))
    .map((r) => ({
      revocationId: r.revocation_id,
      issuerFingerprint: r.issuer_fingerprint,
      serial: r.serial,
      principal: r.principal ?? '',
      reason: r.reason,
      revokedBy: r.revoked_by,
      revokedAt: new Date(r.revoked_at).toISOString(),
    }));
}

/** Writes each entry to the folders whose ledger lacks it. */
export function completeLedgers(dirs: string[], entries: LedgerEntry[]): void {
  for (const dir of dirs) {
    const held = new Set(readLedgers([dir]).map((e) => e.revocationId));
    for (const e of entries) if (!held.has(e.revocationId)) appendRevocation([dir], e);
  }
}
