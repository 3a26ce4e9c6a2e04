/** Home: what needs my attention (my runs, the queues of my roles) and the daemon's health. */
import type { Session } from '../api';
import { get } from '../api';
import type { AuditHealth, ExportView, Run } from '../types';
import { lastVerification } from './audit';
import { holds, Loading, Page, Problem, Status, useLoad, when } from '../ui';

const ACTIVE = ['requested', 'approved', 'running'];

export function HomePage({ session }: { session: Session }) {
  const researcher = holds(session, ['researcher']);
  const officer = holds(session, ['compliance']);
  const runs = useLoad(() => (researcher || officer ? get<Run[]>('/v1/runs?limit=200') : Promise.resolve([] as Run[])), [], { ms: 3000, while: (d) => !!d?.some((r) => ACTIVE.includes(r.status)) });
  const exports = useLoad(() => (officer ? get<ExportView[]>('/v1/exports?limit=200') : Promise.resolve([] as ExportView[])), []);
  const health = useLoad(() => get<{ status: string; rule?: string }>('/health'), []);
  const reviewer = holds(session, ['auditor', 'compliance']);
  const mine = (runs.data ?? []).filter((r) => r.requestedBy === session.principal);
  const awaiting = (runs.data ?? []).filter((r) => r.status === 'requested' && r.requestedBy !== session.principal);
  const toRelease = (exports.data ?? []).filter((e) => e.state === 'requested' && e.requestedBy !== session.principal);
  return (
    <Page title="What needs my attention">
      <Problem error={runs.error ?? exports.error} />
      <div class="cards">
        {researcher ? (
          <section class="card" aria-labelledby="my-runs">
            <h2 id="my-runs">My runs</h2>
            {runs.data ? (
              <p>
                <span class="big">{mine.filter((r) => ACTIVE.includes(r.status)).length}</span> active, {mine.length} in all. <a href="#/runs">See my runs</a>
              </p>
            ) : (
              <Loading what="runs" />
            )}
          </section>
        ) : null}
        {officer ? <QueueCard id="approval-queue" title="Runs awaiting approval" count={runs.data ? awaiting.length : undefined} href="#/queue/runs" /> : null}
        {officer ? <QueueCard id="release-queue" title="Exports awaiting release" count={exports.data ? toRelease.length : undefined} href="#/queue/releases" /> : null}
        {reviewer ? <ChainCard /> : null}
        <section class="card" aria-labelledby="daemon-health">
          <h2 id="daemon-health">Daemon</h2>
          {health.data ? (
            <p>
              <Status value={health.data.status} />
              {health.data.rule ? <> (rule {health.data.rule})</> : null} <a href="#/health">Details</a>
            </p>
          ) : (
            <Problem error={health.error} />
          )}
        </section>
      </div>
      {researcher && mine.length ? (
        <>
          <h2>My latest runs</h2>
          <table>
            <caption class="sr-only">My five latest runs</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Benchmark</th>
                <th scope="col">Status</th>
                <th scope="col">Requested</th>
              </tr>
            </thead>
            <tbody>
              {mine.slice(0, 5).map((r) => (
                <tr key={r.runId}>
                  <td>
                    <a href={`#/runs/${r.runId}`}>{r.runId.slice(0, 8)}</a>
                  </td>
                  <td>{r.benchmarkId}</td>
                  <td>
                    <Status value={r.status} />
                  </td>
                  <td>{when(r.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
    </Page>
  );
}

/** A compliance queue on the home page: how many wait (… while loading) and the way to it. */
function QueueCard({ id, title, count, href }: { id: string; title: string; count: number | undefined; href: string }) {
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      <p>
        <span class="big" data-testid={`${id}-count`}>
          {count ?? '…'}
        </span>{' '}
        <a href={href}>Open the queue</a>
      </p>
    </section>
  );
}

/** The state a chain was last found in: stopped, broken or verified by the last verification, or not yet verified. */
function chainState(h: AuditHealth): { word: string; cls: string } {
  if (h.stopped) return { word: `stopped (rule ${h.stopped})`, cls: 'status-bad' };
  if (h.lastVerify?.outcome === 'broken') return { word: 'broken', cls: 'status-bad' };
  if (h.lastVerify?.outcome === 'verified') return { word: 'verified', cls: 'status-ok' };
  return { word: 'not verified from the console yet', cls: 'status-warn' };
}

/** The auditor's first question on arriving: is the trail whole, how long is it, who last checked it and what they found. */
function ChainCard() {
  const health = useLoad(() => get<AuditHealth>('/v1/audit/health'), []);
  const h = health.data;
  const state = h ? chainState(h) : undefined;
  return (
    <section class="card" aria-labelledby="audit-chain">
      <h2 id="audit-chain">Audit chain</h2>
      {!h || !state ? (
        health.error ? (
          <Problem error={health.error} />
        ) : (
          <Loading what="the chain" />
        )
      ) : (
        <>
          <p>
            <span class={`big ${state.cls}`} data-testid="chain-state">
              {state.word}
            </span>
          </p>
          <p>
            {h.events} events, head seq {h.headSeq ?? '—'}
          </p>
          <p data-testid="chain-last-verify">Last verification: {lastVerification(h)}</p>
          <p>
            <a href="#/audit">Verify now or search the trail</a>
          </p>
        </>
      )}
    </section>
  );
}
