/**
 * The content of an export: per run, the aggregates after disclosure control, with provenance. This
 * is the preview the compliance officer reviews and, with the release fields and the signature, the
 * bundle. It is a pure function of the stored runs, the catalog and the disclosure settings, so the
 * release recomputes it and refuses when it no longer matches what was reviewed.
 */
import type { Approval } from '../access';
import { type Benchmark, type Catalog, resolveStrata, strataRecord, stratumLabels } from '../catalog';
import type { PriceEntry } from '../config';
import { costUsd, priceFor } from '../contracts';
import { pinsOf, type RunRow, type RunStore } from '../runs';
import { TIERS, type Tier } from '../tiers';
import { type CellStatus, complement, type DisclosureSettings, metricCell, releasedCount, subgroupCells, suppressPartition } from './disclosure';
import { type CohortRef, type ExportStore, OTHER_LABEL } from './store';
import { directionOf, disparityOf } from './disparity';
import {
  CI_METHOD,
  DIFFERENCING_RULE,
  type DisclosurePolicy,
  type ExportContent,
  type ExportFingerprint,
  type ExportResult,
  type JuryValidation,
  type MetricCell,
  type StudyValidationFigures,
  type Subgroup,
  type Usage,
  VALUE_RESOLUTION,
  type ValidationFigure,
} from './types';

export interface ContentDeps {
  exports: ExportStore;
  runs: RunStore;
  catalog: Catalog;
  prices: readonly PriceEntry[];
  settings: DisclosureSettings;
  /** The latest closed rating study of a benchmark, its pooled agreement (src/ratings); none: not validated at the site. */
  juryValidation?: (benchmarkId: string) => Promise<StudyValidationFigures | undefined>;
  /** What the run's calls were served by (src/calls/fingerprints.ts); absent: not stated. */
  fingerprints?: (runId: string) => Promise<ExportFingerprint[]>;
  /** The approvals with an unreviewed detected drift (src/runs/canary.ts); absent: not stated. */
  staleApprovals?: () => Promise<ReadonlySet<string>>;
}

export interface ContentInput {
  exportId: string;
  siteId: string;
  requestedBy: string;
  requestedOn: string;
  runs: RunRow[];
  /** The approvals the runs are bound to, by id. */
  approvals: Map<string, Approval>;
}

/** A released cell of a run: the cohorts the differencing check compares and the ledger keeps. */
export type ReleasedCohort = CohortRef;

export function disclosurePolicy(s: DisclosureSettings): DisclosurePolicy {
  return {
    policyId: 'ehrbench.min-cell-size.v2',
    k: s.k,
    countRangeWidth: s.width,
    complementarySuppression: true,
    valueDecimals: s.decimals,
    valueResolution: VALUE_RESOLUTION,
    ci: CI_METHOD,
    differencing: DIFFERENCING_RULE,
  };
}

/** Protocol and DUA numbers are ids; anything else in them becomes "_" (same rule as the audit trail). */
export function safeId(value: string): string {
  return value.replace(/[^A-Za-z0-9._:/+=@-]/g, '_').slice(0, 160);
}

export async function buildContent(deps: ContentDeps, input: ContentInput): Promise<{ content: ExportContent; cohorts: ReleasedCohort[] }> {
  const cohorts: ReleasedCohort[] = [];
  const results: ExportResult[] = [];
  for (const run of input.runs) results.push(await runResult(deps, run, cohorts));
  const protocols = [...new Set(input.runs.map((r) => r.spec.irbProtocol).filter((p): p is string => !!p))];
  const duas = [...new Set([...input.approvals.values()].map((a) => a.duaId).filter((d): d is string => !!d))];
  const tier = input.runs.reduce<Tier>((t, r) => (TIERS.indexOf(r.tier) > TIERS.indexOf(t) ? r.tier : t), 'public');
  const content: ExportContent = {
    exportId: input.exportId,
    siteId: input.siteId,
    runIds: input.runs.map((r) => r.run_id),
    tier,
    irbProtocol: protocols[0] ? safeId(protocols[0]) : null,
    duaId: duas.length === 1 && duas[0] ? safeId(duas[0]) : null,
    requestedBy: input.requestedBy,
    requestedOn: input.requestedOn,
    disclosure: disclosurePolicy(deps.settings),
    results,
    totals: totalsOf(results),
  };
  return { content, cohorts };
}

async function runResult(deps: ContentDeps, run: RunRow, cohorts: ReleasedCohort[]): Promise<ExportResult> {
  const s = deps.settings;
  const benchmark = deps.catalog.get(run.benchmark_id);
  const d = benchmark.definition;
  const metrics = run.spec.benchmark.metrics;
  const overall = await deps.exports.cellStats(run.run_id, {}, metrics);
  const n = releasedCount(overall.n, s);
  const released = !('suppressed' in n) && overall.n > 0;
  if (released) cohorts.push({ runId: run.run_id, benchmarkId: run.benchmark_id, cell: {} });
  // Subgroups as the benchmark declares them, and only for the definition the run actually used.
  const declared: DeclaredField[] = benchmark.definitionHash === run.benchmark_hash ? (d.subgroups ?? []) : [];
  const subgroups = released ? await subgroupsOf(deps, run, [...declared, ...strataOf(benchmark, run)], metrics, cohorts) : [];
  return {
    runId: run.run_id,
    benchmark: {
      id: run.benchmark_id,
      version: run.benchmark_version,
      category: d.category,
      subcategory: d.subcategory,
      tier: run.tier,
      helmGroup: d.helm?.group ?? null,
      split: d.split,
      lowerIsBetter: run.spec.benchmark.lowerIsBetter,
      definitionHash: run.benchmark_hash,
      templateHash: run.template_hash,
    },
    model: {
      endpointId: run.spec.endpoint.id,
      provider: run.spec.endpoint.provider,
      deployment: run.spec.endpoint.deployment,
      model: run.spec.endpoint.model,
      maxTokens: run.spec.maxTokens,
      temperature: run.spec.temperature,
    },
    scoring: run.spec.scoring,
    deidVersion: run.deid_version,
    mainMetric: run.spec.benchmark.mainMetric,
    n,
    metrics: metrics.map((m): MetricCell => (released ? metricCell(overall.metrics.get(m), m, s) : { name: m, suppressed: '<k' })),
    subgroups,
    usage: released ? await usageOf(deps, run) : null,
    pins: pinsOf(run.spec),
    ...(run.spec.benchmark.mainMetric.startsWith('jury_score') ? { juryValidation: juryValidationOf(await deps.juryValidation?.(run.benchmark_id), s) } : {}),
    ...(deps.fingerprints ? { fingerprints: await deps.fingerprints(run.run_id) } : {}),
    ...(deps.staleApprovals ? { stale: run.approval_id !== null && (await deps.staleApprovals()).has(run.approval_id) } : {}),
  };
}

/** A study's agreement as an export states it: counts as ranges, figures rounded outward, none under k items. */
export function juryValidationOf(f: StudyValidationFigures | undefined, s: DisclosureSettings): JuryValidation {
  if (!f) return { validated: false, reason: 'no closed rating study of this benchmark at the site: its jury was not checked against the site clinicians' };
  const items = releasedCount(f.items, s);
  if ('suppressed' in items) return { validated: false, reason: `the closed rating study ${f.studyId} rated fewer than k items: too few to state its agreement` };
  const round2 = (v: number) => Math.round(v * 100) / 100;
  const figure = (x: { value: number | null; ci95?: { low: number; high: number } | null }): ValidationFigure | null =>
    x.value === null ? null : { value: round2(x.value), ci95: x.ci95 ? { low: Math.floor(x.ci95.low * 100) / 100, high: Math.ceil(x.ci95.high * 100) / 100 } : null };
  return {
    validated: true,
    studyId: f.studyId,
    closedOn: f.closedAt.slice(0, 10),
    items,
    clinicians: f.clinicians,
    method: 'ICC(3,k) of the jury composite against the clinicians mean, each rater z-scored (MedHELM), 95% interval from the F distribution',
    icc: figure(f.icc),
    spearman: f.spearman.value === null ? null : round2(f.spearman.value),
    weightedKappa: f.kappa.value === null ? null : round2(f.kappa.value),
    clinicianClinicianIcc: figure(f.clinicianClinicianIcc),
  };
}

/** A subgroup field: the benchmark's own, or (`stratum`) one of the site binding's strata. */
interface DeclaredField {
  field: string;
  values: string[];
  stratum?: true;
}

/**
 * The site binding's strata as subgroup fields, only for a run whose instances were labelled under
 * the same declaration (its recorded sha256); a run of other strata, or of none, gets none of them.
 */
function strataOf(benchmark: Benchmark, run: RunRow): DeclaredField[] {
  const strata = benchmark.site?.strata;
  const recorded = run.spec.strata;
  if (!strata || !recorded || strataRecord(strata)?.sha256 !== recorded.sha256) return [];
  return resolveStrata(strata).map((s) => ({ field: s.name, values: stratumLabels(s), stratum: true as const }));
}

/** One declared subgroup field of a run: its labels, each label's count, and which cells may be released. */
interface Partition {
  stratum?: true;
  field: string;
  values: string[];
  labels: string[];
  counts: number[];
  status: CellStatus[];
}

/**
 * The subgroups of a run whose whole cohort is released. Per field, cells below k and their
 * complements are hidden; then the released cells of different fields are compared with each other
 * and with the whole cohort by the instances they cover, and of two that differ by 1..k-1 the smaller
 * is hidden ('differencing'; its field then gets complementary suppression again). The released cells
 * join `cohorts` after the whole cohort, for the export-wide check and the ledger.
 */
async function subgroupsOf(deps: ContentDeps, run: RunRow, declared: DeclaredField[], metrics: string[], cohorts: ReleasedCohort[]): Promise<Subgroup[]> {
  const k = deps.settings.k;
  const partitions: Partition[] = [];
  for (const sg of declared) {
    const found = await deps.exports.labelCounts(run.run_id, sg.field, sg.values);
    // Declared labels always appear (0 is a releasable count); "(other)" only when some instance has it.
    const labels = [...sg.values, ...((found.get(OTHER_LABEL) ?? 0) > 0 ? [OTHER_LABEL] : [])];
    const counts = labels.map((l) => found.get(l) ?? 0);
    partitions.push({ ...(sg.stratum ? { stratum: true as const } : {}), field: sg.field, values: sg.values, labels, counts, status: suppressPartition(counts, k) });
  }
  await hideCloseCells(deps, run, partitions);
  const subgroups: Subgroup[] = [];
  for (const p of partitions) {
    // Statistics only of cells whose count is released: a hidden cell's values are never read.
    const stats = await Promise.all(
      p.labels.map(async (label, i) =>
        p.status[i] === 'released' && (p.counts[i] ?? 0) > 0 ? (await deps.exports.cellStats(run.run_id, { field: p.field, values: p.values, label }, metrics)).metrics : undefined,
      ),
    );
    const cells = subgroupCells(p.labels, p.counts, stats, metrics, deps.settings, p.status);
    for (const c of cells) {
      if (!('suppressed' in c) && c.n.high > 0) cohorts.push({ runId: run.run_id, benchmarkId: run.benchmark_id, cell: { field: p.field, values: p.values, label: c.label } });
    }
    // Disparity over the released cells only: a function of what the cells release anyway.
    const disparity = disparityOf(cells, metrics, (m) => directionOf(m, run.spec.benchmark.mainMetric, run.spec.benchmark.lowerIsBetter));
    subgroups.push({ field: p.field, cells, ...(p.stratum ? { stratum: true as const } : {}), ...(disparity.length ? { disparity } : {}) });
  }
  return subgroups;
}

/** A cell compared by hideCloseCells: the whole cohort (no partition) or cell `i` of a partition. */
interface Candidate {
  p?: Partition;
  i: number;
  n: number;
}

/** Hides ('differencing') the smaller of two released cells of the run that differ by 1..k-1 instances. */
async function hideCloseCells(deps: ContentDeps, run: RunRow, partitions: Partition[]): Promise<void> {
  const k = deps.settings.k;
  // The whole cohort first, never hidden here (it is the run's result; complement() keeps it k away from any cell).
  const candidates: Candidate[] = [{ i: -1, n: Number.POSITIVE_INFINITY }];
  for (const p of partitions) {
    p.labels.forEach((_, i) => {
      const n = p.counts[i] ?? 0;
      if (p.status[i] === 'released' && n > 0) candidates.push({ p, i, n });
    });
  }
  const cohort = (c: Candidate): CohortRef => ({
    runId: run.run_id,
    benchmarkId: run.benchmark_id,
    cell: c.p ? { field: c.p.field, values: c.p.values, label: c.p.labels[c.i] as string } : {},
  });
  const stillReleased = (c: Candidate) => !c.p || c.p.status[c.i] === 'released';
  for (const close of await deps.exports.closeCells(candidates.map(cohort), k, { ledger: false })) {
    if (!('b' in close)) continue;
    const a = candidates[close.a] as Candidate;
    const b = candidates[close.b] as Candidate;
    if (!stillReleased(a) || !stillReleased(b)) continue;
    const hide = b.n <= a.n ? b : a;
    if (hide.p) hide.p.status[hide.i] = 'differencing';
  }
  for (const p of partitions) complement(p.counts, p.status, k);
}

const thousands = (n: number) => Math.round(n / 1000) * 1000;
const cents = (usd: number) => Math.round(usd * 100) / 100;

async function usageOf(deps: ContentDeps, run: RunRow): Promise<Usage> {
  const tokens = await deps.runs.tokenTotals(run.run_id);
  const p = Number(tokens.promptTokens);
  const c = Number(tokens.completionTokens);
  const price = priceFor(deps.prices, run.spec.endpoint);
  return { promptTokens: thousands(p), completionTokens: thousands(c), estimatedCostUsd: price ? cents(costUsd(p, c, price)) : null };
}

function totalsOf(results: ExportResult[]): Usage {
  const usages = results.map((r) => r.usage).filter((u): u is Usage => u !== null);
  const costs = usages.map((u) => u.estimatedCostUsd);
  return {
    promptTokens: usages.reduce((a, u) => a + u.promptTokens, 0),
    completionTokens: usages.reduce((a, u) => a + u.completionTokens, 0),
    estimatedCostUsd: costs.length > 0 && costs.every((c) => c !== null) ? cents(costs.reduce<number>((a, c) => a + (c as number), 0)) : costs.length === 0 ? 0 : null,
  };
}
