/**
 * Drift under an approval: an IRB approval may name a canary (src/access/approvals.ts, `Canary`), a
 * pinned sample of a benchmark. Per endpoint the approval lists, the canary service
 *   1. runs a baseline (HELM's seeded sample of `instances`) and pins the instance keys it scored;
 *   2. re-runs the same sample every `everyDays` days, and as soon as the endpoint answers with a
 *      fingerprint the last canary did not see (the gateway tells it: a call under the approval saw a
 *      new model behind the endpoint);
 *   3. compares each re-run with the baseline on the pinned instances both scored, by a paired test
 *      (src/agreement/paired.ts: exact McNemar for 0/1 scores, Wilcoxon signed-rank otherwise), and
 *      records a drift.check audit event: drift when p < threshold and |mean difference| >= minimum;
 *   4. marks the approval's results stale while a detected drift is not reviewed by a compliance
 *      officer (`review`).
 * Canary runs are ordinary runs on the normal engine path (access, de-identification, budget, audit)
 * under the approval: requested for its PI, approved (private tier) by the officer who named the canary.
 * Fewer than k paired instances conclude nothing and show no figure. The service is driven by `tick`,
 * which the daemon's scheduler calls on each poll and the gateway's fingerprint listener nudges.
 */
import { randomUUID } from 'node:crypto';
import type { Approval, ApprovalStore, Canary } from '../access';
import { pairedComparison, type PairedTestName } from '../agreement';
import { ENGINE_ACTOR, type AuditEventInput } from '../audit';
import type { FingerprintStore } from '../calls';
import type { Database } from '../db';
import { describeError } from '../errors';
import type { Actor } from '../identity';
import type { RuleId } from '../policy';
import { approveRunAsCanary, type Engine, requestRun } from './engine';

export type DriftState = 'pending' | 'stable' | 'drift' | 'inconclusive' | 'failed';

/** A canary re-run and its comparison, as compliance sees it: ids, aggregates of >= k instances, days. */
export interface DriftCheckView {
  checkId: string;
  approvalId: string;
  protocolNumber: string;
  endpointId: string;
  benchmarkId: string;
  runId: string;
  baselineRunId: string;
  trigger: 'schedule' | 'fingerprint';
  state: DriftState;
  test: PairedTestName | null;
  /** Paired instances compared; null when fewer than k (nothing concluded). */
  pairs: number | null;
  baselineMean: number | null;
  canaryMean: number | null;
  pValue: number | null;
  createdAt: string;
  decidedAt: string | null;
  reviewedBy: string | null;
  reviewedAt: string | null;
  /** The notice in words, for a drift: "model behind endpoint X changed; canary mean 0.71 -> 0.58, p=0.003". */
  notice: string | null;
}

interface CheckRow {
  check_id: string;
  approval_id: string;
  protocol_number: string;
  endpoint_id: string;
  benchmark_id: string;
  run_id: string;
  baseline_run_id: string;
  trigger: 'schedule' | 'fingerprint';
  state: DriftState;
  test: PairedTestName | null;
  pairs: number | null;
  baseline_mean: number | null;
  canary_mean: number | null;
  p_value: number | null;
  created_at: Date;
  decided_at: Date | null;
  reviewed_by: string | null;
  reviewed_at: Date | null;
}

interface BaselineRow {
  run_id: string;
  instance_keys: string[] | null;
  created_at: Date;
}

/** A run that ended without being completed: nothing to compare. */
const ENDED = new Set(['failed', 'cancelled', 'halted']);

const DAY_MS = 86_400_000;

/**
 * After a canary run could not be requested (approval suspended, budget spent, PI without the
 * researcher role) or ended without results, the same canary is not tried again for this long: the
 * scheduler ticks every few seconds, and each attempt is audited.
 */
export const CANARY_RETRY_MS = 3_600_000;

export class CanaryService {
  private running: Promise<void> | undefined;
  private again = false;
  /** Per approval and endpoint, when a canary that failed may be tried again (this process). */
  private readonly retryAt = new Map<string, number>();

  constructor(
    private readonly engine: Engine,
    private readonly approvals: ApprovalStore,
    private readonly fingerprints: FingerprintStore,
    private readonly db: Database,
    /** k: the fewest paired instances whose figures are shown (the disclosure control's minimum cell). */
    private readonly k: number,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** Looks at every canary soon (a fingerprint changed): one pass at a time, one more if asked meanwhile. */
  nudge(): void {
    void this.tick().catch((err: unknown) => this.engine.logger.warn('canary.tick-failed', { errorCode: describeError(err).code }));
  }

  /** One pass over the approvals with a canary: baselines, due or triggered re-runs, finished comparisons. */
  async tick(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          for (const approval of await this.approvals.withCanary()) {
            for (const endpointId of approval.endpoints) await this.step(approval, approval.canary as Canary, endpointId);
          }
        } while (this.again);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** What the canary of one approval on one endpoint needs now; at most one canary run in flight. */
  private async step(approval: Approval, canary: Canary, endpointId: string): Promise<void> {
    if ((this.retryAt.get(`${approval.approvalId}:${endpointId}`) ?? 0) > this.clock().getTime()) return;
    const baseline = await this.baseline(approval.approvalId, endpointId);
    if (!baseline) return this.startBaseline(approval, canary, endpointId);
    if (!baseline.instance_keys) return this.settleBaseline(approval, canary, endpointId, baseline);
    const pending = await this.pendingCheck(approval.approvalId, endpointId);
    if (pending) return this.settleCheck(approval, canary, pending, baseline);
    const last = await this.lastCheck(approval.approvalId, endpointId);
    // What the model was at the last canary that produced scores (a failed one saw nothing useful).
    const lastRun = (await this.lastDecided(approval.approvalId, endpointId))?.run_id ?? baseline.run_id;
    const lastAt = (last?.created_at ?? baseline.created_at).getTime();
    if (this.clock().getTime() - lastAt >= canary.everyDays * DAY_MS) return this.startCheck(approval, canary, endpointId, baseline, 'schedule', last?.check_id);
    if (await this.fingerprintMoved(endpointId, lastRun)) return this.startCheck(approval, canary, endpointId, baseline, 'fingerprint', last?.check_id);
  }

  /** Whether the endpoint's current fingerprint (the last one seen) is one the last canary run did not see. */
  private async fingerprintMoved(endpointId: string, runId: string): Promise<boolean> {
    const current = await this.fingerprints.newest(endpointId);
    if (!current) return false;
    const seen = await this.db.query('SELECT 1 FROM run_fingerprints WHERE run_id = $1::uuid AND endpoint_id = $2 AND fingerprint = $3', [runId, endpointId, current]);
    return seen.length === 0;
  }

  /**
   * The right to start a canary run of the approval on the endpoint for the next minute, or false when
   * another process holds it: of several daemons on one store, one requests the run; by the time the
   * claim lapses the others see its baseline or pending check.
   */
  private async claim(approvalId: string, endpointId: string): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO canary_claims (approval_id, endpoint_id, until) VALUES ($1::uuid, $2, now() + interval '60 seconds')
       ON CONFLICT (approval_id, endpoint_id) DO UPDATE SET until = EXCLUDED.until WHERE canary_claims.until < now()
       RETURNING 1`,
      [approvalId, endpointId],
    );
    return rows.length === 1;
  }

  /** Gives the claim back once the baseline or check is recorded (or the request failed): the next step may follow at once. */
  private async unclaim(approvalId: string, endpointId: string): Promise<void> {
    await this.db.query('UPDATE canary_claims SET until = now() WHERE approval_id = $1::uuid AND endpoint_id = $2', [approvalId, endpointId]);
  }

  private async startBaseline(approval: Approval, canary: Canary, endpointId: string): Promise<void> {
    if (!(await this.claim(approval.approvalId, endpointId))) return;
    try {
      // Another process may have started it between our look and our claim.
      if (await this.baseline(approval.approvalId, endpointId)) return;
      const runId = await this.requestCanaryRun(approval, canary, endpointId, 'baseline');
      if (!runId) return;
      await this.db.query('INSERT INTO canary_baselines (approval_id, endpoint_id, run_id) VALUES ($1::uuid, $2, $3::uuid) ON CONFLICT DO NOTHING', [approval.approvalId, endpointId, runId]);
    } finally {
      await this.unclaim(approval.approvalId, endpointId);
    }
  }

  /** A baseline whose run has ended: its scored instance keys pinned, or the baseline dropped to be run again. */
  private async settleBaseline(approval: Approval, canary: Canary, endpointId: string, baseline: BaselineRow): Promise<void> {
    const run = await this.engine.store.getRun(baseline.run_id);
    if (!run || (run.status !== 'completed' && !ENDED.has(run.status))) return;
    const keys = run.status === 'completed' ? await this.scoredKeys(baseline.run_id, run.spec.benchmark.mainMetric) : [];
    const usable = keys.length >= this.k;
    if (!usable) this.backOff(approval.approvalId, endpointId);
    await this.db.transaction(async (tx) => {
      // Once, whichever process gets here first: the others change nothing and record nothing.
      const changed = usable
        ? await tx.query('UPDATE canary_baselines SET instance_keys = $3 WHERE approval_id = $1::uuid AND endpoint_id = $2 AND instance_keys IS NULL RETURNING 1', [
            approval.approvalId,
            endpointId,
            keys,
          ])
        : await tx.query('DELETE FROM canary_baselines WHERE approval_id = $1::uuid AND endpoint_id = $2 AND run_id = $3::uuid RETURNING 1', [approval.approvalId, endpointId, baseline.run_id]);
      if (changed.length === 0) return;
      await this.engine.audit.recordIn(
        tx,
        this.checkEvent(approval, canary, endpointId, baseline.run_id, usable ? 'success' : 'failed', usable ? 'drift.baseline-recorded' : 'drift.canary-failed', {
          baseline: true,
          instances: usable ? keys.length : 0,
        }),
      );
    });
  }

  private async startCheck(approval: Approval, canary: Canary, endpointId: string, baseline: BaselineRow, trigger: 'schedule' | 'fingerprint', lastSeen: string | undefined): Promise<void> {
    if (!(await this.claim(approval.approvalId, endpointId))) return;
    try {
      // Another process may have started a check between our look and our claim.
      if ((await this.lastCheck(approval.approvalId, endpointId))?.check_id !== lastSeen) return;
      const runId = await this.requestCanaryRun(approval, canary, endpointId, trigger);
      if (!runId) return;
      await this.db.query(`INSERT INTO drift_checks (check_id, approval_id, endpoint_id, run_id, baseline_run_id, trigger, state) VALUES ($1::uuid, $2::uuid, $3, $4::uuid, $5::uuid, $6, 'pending')`, [
        randomUUID(),
        approval.approvalId,
        endpointId,
        runId,
        baseline.run_id,
        trigger,
      ]);
    } finally {
      await this.unclaim(approval.approvalId, endpointId);
    }
  }

  /** A pending check whose run has ended: compared with the baseline on the pinned instances, and audited. */
  private async settleCheck(approval: Approval, canary: Canary, check: CheckRow, baseline: BaselineRow): Promise<void> {
    const run = await this.engine.store.getRun(check.run_id);
    if (!run || (run.status !== 'completed' && !ENDED.has(run.status))) return;
    const metric = run.spec.benchmark.mainMetric;
    const pairs = run.status === 'completed' ? await this.pairs(baseline, check.run_id, metric) : [];
    const result =
      pairs.length >= this.k
        ? pairedComparison(
            pairs.map((p) => p[0]),
            pairs.map((p) => p[1]),
          )
        : undefined;
    const drift = !!result && result.pValue < canary.threshold && Math.abs(result.meanDifference) >= canary.minDifference;
    const state: DriftState = run.status !== 'completed' ? 'failed' : !result ? 'inconclusive' : drift ? 'drift' : 'stable';
    if (state === 'failed') this.backOff(approval.approvalId, check.endpoint_id);
    const rule: RuleId = state === 'failed' ? 'drift.canary-failed' : state === 'inconclusive' ? 'drift.inconclusive' : drift ? 'drift.detected' : 'drift.stable';
    await this.db.transaction(async (tx) => {
      const updated = await tx.query(
        `UPDATE drift_checks SET state = $2, test = $3, pairs = $4, baseline_mean = $5, canary_mean = $6, p_value = $7, decided_at = now()
          WHERE check_id = $1::uuid AND state = 'pending' RETURNING 1`,
        [check.check_id, state, result?.test ?? null, result ? result.pairs : null, result?.baselineMean ?? null, result?.canaryMean ?? null, result?.pValue ?? null],
      );
      if (updated.length === 0) return; // another worker settled it
      await this.engine.audit.recordIn(
        tx,
        this.checkEvent(approval, canary, check.endpoint_id, check.run_id, state === 'failed' ? 'failed' : 'success', rule, {
          checkId: check.check_id,
          trigger: check.trigger,
          drift,
          ...(result ? { test: result.test, pairs: result.pairs, baselineMean: round(result.baselineMean), canaryMean: round(result.canaryMean), pValue: Number(result.pValue.toPrecision(3)) } : {}),
        }),
      );
    });
    if (state === 'drift') this.engine.logger.warn('drift.detected', { approvalId: approval.approvalId, endpointId: check.endpoint_id, runId: check.run_id });
  }

  /**
   * Requests the canary's run under the approval, for its PI; a private run is approved by the officer
   * who named the canary (never the PI: an approval's recorder is not named on it). A refusal (approval
   * suspended, budget spent) is audited by requestRun; nothing is recorded here and the next tick tries again.
   */
  private async requestCanaryRun(approval: Approval, canary: Canary, endpointId: string, why: 'baseline' | 'schedule' | 'fingerprint'): Promise<string | undefined> {
    const requester: Actor = { principal: approval.principalInvestigator, role: 'researcher', authMethod: 'service' };
    try {
      const run = await requestRun(this.engine, {
        benchmarkId: canary.benchmarkId,
        endpointId,
        requester,
        maxInstances: canary.instances,
        sample: 'helm',
        approvalId: approval.approvalId,
        purpose: `canary ${why} of approval ${approval.protocolNumber}`.slice(0, 200),
      });
      if (run.status === 'requested') await approveRunAsCanary(this.engine, run.run_id, { principal: approval.createdBy, role: 'compliance', authMethod: 'service' });
      return run.run_id;
    } catch (err) {
      this.backOff(approval.approvalId, endpointId);
      this.engine.logger.warn('canary.not-requested', { approvalId: approval.approvalId, endpointId, errorCode: describeError(err).code });
      return undefined;
    }
  }

  /** The instance keys of a run whose main metric was scored. */
  private async scoredKeys(runId: string, metric: string): Promise<string[]> {
    const rows = await this.db.query<{ item_key: string }>(`SELECT item_key FROM run_items WHERE run_id = $1::uuid AND state = 'done' AND jsonb_typeof(scores -> $2) = 'number' ORDER BY ordinal`, [
      runId,
      metric,
    ]);
    return rows.map((r) => r.item_key);
  }

  /** (baseline score, canary score) of each pinned instance both runs scored. */
  private async pairs(baseline: BaselineRow, runId: string, metric: string): Promise<[number, number][]> {
    const rows = await this.db.query<{ b: number; c: number }>(
      `SELECT (b.scores ->> $3)::double precision AS b, (c.scores ->> $3)::double precision AS c
         FROM run_items b JOIN run_items c ON c.run_id = $2::uuid AND c.item_key = b.item_key
        WHERE b.run_id = $1::uuid AND b.item_key = ANY($4::text[]) AND b.state = 'done' AND c.state = 'done'
          AND jsonb_typeof(b.scores -> $3) = 'number' AND jsonb_typeof(c.scores -> $3) = 'number'
        ORDER BY b.ordinal`,
      [baseline.run_id, runId, metric, baseline.instance_keys ?? []],
    );
    return rows.map((r) => [Number(r.b), Number(r.c)]);
  }

  private async baseline(approvalId: string, endpointId: string): Promise<BaselineRow | undefined> {
    const rows = await this.db.query<BaselineRow>('SELECT run_id::text AS run_id, instance_keys, created_at FROM canary_baselines WHERE approval_id = $1::uuid AND endpoint_id = $2', [
      approvalId,
      endpointId,
    ]);
    return rows[0];
  }

  private async pendingCheck(approvalId: string, endpointId: string): Promise<CheckRow | undefined> {
    return (await this.checkRows("d.approval_id = $1::uuid AND d.endpoint_id = $2 AND d.state = 'pending'", [approvalId, endpointId]))[0];
  }

  private async lastCheck(approvalId: string, endpointId: string): Promise<CheckRow | undefined> {
    return (await this.checkRows('d.approval_id = $1::uuid AND d.endpoint_id = $2', [approvalId, endpointId]))[0];
  }

  private async lastDecided(approvalId: string, endpointId: string): Promise<CheckRow | undefined> {
    return (await this.checkRows("d.approval_id = $1::uuid AND d.endpoint_id = $2 AND d.state IN ('stable', 'drift', 'inconclusive')", [approvalId, endpointId]))[0];
  }

  /** The canary of this approval on this endpoint waits CANARY_RETRY_MS before its next attempt. */
  private backOff(approvalId: string, endpointId: string): void {
    this.retryAt.set(`${approvalId}:${endpointId}`, this.clock().getTime() + CANARY_RETRY_MS);
  }

  private checkRows(where: string, params: unknown[]): Promise<CheckRow[]> {
    return this.db.query<CheckRow>(
      `SELECT d.check_id::text AS check_id, d.approval_id::text AS approval_id, a.protocol_number, d.endpoint_id, r.benchmark_id, d.run_id::text AS run_id,
              d.baseline_run_id::text AS baseline_run_id, d.trigger, d.state, d.test, d.pairs, d.baseline_mean, d.canary_mean, d.p_value, d.created_at,
              d.decided_at, d.reviewed_by, d.reviewed_at
         FROM drift_checks d JOIN approvals a ON a.approval_id = d.approval_id JOIN runs r ON r.run_id = d.run_id
        WHERE ${where} ORDER BY d.created_at DESC, d.check_id`,
      params,
    );
  }

  /** The drift checks of the given approvals (all when undefined), newest first. */
  async checks(approvalIds?: readonly string[]): Promise<DriftCheckView[]> {
    const rows = approvalIds ? await this.checkRows('d.approval_id = ANY($1::uuid[])', [approvalIds]) : await this.checkRows('true', []);
    return rows.map(view);
  }

  /** Approvals whose results are stale: a detected drift nobody has reviewed yet. */
  async staleApprovals(): Promise<Set<string>> {
    const rows = await this.db.query<{ approval_id: string }>("SELECT DISTINCT approval_id::text AS approval_id FROM drift_checks WHERE state = 'drift' AND reviewed_at IS NULL");
    return new Set(rows.map((r) => r.approval_id));
  }

  /**
   * A compliance officer reviewed the approval's detected drift: its unreviewed drift checks are
   * marked reviewed, with the review's audit record in the same transaction. Returns how many.
   */
  async review(approval: Approval, actor: Actor, note: string | undefined): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.query(
        `UPDATE drift_checks SET reviewed_by = $2, reviewed_at = now(), review_note = $3
          WHERE approval_id = $1::uuid AND state = 'drift' AND reviewed_at IS NULL RETURNING 1`,
        [approval.approvalId, actor.principal, note ? note.slice(0, 300) : null],
      );
      if (rows.length === 0) return 0;
      await this.engine.audit.recordIn(tx, {
        type: 'drift.review',
        action: 'U',
        outcome: 'success',
        rule: 'drift.reviewed',
        reason: `drift of approval ${approval.protocolNumber} reviewed`.slice(0, 200),
        actor,
        irbProtocol: approval.protocolNumber,
        subject: { approvalId: approval.approvalId },
        detail: { checks: rows.length, noted: !!note },
      });
      return rows.length;
    });
  }

  private checkEvent(
    approval: Approval,
    canary: Canary,
    endpointId: string,
    runId: string,
    outcome: 'success' | 'failed',
    rule: RuleId,
    detail: Record<string, number | string | boolean>,
  ): AuditEventInput {
    return {
      type: 'drift.check',
      action: 'E',
      outcome,
      rule,
      actor: ENGINE_ACTOR,
      irbProtocol: approval.protocolNumber,
      subject: { approvalId: approval.approvalId, endpointId, runId, benchmarkId: canary.benchmarkId },
      detail: { ...detail, threshold: canary.threshold, minDifference: canary.minDifference },
    };
  }
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The notice compliance reads: what changed, and the canary's means (>= k instances) and p-value. */
function notice(r: CheckRow): string {
  const what = r.trigger === 'fingerprint' ? `model behind endpoint ${r.endpoint_id} changed` : `canary on endpoint ${r.endpoint_id} moved`;
  return `${what}; canary mean ${(r.baseline_mean as number).toFixed(2)} -> ${(r.canary_mean as number).toFixed(2)}, p=${Number((r.p_value as number).toPrecision(2))}`;
}

function view(r: CheckRow): DriftCheckView {
  const figures = r.pairs !== null;
  return {
    checkId: r.check_id,
    approvalId: r.approval_id,
    protocolNumber: r.protocol_number,
    endpointId: r.endpoint_id,
    benchmarkId: r.benchmark_id,
    runId: r.run_id,
    baselineRunId: r.baseline_run_id,
    trigger: r.trigger,
    state: r.state,
    test: r.test,
    pairs: r.pairs,
    baselineMean: figures ? r.baseline_mean : null,
    canaryMean: figures ? r.canary_mean : null,
    pValue: figures ? r.p_value : null,
    createdAt: r.created_at.toISOString(),
    decidedAt: r.decided_at ? r.decided_at.toISOString() : null,
    reviewedBy: r.reviewed_by,
    reviewedAt: r.reviewed_at ? r.reviewed_at.toISOString() : null,
    notice: r.state === 'drift' && figures ? notice(r) : null,
  };
}
