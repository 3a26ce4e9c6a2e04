/**
 * Approval changes kept outside the store. A suspension or closure of an IRB approval lives in
 * `approvals`; a database restored from a backup older than it would bring the approval back active,
 * silently. So every change (suspend, close, reinstate) is also appended, in the change's own
 * transaction before it commits, as one JSON line to `approval-changes.jsonl` in every witness folder.
 * Before a process that acts opens, an approval whose latest ledger change stops it (suspend, close)
 * while the store, knowing less (an older version), holds it less stopped, is stopped again, with its
 * own audit event. A reinstatement is never re-applied: the ledger only narrows.
 *
 * The file is only ever appended to. A line written for a change whose commit then failed can only
 * stop an approval its officer meant to stop. Lines are not signed: whoever can write the witness
 * folders can stop an approval (deny service), or remove a line before a restore.
 */
import { UserError } from '../errors';
import { appendLedgerLine, ledgerLines } from '../ledger-file';
import type { Approval, ApprovalChange, ApprovalStatus } from './approvals';

export const APPROVAL_LEDGER_FILE = 'approval-changes.jsonl';

export interface ApprovalLedgerEntry {
  approvalId: string;
  /** The approval's version after the change. */
  version: number;
  change: ApprovalChange;
  changedBy: string;
  /** ISO 8601. */
  changedAt: string;
}

const CHANGES: ApprovalChange[] = ['suspend', 'reinstate', 'close'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** How stopped a status is: a change may be re-applied only to a status less stopped than its own. */
export const STOPPED: Record<ApprovalStatus, number> = { active: 0, suspended: 1, closed: 2 };
export const STATUS_OF: Record<ApprovalChange, ApprovalStatus> = { suspend: 'suspended', reinstate: 'active', close: 'closed' };

/** Appends the change to every folder's ledger, synced; throws (naming the file) so the change does not commit. */
export function appendApprovalChange(dirs: string[], entry: ApprovalLedgerEntry): void {
  const line = JSON.stringify({ approvalId: entry.approvalId, version: entry.version, change: entry.change, changedBy: entry.changedBy, changedAt: entry.changedAt });
  appendLedgerLine(
    dirs,
    APPROVAL_LEDGER_FILE,
    line,
    (file, code) =>
      new UserError('approval.ledger-unwritable', `${file}: the approval change cannot be written outside the store (${code}); nothing was changed: make the witness folder writable and try again`),
  );
}

function parseLine(text: string, where: string): ApprovalLedgerEntry {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new UserError('approval.ledger-invalid', `${where}: not a JSON line; restore the file from a copy (a line cut short by a crash may be removed)`);
  }
  const ok =
    typeof raw === 'object' &&
    raw !== null &&
    typeof raw.approvalId === 'string' &&
    UUID.test(raw.approvalId) &&
    Number.isInteger(raw.version) &&
    CHANGES.includes(raw.change as ApprovalChange) &&
    typeof raw.changedBy === 'string' &&
    typeof raw.changedAt === 'string' &&
    !Number.isNaN(Date.parse(raw.changedAt));
  if (!ok)
    throw new UserError('approval.ledger-invalid', `${where}: an entry holds approvalId (a UUID), version, change (suspend, reinstate, close), changedBy and changedAt; restore the file from a copy`);
  return raw as unknown as ApprovalLedgerEntry;
}

/** The latest change of each approval over every folder's ledger (the highest version). */
export function latestApprovalChanges(dirs: string[]): ApprovalLedgerEntry[] {
  const latest = new Map<string, ApprovalLedgerEntry>();
  for (const { text, where } of ledgerLines(dirs, APPROVAL_LEDGER_FILE)) {
    const e = parseLine(text, where);
    const known = latest.get(e.approvalId);
    if (!known || e.version > known.version) latest.set(e.approvalId, e);
  }
  return [...latest.values()];
}

const CHANGE_TO: Record<ApprovalStatus, ApprovalChange> = { active: 'reinstate', suspended: 'suspend', closed: 'close' };

/**
 * Writes into each folder's ledger the state of every approval the store knows better than that
 * ledger: stopped by a release before the ledger (or while the folder was not configured), or changed
 * since its latest entry. An active approval the ledger never stopped needs no line. Returns how many
 * lines were written.
 */
export function completeApprovalLedgers(dirs: string[], approvals: Approval[]): number {
  let written = 0;
  for (const dir of dirs) {
    const latest = new Map(latestApprovalChanges([dir]).map((e) => [e.approvalId, e]));
    for (const a of approvals) {
      const known = latest.get(a.approvalId);
      if (known ? known.version >= a.version : a.status === 'active') continue;
      appendApprovalChange([dir], { approvalId: a.approvalId, version: a.version, change: CHANGE_TO[a.status], changedBy: a.updatedBy, changedAt: a.updatedAt });
      written += 1;
    }
  }
  return written;
}
