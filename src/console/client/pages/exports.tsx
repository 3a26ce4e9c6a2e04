/**
 * Exports: the release queue and one export. The preview is the canonical content a release signs,
 * shown as tables (suppressed cells marked with their reason) and as the exact text.
 */
import { type Session, get, post } from '../api';
import type { ExportView } from '../types';
import { ConfirmAct, Done, download, holds, Loading, MetricsHead, Page, Problem, Status, usd, useAction, useLoad, when } from '../ui';

type Range = { low: number; high: number };
type Count = Range | { suppressed: string };
type Metric = { name: string; value: number; n: Range; ci95?: Range } | { name: string; suppressed: string };
type Cell = { label: string; n: Range; metrics: Metric[] } | { label: string; suppressed: string };
interface Result {
  runId: string;
  benchmark: { id: string; version: string; category: string; tier: string };
  model: { endpointId: string; model: string | null; deployment: string | null };
  mainMetric: string;
  n: Count;
  metrics: Metric[];
  subgroups: { field: string; cells: Cell[] }[];
  usage: { promptTokens: number; completionTokens: number; estimatedCostUsd: number | null } | null;
}
interface Preview {
  exportId: string;
  siteId: string;
  tier: string;
  irbProtocol: string | null;
  requestedBy: string;
  disclosure: { minCellSize?: number; k?: number } & Record<string, unknown>;
  results: Result[];
}

const range = (r: Range) => (r.low === r.high ? String(r.low) : `${r.low}–${r.high}`);

function previewOf(e: ExportView): Preview | undefined {
  try {
    return JSON.parse(e.preview) as Preview;
  } catch {
    return undefined;
  }
}

/** How many figures of the preview disclosure control suppressed (counts, metrics and subgroup cells). */
function suppressedCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + suppressedCount(v), 0);
  if (value && typeof value === 'object') return ('suppressed' in value ? 1 : 0) + Object.values(value).reduce((n: number, v) => n + suppressedCount(v), 0);
  return 0;
}

const uniq = (xs: string[]) => [...new Set(xs)].join(', ');

/** What an officer triages a release by: tier, benchmarks, IRB, endpoints and models, size, suppressed figures. */
function Triage({ preview }: { preview: Preview | undefined }) {
  if (!preview) return <td colSpan={6}>the preview cannot be read</td>;
  const rs = preview.results;
  return (
    <>
      <td>{preview.tier}</td>
      <td>{uniq(rs.map((r) => `${r.benchmark.id} ${r.benchmark.version}`))}</td>
      <td>{preview.irbProtocol ?? '—'}</td>
      <td>{uniq(rs.map((r) => ((r.model.model ?? r.model.deployment) ? `${r.model.model ?? r.model.deployment} (${r.model.endpointId})` : r.model.endpointId)))}</td>
      <td class="num">{rs.map((r) => ('suppressed' in r.n ? 'suppressed' : range(r.n))).join(' + ')}</td>
      <td class="num" data-testid="suppressed-count">
        {suppressedCount(rs)}
      </td>
    </>
  );
}

function Suppressed({ marker }: { marker: string }) {
  return (
    <span class="suppressed" title={`suppressed: ${marker}`}>
      suppressed ({marker})
    </span>
  );
}

function CountCell({ n }: { n: Count }) {
  return 'suppressed' in n ? <Suppressed marker={n.suppressed} /> : <>{range(n)}</>;
}

function MetricRows({ metrics, main }: { metrics: Metric[]; main?: string }) {
  return (
    <>
      {metrics.map((m) => (
        <tr key={m.name}>
          <td>
            {m.name}
            {m.name === main ? ' (main)' : ''}
          </td>
          {'suppressed' in m ? (
            <td colSpan={3}>
              <Suppressed marker={m.suppressed} />
            </td>
          ) : (
            <>
              <td class="num">{m.value.toFixed(3)}</td>
              <td class="num">{m.ci95 ? `${m.ci95.low.toFixed(3)}–${m.ci95.high.toFixed(3)}` : '—'}</td>
              <td class="num">{range(m.n)}</td>
            </>
          )}
        </tr>
      ))}
    </>
  );
}

export function PreviewTables({ preview }: { preview: Preview }) {
  return (
    <>
      {preview.results.map((r) => (
        <section key={r.runId} aria-label={`result of run ${r.runId.slice(0, 8)}`}>
          <h3>
            {r.benchmark.id} {r.benchmark.version} on {r.model.endpointId} ({r.benchmark.tier}), instances <CountCell n={r.n} />
          </h3>
          <table>
            <caption class="sr-only">Metrics as released</caption>
            <MetricsHead />
            <tbody>
              <MetricRows metrics={r.metrics} main={r.mainMetric} />
            </tbody>
          </table>
          {r.subgroups.map((g) => (
            <table key={g.field}>
              <caption>Subgroups by {g.field}</caption>
              <thead>
                <tr>
                  <th scope="col">Cell</th>
                  <th scope="col">Instances</th>
                  <th scope="col">Metrics</th>
                </tr>
              </thead>
              <tbody>
                {g.cells.map((c) => (
                  <tr key={c.label}>
                    <td>{c.label}</td>
                    {'suppressed' in c ? (
                      <td colSpan={2}>
                        <Suppressed marker={c.suppressed} />
                      </td>
                    ) : (
                      <>
                        <td>{range(c.n)}</td>
                        <td>{c.metrics.map((m) => ('suppressed' in m ? `${m.name}: suppressed (${m.suppressed})` : `${m.name}: ${m.value.toFixed(3)}`)).join('; ')}</td>
                      </>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          ))}
          <p class="muted">Usage: {r.usage ? `${r.usage.promptTokens} prompt and ${r.usage.completionTokens} completion tokens (to the thousand), ${usd(r.usage.estimatedCostUsd)}` : 'withheld'}</p>
        </section>
      ))}
    </>
  );
}

export function ReleaseQueuePage({ session }: { session: Session }) {
  const exports = useLoad(() => get<ExportView[]>('/v1/exports?limit=200'), []);
  const waiting = (exports.data ?? []).filter((e) => e.state === 'requested');
  return (
    <Page title="Release queue">
      <Problem error={exports.error} />
      {!exports.data ? (
        <Loading what="exports" />
      ) : waiting.length === 0 ? (
        <p>No export is waiting for release.</p>
      ) : (
        <table>
          <caption class="sr-only">Exports awaiting a compliance officer's release</caption>
          <thead>
            <tr>
              <th scope="col">Export</th>
              <th scope="col">Requested by</th>
              <th scope="col">Runs</th>
              <th scope="col">Tier</th>
              <th scope="col">Benchmarks</th>
              <th scope="col">IRB</th>
              <th scope="col">Model (endpoint)</th>
              <th scope="col" class="num">
                Instances
              </th>
              <th scope="col" class="num">
                Suppressed figures
              </th>
              <th scope="col">Requested</th>
            </tr>
          </thead>
          <tbody>
            {waiting.map((e) => (
              <tr key={e.exportId} data-export={e.exportId}>
                <td>
                  <a href={`#/exports/${e.exportId}`}>Review {e.exportId.slice(0, 8)}</a>
                </td>
                <td>
                  {e.requestedBy}
                  {e.requestedBy === session.principal ? ' (you: another officer must release it)' : ''}
                </td>
                <td>{e.runIds.map((r) => r.slice(0, 8)).join(', ')}</td>
                <Triage preview={previewOf(e)} />
                <td>{when(e.requestedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}

export function ExportPage({ id, session }: { id: string; session: Session }) {
  const view = useLoad(() => get<ExportView>(`/v1/exports/${id}`), [id]);
  const { problem, done, act } = useAction();
  const e = view.data;
  const preview = e ? previewOf(e) : undefined;
  const release = () =>
    act(async () => {
      await post(`/v1/exports/${id}/release`, { format: 'bundle' });
      view.reload();
      return 'export released: signed and written';
    });
  const fetchBundle = () =>
    act(async () => {
      const files = await get<{ bundle: string }>(`/v1/exports/${id}/files`);
      download(`export-${id}.json`, files.bundle, 'application/json');
      return undefined;
    });
  return (
    <Page title={`Export ${id.slice(0, 8)}`}>
      <Problem error={view.error ?? problem} />
      <Done message={done} />
      {!e ? (
        <Loading what="the export" />
      ) : (
        <>
          <p>
            <Status value={e.state} /> · requested by {e.requestedBy} at {when(e.requestedAt)}
            {e.releasedBy ? ` · released by ${e.releasedBy} at ${when(e.releasedAt)}` : ''} · content sha256 <code>{e.contentSha256.slice(0, 16)}…</code>
          </p>
          <div class="actions">
            {e.state === 'requested' && holds(session, ['compliance']) ? (
              <ConfirmAct
                label="Release this export (sign it)"
                title={`Release export ${id.slice(0, 8)}?`}
                consequence={
                  <p>
                    It is signed with the site's key and written, and what it holds leaves: the figures of {e.runIds.length} run{e.runIds.length === 1 ? '' : 's'} exactly as shown under "What a
                    release signs"{preview ? `, ${suppressedCount(preview.results)} of them suppressed` : ''}. A release cannot be taken back.
                  </p>
                }
                confirmLabel={`Release ${id.slice(0, 8)}`}
                onConfirm={() => void release()}
              />
            ) : null}
            {e.state === 'released' ? (
              <button type="button" class="secondary" onClick={fetchBundle}>
                Download the signed bundle
              </button>
            ) : null}
          </div>
          <h2>What a release signs</h2>
          {preview ? <PreviewTables preview={preview} /> : <p class="error">The preview cannot be read.</p>}
          <details>
            <summary>The exact content (canonical JSON)</summary>
            <pre class="preview" tabIndex={0}>
              {e.preview}
            </pre>
          </details>
        </>
      )}
    </Page>
  );
}
