/**
 * A run's instances, one by one, as policy/visibility lets the caller see them: a public run's with
 * their text (prompt, prediction, references) and scores; an EHR tier's as the position, state and
 * error code of its failed and blocked instances, read from the store without any text. Every read is
 * audited (instance.read) before anything is answered, with the count and the filter, never text or
 * instance keys. Exports never hold instances: nothing here is reachable from src/export.
 */
import type { App } from '../app';
import { actAs, type PrincipalRole } from '../access';
import { renderTemplate } from '../catalog';
import { PolicyDenied, UserError } from '../errors';
import type { Actor } from '../identity';
import { type InstancesRule, instancesVisibility } from '../policy';
import type { InstancePageRow, RunRow } from '../runs';
import type { Caller } from './index';

/** What a reader asks: which instances (failed, wrong, or all), whose score, and which page. */
export interface InstancesQuery {
  failed?: boolean;
  wrong?: boolean;
  metric?: string;
  limit?: number;
  after?: number;
}

/** The page sizes the API and the CLI take (the route's schema says the same). */
export const INSTANCE_PAGE = { default: 50, max: 500 } as const;
/** The longest text of one field answered (a prompt may hold a whole record); longer is cut and marked. */
export const INSTANCE_TEXT_MAX = 20_000;

/** One instance: every field for a public run; ordinal, state and errorCode only for an EHR tier. */
export interface InstanceView {
  ordinal: number;
  state: 'pending' | 'claimed' | 'done' | 'blocked' | 'failed';
  /** Why it ended without a result (failed or blocked): a rule or error code, never text. */
  errorCode: string | null;
  key?: string;
  /** The prompt as the run built it (null when the benchmark's template changed since). */
  prompt?: string | null;
  prediction?: string | null;
  references?: string[];
  /** The score of the metric asked for (the main metric unless another was named). */
  score?: number | null;
  scores?: Record<string, number | null>;
  /** A text field was longer than INSTANCE_TEXT_MAX and was cut. */
  truncated?: boolean;
}

export interface RunInstances {
  runId: string;
  benchmarkId: string;
  tier: string;
  /** `text`: public data, shown whole; `codes-only`: an EHR tier, failed and blocked instances by code. */
  view: 'text' | 'codes-only';
  rule: Exclude<InstancesRule, 'visibility.instances.withheld'>;
  /** What this view shows and why, in one sentence (the console and the CLI say it). */
  reason: string;
  /** Whose score `score` is (null in the codes-only view). */
  metric: string | null;
  mainMetric: string;
  metrics: string[];
  /** Where the prompts come from: rebuilt from the run's own template, not shown (template changed), or withheld. */
  prompts: 'rebuilt' | 'template-changed' | 'withheld';
  filter: { failed: boolean; wrong: boolean };
  limit: number;
  /** The ordinal this page starts after (null: from the first instance). */
  after: number | null;
  instances: InstanceView[];
  /** The `after` of the next page, or null on the last one. */
  nextAfter: number | null;
}

/** `after` -1: from the first instance (ordinals start at 0). */
type Page = { failed: boolean; wrong: boolean; limit: number; after: number };

/** The caller's query with its defaults, or a one-line refusal of a value out of range (local mode has no schema). */
function pageOf(query: InstancesQuery): Page {
  const limit = query.limit ?? INSTANCE_PAGE.default;
  if (!Number.isInteger(limit) || limit < 1 || limit > INSTANCE_PAGE.max) throw new UserError('request.invalid', `limit: a whole number from 1 to ${INSTANCE_PAGE.max}`);
  if (query.after !== undefined && (!Number.isInteger(query.after) || query.after < 0)) {
    throw new UserError('request.invalid', 'after: a whole number, 0 or more (the ordinal the last page ended at)');
  }
  return { failed: query.failed === true, wrong: query.wrong === true, limit, after: query.after ?? -1 };
}

/** The role the read is audited under: the requester's own run as researcher, else the first reading role held. */
function readerOf(caller: Caller, run: RunRow): Actor {
  const roles: PrincipalRole[] = run.requested_by === caller.principal.id ? ['researcher', 'compliance', 'auditor', 'admin'] : ['compliance', 'auditor', 'admin', 'researcher'];
  for (const role of roles) {
    const actor = actAs(caller.principal, role, caller.authMethod);
    if (actor) return actor;
  }
  return { principal: caller.principal.id, role: caller.principal.roles[0] ?? 'researcher', authMethod: caller.authMethod };
}

/**
 * The score `wrong` judges: the run's main metric against full marks (1, or 0 when lower is better).
 * The jury's score is on the rubric's scale (1-5); its normalised twin (0-1) says whether it is full.
 */
function judgedScore(run: RunRow): { key: string; lowerIsBetter: boolean } {
  const main = run.spec.benchmark.mainMetric;
  return { key: main === 'jury_score' ? 'jury_score_normalized' : main, lowerIsBetter: run.spec.benchmark.lowerIsBetter === true };
}

/** What the read names in the trail: counts, the filter, ids. Never text, never an instance key. */
function readDetail(page: Page, metric: string | null, count: number, rule: InstancesRule): Record<string, number | string | boolean> {
  return {
    count,
    failed: page.failed,
    wrong: page.wrong,
    limit: page.limit,
    ...(page.after >= 0 ? { after: page.after } : {}),
    ...(metric ? { metric } : {}),
    view: rule === 'visibility.instances.public-tier' ? 'text' : 'codes-only',
  };
}

const textOf = (text: string | null, mark: () => void): string | null => (text === null ? null : cut(text, mark));

/** A field of dataset or model text, cut to INSTANCE_TEXT_MAX (and said to be). */
function cut(text: string, mark: () => void): string {
  if (text.length <= INSTANCE_TEXT_MAX) return text;
  mark();
  return text.slice(0, INSTANCE_TEXT_MAX);
}

export async function readInstances(app: App, caller: Caller, run: RunRow, query: InstancesQuery): Promise<RunInstances> {
  const page = pageOf(query);
  const actor = readerOf(caller, run);
  const subject = { runId: run.run_id, benchmarkId: run.benchmark_id, tier: run.tier };
  const refuse = async (rule: InstancesRule, reason: string): Promise<never> => {
    await app.audit.record({ type: 'instance.read', action: 'R', outcome: 'denied', rule, reason, actor, subject, detail: readDetail(page, null, 0, rule) });
    throw new PolicyDenied(rule, reason);
  };
  const shown = instancesVisibility(caller.principal, { requestedBy: run.requested_by, tier: run.tier });
  if (!shown.allowed) return refuse(shown.rule, shown.reason);
  if (shown.rule === 'visibility.instances.codes-only' && (page.wrong || query.metric !== undefined)) {
    return refuse(shown.rule, `${run.tier} run: scores of its instances are never shown, so neither wrong nor metric applies; failed lists the codes of failed and blocked instances`);
  }
  const metrics = run.spec.benchmark.metrics;
  if (query.metric !== undefined && !metrics.includes(query.metric)) {
    // A metric name is an id the caller typed: quoted to 80 characters, never more.
    throw new UserError('run.unknown-metric', `run ${run.run_id} has no metric "${query.metric.slice(0, 80)}"; its metrics: ${metrics.join(', ')}`);
  }
  const answer = shown.rule === 'visibility.instances.codes-only' ? await codesOnly(app, run, page) : await withText(app, run, page, query.metric ?? run.spec.benchmark.mainMetric);
  await app.audit.record({
    type: 'instance.read',
    action: 'R',
    outcome: 'success',
    rule: shown.rule,
    actor,
    subject,
    detail: readDetail(page, answer.metric, answer.instances.length, shown.rule),
  });
  return answer;
}

/** The page and whether another follows (the store reads one row more than the limit). */
function paged<T extends { ordinal: number }>(rows: T[], limit: number): { rows: T[]; nextAfter: number | null } {
  const kept = rows.slice(0, limit);
  return { rows: kept, nextAfter: rows.length > limit ? (kept.at(-1)?.ordinal ?? null) : null };
}

function base(run: RunRow, page: Page) {
  return {
    runId: run.run_id,
    benchmarkId: run.benchmark_id,
    tier: run.tier,
    mainMetric: run.spec.benchmark.mainMetric,
    metrics: run.spec.benchmark.metrics,
    filter: { failed: page.failed, wrong: page.wrong },
    limit: page.limit,
    after: page.after >= 0 ? page.after : null,
  };
}

/** An EHR tier: failed and blocked instances by ordinal, state and code; the store reads no other column. */
async function codesOnly(app: App, run: RunRow, page: Page): Promise<RunInstances> {
  const { rows, nextAfter } = paged(await app.engine.store.instanceCodes(run.run_id, page), page.limit);
  return {
    ...base(run, page),
    view: 'codes-only',
    rule: 'visibility.instances.codes-only',
    reason: `${run.tier} data: the text of its instances (prompt, prediction, reference, even de-identified) and their scores are never shown; only the failed and blocked ones, by position, state and code`,
    metric: null,
    prompts: 'withheld',
    instances: rows.map((r) => ({ ordinal: r.ordinal, state: r.state, errorCode: r.outcome_rule ?? 'internal' })),
    nextAfter,
  };
}

/** A public run: each instance whole, its prompt rebuilt from the run's own template. */
async function withText(app: App, run: RunRow, page: Page, metric: string): Promise<RunInstances> {
  const rows = await app.engine.store.instancePage(run.run_id, { ...page, judged: judgedScore(run) });
  const { rows: kept, nextAfter } = paged(rows, page.limit);
  const prompt = promptBuilder(app, run);
  return {
    ...base(run, page),
    view: 'text',
    rule: 'visibility.instances.public-tier',
    reason: 'public data: each instance with its prompt, prediction, references and scores',
    metric,
    prompts: prompt ? 'rebuilt' : 'template-changed',
    instances: kept.map((r) => textView(r, metric, prompt)),
    nextAfter,
  };
}

/**
 * How the run built its prompts, if the benchmark's template is still the one the run used (its hash);
 * otherwise none is shown rather than one that was never sent.
 */
function promptBuilder(app: App, run: RunRow): ((row: InstancePageRow) => string | null) | undefined {
  let benchmark;
  try {
    benchmark = app.catalog().get(run.benchmark_id);
  } catch {
    return undefined;
  }
  if (benchmark.templateHash !== run.template_hash) return undefined;
  const template = benchmark.template;
  return (row) => {
    // A conversation is sent as its turns (the template is not used): shown turn by turn.
    if (row.payload.messages) return row.payload.messages.map((m) => `${m.role}: ${m.content}`).join('\n\n');
    try {
      return renderTemplate(template, row.payload, `benchmark ${run.benchmark_id}`);
    } catch {
      // The run could not build this prompt either (it failed for it): there is none to show.
      return null;
    }
  };
}

function textView(row: InstancePageRow, metric: string, prompt: ((row: InstancePageRow) => string | null) | undefined): InstanceView {
  let truncated = false;
  const mark = () => {
    truncated = true;
  };
  const scores = row.scores ?? {};
  const view: InstanceView = {
    ordinal: row.ordinal,
    state: row.state,
    errorCode: row.state === 'failed' || row.state === 'blocked' ? (row.outcome_rule ?? 'internal') : null,
    key: row.item_key,
    prompt: textOf(prompt?.(row) ?? null, mark),
    prediction: textOf(row.prediction, mark),
    references: (row.payload.references ?? []).map((r) => cut(r, mark)),
    score: row.scores ? (scores[metric] ?? null) : null,
    scores,
  };
  return truncated ? { ...view, truncated } : view;
}
