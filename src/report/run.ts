/**
 * The report of one run, from the run as its reader may see it (operations' RunView, the same view as
 * `runs show`): its metadata always; its counts, scores, aggregates, tokens and cost only when
 * policy/visibility shows them to the reader, otherwise the rule that withheld them and no number.
 * Instance data is never part of a RunView, so it cannot reach the report.
 */
import type { RunView } from '../operations';
import { runProgressSvg } from '../pictures';
import { runPhase } from '../contracts';
import { juryPolicyText } from '../runs';
import { esc, facts, figure, page, score, table } from './html';

export interface RunReportOptions {
  /** UTC day the report was written, YYYY-MM-DD (the caller's clock). */
  writtenOn?: string;
  /** Set when the run went to a test endpoint: the sentence that says so. */
  testEndpointNotice?: string;
}

function sampleText(run: RunView): string | null {
  const s = run.sample;
  if (!s) return null;
  return s.method === 'helm' ? `HELM's seeded sample of ${s.maxInstances} (seed ${s.seed})` : `the first ${s.maxInstances}`;
}

function interval(ci: { low: number; high: number }): string {
  return `${score(ci.low)} to ${score(ci.high)}`;
}

function money(v: number | null): string {
  return v === null ? 'unknown (no price for this endpoint in the configuration)' : `$${v.toFixed(4)}`;
}

export function runReportHtml(run: RunView, opts: RunReportOptions = {}): string {
  const title = `Run report: ${run.benchmarkId} on ${run.endpointId}`;
  const body: string[] = [`<h1>${esc(title)}</h1>`, `<p class="lead">Run <code>${esc(run.runId)}</code>${opts.writtenOn ? `; report written ${esc(opts.writtenOn)} (UTC)` : ''}</p>`];
  if (run.testEndpoint && opts.testEndpointNotice) body.push(`<p class="warning">${esc(opts.testEndpointNotice)}: these results mean nothing.</p>`);
  body.push(
    '<h2>Summary</h2>',
    facts([
      ['Benchmark', `${esc(run.benchmarkId)} v${esc(run.benchmarkVersion)}`],
      ['Tier', esc(run.tier)],
      ['Endpoint', esc(run.endpointId)],
      ['Status', `${esc(run.outcome?.label ?? runPhase(run))}${run.errorCode ? ` (${esc(run.errorCode)})` : ''}`],
      ['Outcome', run.outcome ? esc(run.outcome.summary) : null],
      ['Requested by', `${esc(run.requestedBy)} at ${esc(run.createdAt)}`],
      ['Approved by', run.approvedBy ? esc(run.approvedBy) : null],
      ['IRB protocol', run.irbProtocol ? esc(run.irbProtocol) : null],
      ['Scoring', esc(run.scoring)],
      ['Jury', run.jury ? esc(juryPolicyText(run.jury)) : null],
      ['Started', run.startedAt ? esc(run.startedAt) : null],
      ['Finished', run.finishedAt ? esc(run.finishedAt) : null],
      ['Instances picked', sampleText(run) ? esc(sampleText(run) as string) : null],
    ]),
  );
  if (run.withheld || run.counts === null) {
    body.push(
      '<h2>Figures</h2>',
      `<p>Counts, scores, aggregates, tokens and cost are withheld from you (rule <code>${esc(run.withheld ?? 'visibility.run-figures.withheld')}</code>): before a release, only the requester and compliance officers see them. A released export of the run shows them with disclosure control.</p>`,
    );
    body.push('<h2>Progress</h2>', figure(runProgressSvg(run), 'Progress of the run (counts withheld).'));
    return page(title, body);
  }
  const c = run.counts;
  const main = run.aggregates?.find((a) => a.metric === run.mainMetric);
  body.push(
    '<h2>Main metric</h2>',
    `<p><strong>${esc(run.mainMetric)}: ${esc(score(run.mainScore))}</strong>${main?.ci95 ? ` (95% interval ${esc(interval(main.ci95))})` : ''}${main ? ` over ${esc(String(main.n))} instance(s)` : ''}</p>`,
    '<h2>Metrics</h2>',
    run.aggregates && run.aggregates.length
      ? table(
          ['metric', 'value', '95% interval', 'n'],
          run.aggregates.map((a) => [`${esc(a.metric)}${a.metric === run.mainMetric ? ' (main)' : ''}`, score(a.value), a.ci95 ? esc(interval(a.ci95)) : '-', a.n]),
        )
      : '<p>No aggregate yet.</p>',
    '<p class="note">Exact figures of the run, before any disclosure control. Intervals: Wilson 95% for a metric whose every score lies in [0, 1]; none for the others.</p>',
    '<h2>Instances</h2>',
    table(['planned', 'done', 'blocked', 'failed', 'in progress', 'pending'], [[run.instanceCount === null ? '-' : run.instanceCount, c.done, c.blocked, c.failed, c.claimed, c.pending]]),
  );
  if (run.outcome?.causes.length)
    body.push(
      '<p>Why instances ended without a result:</p>',
      table(
        ['state', 'code', 'meaning', 'instances'],
        run.outcome.causes.map((k) => [esc(k.state), `<code>${esc(k.code)}</code>`, esc(k.meaning), k.instances]),
      ),
    );
  const skipped = Object.entries(run.skipped ?? {});
  if (skipped.length)
    body.push(
      '<p>Records the dataset left out when the run was planned:</p>',
      table(
        ['rule', 'records'],
        skipped.map(([rule, n]) => [`<code>${esc(rule)}</code>`, n]),
      ),
    );
  body.push(
    '<h2>Usage</h2>',
    facts([
      ['Prompt tokens', esc(String(run.promptTokens ?? 0))],
      ['Completion tokens', `${esc(String(run.completionTokens ?? 0))}${run.reasoningTokens ? ` (${esc(String(run.reasoningTokens))} of them reasoning)` : ''}`],
      ['Estimated cost', esc(money(run.estimatedCostUsd))],
      ...(run.usageUnderReported
        ? [['Usage not reported truthfully', `${esc(String(run.usageUnderReported))} calls, each charged its worst case (tokens and cost are upper bounds)`] as [string, string]]
        : []),
    ]),
    '<h2>Progress</h2>',
    figure(runProgressSvg(run), 'Instances of the run by state.'),
  );
  return page(title, body);
}
