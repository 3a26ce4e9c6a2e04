/** Runs: my runs with live progress, requesting one, a run's figures, and the officer's approval queue. */
import { useState } from 'preact/hooks';
import { type Session, get, post } from '../api';
import type { Approval, Benchmark, Endpoint, ExportView, Run } from '../types';
import { finishedOf, PROGRESS_STATES, remainingMs } from '../../../pictures/progress-states';
import { statusOf } from './approvals';
import { ConfirmAct, Done, Field, holds, Loading, MetricsHead, Page, Problem, SchemaProblems, Status, score, usd, useAction, useLoad, visible, when } from '../ui';
import { validateRunRequest } from '../validators';
import { InstancesSection, InstancesWithheld } from './instances';

const ACTIVE = ['requested', 'approved', 'running'];
const isActive = (r: Run | undefined) => !!r && ACTIVE.includes(r.status);

/** What the run is doing, in words: planning, awaiting approval, or counts. */
function phase(r: Run): string {
  if (r.status === 'requested') return r.tier === 'private' ? 'awaiting approval' : 'requested';
  if (r.status === 'approved' || (r.status === 'running' && r.instanceCount === null)) return 'planning';
  return r.status;
}

function finished(r: Run): number | null {
  return r.counts ? finishedOf(r.counts) : null;
}

/** "about 3 min", "about 2 h 5 min": an estimate, said as one. */
function duration(ms: number): string {
  const min = Math.max(1, Math.round(ms / 60_000));
  if (min < 60) return `about ${min} min`;
  return `about ${Math.floor(min / 60)} h${min % 60 ? ` ${min % 60} min` : ''}`;
}

/** Why the run's approval covers it, in the officer's words: the benchmark named, or only its whole tier. */
export function coverageWords(r: Run): string {
  if (!r.irbProtocol) return '—';
  switch (r.approvalCoverage) {
    case 'benchmark':
      return `${r.irbProtocol}: benchmark named`;
    case 'tier':
      return `${r.irbProtocol}: only through its tier (every ${r.tier} benchmark)`;
    case 'none':
      return `${r.irbProtocol}: no longer covers it`;
    default:
      return r.irbProtocol;
  }
}

/** The run's size: the instances planned, or the cap asked for while it plans. */
const size = (r: Run) => (r.instanceCount !== null ? `${r.instanceCount} instances` : r.maxInstances !== null ? `at most ${r.maxInstances} instances` : 'every instance of the dataset');

/** The jury as the run asks it, in words: who is asked, who is left out and why, and what scores without a judge. */
function juryWords(j: NonNullable<Run['jury']>): string {
  const asked = `asks ${j.judgesAsked.join(', ') || 'no judge'}`;
  const left = j.judgesLeftOut.length ? `; leaves out ${j.judgesLeftOut.join(', ')} (same family as the model)` : '';
  const rule = j.sameFamily === 'helm-asks-all' ? "; every judge, as HELM's jury" : j.sameFamily === 'allow' ? '; same-family judges allowed' : '';
  const floor = j.floor === 'empty-answer' ? '; only an empty answer scores the floor without a judge' : '; an empty answer or a refusal and nothing else scores the floor without a judge';
  return `${asked}${left}${rule}${floor}`;
}

/** The endpoint as a reader looks for it: "model (endpoint)". */
const modelOf = (r: Run) => (r.model ? `${visible(r.model)} (${r.endpointId})` : r.endpointId);

/**
 * The run's progress drawn in the page from the same counts as the table under it (one poll, one
 * source: the picture and the figures can no longer disagree), with an estimate of the end while it
 * runs. A <progress> and words, no markup of its own (the page inserts no SVG: see console-xss).
 */
function ProgressBar({ run }: { run: Run }) {
  const counts = run.counts;
  if (!counts) return <p class="muted">{phase(run)}</p>;
  const total = PROGRESS_STATES.reduce((n, s) => n + counts[s.state], 0);
  const planned = run.instanceCount ?? total;
  const done = finishedOf(counts);
  const eta = run.status === 'running' ? remainingMs(run, Date.now()) : null;
  const said = `${phase(run)}: ${done} of ${planned} finished${run.instanceCount === null ? ' (planning: queued so far)' : ''}`;
  return (
    <div class="progress-bar">
      <p data-testid="run-progress">
        {said}
        {run.status === 'running' ? <span data-testid="run-eta">{eta === null ? '; no estimate until an instance finishes' : `; ${duration(eta)} left at the rate so far`}</span> : null}
      </p>
      {planned > 0 ? <progress class="wide" max={planned} value={done} aria-label={said} /> : null}
      <ul class="legend">
        {PROGRESS_STATES.map((s) => (
          <li key={s.state} data-series={s.state}>
            {s.label} {counts[s.state]}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function Progress({ run }: { run: Run }) {
  const done = finished(run);
  if (run.withheld) return <span class="muted">withheld ({run.withheld})</span>;
  if (done === null || !run.instanceCount) return <span>{phase(run)}</span>;
  return (
    <span>
      <progress max={run.instanceCount} value={done} aria-label={`${done} of ${run.instanceCount} instances finished`} /> {done}/{run.instanceCount}
    </span>
  );
}

export function RunsPage({ session }: { session: Session }) {
  const runs = useLoad(() => get<Run[]>('/v1/runs?limit=200'), [], { ms: 2000, while: (d) => !!d?.some(isActive) });
  const [chosen, setChosen] = useState<string[]>([]);
  const own = holds(session, ['compliance', 'auditor', 'admin']) ? 'Runs' : 'My runs';
  const toggle = (id: string) => setChosen((c) => (c.includes(id) ? c.filter((x) => x !== id) : [...c, id]));
  const runsQuery = encodeURIComponent(chosen.join(','));
  return (
    <Page title={own}>
      <Problem error={runs.error} />
      {!runs.data ? (
        <Loading what="runs" />
      ) : runs.data.length === 0 ? (
        <p>
          No runs yet. <a href="#/runs/new">Request a run</a>
        </p>
      ) : (
        <table>
          <caption class="sr-only">Runs, newest first; tick completed runs to compare them below</caption>
          <thead>
            <tr>
              <th scope="col">Compare</th>
              <th scope="col">Run</th>
              <th scope="col">Benchmark</th>
              <th scope="col">Endpoint</th>
              <th scope="col">Tier</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col" class="num">
                Main score
              </th>
              <th scope="col">Requested</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.map((r) => (
              <tr key={r.runId} data-run={r.runId}>
                <td>
                  {r.status === 'completed' ? <input type="checkbox" checked={chosen.includes(r.runId)} onChange={() => toggle(r.runId)} aria-label={`compare run ${r.runId.slice(0, 8)}`} /> : null}
                </td>
                <td>
                  <a href={`#/runs/${r.runId}`}>{r.runId.slice(0, 8)}</a>
                </td>
                <td>{r.benchmarkId}</td>
                <td>{r.endpointId}</td>
                <td>{r.tier}</td>
                <td>
                  <Status value={r.outcome?.label ?? r.status} />
                </td>
                <td>
                  <Progress run={r} />
                </td>
                <td class="num">{r.withheld ? '—' : score(r.mainScore)}</td>
                <td>{when(r.createdAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {chosen.length ? (
        <section aria-labelledby="compare">
          <h2 id="compare">Chosen runs compared</h2>
          <p>
            <img class="picture" src={`/v1/pictures/leaderboard.svg?runs=${runsQuery}`} alt="Heat map of the chosen runs' main scores, one row per endpoint, one column per benchmark" />
          </p>
          <p>
            <img class="picture" src={`/v1/pictures/categories.svg?runs=${runsQuery}`} alt="Scores per MedHELM category of the chosen runs" />
          </p>
          <p>
            <img class="picture" src={`/v1/pictures/cost-win-rate.svg?runs=${runsQuery}`} alt="Estimated cost against mean win rate, one point per endpoint" />
          </p>
        </section>
      ) : null}
    </Page>
  );
}

/** What happened to the run, in the words of `runs show` (src/runs/outcome.ts), and why instances ended without a result. */
function Outcome({ outcome, endpointId }: { outcome: NonNullable<Run['outcome']>; endpointId: string }) {
  return (
    <>
      <p data-testid="run-outcome">{outcome.summary}</p>
      {outcome.causes.length ? (
        <ul data-testid="run-causes">
          {outcome.causes.map((c) => (
            <li key={`${c.state}:${c.code}`}>
              {c.state}: {c.state === 'failed' ? `endpoint ${endpointId}: ` : ''}
              {c.code} ({c.meaning}): {c.instances} instance{c.instances === 1 ? '' : 's'}
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

export function RunPage({ runId, session }: { runId: string; session: Session }) {
  const run = useLoad(() => get<Run>(`/v1/runs/${runId}`), [runId], { ms: 2000, while: isActive });
  const { problem, done, act } = useAction();
  const r = run.data;
  /** Posts, shows `said` and reloads the run. */
  const change = (path: string, body: unknown, said: string) =>
    act(async () => {
      await post(path, body);
      run.reload();
      return said;
    });
  const requestExport = () =>
    act(async () => {
      const e = await post<ExportView>('/v1/exports', { runIds: [runId] });
      location.hash = `#/exports/${e.exportId}`;
      return 'export requested';
    });
  return (
    <Page title={`Run ${runId.slice(0, 8)}`}>
      <Problem error={run.error ?? problem} />
      <Done message={done} />
      {!r ? (
        <Loading what="the run" />
      ) : (
        <>
          <table class="facts">
            <caption class="sr-only">The run</caption>
            <tbody>
              <tr>
                <th scope="row">Benchmark</th>
                <td>
                  {r.benchmarkId} {r.benchmarkVersion} ({r.tier})
                </td>
              </tr>
              <tr>
                <th scope="row">Endpoint</th>
                <td>
                  {modelOf(r)}
                  {r.testEndpoint ? ' (test endpoint: development, never real data)' : ''}
                </td>
              </tr>
              <tr>
                <th scope="row">Size</th>
                <td>{size(r)}</td>
              </tr>
              <tr>
                <th scope="row">Scoring</th>
                <td>
                  {r.scoring}
                  {r.preset ? ` (preset ${r.preset})` : ''}
                </td>
              </tr>
              {r.jury ? (
                <tr>
                  <th scope="row">Jury</th>
                  <td data-testid="run-jury">{juryWords(r.jury)}</td>
                </tr>
              ) : null}
              <tr>
                <th scope="row">Data revision</th>
                <td>{r.data ? `sha256 ${r.data.sha256.slice(0, 16)}…` : 'unknown (recorded from this release on)'}</td>
              </tr>
              <tr>
                <th scope="row">Purpose</th>
                <td>{r.purpose ? visible(r.purpose) : '—'}</td>
              </tr>
              <tr>
                <th scope="row">Status</th>
                <td>
                  <Status value={r.outcome?.label ?? r.status} /> {r.status === 'running' && r.instanceCount === null ? '(planning)' : ''} {r.errorCode ? `: ${r.errorCode}` : ''}
                  {r.outcome ? <Outcome outcome={r.outcome} endpointId={r.endpointId} /> : null}
                </td>
              </tr>
              <tr>
                <th scope="row">Requested</th>
                <td>
                  by {r.requestedBy} at {when(r.createdAt)}
                </td>
              </tr>
              <tr>
                <th scope="row">Approved</th>
                <td>{r.approvedBy ? `by ${r.approvedBy}` : '—'}</td>
              </tr>
              <tr>
                <th scope="row">IRB protocol</th>
                <td data-testid="run-coverage">{coverageWords(r)}</td>
              </tr>
              <tr>
                <th scope="row">Finished</th>
                <td>{when(r.finishedAt)}</td>
              </tr>
            </tbody>
          </table>
          <div class="actions">
            {r.status === 'requested' && holds(session, ['compliance']) ? (
              <ApproveRun run={r} onConfirm={() => void change(`/v1/runs/${runId}/approve`, {}, 'run approved')} label="Approve this run" />
            ) : null}
            {isActive(r) ? (
              <ConfirmAct
                label="Cancel this run"
                secondary
                title={`Cancel run ${runId.slice(0, 8)}?`}
                consequence={
                  <p>
                    {r.benchmarkId} on {r.endpointId} stops: no new call starts, calls in flight finish, and the instances not yet run never are.
                  </p>
                }
                confirmLabel={`Cancel run ${runId.slice(0, 8)}`}
                reason
                onConfirm={(reason) => void change(`/v1/runs/${runId}/cancel`, { reason }, 'cancelling; calls in flight will finish')}
              />
            ) : null}
            {r.outcome?.hasResults && r.requestedBy === session.principal ? (
              <button type="button" onClick={requestExport}>
                Request an export of this run
              </button>
            ) : null}
            {holds(session, ['compliance', 'auditor']) ? <a href={`#/audit/run/${runId}`}>Audit timeline of this run</a> : null}
          </div>
          <h2>Progress</h2>
          <ProgressBar run={r} />
          {r.withheld ? (
            <p class="muted">The run's figures are withheld from you (rule {r.withheld}).</p>
          ) : (
            <>
              <h2>Counts</h2>
              <table>
                <caption class="sr-only">Instances by state</caption>
                <thead>
                  <tr>
                    {['pending', 'claimed', 'done', 'blocked', 'failed'].map((k) => (
                      <th scope="col" class="num" key={k}>
                        {k}
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  <tr>
                    {(['pending', 'claimed', 'done', 'blocked', 'failed'] as const).map((k) => (
                      <td class="num" key={k}>
                        {r.counts ? r.counts[k] : '—'}
                      </td>
                    ))}
                  </tr>
                </tbody>
              </table>
              <h2>Scores</h2>
              <table>
                <caption class="sr-only">Scores per metric</caption>
                <MetricsHead />
                <tbody>
                  {(r.aggregates ?? []).map((a) => (
                    <tr key={a.metric}>
                      <td>
                        {a.metric}
                        {a.metric === r.mainMetric ? ' (main)' : ''}
                      </td>
                      <td class="num">{score(a.value)}</td>
                      <td class="num">{a.ci95 ? `${score(a.ci95.low)}–${score(a.ci95.high)}` : '—'}</td>
                      <td class="num">{a.n}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <p class="muted">
                Wilson intervals, for metrics whose every score lies between 0 and 1; the exact figures are yours and compliance's only (an export releases them rounded, with range intervals).
              </p>
              <h2>Usage</h2>
              <p>
                {r.promptTokens ?? 0} prompt tokens, {r.completionTokens ?? 0} completion tokens
                {r.reasoningTokens ? `, ${r.reasoningTokens} reasoning tokens` : ''}; estimated cost {usd(r.estimatedCostUsd)}.
              </p>
              {r.usageUnderReported ? (
                <p class="error" role="alert" data-testid="usage-under-reported">
                  {r.usageUnderReported} call{r.usageUnderReported === 1 ? '' : 's'} of this run came back without truthful usage from the endpoint (missing, negative, beyond the request or
                  implausibly low). Each was charged its worst case against the approval's budget, so the tokens and cost above are upper bounds for them.
                </p>
              ) : null}
            </>
          )}
          {r.withheld ? <InstancesWithheld run={r} /> : <InstancesSection run={r} />}
        </>
      )}
    </Page>
  );
}

interface Choices {
  benchmarks: Benchmark[];
  endpoints: Endpoint[];
  approvals: Approval[];
}

export function RequestRunPage() {
  const choices = useLoad<Choices>(async () => {
    const [benchmarks, endpoints, approvals] = await Promise.all([get<Benchmark[]>('/v1/benchmarks'), get<Endpoint[]>('/v1/endpoints'), get<Approval[]>('/v1/approvals')]);
    return { benchmarks, endpoints, approvals };
  }, []);
  const [form, setForm] = useState<Record<string, string>>({ benchmarkId: '', endpointId: '', approvalId: '', purpose: '', maxInstances: '', preset: '' });
  const [problems, setProblems] = useState<string[]>([]);
  const [refusal, setRefusal] = useState<unknown>(undefined);
  const set = (k: string) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const submit = async (e: Event) => {
    e.preventDefault();
    setRefusal(undefined);
    const body: Record<string, unknown> = { benchmarkId: form.benchmarkId, endpointId: form.endpointId };
    if (form.approvalId) body.approvalId = form.approvalId;
    if (form.purpose) body.purpose = form.purpose;
    if (form.maxInstances) body.maxInstances = Number(form.maxInstances);
    if (form.preset) body.preset = form.preset;
    // The API's own schema (precompiled at build), so the form says what the daemon would refuse.
    const found = validateRunRequest(body);
    setProblems(found);
    if (found.length) return;
    try {
      const run = await post<Run>('/v1/runs', body);
      location.hash = `#/runs/${run.runId}`;
    } catch (err) {
      setRefusal(err);
    }
  };
  const c = choices.data;
  const tier = c?.benchmarks.find((b) => b.id === form.benchmarkId)?.tier;
  /** A new benchmark drops an endpoint chosen before that may not receive its tier. */
  const chooseBenchmark = (e: Event) => {
    const benchmarkId = (e.target as HTMLSelectElement).value;
    const t = c?.benchmarks.find((b) => b.id === benchmarkId)?.tier;
    const chosen = c?.endpoints.find((x) => x.id === form.endpointId);
    const keep = chosen && !chosen.refusedTiers.some((x) => x.tier === t);
    setForm({ ...form, benchmarkId, endpointId: keep ? (form.endpointId ?? '') : '' });
  };
  return (
    <Page title="Request a run">
      <Problem error={choices.error ?? refusal} />
      <SchemaProblems what="request" problems={problems} />
      {!c ? (
        <Loading what="benchmarks and endpoints" />
      ) : (
        <form class="stack" onSubmit={submit} noValidate>
          <Field id="run-benchmark" label="Benchmark">
            <select id="run-benchmark" name="benchmarkId" value={form.benchmarkId} onChange={chooseBenchmark}>
              <option value="">choose a benchmark</option>
              {c.benchmarks.map((b) => (
                <option key={b.id} value={b.id}>
                  {visible(b.displayName)} ({b.id}, {b.tier})
                </option>
              ))}
            </select>
          </Field>
          <Field
            id="run-endpoint"
            label="Endpoint"
            hint={tier ? `endpoints that may not receive ${tier} data are shown but cannot be chosen` : 'choose a benchmark first: its tier decides which endpoints may receive it'}
          >
            <select id="run-endpoint" aria-describedby="run-endpoint-hint" name="endpointId" value={form.endpointId} onChange={set('endpointId')}>
              <option value="">choose an endpoint</option>
              {c.endpoints.map((e) => {
                const refused = tier ? e.refusedTiers.find((x) => x.tier === tier) : undefined;
                return (
                  <option key={e.id} value={e.id} disabled={!!refused}>
                    {e.model ? `${visible(e.model)} (${e.id})` : e.id} (up to {e.classification.maxTier}
                    {e.classification.development ? ', development' : ''}){refused ? ` — not for ${tier} data: ${refused.reason} (rule ${refused.rule})` : ''}
                  </option>
                );
              })}
            </select>
          </Field>
          <Field id="run-approval" label="IRB approval" hint="needed for approval-required and private benchmarks">
            <select id="run-approval" aria-describedby="run-approval-hint" name="approvalId" value={form.approvalId} onChange={set('approvalId')}>
              <option value="">none (public benchmarks)</option>
              {c.approvals
                .filter((a) => statusOf(a) === 'active')
                .map((a) => (
                  <option key={a.approvalId} value={a.approvalId}>
                    {a.protocolNumber}: {visible(a.title ?? a.purpose)}
                  </option>
                ))}
            </select>
          </Field>
          <Field id="run-purpose" label="Purpose" hint="recorded in the audit trail (no patient information)">
            <input id="run-purpose" aria-describedby="run-purpose-hint" name="purpose" value={form.purpose} onInput={set('purpose')} maxLength={200} />
          </Field>
          <Field id="run-instances" label="Instances" hint="at most this many (HELM's seeded sample); empty for all">
            <input id="run-instances" aria-describedby="run-instances-hint" name="maxInstances" inputMode="numeric" value={form.maxInstances} onInput={set('maxInstances')} />
          </Field>
          <Field id="run-preset" label="Settings" hint="MedHELM's leaderboard: 1,000 instances by HELM's seeded sample, scored as HELM scores (leave Instances empty)">
            <select id="run-preset" aria-describedby="run-preset-hint" name="preset" value={form.preset} onChange={set('preset')}>
              <option value="">this site's (corrected scoring)</option>
              <option value="medhelm-leaderboard">medhelm-leaderboard</option>
            </select>
          </Field>
          <div>
            <button type="submit">Request the run</button>
          </div>
        </form>
      )}
    </Page>
  );
}

/** The approval of a private run, confirmed: what it is, where its data goes, under which approval and why. */
function ApproveRun({ run: r, label, ariaLabel, onConfirm }: { run: Run; label: string; ariaLabel?: string; onConfirm: () => void }) {
  return (
    <ConfirmAct
      label={label}
      {...(ariaLabel ? { ariaLabel } : {})}
      title={`Approve run ${r.runId.slice(0, 8)}?`}
      consequence={
        <p>
          {r.benchmarkId} ({r.tier} data), {size(r)}, requested by {r.requestedBy}, is sent to {modelOf(r)} under {coverageWords(r)}. Once approved, a worker starts it.
        </p>
      }
      confirmLabel={`Approve run ${r.runId.slice(0, 8)}`}
      onConfirm={onConfirm}
    />
  );
}

export function RunApprovalQueuePage({ session }: { session: Session }) {
  const runs = useLoad(() => get<Run[]>('/v1/runs?limit=500'), [], { ms: 3000, while: () => true });
  const { problem, done, act } = useAction();
  const waiting = (runs.data ?? []).filter((r) => r.status === 'requested');
  const approve = (r: Run) =>
    act(async () => {
      await post(`/v1/runs/${r.runId}/approve`, {});
      runs.reload();
      return `run ${r.runId.slice(0, 8)} approved`;
    });
  return (
    <Page title="Runs awaiting approval">
      <Problem error={runs.error ?? problem} />
      <Done message={done} />
      {!runs.data ? (
        <Loading what="the queue" />
      ) : waiting.length === 0 ? (
        <p>No run is waiting for approval.</p>
      ) : (
        <table>
          <caption class="sr-only">Private runs awaiting a compliance officer's approval</caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Benchmark (tier)</th>
              <th scope="col">Model (endpoint)</th>
              <th scope="col">Size</th>
              <th scope="col">Requested by</th>
              <th scope="col">IRB approval: why it covers the run</th>
              <th scope="col">Purpose</th>
              <th scope="col">Requested</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {waiting.map((r) => (
              <tr key={r.runId} data-run={r.runId}>
                <td>
                  <a href={`#/runs/${r.runId}`}>{r.runId.slice(0, 8)}</a>
                </td>
                <td>
                  {r.benchmarkId} ({r.tier})
                </td>
                <td>{modelOf(r)}</td>
                <td>{size(r)}</td>
                <td>
                  {r.requestedBy}
                  {r.requestedBy === session.principal ? ' (you)' : ''}
                </td>
                <td data-testid="run-approval-coverage">{coverageWords(r)}</td>
                <td>{r.purpose ? visible(r.purpose) : '—'}</td>
                <td>{when(r.createdAt)}</td>
                <td>
                  <ApproveRun run={r} label="Approve" ariaLabel={`approve run ${r.runId.slice(0, 8)}`} onConfirm={() => void approve(r)} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
