/**
 * Audit review: search the trail (time, actor, type, run, outcome, rule), a run's timeline, the
 * chain's health with "verify now", and downloads (JSONL with checkpoints, CSV, FHIR). Everything
 * shown is what the trail holds: ids, hashes, counts, rules. Every read is audited by the API.
 */
import { useState } from 'preact/hooks';
import { get, query } from '../api';
import type { AuditEvent, AuditHealth, ExportView, VerifyReport } from '../types';
import { AUDIT_EVENT_TYPES } from '../../../audit/types';
import { Loading, Page, Problem, Status, useLoad, when } from '../ui';

const FIELDS = ['since', 'until', 'actor', 'type', 'run', 'outcome', 'rule'] as const;
type Filter = Partial<Record<(typeof FIELDS)[number] | 'limit' | 'order' | 'hideCalls', string>>;
/** A page of a search: before (newest first) or after (oldest first) this seq; none for the first page. */
type Cursor = { before?: number; after?: number };

/** A local date-time field as the API's ISO-8601 (UTC). */
const iso = (v: string | undefined) => (v ? new Date(v).toISOString() : undefined);

function apiQuery(f: Filter): Record<string, string | undefined> {
  return { since: iso(f.since), until: iso(f.until), actor: f.actor, type: f.type, run: f.run, outcome: f.outcome, rule: f.rule };
}

/** When, by whom and what the last verification found. */
export function lastVerification(h: AuditHealth): string {
  const v = h.lastVerify;
  if (!v) return 'never';
  const found = v.outcome === 'verified' ? 'verified' : v.outcome === 'broken' ? 'broken' : 'outcome not recorded (verified on the host)';
  return `${when(v.at)} by ${v.actor}: ${found}`;
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
              <td>{lastVerification(h)}</td>
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

export function EventTable({ events, order = 'oldest first' }: { events: AuditEvent[]; order?: string }) {
  return (
    <table data-testid="audit-events">
      <caption class="sr-only">Audit events, {order}</caption>
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

const FIRST: Filter = { limit: '200', order: 'newest', hideCalls: '' };

export function AuditPage() {
  const [form, setForm] = useState<Filter>(FIRST);
  const [filter, setFilter] = useState<Filter>(FIRST);
  const [cursor, setCursor] = useState<Cursor>({});
  // The answer carries the search it answers: the line over the table describes the rows shown, never
  // a search still on its way.
  const answer = useLoad(async () => {
    const url = `/v1/audit/events${query({ ...apiQuery(filter), limit: filter.limit, order: filter.order, exclude: filter.hideCalls ? 'endpoint.call' : undefined, before: cursor.before, after: cursor.after })}`;
    return { events: await get<AuditEvent[]>(url), asked: filter };
  }, [JSON.stringify(filter), JSON.stringify(cursor)]);
  const events = { data: answer.data?.events, error: answer.error };
  const asked = answer.data?.asked ?? filter;
  const set = (k: keyof Filter) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const exportHref = (format: string) => `/v1/audit/export${query({ ...apiQuery(filter), format })}`;
  const newest = asked.order !== 'oldest';
  const shown = events.data ?? [];
  const last = shown.at(-1);
  const full = shown.length > 0 && shown.length >= Number(asked.limit || 100);
  const nextPage = () => last && setCursor(newest ? { before: last.seq } : { after: last.seq });
  return (
    <Page title="Audit review">
      <ChainHealth />
      <h2>Search the trail</h2>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter(form);
          setCursor({});
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
          <select name="type" value={form.type ?? ''} onChange={set('type')}>
            <option value="">any</option>
            {AUDIT_EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
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
          Order
          <select name="order" value={form.order ?? 'newest'} onChange={set('order')}>
            <option value="newest">newest first</option>
            <option value="oldest">oldest first</option>
          </select>
        </label>
        <label>
          At most
          <input name="limit" inputMode="numeric" value={form.limit ?? ''} onInput={set('limit')} size={5} />
        </label>
        <label class="check">
          <input type="checkbox" name="hideCalls" checked={!!form.hideCalls} onChange={(e) => setForm({ ...form, hideCalls: (e.target as HTMLInputElement).checked ? 'yes' : '' })} /> Hide model calls
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
        </a>{' '}
        <span class="muted">(every event matched, model calls included, oldest first)</span>
      </p>
      <Problem error={events.error} />
      {!events.data ? (
        <Loading what="events" />
      ) : events.data.length === 0 ? (
        <p>No event matches{cursor.before || cursor.after ? ' on this page' : ''}.</p>
      ) : (
        <>
          <p class="muted" data-testid="audit-page">
            seq {shown[0]!.seq} to {last!.seq}, {newest ? 'newest first' : 'oldest first'}
            {asked.hideCalls ? ', model calls hidden' : ''}
          </p>
          <EventTable events={events.data} order={newest ? 'newest first' : 'oldest first'} />
        </>
      )}
      <div class="actions">
        {cursor.before || cursor.after ? (
          <button type="button" class="secondary" onClick={() => setCursor({})}>
            {newest ? 'Newest events' : 'Oldest events'}
          </button>
        ) : null}
        {full ? (
          <button type="button" class="secondary" onClick={nextPage}>
            {newest ? 'Older events' : 'Later events'}
          </button>
        ) : null}
      </div>
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

/** The stage of an event in words: the download of a released export shares its event type, not its meaning. */
function stageOf(e: AuditEvent): string {
  if (e.event_type === 'export.release' && e.rule === 'export.download') return 'export';
  return STAGE[e.event_type] ?? e.event_type;
}

/** "downloaded by jdoe", never "released by" someone who may not release: the act and its actor. */
function actedBy(e: AuditEvent): string {
  return e.event_type === 'export.release' && e.rule === 'export.download' ? 'downloaded by' : 'by';
}

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
                <strong>{stageOf(e)}</strong> {actedBy(e)} {e.actor_principal} ({e.actor_role}) — <Status value={e.outcome} />
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
