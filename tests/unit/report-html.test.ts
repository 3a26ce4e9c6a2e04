/**
 * The report's page (src/report) from a run view: every string of the run is escaped, no figure is
 * shown when the view withholds them, and a failed write leaves no file behind.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunView } from '../../src/operations';
import { runReportHtml, writeReportFile } from '../../src/report';
import { tempDir } from '../helpers/db';

const HOSTILE = `<script>alert("x")</script> & 'co' <img src=x onerror=alert(1)>`;

const RUN: RunView = {
  runId: 'run-1',
  benchmarkId: HOSTILE,
  benchmarkVersion: '1.0.0',
  tier: 'public',
  endpointId: HOSTILE,
  testEndpoint: false,
  status: 'completed',
  requestedBy: HOSTILE,
  approvedBy: null,
  approvalId: null,
  irbProtocol: HOSTILE,
  approvalCoverage: null,
  purpose: HOSTILE,
  model: HOSTILE,
  maxInstances: 40,
  scoring: 'corrected',
  jury: { judgesAsked: ['judge-<b>a</b>', 'judge-c'], judgesLeftOut: ['judge-gpt'], sameFamily: 'exclude', floor: 'empty-answer-or-refusal' },
  createdAt: '2025-05-01T10:00:00.000Z',
  startedAt: null,
  finishedAt: null,
  errorCode: null,
  instanceCount: 40,
  sample: null,
  data: null,
  preset: null,
  pins: { dataset: 'unknown', definition: 'a'.repeat(64), template: 'b'.repeat(64), scorer: 'c'.repeat(64), judges: null },
  repeat: null,
  stale: false,
  fingerprints: [],
  skipped: { [HOSTILE]: 2 },
  counts: { pending: 0, claimed: 0, done: 37, blocked: 2, failed: 1 },
  mainMetric: HOSTILE,
  mainScore: 0.6125,
  aggregates: [{ metric: HOSTILE, value: 0.6125, n: 37, ci95: { low: 0.45, high: 0.75 } }],
  promptTokens: 12345,
  completionTokens: 40,
  reasoningTokens: 0,
  usageUnderReported: 0,
  estimatedCostUsd: 0.0123,
  outcome: {
    kind: 'completed-with-failures',
    label: 'completed with failures',
    summary: '37 of 40 instances done, 1 failed for good',
    hasResults: true,
    success: false,
    causes: [{ code: 'model.connection', state: 'failed', instances: 1, meaning: HOSTILE }],
  },
  withheld: null,
};

describe('runReportHtml', () => {
  it('escapes every string of the run: no markup from the data reaches the page', () => {
    const html = runReportHtml(RUN, { writtenOn: '2025-05-02' });
    expect(html).not.toMatch(/<script|<img|<[^>]*\bonerror=/i);
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &apos;co&apos; &lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('0.613'); // the main score, to three decimals
    expect(html).toContain('(95% interval 0.450 to 0.750)');
    expect(html).toContain('12345');
    expect(html).toContain('$0.0123');
    expect(html).toContain('report written 2025-05-02 (UTC)');
    // what happened, in the outcome's words, and why the failed instance has no result
    expect(html).toContain('completed with failures');
    expect(html).toContain('<code>model.connection</code>');
    // the jury's policy, where the scoring is shown (judge ids escaped too)
    expect(html).toContain('asked judge-&lt;b&gt;a&lt;/b&gt;, judge-c (left out: judge-gpt); judges of the model&apos;s own family left out');
  });

  it('shows the rule and no figure when the view withholds them', () => {
    const figures = {
      instanceCount: null,
      skipped: null,
      counts: null,
      mainScore: null,
      aggregates: null,
      promptTokens: null,
      completionTokens: null,
      reasoningTokens: null,
      usageUnderReported: null,
      estimatedCostUsd: null,
      outcome: null,
    };
    const html = runReportHtml({
      ...RUN,
      ...figures,
      benchmarkId: 'b',
      endpointId: 'e',
      requestedBy: 'alice',
      irbProtocol: null,
      mainMetric: 'exact_match',
      withheld: 'visibility.run-figures.withheld',
    });
    expect(html).toContain('withheld from you (rule <code>visibility.run-figures.withheld</code>)');
    expect(html).not.toMatch(/exact_match:|Prompt tokens|Estimated cost|data-series/);
  });
});

describe('writeReportFile', () => {
  it('leaves no file, whole or partial, when the write fails', () => {
    const dir = tempDir('report-write');
    const file = join(dir, 'r.html');
    const failing = (path: string) => {
      writeFileSync(path, 'half');
      throw Object.assign(new Error('no space'), { code: 'ENOSPC' });
    };
    expect(() => writeReportFile(file, '<!DOCTYPE html>', { writeFile: failing })).toThrow(`${file}: the report cannot be written (ENOSPC); check the folder exists and is writable`);
    expect(readdirSync(dir)).toEqual([]);
    writeReportFile(file, 'one');
    expect(() => writeReportFile(file, 'two')).toThrow(expect.objectContaining({ code: 'report.exists' }));
    writeReportFile(file, 'three', { force: true });
    expect(readFileSync(file, 'utf8')).toBe('three');
    expect(readdirSync(dir)).toEqual(['r.html']);
    expect(existsSync(file)).toBe(true);
  });
});
