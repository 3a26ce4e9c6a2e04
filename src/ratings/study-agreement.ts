/**
 * A study's agreement: its ratings (ratingsFor) through MedHELM's statistics (src/agreement), and the
 * leaderboard's rank stability over the study's runs with each judge left out. The figures are
 * aggregates over the rated items; no rating, rater's score or item text is in them. The same shape is
 * shown in the console, answered by the API and stated by an export as the jury's validation.
 */
import { agreement, type AgreementReport, type Icc, type Maybe, rankStability, type ModelScore, type SelectionAgreement } from '../agreement';
import type { RunStore } from '../runs';
import type { RatingStudies } from './studies';
import type { Study } from './types';

/** A statistic with its 95% interval where it has one; null with the reason where the data cannot give it. */
export interface Stat {
  value: number | null;
  ci95?: { low: number; high: number } | null;
  reason?: string;
}

export interface AgreementRow {
  dataset: string;
  items: number;
  clinicians: number;
  icc: Stat;
  spearman: Stat;
  kappa: Stat;
  clinicianClinicianIcc: Stat;
  judges: { judge: string; icc: Stat; spearman: Stat }[];
  rougeL: { icc: Stat; spearman: Stat } | null;
}

export interface StudyAgreement {
  criteria: string[];
  rows: AgreementRow[];
  rankStability: { judge: string; tau: number | null; reason?: string }[];
  note: string;
}

const iccStat = (m: Maybe<Icc>): Stat => (m.value === null ? { value: null, reason: m.reason } : { value: m.value.icc, ci95: { low: m.value.ci[0], high: m.value.ci[1] } });
const plain = (m: Maybe<{ rho: number } | number>): Stat => (m.value === null ? { value: null, reason: m.reason } : { value: typeof m.value === 'number' ? m.value : m.value.rho });

function row(dataset: string, s: SelectionAgreement): AgreementRow {
  return {
    dataset,
    items: s.items,
    clinicians: s.raters,
    icc: iccStat(s.jury.icc),
    spearman: plain(s.jury.spearman),
    kappa: plain(s.jury.kappa),
    clinicianClinicianIcc: iccStat(s.clinicians.icc),
    judges: Object.entries(s.judges).map(([judge, c]) => ({ judge, icc: iccStat(c.icc), spearman: plain(c.spearman) })),
    rougeL: s.rouge ? { icc: iccStat(s.rouge.icc), spearman: plain(s.rouge.spearman) } : null,
  };
}

/** The report as rows: each dataset, then the pooled `ALL`. */
export function agreementRows(report: AgreementReport): AgreementRow[] {
  return [...Object.entries(report.byDataset).map(([d, s]) => row(d, s)), row('ALL', report.ALL)];
}

/**
 * The agreement of a study's ratings, and the rank stability of its runs' models: per run, each judge's
 * mean score over the run's instances (the run's jury_judge_N aggregates), so the leaderboard is the
 * runs' own, not only the rated sample's.
 */
export async function studyAgreement(studies: RatingStudies, runs: RunStore, study: Study): Promise<StudyAgreement> {
  const r = await studies.ratingsFor(study.studyId);
  const report = agreement({ ratings: r.clinicians, jury: r.jury, judges: r.judges, rouge: r.rouge, criteria: r.criteria });
  const stability = rankStability(await judgeMeans(runs, study));
  return {
    criteria: r.criteria,
    rows: agreementRows(report),
    rankStability: stability.leaveOneOut.map((l) => (l.tau.value === null ? { judge: l.judge, tau: null, reason: l.tau.reason } : { judge: l.judge, tau: l.tau.value })),
    note: 'ICC(3,k) between the clinicians mean and the jury composite, each rater z-scored over their own ratings (MedHELM); the store keeps the jury composite and each judge mean over the criteria, so criteria are not compared one by one.',
  };
}

/** One score per (run, judge): the run's mean of that judge's scores, as rankStability's items. */
async function judgeMeans(runs: RunStore, study: Study): Promise<ModelScore[]> {
  const scores: ModelScore[] = [];
  for (const runId of study.runIds) {
    const run = await runs.getRun(runId);
    if (!run || run.status !== 'completed') continue;
    const model = `${run.spec.endpoint.model ?? run.spec.endpoint.deployment ?? run.endpoint_id} (${run.run_id.slice(0, 8)})`;
    for (const a of await runs.results(runId)) {
      const judge = /^jury_judge_(\d+)$/.exec(a.metric);
      if (judge && a.value !== null) scores.push({ model, judge: `judge ${judge[1]}`, item: 'mean', value: a.value });
    }
  }
  return scores;
}

/** What an export reads of a closed rating study: its pooled agreement with exact counts, before disclosure control. */
export interface StudyValidationFigures {
  studyId: string;
  closedAt: string;
  items: number;
  clinicians: number;
  icc: Stat;
  spearman: Stat;
  kappa: Stat;
  clinicianClinicianIcc: Stat;
}

/**
 * The jury's validation at the site, as an export states it: the latest closed study of the benchmark
 * and its pooled (ALL) agreement, exact here; the export applies disclosure control. None: no closed study.
 */
export async function latestValidation(studies: RatingStudies, runs: RunStore, benchmarkId: string): Promise<StudyValidationFigures | undefined> {
  const closed = (await studies.list()).filter((s) => s.benchmarkId === benchmarkId && s.status === 'closed' && s.closedAt);
  closed.sort((a, b) => (a.closedAt as string).localeCompare(b.closedAt as string));
  const study = closed.at(-1);
  if (!study) return undefined;
  const all = (await studyAgreement(studies, runs, study)).rows.find((r) => r.dataset === 'ALL');
  if (!all) return undefined;
  return {
    studyId: study.studyId,
    closedAt: study.closedAt as string,
    items: all.items,
    clinicians: all.clinicians,
    icc: all.icc,
    spearman: all.spearman,
    kappa: all.kappa,
    clinicianClinicianIcc: all.clinicianClinicianIcc,
  };
}
