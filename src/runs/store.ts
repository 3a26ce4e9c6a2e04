/**
 * The run store: SQL for runs and their instances. Every statement is short and self-contained (no
 * transaction spans a model call), so it works on PostgreSQL and on PGlite's single session alike.
 */
import type { Database, Queryable } from '../db';
import { GroupCommit } from '../db';
import type { DataRevision, Instance, StrataRecord } from '../catalog';
import type { JuryPolicy, RunPins } from '../contracts';
import { getMetric, withClippedStats } from '../metrics';
import type { RunPreset } from './preset';
import type { Tier } from '../tiers';
import { causeMeaning, type RunCause } from './outcome';

export type RunStatus = 'requested' | 'approved' | 'running' | 'completed' | 'failed' | 'cancelled' | 'halted';
export type ItemState = 'pending' | 'claimed' | 'done' | 'blocked' | 'failed';

export interface RunRow {
  run_id: string;
  benchmark_id: string;
  benchmark_version: string;
  benchmark_hash: string;
  template_hash: string;
  tier: Tier;
  endpoint_id: string;
  status: RunStatus;
  requested_by: string;
  max_instances: number | null;
  instance_count: number | null;
  /** Records the dataset's adapter left out when the run was planned, by rule; null until planned. */
  skipped: Record<string, number> | null;
  deid_version: string | null;
  spec: RunSpec;
  error_code: string | null;
  approval_id: string | null;
  approved_by: string | null;
  approved_at: Date | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** What a run is, saved with it (like HELM's run_spec.json): no data, no paths to data. */
export interface RunSpec {
  benchmark: { id: string; version: string; definitionHash: string; templateHash: string; mainMetric: string; metrics: string[]; lowerIsBetter: boolean | null };
  /** `test`: a test endpoint (the loopback stand-in) when the run was requested; shown as TEST. */
  endpoint: { id: string; provider: string; deployment: string | null; model: string | null; test?: true };
  scoring: 'corrected' | 'helm';
  /** A jury benchmark's jury as this run uses it: the judges asked, those left out as of the model's family and why, what is floored without a judge. */
  jury?: JuryPolicy;
  /** Output tokens per model call: the benchmark's max_tokens, or the run's or endpoint's override. */
  maxTokens: number;
  temperature: number;
  reasoningEffort?: 'low' | 'medium' | 'high';
  deidentify: boolean;
  /** How a capped run picked its instances (absent: no cap, or a run from before this was recorded: the first N). */
  sample?: { method: 'helm'; seed: number; maxInstances: number } | { method: 'first'; maxInstances: number };
  purpose?: string;
  irbProtocol?: string;
  approvalId?: string;
  /** The data revision read (sha256 of each file, or what identifies an OMOP source); absent: a run from before it was recorded ("unknown"). */
  data?: DataRevision;
  /** The preset the run was requested with (`medhelm-leaderboard`: HELM's leaderboard settings). */
  preset?: RunPreset;
  /** The site binding's strata its instances were labelled with (names and sha256 of the declaration); absent: none. */
  strata?: StrataRecord;
  /** The hashes of its data, definition, template, scorer and judge set (runs/pins.ts); absent: a run from before they were recorded. */
  pins?: RunPins;
  /** One of K runs of one sample on one endpoint, requested together to measure output stability. */
  repeat?: RunRepeat;
}

/** A run's place in a repeat group: `index` of `of` runs requested together under `groupId`. */
export interface RunRepeat {
  groupId: string;
  index: number;
  of: number;
}

/**
 * Output stability of a repeat group, over the instances finished in every run of it: how many gave
 * the same answer (byte for byte) and the same main score every time, and each run's main-metric mean
 * over those common instances. Computed in SQL: no prediction leaves the store.
 */
export interface RepeatStability {
  common: number;
  sameAnswer: number;
  sameScore: number;
  /** The mean of the main metric of each run over the common instances, in the order of runIds (null when no instance has it). */
  runMeans: (number | null)[];
}

/** Sample SD (n - 1), min and max of a repeat group's run means that exist; null below two. */
export function meanSpread(means: readonly (number | null)[]): { sd: number; min: number; max: number } | null {
  const xs = means.filter((m): m is number => m !== null);
  if (xs.length < 2) return null;
  const mean = xs.reduce((a, x) => a + x, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1));
  return { sd, min: Math.min(...xs), max: Math.max(...xs) };
}

/**
 * The model's tokens stored with the finished instances of every run under an approval, by endpoint
 * (and its model or deployment), for the approval's budget (src/calls/budget.ts).
 */
export async function tokensUnderApproval(q: Queryable, approvalId: string): Promise<{ endpoint_id: string; model: string | null; deployment: string | null; p: number; c: number }[]> {
  return q.query(
    `SELECT r.endpoint_id, r.spec->'endpoint'->>'model' AS model, r.spec->'endpoint'->>'deployment' AS deployment,
            COALESCE(sum(i.prompt_tokens), 0)::bigint AS p, COALESCE(sum(i.completion_tokens), 0)::bigint AS c
       FROM runs r JOIN run_items i ON i.run_id = r.run_id
      WHERE r.approval_id = $1::uuid AND i.state = 'done'
      GROUP BY r.endpoint_id, r.spec->'endpoint'->>'model', r.spec->'endpoint'->>'deployment'`,
    [approvalId],
  );
}

export interface ClaimedItem {
  itemKey: string;
  ordinal: number;
  attempts: number;
  instance: Instance;
}

export interface ItemResult {
  prediction: string;
  scores: Record<string, number | null>;
  /** Annotators still to run on this instance after the run's model calls (their metrics are null until then). */
  pendingAnnotators?: string[];
  promptTokens: number | null;
  completionTokens: number | null;
  /** Of the completion tokens, the reasoning ones (reasoning models that report them). */
  reasoningTokens?: number | null;
  /** The endpoint did not report usage truthfully: the tokens are the call's worst case (src/calls/cost.ts). */
  usageUnderReported?: boolean;
  latencyMs: number;
}

export type StateCounts = Record<ItemState, number>;

export interface MetricAggregate {
  metric: string;
  value: number | null;
  n: number;
}

/** Which instances a page of a run holds (instancePage). */
export interface InstancePageQuery {
  after: number;
  limit: number;
  failed: boolean;
  wrong: boolean;
  /** The score `wrong` judges, and its direction: full marks are 1 (0 when lower is better). */
  judged?: { key: string; lowerIsBetter: boolean };
}

export interface InstanceCodeRow {
  ordinal: number;
  state: 'failed' | 'blocked';
  outcome_rule: string | null;
}

/** Everything of an instance a public run shows (the instance itself may carry text: never logged). */
export interface InstancePageRow {
  ordinal: number;
  item_key: string;
  state: ItemState;
  outcome_rule: string | null;
  payload: Instance;
  prediction: string | null;
  scores: Record<string, number | null> | null;
}

const RUN_COLUMNS = `run_id::text AS run_id, benchmark_id, benchmark_version, benchmark_hash, template_hash, tier, endpoint_id, status,
  requested_by, max_instances, instance_count, skipped, deid_version, spec, error_code, approval_id::text AS approval_id, approved_by, approved_at,
  created_at, started_at, finished_at`;

interface CompletedItem extends ItemResult {
  runId: string;
  itemKey: string;
  workerId: string;
}

export class RunStore {
  /** Results of concurrent instances are written together; each caller still waits for its commit. */
  private readonly completions: GroupCommit<CompletedItem, boolean>;

  constructor(private readonly db: Database) {
    this.completions = new GroupCommit((items) => this.writeCompletions(items));
  }

  async insertRun(run: Omit<RunRow, 'created_at' | 'started_at' | 'finished_at' | 'instance_count' | 'skipped' | 'error_code' | 'approved_by' | 'approved_at'>, q: Queryable = this.db): Promise<void> {
    await q.query(
      `INSERT INTO runs (run_id, benchmark_id, benchmark_version, benchmark_hash, template_hash, tier, endpoint_id, status, requested_by, max_instances, deid_version, spec, approval_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::uuid)`,
      [
        run.run_id,
        run.benchmark_id,
        run.benchmark_version,
        run.benchmark_hash,
        run.template_hash,
        run.tier,
        run.endpoint_id,
        run.status,
        run.requested_by,
        run.max_instances,
        run.deid_version,
        JSON.stringify(run.spec),
        run.approval_id,
      ],
    );
  }

  /** Records a compliance officer's approval of a requested run; false when it was not awaiting one. */
  async approve(runId: string, approver: string): Promise<boolean> {
    const rows = await this.db.query(`UPDATE runs SET status = 'approved', approved_by = $2, approved_at = now() WHERE run_id = $1::uuid AND status = 'requested' AND requested_by <> $2 RETURNING 1`, [
      runId,
      approver,
    ]);
    return rows.length === 1;
  }

  /** Runs a worker may pick up: approved, or running with work left (another worker may have died). */
  async runnable(limit = 20): Promise<string[]> {
    const rows = await this.db.query<{ run_id: string }>(
      `SELECT r.run_id::text AS run_id FROM runs r
        WHERE r.status = 'approved'
           OR (r.status = 'running' AND (r.instance_count IS NULL OR EXISTS (
                SELECT 1 FROM run_items i WHERE i.run_id = r.run_id AND (i.state = 'pending' OR (i.state = 'claimed' AND i.lease_expires_at < now())))))
        ORDER BY r.created_at LIMIT $1`,
      [limit],
    );
    return rows.map((r) => r.run_id);
  }

  /** The runs of a requester that are not finished (requested, approved, running), oldest first. */
  async activeRunsBy(requester: string): Promise<string[]> {
    const rows = await this.db.query<{ run_id: string }>(
      `SELECT run_id::text AS run_id FROM runs WHERE requested_by = $1 AND status IN ('requested', 'approved', 'running') ORDER BY created_at, run_id`,
      [requester],
    );
    return rows.map((r) => r.run_id);
  }

  async listRunsBy(requester: string, limit = 50): Promise<RunRow[]> {
    return this.db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE requested_by = $1 ORDER BY created_at DESC, run_id LIMIT $2`, [requester, limit]);
  }

  async getRun(runId: string): Promise<RunRow | undefined> {
    if (!/^[0-9a-f-]{36}$/i.test(runId)) return undefined;
    const rows = await this.db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = $1::uuid`, [runId]);
    return rows[0];
  }

  async listRuns(limit = 50): Promise<RunRow[]> {
    return this.db.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs ORDER BY created_at DESC, run_id LIMIT $1`, [limit]);
  }

  /** Moves a run between states; returns false when it was not in one of `from` (someone else moved it). */
  async transition(runId: string, from: RunStatus[], to: RunStatus, errorCode: string | null = null): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE runs SET status = $3,
         error_code = COALESCE($4, error_code),
         started_at = CASE WHEN $3 = 'running' THEN COALESCE(started_at, now()) ELSE started_at END,
         finished_at = CASE WHEN $3 IN ('completed', 'failed', 'cancelled', 'halted') THEN now() ELSE finished_at END
       WHERE run_id = $1::uuid AND status = ANY($2::text[]) RETURNING 1`,
      [runId, from, to, errorCode],
    );
    return rows.length === 1;
  }

  /** Enqueues a batch of instances; idempotent, so a re-planned run inserts only what is missing. */
  async enqueue(runId: string, items: { itemKey: string; ordinal: number; instance: Instance }[]): Promise<void> {
    if (items.length === 0) return;
    const records = items.map((i) => ({ item_key: i.itemKey, ordinal: i.ordinal, payload: i.instance }));
    await this.db.query(
      `INSERT INTO run_items (run_id, item_key, ordinal, payload)
       SELECT $1::uuid, x.item_key, x.ordinal, x.payload FROM jsonb_to_recordset($2::jsonb) AS x(item_key text, ordinal integer, payload jsonb)
       ON CONFLICT (run_id, item_key) DO NOTHING`,
      [runId, JSON.stringify(records)],
    );
  }

  async countItems(runId: string): Promise<number> {
    const rows = await this.db.query<{ n: number }>('SELECT count(*)::integer AS n FROM run_items WHERE run_id = $1::uuid', [runId]);
    return rows[0]?.n ?? 0;
  }

  /** Attaches to every record of each subject the name words found in the subject's records (PHI: the run store only). */
  async attachEvidence(runId: string, subjects: { subject: string; words: string[] }[]): Promise<void> {
    for (let i = 0; i < subjects.length; i += 500) {
      const chunk = subjects.slice(i, i + 500);
      await this.db.query(
        `UPDATE run_items AS i SET payload = jsonb_set(i.payload, '{evidence}', x.words)
           FROM jsonb_to_recordset($2::jsonb) AS x(subject text, words jsonb)
          WHERE i.run_id = $1::uuid AND i.payload->>'subjectId' = x.subject`,
        [runId, JSON.stringify(chunk)],
      );
    }
  }

  /**
   * Keeps a run's dataset-wide evidence, sealed (keyed hashes), and appends its version to the run's
   * de-identification version. Planning again (a takeover) writes the same evidence again.
   */
  async saveEvidence(runId: string, sealed: { version: string; hashes: string[] }): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO run_deid_evidence (run_id, version, hashes) VALUES ($1::uuid, $2, $3::jsonb)
         ON CONFLICT (run_id) DO UPDATE SET version = EXCLUDED.version, hashes = EXCLUDED.hashes`,
        [runId, sealed.version, JSON.stringify(sealed.hashes)],
      );
      await tx.query(`UPDATE runs SET deid_version = split_part(deid_version, ' ', 1) || ' ' || $2 WHERE run_id = $1::uuid AND deid_version IS NOT NULL`, [runId, sealed.version]);
    });
  }

  /** A run's sealed dataset-wide evidence, if planning gathered any. */
  async loadEvidence(runId: string): Promise<{ version: string; hashes: string[] } | undefined> {
    const rows = await this.db.query<{ version: string; hashes: string[] }>('SELECT version, hashes FROM run_deid_evidence WHERE run_id = $1::uuid', [runId]);
    return rows[0];
  }

  async markPlanned(runId: string, count: number, skipped: Record<string, number> = {}): Promise<void> {
    await this.db.query('UPDATE runs SET instance_count = $2, skipped = $3::jsonb WHERE run_id = $1::uuid', [runId, count, JSON.stringify(skipped)]);
  }

  /**
   * Claims up to `limit` unfinished instances for `workerId`: pending ones, and claimed ones whose lease
   * expired (their worker died). One statement; SKIP LOCKED lets concurrent workers take disjoint sets.
   * Instances that already used every attempt are marked failed instead of being claimed again.
   */
  async claim(runId: string, workerId: string, limit: number, leaseSeconds: number, maxAttempts: number, opts: { plannedOnly?: boolean } = {}): Promise<ClaimedItem[]> {
    // A de-identified run's instances wait for planning: their subject's evidence is attached at its end.
    if (opts.plannedOnly) {
      const planned = await this.db.query<{ planned: boolean }>('SELECT instance_count IS NOT NULL AS planned FROM runs WHERE run_id = $1::uuid', [runId]);
      if (!planned[0]?.planned) return [];
    }
    await this.db.query(
      `UPDATE run_items SET state = 'failed', outcome_rule = 'run.item.attempts-exhausted', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
       WHERE run_id = $1::uuid AND state = 'claimed' AND lease_expires_at < now() AND attempts >= $2`,
      [runId, maxAttempts],
    );
    const rows = await this.db.query<{ item_key: string; ordinal: number; attempts: number; payload: Instance }>(
      `UPDATE run_items AS i
          SET state = 'claimed', lease_owner = $2, lease_expires_at = now() + make_interval(secs => $4), attempts = i.attempts + 1
         FROM (SELECT item_key FROM run_items
                WHERE run_id = $1::uuid AND (state = 'pending' OR (state = 'claimed' AND lease_expires_at < now()))
                ORDER BY ordinal LIMIT $3 FOR UPDATE SKIP LOCKED) AS pick
        WHERE i.run_id = $1::uuid AND i.item_key = pick.item_key
       RETURNING i.item_key, i.ordinal, i.attempts, i.payload`,
      [runId, workerId, limit, leaseSeconds],
    );
    return rows.map((r) => ({ itemKey: r.item_key, ordinal: r.ordinal, attempts: r.attempts, instance: r.payload })).sort((a, b) => a.ordinal - b.ordinal);
  }

  /** Stores a result; false when this worker no longer holds the lease (the result is discarded). */
  complete(runId: string, itemKey: string, workerId: string, r: ItemResult): Promise<boolean> {
    return this.completions.submit({ runId, itemKey, workerId, ...r });
  }

  /** One UPDATE for a batch of results; a row is written only while its worker still holds the lease. */
  private async writeCompletions(items: CompletedItem[]): Promise<boolean[]> {
    const rows = await this.db.query<{ run_id: string; item_key: string }>(
      `UPDATE run_items AS i SET state = 'done', prediction = x.prediction, scores = x.scores, prompt_tokens = x.prompt_tokens,
              completion_tokens = x.completion_tokens, reasoning_tokens = x.reasoning_tokens, usage_under_reported = x.usage_under_reported,
              latency_ms = x.latency_ms, pending_annotators = x.pending_annotators,
              finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
         FROM jsonb_to_recordset($1::jsonb) AS x(run_id uuid, item_key text, worker_id text, prediction text, scores jsonb,
              prompt_tokens integer, completion_tokens integer, reasoning_tokens integer, usage_under_reported boolean, latency_ms integer, pending_annotators jsonb)
        WHERE i.run_id = x.run_id AND i.item_key = x.item_key AND i.state = 'claimed' AND i.lease_owner = x.worker_id
       RETURNING i.run_id::text AS run_id, i.item_key`,
      [
        JSON.stringify(
          items.map((r) => ({
            run_id: r.runId,
            item_key: r.itemKey,
            worker_id: r.workerId,
            prediction: r.prediction,
            scores: r.scores,
            prompt_tokens: r.promptTokens,
            completion_tokens: r.completionTokens,
            reasoning_tokens: r.reasoningTokens ?? null,
            usage_under_reported: r.usageUnderReported === true,
            latency_ms: r.latencyMs,
            pending_annotators: r.pendingAnnotators?.length ? r.pendingAnnotators : null,
          })),
        ),
      ],
    );
    const written = new Set(rows.map((r) => `${r.run_id}\u0000${r.item_key}`));
    return items.map((r) => written.has(`${r.runId}\u0000${r.itemKey}`));
  }

  /** Finished instances with annotators still pending, a page at a time (the deferred annotation pass). */
  async pendingAnnotations(runId: string, limit: number): Promise<{ itemKey: string; instance: Instance; prediction: string; scores: Record<string, number | null>; pending: string[] }[]> {
    const rows = await this.db.query<{ item_key: string; payload: Instance; prediction: string; scores: Record<string, number | null>; pending_annotators: string[] }>(
      `SELECT item_key, payload, prediction, scores, pending_annotators FROM run_items
        WHERE run_id = $1::uuid AND state = 'done' AND pending_annotators IS NOT NULL ORDER BY ordinal LIMIT $2`,
      [runId, limit],
    );
    return rows.map((r) => ({ itemKey: r.item_key, instance: r.payload, prediction: r.prediction, scores: r.scores, pending: r.pending_annotators }));
  }

  /** The scores of an instance once its pending annotators ran; nothing is pending afterwards. */
  async saveAnnotatedScores(runId: string, itemKey: string, scores: Record<string, number | null>): Promise<void> {
    await this.db.query(`UPDATE run_items SET scores = $3::jsonb, pending_annotators = NULL WHERE run_id = $1::uuid AND item_key = $2 AND state = 'done'`, [runId, itemKey, JSON.stringify(scores)]);
  }

  /** True when every instance of the run is finished (none pending or claimed): its model calls are all made. */
  async allCallsMade(runId: string): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM run_items WHERE run_id = $1::uuid AND state IN ('pending', 'claimed') LIMIT 1`, [runId]);
    return rows.length === 0;
  }

  /** Ends an instance without a result: blocked by a rule (de-identification) or failed for good. */
  async finishWithout(runId: string, itemKey: string, workerId: string, state: 'blocked' | 'failed', rule: string): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE run_items SET state = $4, outcome_rule = $5, finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
        WHERE run_id = $1::uuid AND item_key = $2 AND state = 'claimed' AND lease_owner = $3 RETURNING 1`,
      [runId, itemKey, workerId, state, rule],
    );
    return rows.length === 1;
  }

  /** Gives an instance back after a transient failure: pending again, or failed once attempts are used. */
  async release(runId: string, itemKey: string, workerId: string, maxAttempts: number, errorCode: string): Promise<void> {
    await this.db.query(
      `UPDATE run_items SET
         state = CASE WHEN attempts >= $4 THEN 'failed' ELSE 'pending' END,
         outcome_rule = $5,
         finished_at = CASE WHEN attempts >= $4 THEN now() ELSE NULL END,
         lease_owner = NULL, lease_expires_at = NULL
        WHERE run_id = $1::uuid AND item_key = $2 AND state = 'claimed' AND lease_owner = $3`,
      [runId, itemKey, workerId, maxAttempts, errorCode],
    );
  }

  /**
   * Renews the leases of every instance this worker holds (its heartbeat). Rows locked by a write in
   * progress (this worker's own results, group-committed) are skipped, not waited for: both
   * statements update many rows in no set order, so waiting could deadlock them, and a row being
   * written needs no renewal.
   */
  async extendLeases(runId: string, workerId: string, leaseSeconds: number): Promise<void> {
    await this.db.query(
      `UPDATE run_items AS i SET lease_expires_at = now() + make_interval(secs => $3)
         FROM (SELECT item_key FROM run_items WHERE run_id = $1::uuid AND state = 'claimed' AND lease_owner = $2
                 FOR UPDATE SKIP LOCKED) AS mine
        WHERE i.run_id = $1::uuid AND i.item_key = mine.item_key`,
      [runId, workerId, leaseSeconds],
    );
  }

  /**
   * Takes (or renews) the planning of a run: one worker streams the dataset into the queue, the
   * others wait; a planner that died loses the lease and another worker takes over.
   */
  async takePlanner(runId: string, workerId: string, leaseSeconds: number): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE runs SET planner = $2, planner_expires_at = now() + make_interval(secs => $3)
        WHERE run_id = $1::uuid AND instance_count IS NULL AND (planner IS NULL OR planner = $2 OR planner_expires_at < now())
       RETURNING 1`,
      [runId, workerId, leaseSeconds],
    );
    return rows.length === 1;
  }

  /** Returns every lease this worker holds to the queue (cancellation, shutdown). */
  async releaseAll(runId: string, workerId: string): Promise<void> {
    await this.db.query(
      `UPDATE run_items SET state = 'pending', attempts = GREATEST(attempts - 1, 0), lease_owner = NULL, lease_expires_at = NULL
        WHERE run_id = $1::uuid AND state = 'claimed' AND lease_owner = $2`,
      [runId, workerId],
    );
  }

  async counts(runId: string, q: Queryable = this.db): Promise<StateCounts> {
    const rows = await q.query<{ state: ItemState; n: number }>('SELECT state, count(*)::integer AS n FROM run_items WHERE run_id = $1::uuid GROUP BY state', [runId]);
    const counts: StateCounts = { pending: 0, claimed: 0, done: 0, blocked: 0, failed: 0 };
    for (const r of rows) counts[r.state] = r.n;
    return counts;
  }

  /** Mean of each metric over finished instances, computed from the stored per-instance scores. */
  async computeAggregates(runId: string, q: Queryable = this.db): Promise<MetricAggregate[]> {
    const means = await q.query<MetricAggregate>(
      `SELECT s.key AS metric, avg(s.value::double precision) AS value, count(s.value)::integer AS n
         FROM run_items i, jsonb_each_text(i.scores) AS s
        WHERE i.run_id = $1::uuid AND i.state = 'done'
        GROUP BY s.key ORDER BY s.key`,
      [runId],
    );
    // HealthBench's metrics are aggregated as its reference does: a clipped mean and a bootstrap std.
    const isClipped = (metric: string) => getMetric(metric)?.aggregate === 'clipped-mean';
    const clipped = means.filter((m) => isClipped(m.metric)).map((m) => m.metric);
    if (clipped.length === 0) return means;
    const rows = await q.query<{ metric: string; value: number }>(
      `SELECT s.key AS metric, s.value::double precision AS value
         FROM run_items i, jsonb_each_text(i.scores) AS s
        WHERE i.run_id = $1::uuid AND i.state = 'done' AND s.key = ANY($2::text[]) AND s.value IS NOT NULL
        ORDER BY i.ordinal`,
      [runId, clipped],
    );
    const values = new Map<string, number[]>();
    for (const r of rows) (values.get(r.metric) ?? values.set(r.metric, []).get(r.metric))?.push(Number(r.value));
    return withClippedStats(means, values, isClipped);
  }

  /** The metrics whose every score of a finished instance lies in [0, 1]: a 95% interval can be given for them. */
  async unitMetrics(runId: string): Promise<Set<string>> {
    const rows = await this.db.query<{ metric: string }>(
      `SELECT s.key AS metric
         FROM run_items i CROSS JOIN LATERAL jsonb_each(COALESCE(i.scores, '{}'::jsonb)) AS s
        WHERE i.run_id = $1::uuid AND i.state = 'done' AND jsonb_typeof(s.value) = 'number'
        GROUP BY s.key
       HAVING bool_and((s.value::text)::double precision BETWEEN 0 AND 1)`,
      [runId],
    );
    // A clipped metric (HealthBench) carries its bootstrap std instead: its scores are not proportions.
    return new Set(rows.map((r) => r.metric).filter((m) => getMetric(m)?.aggregate !== 'clipped-mean'));
  }

  /** Instances that ended without a result (failed for good, or blocked by a rule), by their code, most first. */
  async causes(runId: string): Promise<RunCause[]> {
    const rows = await this.db.query<{ code: string | null; state: 'failed' | 'blocked'; n: number }>(
      `SELECT outcome_rule AS code, state, count(*)::integer AS n FROM run_items
        WHERE run_id = $1::uuid AND state IN ('failed', 'blocked') GROUP BY 1, 2 ORDER BY 3 DESC, 2 DESC, 1`,
      [runId],
    );
    return rows.map((r) => {
      const code = r.code ?? 'internal';
      return { code, state: r.state, instances: Number(r.n), meaning: causeMeaning(code) };
    });
  }

  /**
   * Every instance of a run in ordinal order with its state, its planned `extra` fields and its scores:
   * what a run-level figure computed outside the aggregates reads (the HealthBench meta-evaluation).
   * Not the prompt or the prediction: those are not needed and may be long.
   */
  async instanceExtras(runId: string): Promise<{ state: string; extra: Instance['extra'] | null; scores: Record<string, number | null> | null }[]> {
    return this.db.query(`SELECT state, payload->'extra' AS extra, scores FROM run_items WHERE run_id = $1::uuid ORDER BY ordinal`, [runId]);
  }

  /**
   * A page of a run's instances in ordinal order, after `after`: every column a reader of a public run
   * may see (the instance as planned, the prediction, the scores). Which instances: all, or those
   * failed or blocked (`failed`), or done with their `judged` score short of full marks (`wrong`),
   * or either kind when both are asked. One more row than `limit` is read, to say whether a page follows.
   */
  async instancePage(runId: string, page: InstancePageQuery): Promise<InstancePageRow[]> {
    const judged = page.judged ?? { key: '', lowerIsBetter: false };
    return this.db.query<InstancePageRow>(
      `SELECT ordinal, item_key, state, outcome_rule, payload, prediction, scores FROM run_items
        WHERE run_id = $1::uuid AND ordinal > $2
          AND (NOT ($3::boolean OR $4::boolean)
               OR ($3::boolean AND state IN ('failed', 'blocked'))
               OR ($4::boolean AND state = 'done' AND jsonb_typeof(scores->$5::text) = 'number'
                   AND CASE WHEN $6::boolean THEN (scores->>$5::text)::double precision > 0 ELSE (scores->>$5::text)::double precision < 1 END))
        ORDER BY ordinal LIMIT $7`,
      [runId, page.after, page.failed, page.wrong, judged.key, judged.lowerIsBetter, page.limit + 1],
    );
  }

  /** The keys of a run's answered instances, in ordinal order: the population a rating study samples. */
  async answeredKeys(runId: string): Promise<string[]> {
    const rows = await this.db.query<{ item_key: string }>(`SELECT item_key FROM run_items WHERE run_id = $1::uuid AND state = 'done' AND prediction IS NOT NULL ORDER BY ordinal`, [runId]);
    return rows.map((r) => r.item_key);
  }

  /**
   * Answered instances of a run by key, with what a rating study shows and compares (the instance as
   * planned, the prediction, the scores). Patient text for an EHR tier: the caller never logs it.
   */
  async answeredByKeys(runId: string, keys: string[]): Promise<{ item_key: string; ordinal: number; payload: Instance; prediction: string; scores: Record<string, number | null> | null }[]> {
    if (keys.length === 0) return [];
    return this.db.query(
      `SELECT item_key, ordinal, payload, prediction, scores FROM run_items
        WHERE run_id = $1::uuid AND item_key = ANY($2::text[]) AND state = 'done' AND prediction IS NOT NULL`,
      [runId, keys],
    );
  }

  /**
   * A page of the instances of a run that failed or were blocked, by position, state and code only:
   * no payload, prediction or score is read, so none can reach a reader of an EHR tier's run.
   */
  async instanceCodes(runId: string, page: { after: number; limit: number }): Promise<InstanceCodeRow[]> {
    return this.db.query<InstanceCodeRow>(
      `SELECT ordinal, state, outcome_rule FROM run_items
        WHERE run_id = $1::uuid AND ordinal > $2 AND state IN ('failed', 'blocked')
        ORDER BY ordinal LIMIT $3`,
      [runId, page.after, page.limit + 1],
    );
  }

  /** The runs of a repeat group, in their order (runs/engine.ts records the group in each run's spec). */
  async repeatGroup(groupId: string): Promise<string[]> {
    const rows = await this.db.query<{ run_id: string }>(`SELECT run_id::text AS run_id FROM runs WHERE spec->'repeat'->>'groupId' = $1 ORDER BY (spec->'repeat'->>'index')::integer, run_id`, [
      groupId,
    ]);
    return rows.map((r) => r.run_id);
  }

  /**
   * Output stability of a repeat group's runs (RepeatStability): the instances finished in all of them,
   * and per instance whether the answers (compared by sha256 in SQL) and the main metric's values agree.
   * A null score agrees only with null.
   */
  async repeatStability(runIds: readonly string[], mainMetric: string): Promise<RepeatStability> {
    const items = `items AS (
        SELECT i.item_key, i.run_id, sha256(convert_to(COALESCE(i.prediction, ''), 'UTF8')) AS h, (i.scores->>$2)::double precision AS s
          FROM run_items i WHERE i.run_id = ANY($1::uuid[]) AND i.state = 'done'),
      common AS (SELECT item_key FROM items GROUP BY item_key HAVING count(DISTINCT run_id) = $3)`;
    const [agree] = await this.db.query<{ n: number; same_answer: number; same_score: number }>(
      `WITH ${items}
       SELECT count(*)::integer AS n,
              count(*) FILTER (WHERE answers = 1)::integer AS same_answer,
              count(*) FILTER (WHERE (nulls = 0 AND scores = 1) OR nulls = runs)::integer AS same_score
         FROM (SELECT item_key, count(DISTINCT h) AS answers, count(DISTINCT s) AS scores, count(*) - count(s) AS nulls, count(*) AS runs
                 FROM items WHERE item_key IN (SELECT item_key FROM common) GROUP BY item_key) x`,
      [runIds, mainMetric, runIds.length],
    );
    const means = await this.db.query<{ run_id: string; mean: number | null }>(
      `WITH ${items}
       SELECT run_id::text AS run_id, avg(s)::double precision AS mean FROM items WHERE item_key IN (SELECT item_key FROM common) GROUP BY run_id`,
      [runIds, mainMetric, runIds.length],
    );
    const byRun = new Map(means.map((m) => [m.run_id, m.mean === null ? null : Number(m.mean)]));
    return {
      common: Number(agree?.n ?? 0),
      sameAnswer: Number(agree?.same_answer ?? 0),
      sameScore: Number(agree?.same_score ?? 0),
      runMeans: runIds.map((id) => byRun.get(id) ?? null),
    };
  }

  /**
   * Token totals over finished instances, and how many of the run's calls (model and judges) were
   * charged their worst case because the endpoint did not report usage truthfully.
   */
  async tokenTotals(runId: string): Promise<{ promptTokens: number; completionTokens: number; reasoningTokens: number; usageUnderReported: number }> {
    const rows = await this.db.query<{ p: number; c: number; r: number; u: number; j: number }>(
      `SELECT COALESCE(sum(prompt_tokens), 0)::bigint AS p, COALESCE(sum(completion_tokens), 0)::bigint AS c, COALESCE(sum(reasoning_tokens), 0)::bigint AS r,
              count(*) FILTER (WHERE usage_under_reported)::bigint AS u,
              (SELECT count(*) FROM judge_spend WHERE run_id = $1::uuid AND usage_under_reported)::bigint AS j
         FROM run_items WHERE run_id = $1::uuid AND state = 'done'`,
      [runId],
    );
    const row = rows[0];
    return { promptTokens: Number(row?.p ?? 0), completionTokens: Number(row?.c ?? 0), reasoningTokens: Number(row?.r ?? 0), usageUnderReported: Number(row?.u ?? 0) + Number(row?.j ?? 0) };
  }

  async saveAggregates(runId: string, aggregates: MetricAggregate[], q: Queryable = this.db): Promise<void> {
    await q.query('DELETE FROM run_results WHERE run_id = $1::uuid', [runId]);
    if (aggregates.length === 0) return;
    await q.query(
      `INSERT INTO run_results (run_id, metric, value, n)
       SELECT $1::uuid, x.metric, x.value, x.n FROM jsonb_to_recordset($2::jsonb) AS x(metric text, value double precision, n integer)`,
      [runId, JSON.stringify(aggregates)],
    );
  }

  async results(runId: string): Promise<MetricAggregate[]> {
    return this.db.query<MetricAggregate>('SELECT metric, value, n FROM run_results WHERE run_id = $1::uuid ORDER BY metric', [runId]);
  }

  /**
   * Marks the run finished when nothing is left to do (completed, or failed when no instance is done);
   * returns its counts, or undefined when it was not finished or another caller won. Exactly one caller wins (the status check), so aggregates
   * are written once even with several workers finishing together.
   */
  async completeIfFinished(runId: string, alongside?: (tx: Queryable, counts: StateCounts) => Promise<void>): Promise<StateCounts | undefined> {
    // One transaction with the aggregates and `alongside` (the audit record of the completion): a
    // worker killed (or a database lost) between them would leave a completed run without results or
    // without its record, and a completed run is never executed again.
    return this.db.transaction(async (tx) => {
      if (!(await this.markCompleted(runId, tx))) return undefined;
      await this.saveAggregates(runId, await this.computeAggregates(runId, tx), tx);
      const counts = await this.counts(runId, tx);
      await alongside?.(tx, counts);
      return counts;
    });
  }

  private async markCompleted(runId: string, q: Queryable): Promise<boolean> {
    const rows = await q.query(
      // A run none of whose instances finished has no results: it is failed, never "completed".
      `UPDATE runs SET finished_at = now(),
              status = CASE WHEN EXISTS (SELECT 1 FROM run_items WHERE run_id = $1::uuid AND state = 'done') THEN 'completed' ELSE 'failed' END,
              error_code = CASE WHEN EXISTS (SELECT 1 FROM run_items WHERE run_id = $1::uuid AND state = 'done') THEN error_code ELSE 'run.no-instance-finished' END
        WHERE run_id = $1::uuid AND status = 'running' AND instance_count IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM run_items WHERE run_id = $1::uuid AND (state IN ('pending', 'claimed') OR pending_annotators IS NOT NULL))
        RETURNING 1`,
      [runId],
    );
    return rows.length === 1;
  }
}
