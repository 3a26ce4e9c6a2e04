/**
 * SQL of exports: aggregate statistics of a run (overall and per declared subgroup), the export rows,
 * and the ledger of released cohorts. Instance keys and subgroup values stay in the database: the
 * statistics come back as counts and sums, cohorts are compared by SQL on hashed keys, and a subgroup
 * value reaches this process only when it is one of the benchmark's declared labels.
 */
import type { Database, Queryable } from '../db';
import type { MetricStats } from './disclosure';

/** The whole cohort of a run, or one declared subgroup cell of it. */
export interface CellRef {
  field?: string;
  values?: string[];
  label?: string;
}

export const OTHER_LABEL = '(other)';

/** The ledger's name of a cell: '' for the whole cohort, `field=label` for a subgroup cell. */
export function cellName(cell: CellRef): string {
  return cell.field ? `${cell.field}=${cell.label ?? ''}` : '';
}

/** A declared label, or "(other)" for any value the benchmark did not declare (or none). */
const LABEL = `CASE WHEN i.payload->'extra'->>$FIELD = ANY($VALUES::text[]) THEN i.payload->'extra'->>$FIELD ELSE '${OTHER_LABEL}' END`;

function label(field: number, values: number): string {
  return LABEL.replaceAll('$FIELD', () => `$${field}`).replaceAll('$VALUES', () => `$${values}`);
}

/** Items of a cell; parameters $a (run), $a+1 (field or null), $a+2 (values), $a+3 (label or null). */
function cellItems(a: number): string {
  return `i.run_id = $${a}::uuid AND i.state = 'done' AND ($${a + 3}::text IS NULL OR ${label(a + 1, a + 2)} = $${a + 3}::text)`;
}

function cellParams(runId: string, cell: CellRef): unknown[] {
  return [runId, cell.field ?? null, cell.values ?? [], cell.field ? (cell.label ?? null) : null];
}

/** The hash under which an instance key is kept in the ledger (domain-separated sha256). */
function keyHash(benchmarkParam: number): string {
  return `encode(sha256(convert_to('ehrbench.cohort.v1|' || $${benchmarkParam}::text || '|' || i.item_key, 'UTF8')), 'hex')`;
}

const METRIC_VALUE = `CASE WHEN jsonb_typeof(s.value) = 'number' THEN (s.value::text)::double precision END`;

export interface ExportRow {
  export_id: string;
  state: 'requested' | 'released';
  requested_by: string;
  requested_at: Date;
  run_ids: string[];
  content: string;
  content_sha256: string;
  released_by: string | null;
  released_at: Date | null;
  format: 'bundle' | 'helm' | null;
  bundle: string | null;
  bundle_sha256: string | null;
  helm_files: { runName: string; dir: string; runSpec: string; stats: string }[] | null;
}

const COLUMNS = `export_id::text AS export_id, state, requested_by, requested_at, run_ids::text[] AS run_ids, content, content_sha256,
  released_by, released_at, format, bundle, bundle_sha256, helm_files`;

/** An earlier released cohort too close to a new one. */
export interface CloseCohort {
  exportId: string;
  runId: string;
  difference: number;
}

/** Any number, as pg and PGlite return bigint and numeric as text or number. */
const num = (v: unknown): number => Number(v ?? 0);

export class ExportStore {
  constructor(private readonly db: Database) {}

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /** Finished instances of a cell and, per declared metric, n, sum and sum of squares. */
  async cellStats(runId: string, cell: CellRef, metrics: string[]): Promise<{ n: number; metrics: Map<string, MetricStats> }> {
    const params = cellParams(runId, cell);
    const count = await this.db.query<{ n: number }>(`SELECT count(*)::integer AS n FROM run_items i WHERE ${cellItems(1)}`, params);
    const rows = await this.db.query<{ metric: string; n: number; sum: number; sumsq: number; bin: boolean; unit: boolean }>(
      `SELECT s.key AS metric, count(x.v)::integer AS n, COALESCE(sum(x.v), 0)::double precision AS sum,
              COALESCE(sum(x.v * x.v), 0)::double precision AS sumsq,
              COALESCE(bool_and(x.v = 0 OR x.v = 1), true) AS bin, COALESCE(bool_and(x.v >= 0 AND x.v <= 1), true) AS unit
         FROM run_items i
        CROSS JOIN LATERAL jsonb_each(COALESCE(i.scores, '{}'::jsonb)) AS s
        CROSS JOIN LATERAL (SELECT ${METRIC_VALUE} AS v) AS x
        WHERE ${cellItems(1)} AND s.key = ANY($5::text[]) AND x.v IS NOT NULL
        GROUP BY s.key`,
      [...params, metrics],
    );
    const stats = new Map<string, MetricStats>();
    for (const r of rows) {
      stats.set(r.metric, { name: r.metric, n: num(r.n), sum: num(r.sum), sumSquares: num(r.sumsq), binary: r.bin, unit: r.unit });
    }
    return { n: num(count[0]?.n), metrics: stats };
  }

  /** Finished instances per label of a declared subgroup field (declared labels and "(other)" only). */
  async labelCounts(runId: string, field: string, values: string[]): Promise<Map<string, number>> {
    const rows = await this.db.query<{ label: string; n: number }>(
      `SELECT ${label(2, 3)} AS label, count(*)::integer AS n FROM run_items i WHERE i.run_id = $1::uuid AND i.state = 'done' GROUP BY 1`,
      [runId, field, values],
    );
    return new Map(rows.map((r) => [r.label, num(r.n)]));
  }

  /** Earlier released cohorts of the same benchmark and cell that differ from this one by 1..k-1 instances. */
  async closeReleasedCohorts(q: Queryable, runId: string, benchmarkId: string, cell: CellRef, k: number): Promise<CloseCohort[]> {
    const rows = await q.query<{ export_id: string; run_id: string; old_n: number; shared: number; cur_n: number }>(
      `WITH cur AS (SELECT DISTINCT ${keyHash(5)} AS h FROM run_items i WHERE ${cellItems(1)}),
            old AS (SELECT export_id, run_id, key_hash AS h FROM export_ledger WHERE benchmark_id = $5 AND cell = $6)
       SELECT old.export_id::text AS export_id, old.run_id::text AS run_id, count(*)::integer AS old_n, count(cur.h)::integer AS shared,
              (SELECT count(*) FROM cur)::integer AS cur_n
         FROM old LEFT JOIN cur ON cur.h = old.h
        GROUP BY old.export_id, old.run_id`,
      [...cellParams(runId, cell), benchmarkId, cellName(cell)],
    );
    return rows.map((r) => ({ exportId: r.export_id, runId: r.run_id, difference: num(r.old_n) + num(r.cur_n) - 2 * num(r.shared) })).filter((c) => c.difference > 0 && c.difference < k);
  }

  /** Instances in exactly one of two cells (of runs of the same benchmark, whose keys are comparable). */
  async cohortDifference(q: Queryable, runA: string, runB: string, cell: CellRef): Promise<number> {
    const rows = await q.query<{ d: number }>(
      `WITH a AS (SELECT i.item_key FROM run_items i WHERE ${cellItems(1)}),
            b AS (SELECT i.item_key FROM run_items i WHERE ${cellItems(5)})
       SELECT ((SELECT count(*) FROM (SELECT item_key FROM a EXCEPT SELECT item_key FROM b) x)
             + (SELECT count(*) FROM (SELECT item_key FROM b EXCEPT SELECT item_key FROM a) y))::integer AS d`,
      [...cellParams(runA, cell), ...cellParams(runB, cell)],
    );
    return num(rows[0]?.d);
  }

  async recordCohort(q: Queryable, exportId: string, runId: string, benchmarkId: string, cell: CellRef): Promise<void> {
    await q.query(
      `INSERT INTO export_ledger (export_id, run_id, benchmark_id, cell, key_hash)
       SELECT DISTINCT $6::uuid, i.run_id, $5, $7, ${keyHash(5)} FROM run_items i WHERE ${cellItems(1)}
       ON CONFLICT DO NOTHING`,
      [...cellParams(runId, cell), benchmarkId, exportId, cellName(cell)],
    );
  }

  async insert(row: { exportId: string; requestedBy: string; requestedAt: Date; runIds: string[]; content: string; contentSha256: string }): Promise<void> {
    await this.db.query('INSERT INTO exports (export_id, state, requested_by, requested_at, run_ids, content, content_sha256) VALUES ($1::uuid, $2, $3, $4, $5::uuid[], $6, $7)', [
      row.exportId,
      'requested',
      row.requestedBy,
      row.requestedAt.toISOString(),
      row.runIds,
      row.content,
      row.contentSha256,
    ]);
  }

  async get(exportId: string): Promise<ExportRow | undefined> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(exportId)) return undefined;
    const rows = await this.db.query<ExportRow>(`SELECT ${COLUMNS} FROM exports WHERE export_id = $1::uuid`, [exportId]);
    return rows[0];
  }

  async list(filter: { requestedBy?: string; limit: number }): Promise<ExportRow[]> {
    return filter.requestedBy
      ? this.db.query<ExportRow>(`SELECT ${COLUMNS} FROM exports WHERE requested_by = $1 ORDER BY requested_at DESC, export_id LIMIT $2`, [filter.requestedBy, filter.limit])
      : this.db.query<ExportRow>(`SELECT ${COLUMNS} FROM exports ORDER BY requested_at DESC, export_id LIMIT $1`, [filter.limit]);
  }

  /** Marks an export released with its bundle; false when it was no longer awaiting release. */
  async finalize(q: Queryable, r: { exportId: string; releasedBy: string; format: 'bundle' | 'helm'; bundle: string; bundleSha256: string; helmFiles: ExportRow['helm_files'] }): Promise<boolean> {
    const rows = await q.query(
      `UPDATE exports SET state = 'released', released_by = $2, released_at = now(), format = $3, bundle = $4, bundle_sha256 = $5, helm_files = $6::jsonb
        WHERE export_id = $1::uuid AND state = 'requested' AND requested_by <> $2 RETURNING 1`,
      [r.exportId, r.releasedBy, r.format, r.bundle, r.bundleSha256, r.helmFiles === null ? null : JSON.stringify(r.helmFiles)],
    );
    return rows.length === 1;
  }

  /** seq of the newest successful export.release event of an export. */
  async releaseEventSeq(exportId: string): Promise<number | undefined> {
    const rows = await this.db.query<{ seq: number | null }>(`SELECT max(seq) AS seq FROM audit_events WHERE export_id = $1 AND event_type = 'export.release' AND outcome = 'success'`, [exportId]);
    const seq = rows[0]?.seq;
    return seq === null || seq === undefined ? undefined : Number(seq);
  }
}

/** Serialises releases: the differencing check and the ledger insert happen under this lock. */
export const RELEASE_LOCK_KEY = 7_215_004_001;
