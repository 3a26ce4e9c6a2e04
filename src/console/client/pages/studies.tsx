/**
 * Rating studies: clinicians rate, blinded, a sample of a jury benchmark's answers, and the jury's
 * agreement with them is measured as MedHELM measured it. Three pages: the list (with the form that
 * opens a study and its sample-size planner), one study (progress and agreement: aggregates only,
 * never one clinician's ratings), and the clinician's rating queue (one blinded item at a time: no
 * run, model or endpoint; keyboard: 1-5 score the criterion in focus and move on, Enter saves).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Session, get, post, query } from '../api';
import type { AgreementStat, StudyDetail, StudyNext, StudyPlan } from '../types';
import { ConfirmAct, Done, Field, Loading, may, Page, Problem, score, Status, useAction, useLoad, visible, when } from '../ui';

type StudyView = StudyDetail['study'];
type Criterion = StudyView['criteria'][number];
type Item = NonNullable<StudyNext['item']>;
type Stat = AgreementStat;
type Plan = StudyPlan;
interface RunLite {
  runId: string;
  benchmarkId: string;
  status: string;
  model: string | null;
  endpointId: string;
  mainMetric: string;
  createdAt: string;
}

const FLAGS = [
  ['phi-visible', 'an identifier is visible'],
  ['unreadable', 'unreadable'],
  ['off-topic', 'the answer is off topic'],
  ['not-qualified', 'outside my expertise'],
  ['other', 'other'],
] as const;

function stat(s: Stat | undefined, digits = 2) {
  if (!s) return '—';
  if (s.value === null) return <span title={s.reason ?? ''}>n/a</span>;
  return s.ci95 ? `${score(s.value, digits)} [${score(s.ci95.low, digits)}, ${score(s.ci95.high, digits)}]` : score(s.value, digits);
}

export function StudiesPage({ session }: { session: Session }) {
  const studies = useLoad(() => get<StudyView[]>('/v1/studies'), []);
  const clinician = may(session, 'study.rate');
  return (
    <Page title="Rating studies">
      <p>
        Clinicians rate, blinded, a sample of the answers of completed runs of a jury benchmark; the study then measures the jury's agreement with them (ICC(3,k) as MedHELM did, and more). Only
        aggregates leave a study.
      </p>
      <Problem error={studies.error} />
      {!studies.data ? (
        <Loading what="rating studies" />
      ) : studies.data.length === 0 ? (
        <p>No rating study yet.</p>
      ) : (
        <table>
          <caption>Rating studies</caption>
          <thead>
            <tr>
              <th scope="col">Study</th>
              <th scope="col">Benchmark</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">
                Items
              </th>
              <th scope="col">Opened</th>
              <th scope="col">Open</th>
            </tr>
          </thead>
          <tbody>
            {studies.data.map((s) => (
              <tr key={s.studyId}>
                <td>{visible(s.title)}</td>
                <td>{s.benchmarkId ?? 'blinded'}</td>
                <td>
                  <Status value={s.status} />
                </td>
                <td class="num">{s.items}</td>
                <td>
                  {when(s.openedAt)} by {s.openedBy}
                </td>
                <td>
                  {clinician && s.status === 'open' ? <a href={`#/rate/${s.studyId}`}>Rate {visible(s.title)}</a> : null}{' '}
                  {s.runIds ? <a href={`#/studies/${s.studyId}`}>Agreement of {visible(s.title)}</a> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {may(session, 'study.open') ? <OpenStudy onOpened={studies.reload} /> : null}
    </Page>
  );
}

/** The form that opens a study, with Zou's sample-size planner beside it. */
function OpenStudy({ onOpened }: { onOpened: () => void }) {
  const runs = useLoad(() => get<RunLite[]>('/v1/runs'), []);
  const [chosen, setChosen] = useState<string[]>([]);
  const [form, setForm] = useState({ title: '', instancesPerRun: '10', ratersPerItem: '2', icc: '0.5', width: '0.4', assurance: '0.8' });
  const [plan, setPlan] = useState<Plan | undefined>(undefined);
  const [planProblem, setPlanProblem] = useState<unknown>(undefined);
  const { problem, done, act } = useAction();
  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value });
  const juryRuns = (runs.data ?? []).filter((r) => r.status === 'completed' && r.mainMetric.startsWith('jury_score'));
  const population = juryRuns.filter((r) => chosen.includes(r.runId)).length;
  useEffect(() => {
    get<Plan>(`/v1/studies/plan${query({ icc: form.icc, width: form.width, raters: form.ratersPerItem, assurance: form.assurance })}`).then(
      (p) => {
        setPlan(p);
        setPlanProblem(undefined);
      },
      (e: unknown) => setPlanProblem(e),
    );
  }, [form.icc, form.width, form.ratersPerItem, form.assurance]);
  const submit = (e: Event) => {
    e.preventDefault();
    void act(async () => {
      const { study: s } = await post<{ study: StudyView }>('/v1/studies', {
        title: form.title,
        runIds: chosen,
        instancesPerRun: Number(form.instancesPerRun),
        ratersPerItem: Number(form.ratersPerItem),
      });
      onOpened();
      return `Opened study ${s.studyId}: ${s.items} items.`;
    });
  };
  const toggle = (id: string) => setChosen(chosen.includes(id) ? chosen.filter((c) => c !== id) : [...chosen, id]);
  return (
    <section aria-labelledby="open-study">
      <h2 id="open-study">Open a rating study</h2>
      <Problem error={runs.error} />
      <form onSubmit={submit}>
        <Field id="study-title" label="Title" hint="a short label clinicians see, e.g. ACI-Bench jury check, spring">
          <input id="study-title" aria-describedby="study-title-hint" value={form.title} onInput={set('title')} maxLength={120} required />
        </Field>
        <fieldset>
          <legend>Completed runs of one jury benchmark</legend>
          {juryRuns.length === 0 ? <p class="muted">No completed run of a jury benchmark.</p> : null}
          {juryRuns.map((r) => (
            <label key={r.runId} class="check">
              <input type="checkbox" checked={chosen.includes(r.runId)} onChange={() => toggle(r.runId)} /> {r.benchmarkId} · {visible(r.model ?? r.endpointId)} · {when(r.createdAt)} ·{' '}
              <code>{r.runId.slice(0, 8)}</code>
            </label>
          ))}
        </fieldset>
        <Field id="study-per-run" label="Instances per run">
          <input id="study-per-run" type="number" min={1} max={1000} value={form.instancesPerRun} onInput={set('instancesPerRun')} />
        </Field>
        <Field id="study-raters" label="Clinicians per item">
          <input id="study-raters" type="number" min={1} max={20} value={form.ratersPerItem} onInput={set('ratersPerItem')} />
        </Field>
        <fieldset aria-describedby="plan-result">
          <legend>Sample-size planner (Zou 2012)</legend>
          <Field id="plan-icc" label="Expected ICC">
            <input id="plan-icc" type="number" step="0.05" min={0.05} max={0.95} value={form.icc} onInput={set('icc')} />
          </Field>
          <Field id="plan-width" label="Confidence interval width">
            <input id="plan-width" type="number" step="0.05" min={0.05} max={1} value={form.width} onInput={set('width')} />
          </Field>
          <Field id="plan-assurance" label="Assurance probability">
            <input id="plan-assurance" type="number" step="0.05" min={0.5} max={0.99} value={form.assurance} onInput={set('assurance')} />
          </Field>
          <p id="plan-result" data-testid="plan-result" aria-live="polite">
            {plan
              ? `Rate at least ${plan.instances} items (${form.ratersPerItem} clinicians each) for a 95% interval no wider than ${form.width} with probability ${form.assurance}.${
                  population ? ` With ${population} run(s) chosen: about ${Math.ceil(plan.instances / population)} instances per run.` : ''
                }`
              : null}
          </p>
          <Problem error={planProblem} />
        </fieldset>
        <button type="submit">Open the study</button>
      </form>
      <Problem error={problem} />
      <Done message={done} />
    </section>
  );
}

export function StudyPage({ id, session }: { id: string; session: Session }) {
  const detail = useLoad(() => get<StudyDetail>(`/v1/studies/${encodeURIComponent(id)}`), [id]);
  const { problem, done, act } = useAction();
  const d = detail.data;
  return (
    <Page title={d ? `Rating study: ${d.study.title}` : 'Rating study'}>
      <Problem error={detail.error} />
      {!d ? (
        <Loading what="the study" />
      ) : (
        <>
          <dl class="facts">
            <dt>Benchmark</dt>
            <dd>{d.study.benchmarkId}</dd>
            <dt>Status</dt>
            <dd>
              <Status value={d.study.status} />
            </dd>
            <dt>Runs</dt>
            <dd>
              {(d.study.runIds ?? []).map((r) => (
                <code key={r}>{r.slice(0, 8)} </code>
              ))}
            </dd>
            <dt>Criteria</dt>
            <dd>{d.study.criteria.map((c) => `${c.name} (${c.min}-${c.max})`).join(', ')}</dd>
            <dt>Progress</dt>
            <dd data-testid="study-progress">
              {d.progress.itemsCovered} of {d.progress.items} items rated by {d.study.ratersPerItem} clinicians; {d.progress.raters} clinicians, {d.progress.rated} ratings, {d.progress.skipped}{' '}
              skipped, {d.progress.flagged} flagged
            </dd>
          </dl>
          <Agreement agreement={d.agreement} />
          {d.study.status === 'open' ? (
            <ConfirmAct
              label="Close the study"
              title={`Close the rating study ${d.study.title}?`}
              consequence="No clinician can rate its items any more, and it cannot be reopened. Its agreement is then what exports of this benchmark state as the jury's validation."
              confirmLabel="Close the study"
              onConfirm={() => void act(async () => (await post(`/v1/studies/${encodeURIComponent(id)}/close`, {}), detail.reload(), 'The study is closed.'))}
            />
          ) : null}
          <Problem error={problem} />
          <Done message={done} />
          {may(session, 'study.rate') && d.study.status === 'open' ? <a href={`#/rate/${id}`}>Rate its items</a> : null}
        </>
      )}
    </Page>
  );
}

function Agreement({ agreement }: { agreement: StudyDetail['agreement'] }) {
  if (!agreement) return <p>No agreement yet: it needs items rated by clinicians.</p>;
  return (
    <section aria-labelledby="agreement">
      <h2 id="agreement">Agreement with the clinicians</h2>
      {agreement.note ? <p class="muted">{agreement.note}</p> : null}
      <table data-testid="agreement">
        <caption>Jury against the clinicians' mean (z-scored composites), 95% intervals</caption>
        <thead>
          <tr>
            <th scope="col">Dataset</th>
            <th scope="col" class="num">
              Items
            </th>
            <th scope="col" class="num">
              Clinicians
            </th>
            <th scope="col">ICC(3,k)</th>
            <th scope="col">Spearman</th>
            <th scope="col">Weighted kappa</th>
            <th scope="col">Clinician-clinician ICC</th>
            <th scope="col">ROUGE-L ICC</th>
          </tr>
        </thead>
        <tbody>
          {agreement.rows.map((r) => (
            <tr key={r.dataset}>
              <th scope="row">{r.dataset}</th>
              <td class="num">{r.items}</td>
              <td class="num">{r.clinicians}</td>
              <td>{stat(r.icc)}</td>
              <td>{stat(r.spearman)}</td>
              <td>{stat(r.kappa)}</td>
              <td>{stat(r.clinicianClinicianIcc)}</td>
              <td>{r.rougeL ? stat(r.rougeL.icc) : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {agreement.rows.some((r) => r.judges?.length) ? (
        <table>
          <caption>Each judge against the clinicians</caption>
          <thead>
            <tr>
              <th scope="col">Dataset</th>
              <th scope="col">Judge</th>
              <th scope="col">ICC(3,k)</th>
              <th scope="col">Spearman</th>
            </tr>
          </thead>
          <tbody>
            {agreement.rows.flatMap((r) =>
              (r.judges ?? []).map((j) => (
                <tr key={`${r.dataset}-${j.judge}`}>
                  <td>{r.dataset}</td>
                  <td>{visible(j.judge)}</td>
                  <td>{stat(j.icc)}</td>
                  <td>{stat(j.spearman)}</td>
                </tr>
              )),
            )}
          </tbody>
        </table>
      ) : null}
      {agreement.rankStability?.length ? (
        <table>
          <caption>Leaderboard rank stability with each judge left out (Kendall's tau against the full jury)</caption>
          <thead>
            <tr>
              <th scope="col">Judge left out</th>
              <th scope="col">Kendall tau</th>
            </tr>
          </thead>
          <tbody>
            {agreement.rankStability.map((r) => (
              <tr key={r.judge}>
                <td>{visible(r.judge)}</td>
                <td>{r.tau === null ? 'n/a' : score(r.tau, 2)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** The clinician's queue: one blinded item at a time. */
export function RatePage({ id }: { id: string }) {
  const next = useLoad(() => get<StudyNext>(`/v1/studies/${encodeURIComponent(id)}/next`), [id]);
  const item = next.data?.item ?? null;
  return (
    <Page title="Rate answers">
      <Problem error={next.error} />
      {!next.data ? (
        <Loading what="the next item" />
      ) : !item ? (
        <p data-testid="rate-finished">Nothing left for you to rate in this study ({next.data.progress?.done ?? 0} done). Thank you.</p>
      ) : (
        <RateItem key={item.itemId} item={item} onDone={next.reload} />
      )}
    </Page>
  );
}

function RateItem({ item, onDone }: { item: Item; onDone: () => void }) {
  const [scores, setScores] = useState<Record<string, number>>({});
  const [flag, setFlag] = useState<string>('');
  const { problem, act } = useAction();
  const groups = useRef<HTMLFieldSetElement[]>([]);
  const url = `/v1/studies/${encodeURIComponent(item.studyId)}/items/${encodeURIComponent(item.itemId)}`;
  const complete = item.criteria.every((c) => scores[c.name] !== undefined);
  const send = (body: unknown) =>
    act(async () => {
      await post(url, body);
      onDone();
      return undefined;
    });
  const save = (e?: Event) => {
    e?.preventDefault();
    if (complete) void send({ state: 'rated', scores });
  };
  // Digits score the criterion whose group has the focus, then move to the next group.
  const onKey = (i: number, c: Criterion) => (e: KeyboardEvent) => {
    const n = Number(e.key);
    if (!Number.isInteger(n) || n < c.min || n > c.max) return;
    e.preventDefault();
    setScores((s) => ({ ...s, [c.name]: n }));
    const nextGroup = groups.current[i + 1];
    const radio = nextGroup?.querySelector<HTMLInputElement>('input[type=radio]');
    if (radio) radio.focus();
    else document.getElementById('rate-save')?.focus();
  };
  useEffect(() => {
    groups.current[0]?.querySelector<HTMLInputElement>('input[type=radio]')?.focus();
  }, [item.itemId]);
  return (
    <form onSubmit={save} aria-describedby="rate-help">
      <p id="rate-help" class="muted">
        Item {item.progress.done + 1} of {item.progress.total}. You see what the model was asked (de-identified) and its answer; not which model answered. Keys: 1-
        {item.criteria[0]?.max ?? 5} score the criterion in focus, Tab moves, Enter saves.
      </p>
      <section aria-labelledby="rate-prompt">
        <h2 id="rate-prompt">What the model was asked</h2>
        <pre class="text" tabIndex={0} aria-label="what the model was asked" data-testid="rate-prompt-text">
          {item.prompt}
        </pre>
      </section>
      <section aria-labelledby="rate-answer">
        <h2 id="rate-answer">The model's answer</h2>
        <pre class="text" tabIndex={0} aria-label="the model's answer" data-testid="rate-answer-text">
          {item.answer}
        </pre>
      </section>
      {item.criteria.map((c, i) => (
        <fieldset
          key={c.name}
          ref={(el) => {
            if (el) groups.current[i] = el;
          }}
          onKeyDown={onKey(i, c)}
        >
          <legend>
            {c.name}
            {c.description ? <span class="muted"> — {c.description}</span> : null}
          </legend>
          {Array.from({ length: c.max - c.min + 1 }, (_, k) => c.min + k).map((v) => (
            <label key={v} class="inline">
              <input type="radio" name={`crit-${c.name}`} value={v} checked={scores[c.name] === v} onChange={() => setScores({ ...scores, [c.name]: v })} /> {v}
            </label>
          ))}
        </fieldset>
      ))}
      <button id="rate-save" type="submit" disabled={!complete}>
        Save and next
      </button>{' '}
      <button type="button" class="secondary" onClick={() => void send({ state: 'skipped' })}>
        Skip
      </button>{' '}
      <label for="rate-flag">Flag as</label>{' '}
      <select id="rate-flag" value={flag} onChange={(e) => setFlag((e.target as HTMLSelectElement).value)}>
        <option value="">choose a reason</option>
        {FLAGS.map(([code, label]) => (
          <option key={code} value={code}>
            {label}
          </option>
        ))}
      </select>{' '}
      <button type="button" class="secondary" disabled={!flag} onClick={() => void send({ state: 'flagged', flagReason: flag })}>
        Flag
      </button>
      <Problem error={problem} />
    </form>
  );
}
