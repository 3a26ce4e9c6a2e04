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

/** A declared label, or "(other)" for any value the benchmark did not declare (or none), of run item `i`. */
function labelOf(field: string, values: string): string {
  return `CASE WHEN i.payload->'extra'->>${field} = ANY(${values}::text[]) THEN i.payload->'extra'->>${field} ELSE '${OTHER_LABEL}' END`;
}

function label(field: number, values: number): string {
  return labelOf(`$${field}`, `$${values}`);
}

/** Items of a cell; parameters $a (run), $a+1 (field or null), $a+2 (values), $a+3 (label or null). */
function cellItems(a: number): string {
  return `i.run_id = $${a}::uuid AND i.state = 'done' AND ($${a + 3}::text IS NULL OR ${label(a + 1, a + 2)} = $${a + 3}::text)`;
}

function cellParams(runId: string, cell: CellRef): unknown[] {
  return [runId, cell.field ?? null, cell.values ?? [], cell.field ? (cell.label ?? null) : null];
}

/** The hash under which the instance key of run item `i` is kept in the ledger (domain-separated sha256). */
function hashOf(benchmark: string): string {
  return `encode(sha256(convert_to('ehrbench.cohort.v1|' || ${benchmark}::text || '|' || i.item_key, 'UTF8')), 'hex')`;
}

function keyHash(benchmarkParam: number): string {
  return hashOf(`$${benchmarkParam}`);
}

const METRIC_VALUE = `CASE WHEN jsonb_typeof(s.value) = 'number' THEN (s.value::text)::double precision END`;

export interface ExportRow {
  export_id: string;
  state: 'requested' | 'released' | 'withdrawn';
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

/** A cell to compare: the whole cohort of a run, or one declared subgroup cell of it. */
export interface CohortRef {
  runId: string;
  benchmarkId: string;
  cell: CellRef;
}

/** Two cells too close: `a` of the cells compared, and `b` of them or a cell released earlier. */
export type CloseCells = { a: number; b: number; difference: number } | { a: number; released: { exportId: string; runId: string; cell: string }; difference: number };

/** The cells compared, as one JSON parameter (their label lists differ in length). */
function cellSpec(cells: readonly CohortRef[]): string {
  return JSON.stringify(
    cells.map((c, idx) => ({ idx, run: c.runId, benchmark: c.benchmarkId, field: c.cell.field ?? null, values: c.cell.values ?? [], label: c.cell.field ? (c.cell.label ?? null) : null })),
  );
}

/**
 * The hashed instance keys of each cell ($1: cellSpec), as closeCells compares them: the same label
 * mapping and the same hash as recordCohort, so a cell and its ledger copy are the same set.
 */
const CELL_MEMBERS = `spec AS (
    SELECT (c->>'idx')::integer AS idx, (c->>'run')::uuid AS run_id, c->>'benchmark' AS benchmark_id, c->>'field' AS field,
           ARRAY(SELECT jsonb_array_elements_text(c->'values')) AS vals, c->>'label' AS label
      FROM jsonb_array_elements($1::jsonb) AS c),
  cur AS (
    SELECT DISTINCT s.idx, s.benchmark_id, ${hashOf('s.benchmark_id')} AS h
      FROM spec s JOIN run_items i ON i.run_id = s.run_id AND i.state = 'done'
     WHERE s.label IS NULL OR ${labelOf('s.field', 's.vals')} = s.label),
  cur_n AS (SELECT s.idx, s.benchmark_id, (SELECT count(*) FROM cur WHERE cur.idx = s.idx) AS n FROM spec s)`;

/** Any number, as pg and PGlite return bigint and numeric as text or number. */
const num = (v: unknown): number => Number(v ?? 0);

export class ExportStore {
  constructor(private readonly db: Database) {}

  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /** Finished instances of a cell and, per declared metric, n and sum (no sum of squares: no SD is released). */
  async cellStats(runId: string, cell: CellRef, metrics: string[]): Promise<{ n: number; metrics: Map<string, MetricStats> }> {
    const params = cellParams(runId, cell);
    const count = await this.db.query<{ n: number }>(`SELECT count(*)::integer AS n FROM run_items i WHERE ${cellItems(1)}`, params);
    const rows = await this.db.query<{ metric: string; n: number; sum: number; unit: boolean }>(
      `SELECT s.key AS metric, count(x.v)::integer AS n, COALESCE(sum(x.v), 0)::double precision AS sum,
              COALESCE(bool_and(x.v >= 0 AND x.v <= 1), true) AS unit
         FROM run_items i
        CROSS JOIN LATERAL jsonb_each(COALESCE(i.scores, '{}'::jsonb)) AS s
        CROSS JOIN LATERAL (SELECT ${METRIC_VALUE} AS v) AS x
        WHERE ${cellItems(1)} AND s.key = ANY($5::text[]) AND x.v IS NOT NULL
        GROUP BY s.key`,
      [...params, metrics],
    );
    const stats = new Map<string, MetricStats>();
    for (const r of rows) {
      stats.set(r.metric, { name: r.metric, n: num(r.n), sum: num(r.sum), unit: r.unit });
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

  /**
   * Every pair of cells that differ by 1..k-1 instances (symmetric difference of their hashed instance
   * keys), whatever the cells are called: among `cells` themselves, and, unless `ledger` is false,
   * between each of them and every cell released earlier (except by `exceptExport`) of its benchmark.
   * Cells of different benchmarks are not compared: their instance keys are hashed apart.
   */
  async closeCells(cells: readonly CohortRef[], k: number, against: { ledger: false } | { ledger: true; exceptExport: string }, q: Queryable = this.db): Promise<CloseCells[]> {
    if (cells.length === 0) return [];
    const pairs = await q.query<{ a: number; b: number; d: number }>(
      `WITH ${CELL_MEMBERS},
            shared AS (SELECT x.idx AS a, y.idx AS b, count(*) AS n FROM cur x JOIN cur y ON y.h = x.h AND y.idx > x.idx GROUP BY 1, 2)
       SELECT x.idx AS a, y.idx AS b, (x.n + y.n - 2 * COALESCE(shared.n, 0))::integer AS d
         FROM cur_n x JOIN cur_n y ON y.idx > x.idx AND y.benchmark_id = x.benchmark_id
         LEFT JOIN shared ON shared.a = x.idx AND shared.b = y.idx
        ORDER BY 1, 2`,
      [cellSpec(cells)],
    );
    const close: CloseCells[] = pairs.map((p) => ({ a: num(p.a), b: num(p.b), difference: num(p.d) }));
    if (against.ledger) {
      const released = await q.query<{ a: number; export_id: string; run_id: string; cell: string; d: number }>(
        `WITH ${CELL_MEMBERS},
              old_n AS (SELECT export_id, run_id, cell, benchmark_id, count(*) AS n FROM export_ledger
                         WHERE export_id <> $2::uuid AND benchmark_id IN (SELECT benchmark_id FROM spec) GROUP BY 1, 2, 3, 4),
              shared AS (SELECT cur.idx, o.export_id, o.run_id, o.cell, count(*) AS n FROM cur
                           JOIN export_ledger o ON o.benchmark_id = cur.benchmark_id AND o.key_hash = cur.h AND o.export_id <> $2::uuid GROUP BY 1, 2, 3, 4)
         SELECT x.idx AS a, o.export_id::text AS export_id, o.run_id::text AS run_id, o.cell, (x.n + o.n - 2 * COALESCE(shared.n, 0))::integer AS d
           FROM cur_n x JOIN old_n o ON o.benchmark_id = x.benchmark_id
           LEFT JOIN shared ON shared.idx = x.idx AND shared.export_id = o.export_id AND shared.run_id = o.run_id AND shared.cell = o.cell
          ORDER BY 1, 2, 3, 4`,
        [cellSpec(cells), against.exceptExport],
      );
      close.push(...released.map((r) => ({ a: num(r.a), released: { exportId: r.export_id, runId: r.run_id, cell: r.cell }, difference: num(r.d) })));
    }
    return close.filter((c) => c.difference > 0 && c.difference < k);
  }

  /** Instances of these runs that the residual scan stopped (an identifier left after de-identification): a count, no instance. */
  async residualBlocked(runIds: readonly string[]): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(
      `SELECT count(*)::integer AS n FROM run_items WHERE run_id = ANY($1::uuid[]) AND state = 'blocked' AND outcome_rule = 'deid.residual-identifier'`,
      [runIds],
    );
    return Number(row?.n ?? 0);
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

  /** Marks a waiting export withdrawn; false when it was no longer waiting (released or withdrawn meanwhile). */
  async withdraw(q: Queryable, exportId: string): Promise<boolean> {
    const rows = await q.query(`UPDATE exports SET state = 'withdrawn' WHERE export_id = $1::uuid AND state = 'requested' RETURNING 1`, [exportId]);
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
