/** Runs: my runs with live progress, requesting one, a run's figures, and the officer's approval queue. */
import { useState } from 'preact/hooks';
import { type Session, get, post } from '../api';
import type { Approval, Benchmark, Endpoint, ExportView, Run } from '../types';
import { Done, Field, holds, Loading, MetricsHead, Page, Problem, SchemaProblems, Status, score, usd, useAction, useLoad, when } from '../ui';
import { validateRunRequest } from '../validators';

const ACTIVE = ['requested', 'approved', 'running'];
const isActive = (r: Run | undefined) => !!r && ACTIVE.includes(r.status);

/** What the run is doing, in words: planning, awaiting approval, or counts. */
function phase(r: Run): string {
  if (r.status === 'requested') return r.tier === 'private' ? 'awaiting approval' : 'requested';
  if (r.status === 'approved' || (r.status === 'running' && r.instanceCount === null)) return 'planning';
  return r.status;
}

function finished(r: Run): number | null {
  if (!r.counts) return null;
  return r.counts.done + r.counts.blocked + r.counts.failed;
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
                  <Status value={r.status} />
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
                  {r.endpointId}
                  {r.testEndpoint ? ' (test endpoint: development, never real data)' : ''}
                </td>
              </tr>
              <tr>
                <th scope="row">Status</th>
                <td>
                  <Status value={r.status} /> {r.status !== phase(r) ? `(${phase(r)})` : ''} {r.errorCode ? `: ${r.errorCode}` : ''}
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
                <td>{r.irbProtocol ?? '—'}</td>
              </tr>
              <tr>
                <th scope="row">Finished</th>
                <td>{when(r.finishedAt)}</td>
              </tr>
            </tbody>
          </table>
          <div class="actions">
            {r.status === 'requested' && holds(session, ['compliance']) ? (
              <button type="button" onClick={() => change(`/v1/runs/${runId}/approve`, {}, 'run approved')}>
                Approve this run
              </button>
            ) : null}
            {isActive(r) ? (
              <button type="button" class="secondary" onClick={() => change(`/v1/runs/${runId}/cancel`, { reason: 'cancelled from the console' }, 'cancelling; calls in flight will finish')}>
                Cancel this run
              </button>
            ) : null}
            {r.status === 'completed' && r.requestedBy === session.principal ? (
              <button type="button" onClick={requestExport}>
                Request an export of this run
              </button>
            ) : null}
            {holds(session, ['compliance', 'auditor']) ? <a href={`#/audit/run/${runId}`}>Audit timeline of this run</a> : null}
          </div>
          <h2>Progress</h2>
          <p>
            <img class="picture" src={`/v1/pictures/runs/${runId}/progress.svg?v=${finished(r) ?? 0}-${r.status}`} alt={`Progress of the run: ${phase(r)}`} />
          </p>
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
            </>
          )}
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
  const [form, setForm] = useState<Record<string, string>>({ benchmarkId: '', endpointId: '', approvalId: '', purpose: '', maxInstances: '' });
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
  return (
    <Page title="Request a run">
      <Problem error={choices.error ?? refusal} />
      <SchemaProblems what="request" problems={problems} />
      {!c ? (
        <Loading what="benchmarks and endpoints" />
      ) : (
        <form class="stack" onSubmit={submit} noValidate>
          <Field id="run-benchmark" label="Benchmark">
            <select id="run-benchmark" name="benchmarkId" value={form.benchmarkId} onChange={set('benchmarkId')}>
              <option value="">choose a benchmark</option>
              {c.benchmarks.map((b) => (
                <option key={b.id} value={b.id}>
                  {b.displayName} ({b.id}, {b.tier})
                </option>
              ))}
            </select>
          </Field>
          <Field id="run-endpoint" label="Endpoint">
            <select id="run-endpoint" name="endpointId" value={form.endpointId} onChange={set('endpointId')}>
              <option value="">choose an endpoint</option>
              {c.endpoints.map((e) => (
                <option key={e.id} value={e.id}>
                  {e.id} (up to {e.classification.maxTier}
                  {e.classification.development ? ', development' : ''})
                </option>
              ))}
            </select>
          </Field>
          <Field id="run-approval" label="IRB approval" hint="needed for approval-required and private benchmarks">
            <select id="run-approval" aria-describedby="run-approval-hint" name="approvalId" value={form.approvalId} onChange={set('approvalId')}>
              <option value="">none (public benchmarks)</option>
              {c.approvals
                .filter((a) => a.status === 'active')
                .map((a) => (
                  <option key={a.approvalId} value={a.approvalId}>
                    {a.protocolNumber}: {a.title ?? a.purpose}
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
          <div>
            <button type="submit">Request the run</button>
          </div>
        </form>
      )}
    </Page>
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
              <th scope="col">Benchmark</th>
              <th scope="col">Endpoint</th>
              <th scope="col">Requested by</th>
              <th scope="col">IRB protocol</th>
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
                <td>{r.endpointId}</td>
                <td>
                  {r.requestedBy}
                  {r.requestedBy === session.principal ? ' (you)' : ''}
                </td>
                <td>{r.irbProtocol ?? '—'}</td>
                <td>{when(r.createdAt)}</td>
                <td>
                  <button type="button" onClick={() => approve(r)} aria-label={`approve run ${r.runId.slice(0, 8)}`}>
                    Approve
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}
