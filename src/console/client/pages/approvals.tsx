/** IRB approvals: the list, recording one (compliance), and one approval's history and changes. */
import { useState } from 'preact/hooks';
import { type Session, get, post } from '../api';
import type { Approval, ApprovalDetail } from '../types';
import { Done, Field, holds, Loading, Page, Problem, SchemaProblems, Status, useAction, useLoad, when } from '../ui';
import { validateApproval } from '../validators';

const list = (text: string) =>
  text
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);

const EMPTY = { protocolNumber: '', title: '', principalInvestigator: '', personnel: '', benchmarks: '', tiers: 'private', endpoints: '', purpose: '', duaId: '', budgetUsd: '', expiresAt: '' };

function RecordApproval({ onRecorded }: { onRecorded: () => void }) {
  const [form, setForm] = useState<Record<string, string>>(EMPTY);
  const [problems, setProblems] = useState<string[]>([]);
  const [refusal, setRefusal] = useState<unknown>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const set = (k: string) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const submit = async (e: Event) => {
    e.preventDefault();
    setRefusal(undefined);
    setDone(undefined);
    const body: Record<string, unknown> = {
      protocolNumber: form.protocolNumber,
      principalInvestigator: form.principalInvestigator,
      personnel: list(form.personnel ?? ''),
      benchmarks: list(form.benchmarks ?? ''),
      tiers: list(form.tiers ?? ''),
      purpose: form.purpose,
    };
    if (form.title) body.title = form.title;
    if (form.endpoints) body.endpoints = list(form.endpoints);
    if (form.duaId) body.duaId = form.duaId;
    if (form.budgetUsd) body.budgetUsd = Number(form.budgetUsd);
    if (form.expiresAt) body.expiresAt = new Date(`${form.expiresAt}T23:59:59Z`).toISOString();
    const found = validateApproval(body);
    setProblems(found);
    if (found.length) return;
    try {
      const a = await post<Approval>('/v1/approvals', body);
      setDone(`approval ${a.protocolNumber} recorded (${a.approvalId.slice(0, 8)})`);
      setForm(EMPTY);
      onRecorded();
    } catch (err) {
      setRefusal(err);
    }
  };
  const field = (k: string, label: string, hint?: string) => (
    <Field id={`approval-${k}`} label={label} {...(hint ? { hint } : {})}>
      <input id={`approval-${k}`} {...(hint ? { 'aria-describedby': `approval-${k}-hint` } : {})} name={k} value={form[k]} onInput={set(k)} />
    </Field>
  );
  return (
    <section aria-labelledby="record">
      <h2 id="record">Record an IRB approval</h2>
      <Problem error={refusal} />
      <Done message={done} />
      <SchemaProblems what="approval" problems={problems} />
      <form class="stack" onSubmit={submit} noValidate>
        {field('protocolNumber', 'Protocol number')}
        {field('title', 'Title', 'optional; no patient information')}
        {field('principalInvestigator', 'Principal investigator', 'principal id')}
        {field('personnel', 'Personnel', 'principal ids, comma-separated')}
        {field('benchmarks', 'Benchmarks', 'benchmark ids, comma-separated')}
        <Field id="approval-tiers" label="Tiers">
          <select id="approval-tiers" name="tiers" value={form.tiers} onChange={set('tiers')}>
            <option value="private">private</option>
            <option value="approval-required">approval-required</option>
            <option value="approval-required,private">approval-required and private</option>
          </select>
        </Field>
        {field('endpoints', 'Endpoints', 'optional: only these endpoint ids')}
        {field('purpose', 'Purpose')}
        {field('duaId', 'Data use agreement', 'optional')}
        {field('budgetUsd', 'Budget (USD)', 'optional')}
        <Field id="approval-expires" label="Expires" hint="optional, a day (UTC)">
          <input id="approval-expires" aria-describedby="approval-expires-hint" name="expiresAt" type="date" value={form.expiresAt} onInput={set('expiresAt')} />
        </Field>
        <div>
          <button type="submit">Record the approval</button>
        </div>
      </form>
    </section>
  );
}

export function ApprovalsPage({ session }: { session: Session }) {
  const approvals = useLoad(() => get<Approval[]>('/v1/approvals'), []);
  return (
    <Page title="IRB approvals">
      <Problem error={approvals.error} />
      {!approvals.data ? (
        <Loading what="approvals" />
      ) : approvals.data.length === 0 ? (
        <p>No IRB approval is recorded.</p>
      ) : (
        <table>
          <caption class="sr-only">IRB approvals</caption>
          <thead>
            <tr>
              <th scope="col">Protocol</th>
              <th scope="col">Status</th>
              <th scope="col">PI</th>
              <th scope="col">Personnel</th>
              <th scope="col">Benchmarks</th>
              <th scope="col">Tiers</th>
              <th scope="col">Expires</th>
              <th scope="col">Version</th>
            </tr>
          </thead>
          <tbody>
            {approvals.data.map((a) => (
              <tr key={a.approvalId}>
                <td>
                  <a href={`#/approvals/${a.approvalId}`}>{a.protocolNumber}</a>
                </td>
                <td>
                  <Status value={a.status} />
                </td>
                <td>{a.principalInvestigator}</td>
                <td>{a.personnel.join(', ')}</td>
                <td>{a.benchmarks.join(', ') || 'all of its tiers'}</td>
                <td>{a.tiers.join(', ')}</td>
                <td>{when(a.expiresAt)}</td>
                <td class="num">{a.version}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {holds(session, ['compliance']) ? <RecordApproval onRecorded={approvals.reload} /> : null}
    </Page>
  );
}

export function ApprovalDetailPage({ id, session }: { id: string; session: Session }) {
  const detail = useLoad(() => get<ApprovalDetail>(`/v1/approvals/${id}`), [id]);
  const [reason, setReason] = useState('');
  const { problem, done, act } = useAction();
  const change = (what: 'suspend' | 'reinstate' | 'close') =>
    act(async () => {
      await post(`/v1/approvals/${id}/${what}`, { reason });
      detail.reload();
      return `approval ${what === 'close' ? 'closed' : `${what}ed`}`;
    });
  const a = detail.data?.approval;
  return (
    <Page title={a ? `IRB approval ${a.protocolNumber}` : 'IRB approval'}>
      <Problem error={detail.error ?? problem} />
      <Done message={done} />
      {!a ? (
        <Loading what="the approval" />
      ) : (
        <>
          <p>
            <Status value={a.status} /> · PI {a.principalInvestigator} · personnel {a.personnel.join(', ')} · tiers {a.tiers.join(', ')} · benchmarks {a.benchmarks.join(', ') || 'all of its tiers'}
            {a.endpoints.length ? ` · endpoints ${a.endpoints.join(', ')}` : ''} · budget {a.budgetUsd === null ? 'none' : `$${a.budgetUsd}`} · expires {when(a.expiresAt)}
          </p>
          {holds(session, ['compliance']) && a.status !== 'closed' ? (
            <form class="inline" onSubmit={(e) => e.preventDefault()}>
              <label>
                Reason
                <input name="reason" value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
              </label>
              {a.status === 'active' ? (
                <button type="button" onClick={() => change('suspend')}>
                  Suspend
                </button>
              ) : null}
              {a.status === 'suspended' ? (
                <button type="button" onClick={() => change('reinstate')}>
                  Reinstate
                </button>
              ) : null}
              <button type="button" class="secondary" onClick={() => change('close')}>
                Close
              </button>
            </form>
          ) : null}
          <h2>History</h2>
          <table>
            <caption class="sr-only">Every version of the approval</caption>
            <thead>
              <tr>
                <th scope="col" class="num">
                  Version
                </th>
                <th scope="col">Change</th>
                <th scope="col">By</th>
                <th scope="col">At</th>
              </tr>
            </thead>
            <tbody>
              {detail.data!.history.map((h) => (
                <tr key={h.version}>
                  <td class="num">{h.version}</td>
                  <td>{h.change}</td>
                  <td>{h.changedBy}</td>
                  <td>{when(h.changedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Page>
  );
}
