/**
 * The runs the instance tests look at: a public copy of the test daemon's site_private benchmark
 * (`site_open`, the same synthetic notes) and a private run of site_private under an IRB approval,
 * both finished. Shared by the API, CLI and console tests of a run's instances.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestDaemon } from './daemon';

/**
 * For startTestDaemon's `prepare`: adds `site_open`, site_private made public. `data`, when given,
 * replaces its dataset (a CSV text with the columns id, context, label).
 */
export function addOpenBenchmark(config: Record<string, unknown>, data?: string): void {
  const siteDir = (config.catalog as { dirs: string[] }).dirs[0] as string;
  const folder = join(siteDir, 'site_open');
  cpSync(join(siteDir, 'site_private'), folder, { recursive: true });
  const definition = JSON.parse(readFileSync(join(folder, 'benchmark.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(folder, 'benchmark.json'), JSON.stringify({ ...definition, id: 'site_open', tier: 'public', displayName: 'Site open test benchmark' }));
  if (data !== undefined) writeFileSync(join(folder, 'data.csv'), data);
}

/** Waits until the run is over (polled, not timed: the test's own timeout bounds it). */
export async function finished(t: TestDaemon, runId: string): Promise<void> {
  for (;;) {
    const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    if (!['requested', 'approved', 'running'].includes(r.json.status)) return;
    await new Promise((resolve) => setTimeout(resolve, 100)); // a poll interval, not a deadline
  }
}

/**
 * alice's private run of site_private: an approval carol records, dave's approval of the run. The
 * public run is the caller's to request (through the API or the CLI); both are waited for.
 */
export async function finishedRuns(t: TestDaemon, publicRun: string, protocolNumber: string): Promise<{ publicRun: string; privateRun: string }> {
  const approval = await t.call('carol', 'POST', '/v1/approvals', {
    protocolNumber,
    principalInvestigator: 'alice',
    personnel: ['alice'],
    benchmarks: ['site_private'],
    purpose: 'instances',
  });
  if (approval.status !== 200) throw new Error(`the approval was refused: ${JSON.stringify(approval.json)}`);
  const priv = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId: approval.json.approvalId });
  const privateRun = priv.json.runId as string;
  const approved = await t.call('dave', 'POST', `/v1/runs/${privateRun}/approve`, {});
  if (approved.status !== 200) throw new Error(`the run approval was refused: ${JSON.stringify(approved.json)}`);
  await finished(t, publicRun);
  await finished(t, privateRun);
  return { publicRun, privateRun };
}
