/**
 * Audit review: search the trail (time, actor, type, run, outcome, rule), a run's timeline, the
 * chain's health with "verify now", and downloads (JSONL with checkpoints, CSV, FHIR). Everything
 * shown is what the trail holds: ids, hashes, counts, rules. Every read is audited by the API.
 */
import { useState } from 'preact/hooks';
import { get, query } from '../api';
import type { AuditEvent, AuditHealth, ExportView, VerifyReport } from '../types';
import { Loading, Page, Problem, Status, useLoad, when } from '../ui';

const FIELDS = ['since', 'until', 'actor', 'type', 'run', 'outcome', 'rule'] as const;
type Filter = Partial<Record<(typeof FIELDS)[number] | 'limit', string>>;

/** A local date-time field as the API's ISO-8601 (UTC). */
const iso = (v: string | undefined) => (v ? new Date(v).toISOString() : undefined);

function apiQuery(f: Filter): Record<string, string | undefined> {
  return { since: iso(f.since), until: iso(f.until), actor: f.actor, type: f.type, run: f.run, outcome: f.outcome, rule: f.rule };
}

function ChainHealth() {
  const health = useLoad(() => get<AuditHealth>('/v1/audit/health'), []);
  const [report, setReport] = useState<VerifyReport | undefined>(undefined);
  const [problem, setProblem] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const verify = async () => {
    setBusy(true);
    setProblem(undefined);
    try {
      setReport(await get<VerifyReport>('/v1/audit/verify'));
      health.reload();
    } catch (e) {
      setProblem(e);
    } finally {
      setBusy(false);
    }
  };
  const h = health.data;
  return (
    <section aria-labelledby="chain">
      <h2 id="chain">The chain's health</h2>
      <Problem error={health.error ?? problem} />
      {!h ? (
        <Loading what="the chain's health" />
      ) : (
        <table>
          <caption class="sr-only">Head, checkpoints, witnesses and the last verification</caption>
          <tbody>
            <tr>
              <th scope="row">State</th>
              <td>{h.stopped ? <span class="status-bad">stopped (rule {h.stopped})</span> : <span class="status-ok">recording</span>}</td>
            </tr>
            <tr>
              <th scope="row">Events</th>
              <td>
                {h.events} (head seq {h.headSeq ?? '—'})
              </td>
            </tr>
            <tr>
              <th scope="row">Signed checkpoints</th>
              <td>
                {h.checkpoints}
                {h.lastCheckpoint ? `, the last at seq ${h.lastCheckpoint.seq}` : ''} {h.headSeq !== null && h.lastCheckpoint ? `(${h.headSeq - h.lastCheckpoint.seq} events since)` : ''}
              </td>
            </tr>
            <tr>
              <th scope="row">Witnesses</th>
              <td>
                {h.witnesses.length === 0
                  ? 'none configured'
                  : h.witnesses.map((w) => (
                      <div key={w.dir}>
                        {w.dir}: {w.problem ? <span class="status-bad">{w.problem}</span> : `saw seq ${w.seq ?? '—'}`}
                      </div>
                    ))}
              </td>
            </tr>
            <tr>
              <th scope="row">Last verification</th>
              <td>{h.lastVerify ? `${when(h.lastVerify.at)} by ${h.lastVerify.actor}` : 'never'}</td>
            </tr>
          </tbody>
        </table>
      )}
      <button type="button" onClick={verify} disabled={busy}>
        {busy ? 'Verifying…' : 'Verify now'}
      </button>
      {report ? (
        <div class={report.ok ? 'notice' : 'error'} role="status" data-testid="verify-result">
          {report.ok ? 'Verified' : 'Verification failed'}: {report.events} events, {report.checkpoints} checkpoints, {report.witnesses} witnesses
          {report.macChecked ? ', MACs checked' : ''}.
          {report.findings.length ? (
            <ul>
              {report.findings.map((f, i) => (
                <li key={i}>
                  seq {f.seq ?? '—'}: {f.problem}
                </li>
              ))}
            </ul>
          ) : null}
          {report.warnings.length ? (
            <ul>
              {report.warnings.map((f, i) => (
                <li key={i}>
                  warning, seq {f.seq ?? '—'}: {f.problem}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}

export function EventTable({ events }: { events: AuditEvent[] }) {
  return (
    <table>
      <caption class="sr-only">Audit events, oldest first</caption>
      <thead>
        <tr>
          <th scope="col" class="num">
            Seq
          </th>
          <th scope="col">Recorded</th>
          <th scope="col">Type</th>
          <th scope="col">Outcome</th>
          <th scope="col">Rule</th>
          <th scope="col">Actor</th>
          <th scope="col">Run</th>
          <th scope="col">Endpoint</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.seq}>
            <td class="num">{e.seq}</td>
            <td>{when(e.recorded_at)}</td>
            <td>{e.event_type}</td>
            <td>
              <Status value={e.outcome} />
            </td>
            <td>{e.rule ?? '—'}</td>
            <td>
              {e.actor_principal} ({e.actor_role})
            </td>
            <td>{e.run_id ? <a href={`#/audit/run/${e.run_id}`}>{e.run_id.slice(0, 8)}</a> : '—'}</td>
            <td>{e.endpoint_id ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function AuditPage() {
  const [form, setForm] = useState<Filter>({ limit: '200' });
  const [filter, setFilter] = useState<Filter>({ limit: '200' });
  const events = useLoad(() => get<AuditEvent[]>(`/v1/audit/events${query({ ...apiQuery(filter), limit: filter.limit })}`), [JSON.stringify(filter)]);
  const set = (k: keyof Filter) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const exportHref = (format: string) => `/v1/audit/export${query({ ...apiQuery(filter), format })}`;
  return (
    <Page title="Audit review">
      <ChainHealth />
      <h2>Search the trail</h2>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter(form);
        }}
      >
        <label>
          Since
          <input type="datetime-local" name="since" value={form.since ?? ''} onInput={set('since')} />
        </label>
        <label>
          Until
          <input type="datetime-local" name="until" value={form.until ?? ''} onInput={set('until')} />
        </label>
        <label>
          Actor
          <input name="actor" value={form.actor ?? ''} onInput={set('actor')} size={12} />
        </label>
        <label>
          Type
          <input name="type" value={form.type ?? ''} onInput={set('type')} size={14} placeholder="e.g. run.approve" />
        </label>
        <label>
          Run
          <input name="run" value={form.run ?? ''} onInput={set('run')} size={14} />
        </label>
        <label>
          Outcome
          <select name="outcome" value={form.outcome ?? ''} onChange={set('outcome')}>
            <option value="">any</option>
            <option value="success">success</option>
            <option value="denied">denied</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <label>
          Rule
          <input name="rule" value={form.rule ?? ''} onInput={set('rule')} size={16} />
        </label>
        <label>
          At most
          <input name="limit" inputMode="numeric" value={form.limit ?? ''} onInput={set('limit')} size={5} />
        </label>
        <button type="submit">Search</button>
      </form>
      <p>
        Download what this search matches:{' '}
        <a href={exportHref('jsonl')} download="audit.jsonl">
          JSON lines (with signed checkpoints)
        </a>{' '}
        ·{' '}
        <a href={exportHref('csv')} download="audit.csv">
          CSV
        </a>{' '}
        ·{' '}
        <a href={exportHref('fhir')} download="audit.fhir.json">
          FHIR AuditEvent
        </a>
      </p>
      <Problem error={events.error} />
      {!events.data ? <Loading what="events" /> : events.data.length === 0 ? <p>No event matches.</p> : <EventTable events={events.data} />}
    </Page>
  );
}

/** The stages of a run as the trail tells them, in order. */
const STAGE: Record<string, string> = {
  'run.request': 'requested',
  'run.approve': 'approved',
  'run.start': 'started',
  'endpoint.call': 'model call',
  'run.complete': 'completed',
  'run.fail': 'failed',
  'run.cancel': 'cancelled',
  'export.request': 'export requested',
  'export.release': 'export released',
};

/** The run's own events and those of every export that holds it, in the trail's order. */
async function runTimeline(runId: string): Promise<AuditEvent[]> {
  const [own, exports] = await Promise.all([get<AuditEvent[]>(`/v1/audit/events${query({ run: runId, limit: 5000 })}`), get<ExportView[]>('/v1/exports?limit=500')]);
  const ofExports = await Promise.all(exports.filter((e) => e.runIds.includes(runId)).map((e) => get<AuditEvent[]>(`/v1/audit/events${query({ export: e.exportId, limit: 1000 })}`)));
  const bySeq = new Map([...own, ...ofExports.flat()].map((e) => [e.seq, e]));
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

export function RunTimelinePage({ runId }: { runId: string }) {
  const events = useLoad(() => runTimeline(runId), [runId]);
  const calls = (events.data ?? []).filter((e) => e.event_type === 'endpoint.call');
  const other = (events.data ?? []).filter((e) => e.event_type !== 'endpoint.call');
  return (
    <Page title={`Audit timeline of run ${runId.slice(0, 8)}`}>
      <Problem error={events.error} />
      {!events.data ? (
        <Loading what="the timeline" />
      ) : (
        <>
          <p>
            {events.data.length} events; {calls.length} model-call events ({calls.filter((c) => c.outcome === 'success').length} succeeded, {calls.filter((c) => c.outcome !== 'success').length} not).
          </p>
          <ol class="timeline">
            {other.map((e) => (
              <li key={e.seq}>
                <span class="when">{when(e.recorded_at)}</span>
                <strong>{STAGE[e.event_type] ?? e.event_type}</strong> by {e.actor_principal} ({e.actor_role}) — <Status value={e.outcome} />
                {e.rule ? ` · rule ${e.rule}` : ''} · seq {e.seq}
                {e.export_id ? (
                  <>
                    {' '}
                    · export <a href={`#/exports/${e.export_id}`}>{e.export_id.slice(0, 8)}</a>
                  </>
                ) : null}
              </li>
            ))}
          </ol>
          <h2>Every event</h2>
          <EventTable events={events.data} />
        </>
      )}
    </Page>
  );
}
