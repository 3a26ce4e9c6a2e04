/**
 * The evidence packet's content (`export request --packet`): gathered when the export is requested and
 * again when it is released (the same figures, or the release is refused as stale), from the run store
 * and the audit trail only. One model under one approval: every run of the export went to one endpoint
 * and is bound to one approval, else the request is refused naming the rule. What each figure means
 * and how it is held to disclosure control is in packet.ts (the checks) and the README of this folder.
 *
 *   scores, subgroups, jury validation, cost   -> the bundle's results and totals (pointed to by `evidence`)
 *   intended use, tiers, benchmarks            -> the approval
 *   stability                                  -> the runs' repeat groups (--repeat K), over common instances
 *   de-identification                          -> the latest deid.signoff event; residual-scan blocks of the runs
 *   fingerprints, drift                        -> what the gateway recorded and the canary checks of the approval
 */
import type { Approval } from '../access';
import { latestSeqWithDetail, tailRecords } from '../audit';
import type { Queryable } from '../db';
import type { RuleId } from '../policy';
import { type DriftCheckView, meanSpread, type RunRow, type RunStore } from '../runs';
import { metricCell, releasedCount, valueDenominator, type DisclosureSettings } from './disclosure';
import { COMMITTEE_FIELDS, intendedUseText, P_VALUE_DECIMALS } from './packet';
import { safeId } from './content';
import type { ExportStore } from './store';
import type { EvidencePacket, ExportResult, PacketDeidGold, PacketDriftCheck, PacketFingerprint, PacketStability } from './types';

export interface PacketDeps {
  db: Queryable;
  runs: RunStore;
  exports: ExportStore;
  settings: DisclosureSettings;
  /** The approval's canary checks (runs/canary.ts), newest first. */
  driftChecks: (approvalId: string) => Promise<DriftCheckView[]>;
}

export type PacketOutcome = { ok: true; packet: EvidencePacket } | { ok: false; rule: RuleId; reason: string };

const day = (iso: string) => iso.slice(0, 10);

/** The packet of an export whose results are built, or the rule that refuses it. */
export async function buildPacket(deps: PacketDeps, runs: readonly RunRow[], approvals: ReadonlyMap<string, Approval>, results: readonly ExportResult[]): Promise<PacketOutcome> {
  const endpoints = [...new Set(runs.map((r) => r.endpoint_id))];
  if (endpoints.length !== 1) {
    return { ok: false, rule: 'export.packet-scope', reason: `an evidence packet is about one model: the runs went to ${endpoints.join(', ')}; request one packet per endpoint` };
  }
  const approvalIds = [...new Set(runs.map((r) => r.approval_id ?? 'none'))];
  const approval = approvalIds.length === 1 ? approvals.get(approvalIds[0] as string) : undefined;
  if (!approval) {
    return {
      ok: false,
      rule: 'export.packet-scope',
      reason: `an evidence packet is about one approval (its intended use, tiers and benchmarks): the runs are bound to ${approvalIds.join(', ')}; request the packet of runs under one IRB approval`,
    };
  }
  const first = runs[0] as RunRow;
  const stability = await stabilityOf(deps, runs);
  const deid = await deidOf(deps, runs);
  const drift = await driftOf(deps, approval);
  const evidence = await evidenceOf(deps, runs, results, stability, deid.goldSeq, drift);
  return {
    ok: true,
    packet: {
      kind: 'ehrbench.evidence-packet.v1',
      model: { endpointId: first.endpoint_id, provider: first.spec.endpoint.provider, deployment: first.spec.endpoint.deployment, model: first.spec.endpoint.model },
      approval: {
        approvalId: approval.approvalId,
        protocol: safeId(approval.protocolNumber),
        intendedUse: intendedUseText(approval.purpose),
        startsOn: day(approval.startsAt),
        expiresOn: approval.expiresAt ? day(approval.expiresAt) : null,
        tiers: approval.tiers.length > 0 ? approval.tiers : [...new Set(runs.map((r) => r.tier))],
        benchmarks: approval.benchmarks,
      },
      stability: stability.map((s) => s.figures),
      deid: deid.section,
      fingerprints: fingerprintsOf(results),
      drift: drift.map((d) => d.figures),
      evidence,
      committeeFields: [...COMMITTEE_FIELDS],
    },
  };
}

interface GroupStability {
  figures: PacketStability;
  runIds: string[];
}

/** Per repeat group with at least two of its runs in the export: agreement and spread over the instances they all finished. */
async function stabilityOf(deps: PacketDeps, runs: readonly RunRow[]): Promise<GroupStability[]> {
  const groups = new Map<string, RunRow[]>();
  for (const run of runs) {
    const g = run.spec.repeat?.groupId;
    if (g) groups.set(g, [...(groups.get(g) ?? []), run]);
  }
  const out: GroupStability[] = [];
  for (const members of groups.values()) {
    if (members.length < 2) continue;
    const first = members[0] as RunRow;
    const metric = first.spec.benchmark.mainMetric;
    const f = await deps.runs.repeatStability(
      members.map((r) => r.run_id),
      metric,
    );
    out.push({ figures: stabilityCell(first.benchmark_id, metric, members.length, f, deps.settings), runIds: members.map((r) => r.run_id) });
  }
  return out;
}

/** One group's figures as released: the count as a range, agreement as a [0, 1] metric cell, the spread at the range's resolution. */
export function stabilityCell(benchmarkId: string, metric: string, repeats: number, f: { common: number; sameAnswer: number; runMeans: (number | null)[] }, s: DisclosureSettings): PacketStability {
  const instances = releasedCount(f.common, s);
  const base = { benchmarkId, metric, repeats, instances };
  if ('suppressed' in instances || instances.low === 0) return { ...base, exactAgreement: { suppressed: '<k' }, scoreSpread: { suppressed: '<k' } };
  const cell = metricCell({ name: 'exact_agreement', n: f.common, sum: f.sameAnswer, unit: true }, 'exact_agreement', s);
  const exactAgreement = 'value' in cell && cell.ci95 ? { value: cell.value, ci95: cell.ci95 } : { suppressed: '<k' as const };
  const spread = meanSpread(f.runMeans);
  if (!spread) return { ...base, exactAgreement, scoreSpread: { suppressed: '<k' } };
  const d = valueDenominator(instances.low, s.decimals);
  const at = (v: number) => Math.round(v * d) / d;
  return { ...base, exactAgreement, scoreSpread: { sd: at(spread.sd), min: at(spread.min), max: at(spread.max) } };
}

/** The privacy office's latest sign-off (deid eval --record) and the instances the residual scan stopped; null when no run was de-identified. */
async function deidOf(deps: PacketDeps, runs: readonly RunRow[]): Promise<{ section: EvidencePacket['deid']; goldSeq: number | null }> {
  const deidentified = runs.filter((r) => r.spec.deidentify).map((r) => r.run_id);
  if (deidentified.length === 0) return { section: null, goldSeq: null };
  const residualBlocked = releasedCount(await deps.exports.residualBlocked(deidentified), deps.settings);
  const [signOff] = await tailRecords(deps.db, 1, { type: 'deid.signoff', outcome: 'success' });
  const gold = signOff ? goldOf(signOff.detail as Record<string, unknown>, signOff.recorded_at, deps.settings) : null;
  return { section: { gold, residualBlocked }, goldSeq: gold && signOff ? signOff.seq : null };
}

/** A sign-off's figures as released: its gold spans as a range (none below k), recall and precision at that range's resolution. */
export function goldOf(detail: Record<string, unknown>, recordedAt: string, s: DisclosureSettings): PacketDeidGold | null {
  const spans = typeof detail.goldSpans === 'number' ? detail.goldSpans : 0;
  const count = releasedCount(spans, s);
  if ('suppressed' in count || count.low === 0 || typeof detail.recall !== 'number' || typeof detail.precision !== 'number') return null;
  const d = valueDenominator(count.low, s.decimals);
  // Rounded down: a sign-off is never stated better than it was.
  const at = (v: number) => Math.floor(v * d + 1e-9) / d;
  return { evaluatedOn: day(recordedAt), recall: at(detail.recall), precision: at(detail.precision), phiInstances: count };
}

/** What served the runs, as the results state it (ids and days), once per endpoint and fingerprint. */
export function fingerprintsOf(results: readonly ExportResult[]): PacketFingerprint[] {
  const seen = new Map<string, PacketFingerprint>();
  for (const f of results.flatMap((r) => r.fingerprints ?? [])) {
    const key = `${f.endpointId}\u0000${f.fingerprint}`;
    const had = seen.get(key);
    seen.set(key, {
      endpointId: f.endpointId,
      model: f.model,
      systemFingerprint: f.systemFingerprint,
      firstSeenOn: had && had.firstSeenOn < f.firstSeenDay ? had.firstSeenOn : f.firstSeenDay,
      lastSeenOn: had && had.lastSeenOn > f.lastSeenDay ? had.lastSeenOn : f.lastSeenDay,
    });
  }
  return [...seen.values()].sort((a, b) => a.firstSeenOn.localeCompare(b.firstSeenOn) || a.endpointId.localeCompare(b.endpointId));
}

interface DriftEntry {
  figures: PacketDriftCheck;
  checkId: string;
}

/** The approval's decided canary comparisons (stable or drift), oldest first; inconclusive and failed ones compared nothing. */
async function driftOf(deps: PacketDeps, approval: Approval): Promise<DriftEntry[]> {
  const checks = (await deps.driftChecks(approval.approvalId)).filter((c) => c.state === 'stable' || c.state === 'drift').reverse();
  const out: DriftEntry[] = [];
  for (const c of checks) {
    const metric = (await deps.runs.getRun(c.runId))?.spec.benchmark.mainMetric ?? 'unknown';
    out.push({ checkId: c.checkId, figures: driftCell(c, metric, approval, deps.settings) });
  }
  return out;
}

/** One comparison as released: pairs as a range, the means at that range's resolution, p to P_VALUE_DECIMALS; none under k. */
export function driftCell(c: DriftCheckView, metric: string, approval: Approval, s: DisclosureSettings): PacketDriftCheck {
  const instances = releasedCount(c.pairs ?? 0, s);
  const shown = !('suppressed' in instances) && instances.low > 0;
  const d = shown ? valueDenominator(instances.low, s.decimals) : 1;
  const at = (v: number | null) => (shown && v !== null ? Math.round(v * d) / d : null);
  const p = 10 ** P_VALUE_DECIMALS;
  return {
    on: day(c.decidedAt ?? c.createdAt),
    benchmarkId: c.benchmarkId,
    metric,
    test: c.test === 'mcnemar-exact' ? 'exact-mcnemar' : 'wilcoxon-signed-rank',
    instances: 'suppressed' in instances || instances.low === 0 ? { suppressed: '<k' } : instances,
    baseline: at(c.baselineMean),
    canary: at(c.canaryMean),
    pValue: shown && c.pValue !== null ? Math.round(c.pValue * p) / p : null,
    threshold: approval.canary?.threshold ?? 0,
    minDifference: approval.canary?.minDifference ?? null,
    outcome: c.state === 'drift' ? 'changed' : 'no-change',
    reviewedOn: c.reviewedAt ? day(c.reviewedAt) : null,
  };
}

/** Where each figure came from: the run.complete event of each result's run, the groups' last run, the sign-off, the rating study's close. */
async function evidenceOf(
  deps: PacketDeps,
  runs: readonly RunRow[],
  results: readonly ExportResult[],
  stability: GroupStability[],
  goldSeq: number | null,
  drift: DriftEntry[],
): Promise<EvidencePacket['evidence']> {
  const completed = new Map<string, number>();
  for (const run of runs) {
    const [event] = await tailRecords(deps.db, 1, { type: 'run.complete', runId: run.run_id });
    if (event) completed.set(run.run_id, event.seq);
  }
  const out: EvidencePacket['evidence'] = [];
  results.forEach((r, i) => {
    const seq = completed.get(r.runId);
    if (seq !== undefined) out.push({ figure: `/results/${i}`, auditSeq: seq });
  });
  stability.forEach((g, i) => {
    const seqs = g.runIds.map((id) => completed.get(id)).filter((s): s is number => s !== undefined);
    if (seqs.length > 0) out.push({ figure: `/packet/stability/${i}`, auditSeq: Math.max(...seqs) });
  });
  if (goldSeq !== null) out.push({ figure: '/packet/deid/gold', auditSeq: goldSeq });
  for (const [i, r] of results.entries()) {
    const v = r.juryValidation;
    if (!v || !v.validated) continue;
    const closed = await latestSeqWithDetail(deps.db, 'study.close', 'studyId', v.studyId);
    if (closed !== undefined) out.push({ figure: `/results/${i}/juryValidation`, auditSeq: closed });
  }
  for (const [i, d] of drift.entries()) {
    const seq = await latestSeqWithDetail(deps.db, 'drift.check', 'checkId', d.checkId);
    if (seq !== undefined) out.push({ figure: `/packet/drift/${i}`, auditSeq: seq });
  }
  return out;
}
