/**
 * The Instances section of a run's page: what the API shows the viewer of the run's instances (src/
 * policy/visibility.ts decides): a public run's prompts, predictions, references and scores, filtered
 * (failed, wrong, by metric) and paged; an EHR tier's failed and blocked instances by position, state
 * and code, with the sentence that says why no text is shown. Dataset and model text is text: Preact
 * renders it as text nodes, never as markup, and bidirectional controls are written out (`visible`).
 */
import { useState } from 'preact/hooks';
import { get, query } from '../api';
import type { Run, RunInstances } from '../types';
import { Loading, Problem, score, useLoad, visible } from '../ui';

/** Instances per page in the console (the API takes up to 500). */
const PAGE = 20;
/** How much of a text a cell shows before it folds the rest away. */
const SHOWN = 160;

type Instance = RunInstances['instances'][number];

/** A dataset's or a model's text: the start in the cell, the whole of it one click away. */
function Text({ value }: { value: string | null | undefined }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  const text = visible(value);
  if (text.length <= SHOWN) return <span class="instance-text">{text}</span>;
  return (
    <details>
      <summary class="instance-text">{`${text.slice(0, SHOWN)}…`}</summary>
      <pre class="instance-text">{text}</pre>
    </details>
  );
}

function TextRows({ page }: { page: RunInstances }) {
  return (
    <table data-testid="instances">
      <caption class="sr-only">Instances of the run, by position</caption>
      <thead>
        <tr>
          <th scope="col" class="num">
            #
          </th>
          <th scope="col">State</th>
          <th scope="col" class="num">
            {page.metric}
          </th>
          <th scope="col">Code</th>
          <th scope="col">Prompt</th>
          <th scope="col">Prediction</th>
          <th scope="col">Reference</th>
        </tr>
      </thead>
      <tbody>
        {page.instances.map((i: Instance) => (
          <tr key={i.ordinal} data-ordinal={i.ordinal}>
            <td class="num">{i.ordinal}</td>
            <td>{i.state}</td>
            <td class="num">{score(i.score)}</td>
            <td>{i.errorCode ?? '—'}</td>
            <td data-field="prompt">
              <Text value={i.prompt} />
            </td>
            <td data-field="prediction">
              <Text value={i.prediction} />
            </td>
            <td data-field="reference">
              <Text value={i.references?.join(' | ')} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function CodeRows({ page }: { page: RunInstances }) {
  return (
    <table data-testid="instances">
      <caption class="sr-only">Failed and blocked instances of the run, by position, state and code</caption>
      <thead>
        <tr>
          <th scope="col" class="num">
            #
          </th>
          <th scope="col">State</th>
          <th scope="col">Code</th>
        </tr>
      </thead>
      <tbody>
        {page.instances.map((i: Instance) => (
          <tr key={i.ordinal} data-ordinal={i.ordinal}>
            <td class="num">{i.ordinal}</td>
            <td>{i.state}</td>
            <td>{i.errorCode ?? '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** What the view is, in the API's words, and for an EHR tier why no text is shown. */
function Said({ page }: { page: RunInstances }) {
  if (page.view === 'codes-only') {
    return (
      <p data-testid="instances-withheld">
        Text is withheld: this run is on {page.tier} data, so the prompts, predictions and references of its instances (even de-identified) and their scores are never shown, here or in an export. Only
        the failed and blocked instances are listed, by position, state and code, to the run's requester and compliance officers (rule <code>{page.rule}</code>).
      </p>
    );
  }
  return (
    <p class="muted" data-testid="instances-said">
      Public data: each instance with its prompt, prediction, references and scores (rule <code>{page.rule}</code>). Reading them is recorded in the audit trail.
      {page.prompts === 'template-changed' ? " Prompts are not shown: the benchmark's template changed since the run." : ''}
      {page.instances.some((i) => i.truncated) ? ' Some texts were longer than 20,000 characters and are cut.' : ''}
    </p>
  );
}

interface Filter {
  failed: boolean;
  wrong: boolean;
  metric: string;
}

/** The filters a view takes: failed always; wrong and metric read scores, so public runs only. */
function Filters({ run, metrics, filter, onChange }: { run: Run; metrics: string[]; filter: Filter; onChange: (f: Filter) => void }) {
  const text = run.tier === 'public';
  return (
    <form class="inline" onSubmit={(e) => e.preventDefault()} aria-label="Filter the instances">
      <label class="check">
        <input type="checkbox" name="failed" checked={filter.failed} onChange={(e) => onChange({ ...filter, failed: (e.target as HTMLInputElement).checked })} /> Failed or blocked
      </label>
      {text ? (
        <>
          <label class="check">
            <input type="checkbox" name="wrong" checked={filter.wrong} onChange={(e) => onChange({ ...filter, wrong: (e.target as HTMLInputElement).checked })} /> Wrong (main score below full marks)
          </label>
          <label>
            Score shown
            <select name="metric" value={filter.metric} onChange={(e) => onChange({ ...filter, metric: (e.target as HTMLSelectElement).value })}>
              <option value="">{run.mainMetric} (main)</option>
              {metrics
                .filter((m) => m !== run.mainMetric)
                .map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
            </select>
          </label>
        </>
      ) : null}
    </form>
  );
}

export function InstancesSection({ run }: { run: Run }) {
  const [filter, setFilter] = useState<Filter>({ failed: false, wrong: false, metric: '' });
  // The cursors of the pages before this one, so that "Previous page" goes back.
  const [cursors, setCursors] = useState<number[]>([]);
  const after = cursors.at(-1);
  const codesOnly = run.tier !== 'public';
  const page = useLoad(
    () =>
      get<RunInstances>(
        `/v1/runs/${run.runId}/instances${query({ failed: filter.failed ? 'true' : undefined, wrong: filter.wrong ? 'true' : undefined, metric: filter.metric || undefined, after, limit: PAGE })}`,
      ),
    // Again when the run's status changes (it ends), not at every poll of its progress: each read is an audit event.
    [run.runId, run.status, filter.failed, filter.wrong, filter.metric, after],
  );
  const change = (f: Filter) => {
    setFilter(f);
    setCursors([]);
  };
  const p = page.data;
  return (
    <section aria-labelledby="instances-heading">
      <h2 id="instances-heading">Instances</h2>
      {!codesOnly ? <Filters run={run} metrics={p?.metrics ?? run.aggregates?.map((a) => a.metric) ?? []} filter={filter} onChange={change} /> : null}
      <Problem error={page.error} />
      {!p ? (
        page.error ? null : (
          <Loading what="instances" />
        )
      ) : (
        <>
          <Said page={p} />
          {p.instances.length === 0 ? (
            <p data-testid="instances-none">{codesOnly ? 'No instance failed or was blocked.' : 'No instance matches.'}</p>
          ) : p.view === 'text' ? (
            <TextRows page={p} />
          ) : (
            <CodeRows page={p} />
          )}
          <div class="actions">
            {cursors.length ? (
              <button type="button" class="secondary" onClick={() => setCursors(cursors.slice(0, -1))}>
                Previous page
              </button>
            ) : null}
            {p.nextAfter !== null ? (
              <button type="button" class="secondary" onClick={() => setCursors([...cursors, p.nextAfter as number])}>
                Next page
              </button>
            ) : null}
          </div>
        </>
      )}
    </section>
  );
}

/** The section for a viewer the API would refuse: said here rather than asked, so the trail holds no refused read per page view. */
export function InstancesWithheld({ run }: { run: Run }) {
  return (
    <section aria-labelledby="instances-heading">
      <h2 id="instances-heading">Instances</h2>
      <p class="muted" data-testid="instances-withheld">
        The instances of this {run.tier} run are withheld from you: only its requester and compliance officers see even the codes of its failed instances, and never any text.
      </p>
    </section>
  );
}
