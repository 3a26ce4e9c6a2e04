/**
 * IRB approvals as data, managed by compliance: protocol, PI, approved personnel, benchmarks or
 * tiers, endpoints, purpose, data use agreement, status and validity. Status changes create a new
 * version; every version is kept in approval_history and nothing is deleted.
 */
import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db';
import type { Tier } from '../tiers';

export type ApprovalStatus = 'active' | 'suspended' | 'closed';

/**
 * A canary named by compliance: `instances` of `benchmarkId` (HELM's seeded sample, keys pinned at the
 * baseline), re-run under the approval on each of its endpoints every `everyDays` days and whenever an
 * endpoint's fingerprint changes; drift when p < `threshold` and |mean difference| >= `minDifference`.
 */
export interface Canary {
  benchmarkId: string;
  instances: number;
  everyDays: number;
  threshold: number;
  minDifference: number;
}

/** A canary as compliance may give it: the schedule and thresholds have defaults. */
export type CanaryInput = Pick<Canary, 'benchmarkId' | 'instances'> & Partial<Canary>;

export const CANARY_DEFAULTS = { everyDays: 7, threshold: 0.05, minDifference: 0.05 } as const;

export interface Approval {
  approvalId: string;
  protocolNumber: string;
  title: string | null;
  principalInvestigator: string;
  personnel: string[];
  /** Clinicians who may rate the items of rating studies on the approval's runs; none of them PI or personnel. */
  raters: string[];
  benchmarks: string[];
  tiers: Tier[];
  endpoints: string[];
  purpose: string;
  duaId: string | null;
  budgetUsd: number | null;
  canary: Canary | null;
  status: ApprovalStatus;
  startsAt: string;
  expiresAt: string | null;
  version: number;
  createdBy: string;
  createdAt: string;
  updatedBy: string;
  updatedAt: string;
}

/** What compliance supplies to create an approval; status, versions and timestamps are the store's. */
export interface ApprovalInput {
  protocolNumber: string;
  title?: string;
  principalInvestigator: string;
  personnel: string[];
  raters?: string[];
  benchmarks?: string[];
  tiers?: Tier[];
  endpoints?: string[];
  purpose: string;
  duaId?: string;
  budgetUsd?: number;
  canary?: CanaryInput;
  startsAt?: string;
  expiresAt?: string;
}

interface ApprovalRow {
  approval_id: string;
  protocol_number: string;
  title: string | null;
  principal_investigator: string;
  personnel: string[];
  raters: string[];
  benchmarks: string[];
  tiers: Tier[];
  endpoints: string[];
  purpose: string;
  dua_id: string | null;
  budget_usd: number | null;
  canary: Canary | null;
  status: ApprovalStatus;
  starts_at: Date;
  expires_at: Date | null;
  version: number;
  created_by: string;
  created_at: Date;
  updated_by: string;
  updated_at: Date;
}

const COLUMNS = `approval_id::text AS approval_id, protocol_number, title, principal_investigator, personnel, raters, benchmarks, tiers, endpoints,
  purpose, dua_id, budget_usd, canary, status, starts_at, expires_at, version, created_by, created_at, updated_by, updated_at`;

function fromRow(r: ApprovalRow): Approval {
  return {
    approvalId: r.approval_id,
    protocolNumber: r.protocol_number,
    title: r.title,
    principalInvestigator: r.principal_investigator,
    personnel: r.personnel,
    raters: r.raters,
    benchmarks: r.benchmarks,
    tiers: r.tiers,
    endpoints: r.endpoints,
    purpose: r.purpose,
    duaId: r.dua_id,
    budgetUsd: r.budget_usd,
    canary: r.canary ?? null,
    status: r.status,
    startsAt: r.starts_at.toISOString(),
    expiresAt: r.expires_at ? r.expires_at.toISOString() : null,
    version: r.version,
    createdBy: r.created_by,
    createdAt: r.created_at.toISOString(),
    updatedBy: r.updated_by,
    updatedAt: r.updated_at.toISOString(),
  };
}

export type ApprovalChange = 'suspend' | 'reinstate' | 'close';

/** Work done in the transaction of an approval's change, with the approval as changed (its audit record). */
export type Alongside = (tx: Queryable, approval: Approval) => Promise<void>;

/**
 * An approval's budget and protocol number, for the budget check (src/calls/budget.ts); with `lock`,
 * the row is locked for the caller's transaction so concurrent calls cannot all pass under the cap.
 */
export async function approvalBudget(q: Queryable, approvalId: string, opts: { lock?: boolean } = {}): Promise<{ budget_usd: number | null; protocol_number: string } | undefined> {
  const rows = await q.query<{ budget_usd: number | null; protocol_number: string }>(
    `SELECT budget_usd, protocol_number FROM approvals WHERE approval_id = $1::uuid${opts.lock ? ' FOR UPDATE' : ''}`,
    [approvalId],
  );
  return rows[0];
}

export class ApprovalStore {
  constructor(private readonly db: Database) {}

  /**
   * Records a new approval. `alongside` runs in the same transaction (the audit record of the
   * creation): the approval and its record commit together or not at all, so the trail never holds a
   * success for an approval that does not exist.
   */
  async create(input: ApprovalInput, by: string, alongside?: Alongside): Promise<Approval> {
    const id = randomUUID();
    return this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO approvals (approval_id, protocol_number, title, principal_investigator, personnel, benchmarks, tiers, endpoints, purpose,
           dua_id, budget_usd, status, starts_at, expires_at, version, created_by, updated_by, raters, canary)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', COALESCE($12::timestamptz, now()), $13, 1, $14, $14, $15, $16::jsonb)`,
        [
          id,
          input.protocolNumber,
          input.title ?? null,
          input.principalInvestigator,
          input.personnel,
          input.benchmarks ?? [],
          input.tiers ?? [],
          input.endpoints ?? [],
          input.purpose,
          input.duaId ?? null,
          input.budgetUsd ?? null,
          input.startsAt ?? null,
          input.expiresAt ?? null,
          by,
          input.raters ?? [],
          input.canary ? JSON.stringify({ ...CANARY_DEFAULTS, ...input.canary }) : null,
        ],
      );
      const approval = await this.snapshot(tx, id, 'create', by);
      await alongside?.(tx, approval);
      return approval;
    });
  }

  async get(id: string, q: Queryable = this.db): Promise<Approval | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const rows = await q.query<ApprovalRow>(`SELECT ${COLUMNS} FROM approvals WHERE approval_id = $1::uuid`, [id]);
    return rows[0] ? fromRow(rows[0]) : undefined;
  }

  /** Active approvals that name a canary (the canary service's work list). */
  async withCanary(): Promise<Approval[]> {
    const rows = await this.db.query<ApprovalRow>(`SELECT ${COLUMNS} FROM approvals WHERE canary IS NOT NULL AND status = 'active' ORDER BY created_at`);
    return rows.map(fromRow);
  }

  async list(filter: { personnel?: string } = {}): Promise<Approval[]> {
    const rows = filter.personnel
      ? await this.db.query<ApprovalRow>(`SELECT ${COLUMNS} FROM approvals WHERE $1 = ANY(personnel) OR $1 = ANY(raters) OR principal_investigator = $1 ORDER BY created_at DESC`, [filter.personnel])
      : await this.db.query<ApprovalRow>(`SELECT ${COLUMNS} FROM approvals ORDER BY created_at DESC`);
    return rows.map(fromRow);
  }

  /** Approvals that name the principal (as personnel, rater or PI), in any status: the rules explain refusals with them. */
  async forPrincipal(principal: string): Promise<Approval[]> {
    return this.list({ personnel: principal });
  }

  async history(id: string): Promise<{ version: number; change: string; changedBy: string; changedAt: string; snapshot: Approval }[]> {
    const rows = await this.db.query<{ version: number; change: string; changed_by: string; changed_at: Date; snapshot: Approval }>(
      'SELECT version, change, changed_by, changed_at, snapshot FROM approval_history WHERE approval_id = $1::uuid ORDER BY version',
      [id],
    );
    return rows.map((r) => ({ version: r.version, change: r.change, changedBy: r.changed_by, changedAt: r.changed_at.toISOString(), snapshot: r.snapshot }));
  }

  /**
   * Moves an approval from the version the caller checked (`fromVersion`) to a new status as a new
   * version, with `alongside` (the audit record of the change) in the same transaction. Returns
   * undefined when the approval does not exist or is no longer at that version: the caller's checks
   * (a closed approval is final, the suspender does not reinstate) were made on what it read, and hold
   * only if nobody changed it in between.
   */
  async change(id: string, change: ApprovalChange, by: string, fromVersion: number, alongside?: Alongside): Promise<Approval | undefined> {
    const status: ApprovalStatus = change === 'suspend' ? 'suspended' : change === 'close' ? 'closed' : 'active';
    return this.db.transaction(async (tx) => {
      const rows = await tx.query(`UPDATE approvals SET status = $2, version = version + 1, updated_by = $3, updated_at = now() WHERE approval_id = $1::uuid AND version = $4 RETURNING 1`, [
        id,
        status,
        by,
        fromVersion,
      ]);
      if (rows.length === 0) return undefined;
      const approval = await this.snapshot(tx, id, change, by);
      await alongside?.(tx, approval);
      return approval;
    });
  }

  /**
   * The officers who stopped an approval of this protocol that is still stopped: who suspended or
   * closed it since it was last reinstated. Separation of duties: they may not record a new approval
   * for the protocol, or suspending would be undone by recording the same approval again.
   */
  async stoppedBy(protocolNumber: string): Promise<string[]> {
    const rows = await this.db.query<{ changed_by: string }>(
      `SELECT DISTINCT h.changed_by FROM approvals a JOIN approval_history h ON h.approval_id = a.approval_id
        WHERE a.protocol_number = $1 AND a.status IN ('suspended', 'closed') AND h.change IN ('suspend', 'close')
          AND h.version > COALESCE((SELECT max(r.version) FROM approval_history r WHERE r.approval_id = a.approval_id AND r.change = 'reinstate'), 0)`,
      [protocolNumber],
    );
    return rows.map((r) => r.changed_by);
  }

  /** The last person who made a given change (suspend), for separation of duties on the reverse change. */
  async lastChangedBy(id: string, change: ApprovalChange): Promise<string | undefined> {
    const rows = await this.db.query<{ changed_by: string }>('SELECT changed_by FROM approval_history WHERE approval_id = $1::uuid AND change = $2 ORDER BY version DESC LIMIT 1', [id, change]);
    return rows[0]?.changed_by;
  }

  private async snapshot(tx: Queryable, id: string, change: string, by: string): Promise<Approval> {
    const approval = await this.get(id, tx);
    if (!approval) throw new Error('approval vanished');
    await tx.query('INSERT INTO approval_history (approval_id, version, change, snapshot, changed_by) VALUES ($1::uuid, $2, $3, $4::jsonb, $5)', [
      id,
      approval.version,
      change,
      JSON.stringify(approval),
      by,
    ]);
    return approval;
  }
}
