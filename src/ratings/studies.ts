/**
 * Rating studies: clinicians rate, blinded, a seeded sample of the answers of completed runs of one
 * jury benchmark, with the jury's own criteria and scale, so the jury's agreement with them can be
 * measured (src/agreement). The store keeps who rated which opaque item how; a rater is never told
 * the item's run, model, endpoint or benchmark version. Ratings are numbers and codes, never text.
 * Each change commits together with the caller's audit event (the `record` callbacks).
 *
 * What a rater reads: the run store keeps each instance as planned (the original text) and the
 * model's answer, not the prompt as sent. The prompt is rebuilt as the run built it (runs/sent-prompt.ts):
 * from the run's template (refused once the benchmark's template changed), and for a run that
 * de-identified (every EHR tier) de-identified again under the same subject, evidence and site key,
 * so a clinician reads what the model received, never the original note. The answer is as stored:
 * for an EHR tier it was written from the de-identified prompt (surrogate names and shifted dates).
 */
import { randomInt, randomUUID } from 'node:crypto';
import { validateOrThrow } from '../schema';
import type { Database, Queryable } from '../db';
import { UserError } from '../errors';
import { MAX_JUDGES, inProcessMetric } from '../metrics';
import { type Engine, type RunRow, sentPrompt } from '../runs';
import type { Tier } from '../tiers';
import { criteriaOf, type Criterion } from './criteria';
import { raterOrder, sampleRun } from './order';
import {
  FLAG_REASONS,
  type FlagReason,
  type NextItem,
  type RaterProgress,
  type RatingEventDetail,
  type RatingRecorder,
  type RatingRow,
  type RatingState,
  type Study,
  type StudyEventDetail,
  type StudyProgress,
  type StudyRatings,
  type StudyRecorder,
  type StudySpec,
} from './types';

interface StudyRow {
  study_id: string;
  title: string;
  benchmark_id: string;
  run_ids: string[];
  criteria: Criterion[];
  instances_per_run: number;
  raters_per_item: number;
  seed: string | number;
  tier: Tier;
  approval_id: string | null;
  status: 'open' | 'closed';
  opened_by: string;
  opened_at: Date;
  closed_by: string | null;
  closed_at: Date | null;
  items: number;
}

const STUDY_COLUMNS = `s.study_id::text AS study_id, s.title, s.benchmark_id, s.run_ids::text[] AS run_ids, s.criteria, s.instances_per_run, s.raters_per_item,
  s.seed, s.tier, s.approval_id::text AS approval_id, s.status, s.opened_by, s.opened_at, s.closed_by, s.closed_at,
  (SELECT count(*)::integer FROM rating_items i WHERE i.study_id = s.study_id) AS items`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (d: Date | null): string | null => (d === null ? null : new Date(d).toISOString());

function fromRow(r: StudyRow): Study {
  return {
    studyId: r.study_id,
    title: r.title,
    benchmarkId: r.benchmark_id,
    runIds: r.run_ids,
    criteria: r.criteria,
    instancesPerRun: r.instances_per_run,
    ratersPerItem: r.raters_per_item,
    seed: Number(r.seed),
    tier: r.tier,
    approvalId: r.approval_id,
    status: r.status,
    openedBy: r.opened_by,
    openedAt: iso(r.opened_at) as string,
    closedBy: r.closed_by,
    closedAt: iso(r.closed_at),
    items: Number(r.items),
  };
}

const unsuitable = (why: string) => new UserError('rating.runs-unsuitable', `rating study: ${why}`);

export class RatingStudies {
  /** `engine`: the app's run engine (its store, catalog, prompt and de-identification stages). */
  constructor(
    private readonly db: Database,
    private readonly engine: Engine,
  ) {}

  private get runs() {
    return this.engine.store;
  }

  private catalog() {
    return this.engine.catalog();
  }

  /** Opens a study over completed runs of one jury benchmark, its sample and its audit event in one transaction. */
  async open(spec: StudySpec, openedBy: string, record: StudyRecorder): Promise<Study> {
    validateOrThrow<StudySpec>('rating-study.schema.json', spec, 'rating study', 'rating.invalid');
    const runs = await this.suitableRuns(spec);
    const first = runs[0] as RunRow;
    const benchmark = this.catalog().get(first.benchmark_id);
    const seed = spec.seed ?? randomInt(0, 2 ** 32 - 1);
    const items = await this.sample(runs, spec.instancesPerRun, seed);
    const studyId = randomUUID();
    return this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO rating_studies (study_id, title, benchmark_id, run_ids, criteria, instances_per_run, raters_per_item, seed, tier, approval_id, status, opened_by)
         VALUES ($1::uuid, $2, $3, $4::uuid[], $5::jsonb, $6, $7, $8, $9, $10::uuid, 'open', $11)`,
        [
          studyId,
          spec.title,
          first.benchmark_id,
          runs.map((r) => r.run_id),
          JSON.stringify(criteriaOf(benchmark)),
          spec.instancesPerRun,
          spec.ratersPerItem,
          seed,
          first.tier,
          first.approval_id,
          openedBy,
        ],
      );
      await tx.query(
        `INSERT INTO rating_items (study_id, item_id, position, run_id, item_key)
         SELECT $1::uuid, x.item_id, x.position, x.run_id, x.item_key FROM jsonb_to_recordset($2::jsonb) AS x(item_id uuid, position integer, run_id uuid, item_key text)`,
        [studyId, JSON.stringify(items)],
      );
      const study = (await this.get(studyId, tx)) as Study;
      await record(tx, study, eventDetail(study));
      return study;
    });
  }

  /** The runs of a spec, refused unless they are completed runs of one jury benchmark, one tier and one approval. */
  private async suitableRuns(spec: StudySpec): Promise<RunRow[]> {
    const runs: RunRow[] = [];
    for (const id of spec.runIds) {
      const run = await this.runs.getRun(id);
      if (!run) throw unsuitable(`run ${id} not found`);
      if (run.status !== 'completed') throw unsuitable(`run ${id} is ${run.status}, not completed`);
      runs.push(run);
    }
    const first = runs[0] as RunRow;
    const differs = (pick: (r: RunRow) => unknown, what: string) => {
      if (runs.some((r) => pick(r) !== pick(first))) throw unsuitable(`the runs are of more than one ${what}; a study compares answers to the same prompts under one ${what}`);
    };
    differs((r) => r.benchmark_id, 'benchmark');
    differs((r) => r.tier, 'tier');
    differs((r) => r.approval_id, 'approval');
    if (spec.benchmarkId !== undefined && spec.benchmarkId !== first.benchmark_id) throw unsuitable(`the runs are of benchmark ${first.benchmark_id}, not ${spec.benchmarkId}`);
    const benchmark = this.catalog().get(first.benchmark_id);
    if (!benchmark.definition.jury) throw unsuitable(`benchmark ${first.benchmark_id} has no LLM jury: there is nothing to compare clinicians with`);
    const changed = runs.find((r) => r.template_hash !== benchmark.templateHash);
    if (changed) throw unsuitable(`the prompt template of ${first.benchmark_id} changed since run ${changed.run_id}: its prompts cannot be shown as the model received them`);
    return runs;
  }

  /** Each run's seeded sample of answered instances, as new opaque items. */
  private async sample(runs: RunRow[], perRun: number, seed: number): Promise<{ item_id: string; position: number; run_id: string; item_key: string }[]> {
    const items: { item_id: string; position: number; run_id: string; item_key: string }[] = [];
    for (const [index, run] of runs.entries()) {
      const keys = await this.runs.answeredKeys(run.run_id);
      if (keys.length === 0) throw unsuitable(`run ${run.run_id} has no answered instance`);
      for (const at of sampleRun(keys.length, perRun, seed, index)) {
        items.push({ item_id: randomUUID(), position: items.length, run_id: run.run_id, item_key: keys[at] as string });
      }
    }
    return items;
  }

  async get(studyId: string, q: Queryable = this.db): Promise<Study | undefined> {
    if (!UUID.test(studyId)) return undefined;
    const rows = await q.query<StudyRow>(`SELECT ${STUDY_COLUMNS} FROM rating_studies s WHERE s.study_id = $1::uuid`, [studyId]);
    return rows[0] ? fromRow(rows[0]) : undefined;
  }

  async list(): Promise<Study[]> {
    const rows = await this.db.query<StudyRow>(`SELECT ${STUDY_COLUMNS} FROM rating_studies s ORDER BY s.opened_at DESC, s.study_id`);
    return rows.map(fromRow);
  }

  private async mustGet(studyId: string, q: Queryable = this.db): Promise<Study> {
    const study = await this.get(studyId, q);
    if (!study) throw new UserError('rating.study-not-found', `no rating study ${UUID.test(studyId) ? studyId : '(not a study id)'}`);
    return study;
  }

  /**
   * The rater's next item in their own order, skipping what they already answered and what enough
   * other clinicians rated; `item: null` once nothing is left for them.
   */
  async next(studyId: string, rater: string): Promise<NextItem> {
    const study = await this.mustGet(studyId);
    if (study.status !== 'open') throw closed(study);
    const items = await this.db.query<{ item_id: string; position: number; run_id: string; item_key: string; others: number; mine: boolean }>(
      `SELECT i.item_id::text AS item_id, i.position, i.run_id::text AS run_id, i.item_key,
              count(r.rater) FILTER (WHERE r.state = 'rated' AND r.rater <> $2)::integer AS others,
              COALESCE(bool_or(r.rater = $2), false) AS mine
         FROM rating_items i LEFT JOIN ratings r ON r.study_id = i.study_id AND r.item_id = i.item_id
        WHERE i.study_id = $1::uuid GROUP BY i.item_id, i.position, i.run_id, i.item_key`,
      [studyId, rater],
    );
    const byPosition = new Map(items.map((i) => [i.position, i]));
    const offered = (i: (typeof items)[number]) => !i.mine && i.others < study.ratersPerItem;
    const done = items.filter((i) => i.mine).length;
    const remaining = items.filter(offered).length;
    const progress: RaterProgress = { done, remaining, total: done + remaining };
    const pick = raterOrder(items.length, study.seed, rater)
      .map((p) => byPosition.get(p))
      .find((i) => i !== undefined && offered(i));
    if (!pick) return { item: null, progress };
    const { prompt, answer } = await this.shown(study, pick.item_id, pick.run_id, pick.item_key);
    return { item: { studyId, itemId: pick.item_id, prompt, answer, criteria: study.criteria, progress } };
  }

  /** The prompt the model received and its answer, as stored; nothing else of the run. */
  private async shown(study: Study, itemId: string, runId: string, itemKey: string): Promise<{ prompt: string; answer: string }> {
    const [run, rows] = await Promise.all([this.runs.getRun(runId), this.runs.answeredByKeys(runId, [itemKey])]);
    const row = rows[0];
    const benchmark = this.catalog().get(study.benchmarkId);
    if (!run || !row || run.template_hash !== benchmark.templateHash) {
      throw new UserError(
        'rating.prompt-unavailable',
        `rating study ${study.studyId}: item ${itemId}'s prompt can no longer be rebuilt as its run built it (the benchmark's template changed); close the study`,
      );
    }
    // A refusal on the way (the run's endpoint left the allowlist...) would name the run's endpoint: the rater is told only of the item.
    const prompt = await sentPrompt(this.engine, run, row.payload).catch((err: unknown) => {
      if (err instanceof UserError) return undefined;
      throw err;
    });
    if (prompt === undefined)
      throw new UserError(
        'rating.prompt-unavailable',
        `rating study ${study.studyId}: item ${itemId}'s prompt cannot be rebuilt as its run sent it (it no longer passes de-identification, or the run's configuration is gone), so it is not shown; skip or flag that item`,
      );
    return { prompt, answer: row.prediction };
  }

  /** A rating: every criterion of the study, a whole number on its scale; a rater may change theirs while the study is open. */
  async rate(studyId: string, itemId: string, rater: string, scores: Record<string, number>, record: RatingRecorder): Promise<RatingEventDetail> {
    validateOrThrow('rating.schema.json', { scores }, 'rating', 'rating.invalid');
    return this.write(studyId, itemId, rater, { state: 'rated', scores, flagReason: null }, record);
  }

  async skip(studyId: string, itemId: string, rater: string, record: RatingRecorder): Promise<RatingEventDetail> {
    return this.write(studyId, itemId, rater, { state: 'skipped', scores: null, flagReason: null }, record);
  }

  /** A flag: the item should not be rated (it shows an identifier, cannot be read...), by a code of FLAG_REASONS. */
  async flag(studyId: string, itemId: string, rater: string, reason: FlagReason, record: RatingRecorder): Promise<RatingEventDetail> {
    if (!(FLAG_REASONS as readonly string[]).includes(reason)) throw new UserError('rating.invalid', `flag: the reason must be one of ${FLAG_REASONS.join(', ')}`);
    return this.write(studyId, itemId, rater, { state: 'flagged', scores: null, flagReason: reason }, record);
  }

  private async write(
    studyId: string,
    itemId: string,
    rater: string,
    rating: { state: RatingState; scores: Record<string, number> | null; flagReason: FlagReason | null },
    record: RatingRecorder,
  ): Promise<RatingEventDetail> {
    return this.db.transaction(async (tx) => {
      // The study row is locked: a close waits for ratings in progress, and two raters cannot both take an item's last place.
      if (UUID.test(studyId)) await tx.query('SELECT 1 FROM rating_studies WHERE study_id = $1::uuid FOR UPDATE', [studyId]);
      const study = await this.mustGet(studyId, tx);
      if (study.status !== 'open') throw closed(study);
      if (rating.scores) checkScores(rating.scores, study.criteria);
      const item = UUID.test(itemId) ? await tx.query('SELECT 1 FROM rating_items WHERE study_id = $1::uuid AND item_id = $2::uuid', [studyId, itemId]) : [];
      if (item.length === 0) throw new UserError('rating.item-not-found', `rating study ${studyId} has no item ${UUID.test(itemId) ? itemId : '(not an item id)'}`);
      const before = await tx.query<{ state: RatingState }>('SELECT state FROM ratings WHERE study_id = $1::uuid AND item_id = $2::uuid AND rater = $3', [studyId, itemId, rater]);
      if (rating.state === 'rated' && before[0]?.state !== 'rated') await refuseCovered(tx, study, itemId, rater);
      await tx.query(
        `INSERT INTO ratings (study_id, item_id, rater, state, scores, flag_reason) VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb, $6)
         ON CONFLICT (study_id, item_id, rater) DO UPDATE SET state = EXCLUDED.state, scores = EXCLUDED.scores, flag_reason = EXCLUDED.flag_reason, updated_at = now()`,
        [studyId, itemId, rater, rating.state, rating.scores ? JSON.stringify(rating.scores) : null, rating.flagReason],
      );
      const detail: RatingEventDetail = {
        studyId,
        itemId,
        state: rating.state,
        criteria: rating.scores ? Object.keys(rating.scores).sort() : [],
        flagReason: rating.flagReason,
        changed: before.length > 0,
      };
      await record(tx, detail);
      return detail;
    });
  }

  /** Closes a study: no rating is given or changed afterwards. */
  async close(studyId: string, closedBy: string, record: StudyRecorder): Promise<Study> {
    return this.db.transaction(async (tx) => {
      const study = await this.mustGet(studyId, tx);
      const rows = await tx.query(`UPDATE rating_studies SET status = 'closed', closed_by = $2, closed_at = now() WHERE study_id = $1::uuid AND status = 'open' RETURNING 1`, [studyId, closedBy]);
      if (rows.length === 0) throw closed(study);
      const after = (await this.get(studyId, tx)) as Study;
      await record(tx, after, eventDetail(after));
      return after;
    });
  }

  /** Who rated how much, and how far each item is covered. */
  async progress(studyId: string): Promise<StudyProgress> {
    const study = await this.mustGet(studyId);
    const count = `count(*) FILTER (WHERE r.state = 'rated')::integer AS rated, count(*) FILTER (WHERE r.state = 'skipped')::integer AS skipped,
                   count(*) FILTER (WHERE r.state = 'flagged')::integer AS flagged`;
    const raters = await this.db.query<{ rater: string; rated: number; skipped: number; flagged: number }>(
      `SELECT r.rater, ${count} FROM ratings r WHERE r.study_id = $1::uuid GROUP BY r.rater ORDER BY r.rater`,
      [studyId],
    );
    const perItem = await this.db.query<{ itemId: string; rated: number; skipped: number; flagged: number }>(
      `SELECT i.item_id::text AS "itemId", ${count.replaceAll('count(*)', 'count(r.rater)')}
         FROM rating_items i LEFT JOIN ratings r ON r.study_id = i.study_id AND r.item_id = i.item_id
        WHERE i.study_id = $1::uuid GROUP BY i.item_id, i.position ORDER BY i.position`,
      [studyId],
    );
    return {
      studyId,
      ratersPerItem: study.ratersPerItem,
      items: study.items,
      itemsCovered: perItem.filter((i) => i.rated >= study.ratersPerItem).length,
      raters,
      perItem,
    };
  }

  /**
   * Every rating with its item's run and instance, the jury's scores of that instance and its ROUGE-L,
   * and the same as the inputs of the agreement statistics (dataset = the benchmark id). Unblinded: for
   * the analysis, never for a rater.
   */
  async ratingsFor(studyId: string): Promise<StudyRatings> {
    const study = await this.mustGet(studyId);
    const rows = await this.db.query<{
      rater: string;
      item_id: string;
      state: RatingState;
      scores: Record<string, number> | null;
      flag_reason: FlagReason | null;
      rated_at: Date;
      updated_at: Date;
      run_id: string;
      item_key: string;
    }>(
      `SELECT r.rater, r.item_id::text AS item_id, r.state, r.scores, r.flag_reason, r.rated_at, r.updated_at, i.run_id::text AS run_id, i.item_key
         FROM ratings r JOIN rating_items i ON i.study_id = r.study_id AND i.item_id = r.item_id
        WHERE r.study_id = $1::uuid ORDER BY i.position, r.rater`,
      [studyId],
    );
    const instances = await this.instancesOf(study, rows);
    const out: RatingRow[] = rows.map((r) => {
      const inst = instances.get(`${r.run_id}\u0000${r.item_key}`);
      return {
        rater: r.rater,
        itemId: r.item_id,
        state: r.state,
        scores: r.scores,
        flagReason: r.flag_reason,
        ratedAt: iso(r.rated_at) as string,
        updatedAt: iso(r.updated_at) as string,
        runId: r.run_id,
        endpointId: inst?.endpointId ?? '',
        model: inst?.model ?? null,
        ordinal: inst?.ordinal ?? -1,
        jury: inst?.jury ?? { composite: null, perJudge: {} },
        rougeL: inst?.rougeL ?? null,
      };
    });
    return { study, rows: out, criteria: study.criteria.map((c) => c.name), juryCriteria: 'composite-only', ...agreementInputs(study, out) };
  }

  /** The rated items' instances, read once per run: the jury's composite and per-judge scores, ROUGE-L, the run's endpoint and model. */
  private async instancesOf(study: Study, rows: { run_id: string; item_key: string }[]): Promise<Map<string, InstanceFacts>> {
    const keysByRun = new Map<string, Set<string>>();
    for (const r of rows) (keysByRun.get(r.run_id) ?? keysByRun.set(r.run_id, new Set()).get(r.run_id))?.add(r.item_key);
    const benchmark = this.catalog().get(study.benchmarkId);
    const rougeL = inProcessMetric('rouge_l');
    const facts = new Map<string, InstanceFacts>();
    for (const [runId, keys] of keysByRun) {
      const run = await this.runs.getRun(runId);
      if (!run) continue;
      // jury_judge_N is the judge at position N of the judge list the run used: today's list is that one only while the definition's hash is unchanged.
      const judges = run.benchmark_hash === benchmark.definitionHash ? (benchmark.judges ?? []) : [];
      for (const row of await this.runs.answeredByKeys(runId, [...keys])) {
        const scores = row.scores ?? {};
        facts.set(`${runId}\u0000${row.item_key}`, {
          endpointId: run.endpoint_id,
          model: run.spec.endpoint.model,
          ordinal: row.ordinal,
          jury: { composite: numberOrNull(scores.jury_score), perJudge: perJudge(scores, judges) },
          rougeL: row.payload.references.length && rougeL ? rougeL.score(row.prediction, row.payload, { mode: run.spec.scoring }) : null,
        });
      }
    }
    return facts;
  }
}

interface InstanceFacts {
  endpointId: string;
  model: string | null;
  ordinal: number;
  jury: RatingRow['jury'];
  rougeL: number | null;
}

const numberOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Each judge's mean over the criteria, by the judge's endpoint id (or `judge-N` when the list in force is not the run's). */
function perJudge(scores: Record<string, number | null>, judges: string[]): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (let n = 1; n <= MAX_JUDGES; n++) {
    const value = numberOrNull(scores[`jury_judge_${n}`]);
    if (value === null && n > judges.length) continue;
    out[judges[n - 1] ?? `judge-${n}`] = value;
  }
  return out;
}

/** The agreement statistics' inputs: the clinicians' ratings (rated only), the jury's and each judge's scores per item, ROUGE-L per item. */
function agreementInputs(study: Study, rows: RatingRow[]): Pick<StudyRatings, 'clinicians' | 'jury' | 'judges' | 'rouge'> {
  const dataset = study.benchmarkId;
  const names = study.criteria.map((c) => c.name);
  // The store keeps the jury's means over the criteria only: each criterion carries the mean (see StudyRatings.juryCriteria).
  const everyCriterion = (v: number) => Object.fromEntries(names.map((n) => [n, v]));
  const rated = rows.filter((r) => r.state === 'rated' && r.scores);
  const items = [...new Map(rated.map((r) => [r.itemId, r])).values()];
  return {
    clinicians: rated.map((r) => ({ rater: r.rater, dataset, item: r.itemId, scores: Object.fromEntries(names.map((n) => [n, r.scores?.[n] ?? null])) })),
    jury: items.flatMap((r) => (r.jury.composite === null ? [] : [{ dataset, item: r.itemId, scores: everyCriterion(r.jury.composite) }])),
    judges: items.flatMap((r) => Object.entries(r.jury.perJudge).flatMap(([judge, v]) => (v === null ? [] : [{ judge, dataset, item: r.itemId, scores: everyCriterion(v) }]))),
    rouge: items.flatMap((r) => (r.rougeL === null ? [] : [{ dataset, item: r.itemId, value: r.rougeL }])),
  };
}

function eventDetail(study: Study): StudyEventDetail {
  return { studyId: study.studyId, benchmarkId: study.benchmarkId, tier: study.tier, approvalId: study.approvalId, runs: study.runIds.length, items: study.items };
}

const closed = (study: Study) => new UserError('rating.study-closed', `rating study ${study.studyId} is closed`);

/** Every criterion present, none unknown, each a whole number on its scale (names are schema-checked ids, safe to quote). */
function checkScores(scores: Record<string, number>, criteria: Criterion[]): void {
  const names = criteria.map((c) => c.name);
  const unknown = Object.keys(scores).filter((k) => !names.includes(k));
  if (unknown.length) throw new UserError('rating.invalid', `rating: unknown criterion "${unknown[0]}"; the study's criteria are ${names.join(', ')}`);
  for (const c of criteria) {
    const v = scores[c.name];
    if (v === undefined) throw new UserError('rating.invalid', `rating: /scores/${c.name} is missing; score every criterion (${names.join(', ')})`);
    if (!Number.isInteger(v) || v < c.min || v > c.max) throw new UserError('rating.invalid', `rating: /scores/${c.name} must be a whole number from ${c.min} to ${c.max}`);
  }
}

/** Refuses a new rating of an item that ratersPerItem other clinicians already rated. */
async function refuseCovered(tx: Queryable, study: Study, itemId: string, rater: string): Promise<void> {
  const rows = await tx.query<{ n: number }>(`SELECT count(*)::integer AS n FROM ratings WHERE study_id = $1::uuid AND item_id = $2::uuid AND state = 'rated' AND rater <> $3`, [
    study.studyId,
    itemId,
    rater,
  ]);
  if ((rows[0]?.n ?? 0) >= study.ratersPerItem) throw new UserError('rating.item-covered', `rating study ${study.studyId}: item ${itemId} already has ${study.ratersPerItem} ratings`);
}
