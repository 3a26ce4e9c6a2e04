/**
 * The report of a released export: only what its signed bundle holds. The bundle's text is verified
 * first (form, schema, Ed25519 signature, disclosure invariants; src/export's verifyBundle, as `export
 * verify` does) and an unverified one is refused; then every figure and every picture comes from the
 * bundle alone: released values, count ranges, intervals, suppression markers, usage. Nothing is read
 * from the run store. The heat map, per-category and cost pictures need several results. A bundle with
 * an evidence packet gets its sections too (packet.ts).
 */
import type { KeyObject } from 'node:crypto';
import { UserError } from '../errors';
import { type Bundle, type Count, type ExportResult, heatmapSvg, leaderboardOf, type MetricCell, type MetricDisparity, scoresFromRuns, toScoreTable, verifyBundle } from '../export';
import { categoryScoresSvg, costPerModel, costWinRatePoints, costWinRateSvg } from '../pictures';
import { esc, facts, figure, page, score, table } from './html';
import { packetSections } from './packet';

/** Verifies `text` with `publicKey`; the bundle, or a one-line refusal naming the first problems. */
export function verifiedBundle(text: string, publicKey: KeyObject, exportId: string): Bundle {
  const report = verifyBundle(text, publicKey);
  if (!report.ok) {
    throw new UserError('export.verify-failed', `export ${exportId}: the bundle does not verify (${report.problems.slice(0, 3).join('; ')}); no report was written`);
  }
  const bundle = JSON.parse(text) as Bundle;
  if (bundle.exportId !== exportId) throw new UserError('export.verify-failed', `export ${exportId}: the bundle is that of export ${bundle.exportId}; no report was written`);
  return bundle;
}

const count = (c: Count): string => ('suppressed' in c ? `suppressed (${c.suppressed})` : c.high === 0 ? '0' : `${c.low}-${c.high}`);

function metricRow(m: MetricCell, main: string): (string | number)[] {
  const name = `${esc(m.name)}${m.name === main ? ' (main)' : ''}`;
  if (!('value' in m)) return [name, `suppressed (${esc(m.suppressed)})`, '-', '-'];
  return [name, score(m.value), m.ci95 ? `${score(m.ci95.low)} to ${score(m.ci95.high)}` : '-', esc(count(m.n))];
}

function mainValue(r: ExportResult): number | null {
  const m = r.metrics.find((x) => x.name === r.mainMetric);
  return m && 'value' in m ? m.value : null;
}

function money(v: number | null): string {
  return v === null ? 'unknown (no price)' : `$${v.toFixed(2)}`;
}

/** Per metric: worst and best group, and each group's ratio to the best, flagged outside seismometer's 0.8-1.25. */
function disparityTable(list: MetricDisparity[]): string {
  const rows = list.flatMap((d) =>
    d.ratios.map((x) => [
      esc(d.metric),
      esc(x.label),
      x.ratio === null ? '-' : esc(x.ratio.toFixed(2)),
      x.flagged ? 'outside 0.8-1.25' : '',
      x.label === d.worst ? 'worst' : x.label === d.best ? 'best' : '',
    ]),
  );
  return table(['metric', 'group', 'ratio to best', 'flag', ''], rows);
}

function resultSection(r: ExportResult, i: number): string[] {
  const out = [
    `<h3>${i + 1}. ${esc(r.benchmark.id)} v${esc(r.benchmark.version)} on ${esc(r.model.endpointId)}${r.model.model ? ` / ${esc(r.model.model)}` : ''}</h3>`,
    facts([
      ['Run', `<code>${esc(r.runId)}</code>`],
      ['Category', `${esc(r.benchmark.category)} / ${esc(r.benchmark.subcategory)}`],
      ['Tier', esc(r.benchmark.tier)],
      ['Split', esc(r.benchmark.split)],
      [
        'Model',
        `${esc(r.model.provider)}${r.model.deployment ? `, deployment ${esc(r.model.deployment)}` : ''}; max tokens ${esc(String(r.model.maxTokens))}, temperature ${esc(String(r.model.temperature))}`,
      ],
      ['Scoring', esc(r.scoring)],
      ['De-identification', r.deidVersion ? esc(r.deidVersion) : null],
      ['Instances', esc(count(r.n))],
      ['Main metric', `${esc(r.mainMetric)}: ${esc(score(mainValue(r)))}`],
      ['Definition sha256', `<code>${esc(r.benchmark.definitionHash)}</code>`],
    ]),
    table(
      ['metric', 'value', '95% interval', 'n'],
      r.metrics.map((m) => metricRow(m, r.mainMetric)),
    ),
  ];
  for (const sg of r.subgroups) {
    const rows: (string | number)[][] = [];
    for (const c of sg.cells) {
      if ('suppressed' in c) rows.push([esc(c.label), `suppressed (${esc(c.suppressed)})`, '', '', '']);
      else if (c.metrics.length === 0 || c.n.high === 0) rows.push([esc(c.label), esc(count(c.n)), '', '', '']);
      else for (const m of c.metrics) rows.push([esc(c.label), esc(count(c.n)), ...metricRow(m, r.mainMetric).slice(0, 3)]);
    }
    out.push(`<p>Subgroup <code>${esc(sg.field)}</code>${sg.stratum ? ' (site stratum)' : ''}:</p>`, table(['label', 'n', 'metric', 'value', '95% interval'], rows));
    if (sg.disparity?.length) out.push(disparityTable(sg.disparity));
  }
  out.push(
    r.usage
      ? `<p>Tokens about ${esc(String(r.usage.promptTokens))} in, ${esc(String(r.usage.completionTokens))} out; estimated cost ${esc(money(r.usage.estimatedCostUsd))}.</p>`
      : '<p>Usage: not released (the cohort is below k).</p>',
  );
  return out;
}

/** The pictures of a bundle with several results: heat map, per-category scores, cost against win rate. */
function pictures(b: Bundle): string[] {
  if (b.results.length < 2) return [];
  const seen = new Set<string>();
  for (const r of b.results) {
    const cell = `${r.model.endpointId}\u0000${r.benchmark.id}`;
    if (seen.has(cell)) return ['<h2>Pictures</h2>', '<p>The bundle holds two results of one benchmark on one endpoint; they are not ranked against each other.</p>'];
    seen.add(cell);
  }
  const input = scoresFromRuns(
    b.results.map((r) => ({ runId: r.runId, benchmarkId: r.benchmark.id, endpointId: r.model.endpointId, status: 'completed', mainMetric: r.mainMetric, mainScore: mainValue(r) })),
  );
  // The bundle's own category and direction, as released.
  for (const bench of input.benchmarks) {
    const r = b.results.find((x) => x.benchmark.id === bench.id);
    if (r) {
      bench.category = r.benchmark.category;
      bench.lowerIsBetter = r.benchmark.lowerIsBetter;
    }
  }
  const tableOf = toScoreTable(input, `export ${b.exportId}`);
  const board = leaderboardOf(tableOf);
  const costs = costPerModel(b.results.map((r) => ({ endpointId: r.model.endpointId, estimatedCostUsd: r.usage?.estimatedCostUsd ?? null })));
  return [
    '<h2>Pictures</h2>',
    figure(
      heatmapSvg(tableOf, board, 'Released main-metric values per benchmark'),
      'Released main-metric value of each result; a suppressed value shows a dash. Colour: the value mapped to 0-1 by its range.',
    ),
    figure(categoryScoresSvg(board.models), 'Per-category macro average of the released values, mapped to 0-1 by range.'),
    figure(costWinRateSvg(costWinRatePoints(board.models, costs)), 'Released estimated cost (sum over the results of each endpoint) against mean win rate.'),
  ];
}

export function exportReportHtml(b: Bundle): string {
  const title = `Export report: ${b.exportId}`;
  const d = b.disclosure;
  const body: string[] = [
    `<h1>${esc(title)}</h1>`,
    `<p class="lead">Released aggregates of site ${esc(b.siteId)}; this report shows only what the signed bundle holds.</p>`,
    '<h2>Provenance</h2>',
    facts([
      ['Export', `<code>${esc(b.exportId)}</code>`],
      ['Site', esc(b.siteId)],
      ['Tier', esc(b.tier)],
      ['IRB protocol', b.irbProtocol ? esc(b.irbProtocol) : null],
      ['Data use agreement', b.duaId ? esc(b.duaId) : null],
      ['Requested by', `${esc(b.requestedBy)} on ${esc(b.requestedOn)}`],
      ['Released by', `${esc(b.releasedBy)} on ${esc(b.createdOn)}`],
      ['Runs', b.runIds.map((id) => `<code>${esc(id)}</code>`).join(', ')],
      ['Signature', `${esc(b.signature.algorithm)} by key <code>${esc(b.signature.keyFingerprint)}</code>: verified`],
      [
        'Audit checkpoint',
        `${esc(String(b.auditCheckpoint.checkpointId))} at seq ${esc(String(b.auditCheckpoint.seq))} (release event ${esc(String(b.auditCheckpoint.releaseEventSeq))}), head <code>${esc(b.auditCheckpoint.headHash)}</code>`,
      ],
      ['Daemon version', esc(b.daemonVersion)],
    ]),
    '<h2>Disclosure control</h2>',
    `<p>Policy <code>${esc(d.policyId)}</code>: minimum cell size k = ${esc(String(d.k))}; counts as ranges of ${esc(String(d.countRangeWidth))}; complementary suppression; ${esc(d.differencing)}. Intervals: ${esc(d.ci)}.</p>`,
    '<h2>Results</h2>',
    table(
      ['benchmark', 'endpoint', 'n', 'main metric', 'value', 'estimated cost'],
      b.results.map((r) => [esc(r.benchmark.id), esc(r.model.endpointId), esc(count(r.n)), esc(r.mainMetric), score(mainValue(r)), r.usage ? esc(money(r.usage.estimatedCostUsd)) : 'not released']),
    ),
    `<p>Totals of the released usage: tokens about ${esc(String(b.totals.promptTokens))} in, ${esc(String(b.totals.completionTokens))} out; estimated cost ${esc(money(b.totals.estimatedCostUsd))}.</p>`,
    ...pictures(b),
    ...packetSections(b),
    '<h2>Each result</h2>',
    ...b.results.flatMap(resultSection),
  ];
  return page(title, body);
}
