/** IRB approvals: the list, recording one (compliance), and one approval's history and changes. */
import { useState } from 'preact/hooks';
import { type Session, get, post } from '../api';
import type { Approval, ApprovalDetail, DriftCheck } from '../types';
import { ConfirmAct, Done, Field, holds, Loading, may, Page, Problem, SchemaProblems, Status, useAction, useLoad, when } from '../ui';
import { validateApproval } from '../validators';
import { approvalStatusAt, coverageText } from '../../../access/coverage';

/** The approval's status in the CLI's word (expired, not started), from the one function that says it. */
export const statusOf = (a: Approval) => approvalStatusAt(a, new Date());

const list = (text: string) =>
  text
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);

// No tier by default: a tier covers every benchmark of that tier, present and future, and a form must never grant it unasked.
const EMPTY = { protocolNumber: '', title: '', principalInvestigator: '', personnel: '', raters: '', benchmarks: '', endpoints: '', purpose: '', duaId: '', budgetUsd: '', expiresAt: '' };
const TIERS = ['approval-required', 'private'] as const;

function RecordApproval({ onRecorded }: { onRecorded: () => void }) {
  const [form, setForm] = useState<Record<string, string>>(EMPTY);
  const [tiers, setTiers] = useState<string[]>([]);
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
      tiers,
      purpose: form.purpose,
    };
    if (form.title) body.title = form.title;
    if (form.raters) body.raters = list(form.raters);
    if (form.endpoints) body.endpoints = list(form.endpoints);
    if (form.duaId) body.duaId = form.duaId;
    if (form.budgetUsd) body.budgetUsd = Number(form.budgetUsd);
    if (form.expiresAt) body.expiresAt = new Date(`${form.expiresAt}T23:59:59Z`).toISOString();
    const found = validateApproval(body);
    if (!(body.benchmarks as string[]).length && !tiers.length) found.push('benchmarks: name the benchmarks it covers (or tick a tier to cover every benchmark of it)');
    setProblems(found);
    if (found.length) return;
    try {
      const a = await post<Approval>('/v1/approvals', body);
      setDone(`approval ${a.protocolNumber} recorded (${a.approvalId.slice(0, 8)})`);
      setForm(EMPTY);
      setTiers([]);
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
        {field('raters', 'Clinician raters', 'clinicians who may rate rating studies of its runs; principal ids, comma-separated; none of them PI or personnel')}
        {field('benchmarks', 'Benchmarks', 'benchmark ids, comma-separated')}
        <fieldset aria-describedby="approval-tiers-hint">
          <legend>Whole tiers</legend>
          <p id="approval-tiers-hint" class="hint">
            Leave these unticked to cover only the benchmarks above. A tier covers every benchmark of that tier, those added later too.
          </p>
          {TIERS.map((t) => (
            <label key={t}>
              <input
                type="checkbox"
                name="tiers"
                value={t}
                checked={tiers.includes(t)}
                onChange={(e) => setTiers((e.target as HTMLInputElement).checked ? [...tiers, t] : tiers.filter((x) => x !== t))}
              />{' '}
              every {t} benchmark
            </label>
          ))}
        </fieldset>
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

/**
 * The approvals' detected drift not yet reviewed (src/runs/canary.ts): one line per check, in the
 * words of the API's notice (aggregates of k or more instances), and the review for compliance.
 */
function DriftNotices({ session }: { session: Session }) {
  const checks = useLoad(() => get<DriftCheck[]>('/v1/drift'), []);
  const { problem, done, act } = useAction();
  const open = (checks.data ?? []).filter((c) => c.state === 'drift' && !c.reviewedAt);
  const review = (approvalId: string, note: string) =>
    act(async () => {
      await post(`/v1/approvals/${approvalId}/review-drift`, note ? { note } : {});
      checks.reload();
      return "drift reviewed: the approval's results are no longer marked stale";
    });
  if (open.length === 0 && !done && !problem && !checks.error) return null;
  return (
    <section aria-labelledby="drift" class="notice" data-testid="drift-notices">
      <h2 id="drift">Model drift under approvals</h2>
      <Problem error={checks.error ?? problem} />
      <Done message={done} />
      <ul>
        {open.map((c) => (
          <li key={c.checkId}>
            <strong>{c.protocolNumber}</strong>: {c.notice} ({c.test}, {c.pairs} instances; its results are marked stale){' '}
            {may(session, 'approval.review-drift') ? (
              <ConfirmAct
                label="Mark reviewed"
                title={`Review the drift of ${c.protocolNumber}?`}
                consequence={<p>The runs under this approval will no longer be marked stale. The review is audited.</p>}
                confirmLabel={`Reviewed ${c.protocolNumber}`}
                reason
                onConfirm={(note) => review(c.approvalId, note)}
              />
            ) : null}
          </li>
        ))}
      </ul>
    </section>
  );
}

export function ApprovalsPage({ session }: { session: Session }) {
  const approvals = useLoad(() => get<Approval[]>('/v1/approvals'), []);
  return (
    <Page title="IRB approvals">
      <DriftNotices session={session} />
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
              <th scope="col">Covers</th>
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
                  <Status value={statusOf(a)} />
                </td>
                <td>{a.principalInvestigator}</td>
                <td>{a.personnel.join(', ')}</td>
                <td>{coverageText(a)}</td>
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
  const { problem, done, act } = useAction();
  const change = (what: 'suspend' | 'reinstate' | 'close', reason: string) =>
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
            <Status value={statusOf(a)} /> · PI {a.principalInvestigator} · personnel {a.personnel.join(', ')} · covers {coverageText(a)}
            {a.endpoints.length ? ` · endpoints ${a.endpoints.join(', ')}` : ''} · budget {a.budgetUsd === null ? 'none' : `$${a.budgetUsd}`} · expires {when(a.expiresAt)}
          </p>
          {a.canary ? (
            <p>
              Canary: {a.canary.instances} instances of {a.canary.benchmarkId}, re-run every {a.canary.everyDays} days and when an endpoint's fingerprint changes; drift when p &lt;{' '}
              {a.canary.threshold} and the mean moves by at least {a.canary.minDifference}.
            </p>
          ) : null}
          {holds(session, ['compliance']) && a.status !== 'closed' ? (
            <div class="actions">
              {a.status === 'active' ? (
                <ConfirmAct
                  label="Suspend"
                  title={`Suspend IRB approval ${a.protocolNumber}?`}
                  consequence={<p>No new run can use it, and the runs under it stop at their next instance. Another compliance officer can reinstate it.</p>}
                  confirmLabel={`Suspend ${a.protocolNumber}`}
                  reason
                  onConfirm={(reason) => change('suspend', reason)}
                />
              ) : null}
              {a.status === 'suspended' ? (
                <ConfirmAct
                  label="Reinstate"
                  title={`Reinstate IRB approval ${a.protocolNumber}?`}
                  consequence={
                    <p>
                      Runs may use it again for what it covers ({coverageText(a)}), by {a.personnel.join(', ')}.
                    </p>
                  }
                  confirmLabel={`Reinstate ${a.protocolNumber}`}
                  reason
                  onConfirm={(reason) => change('reinstate', reason)}
                />
              ) : null}
              <ConfirmAct
                label="Close"
                secondary
                title={`Close IRB approval ${a.protocolNumber}?`}
                consequence={<p>Closing is final: it can never be reinstated. No new run can use it, the runs under it stop at their next instance, and their results can no longer be released.</p>}
                confirmLabel={`Close ${a.protocolNumber}`}
                reason
                onConfirm={(reason) => change('close', reason)}
              />
            </div>
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
