/**
 * An approval whose canary has drifted, made the way drift happens (tests/integration/drift-canary.test.ts
 * walks the same steps and checks each): a baseline on the stand-in answering right, then the stand-in
 * answers with another system_fingerprint and wrong answers, a run under the approval sees it, and the
 * canary run it triggers is compared. Runs are executed here: the daemon needs no workers.
 */
import type { Behaviour } from '../../src/demo/model-server';
import { Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import type { TestDaemon } from './daemon';

/** The stand-in before the change answers the site benchmark right (even notes: A. yes); after it, another fingerprint and always B. */
export function driftingModel(state: { changed: boolean }) {
  return (_n: number, prompt: string): Behaviour => {
    if (state.changed) return { kind: 'answer', text: 'B', systemFingerprint: 'fp-after-update', headers: { 'openai-model': 'standin-v2', 'x-leak': 'not kept' } };
    const n = Number(/Synthetic note (\d+)/.exec(prompt)?.[1] ?? 1);
    return { kind: 'answer', text: n % 2 === 0 ? 'A' : 'B', headers: { 'openai-model': 'standin-v1' } };
  };
}

/** Waits for a condition (a row written by work the test started but does not await), not for a duration. */
export async function until<T>(what: () => Promise<T | undefined>): Promise<T> {
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    await new Promise((r) => setImmediate(r));
  }
}

/** Records an approval with a canary on vpc-gated, baselines it, changes the model and lets the canary find the drift. */
export async function driftedApproval(t: TestDaemon, state: { changed: boolean }, protocolNumber: string): Promise<{ approvalId: string; runId: string }> {
  const { app } = t;
  const ops = new Operations(app);
  const who = (id: string) => ({ principal: app.principals().get(id)!, authMethod: 'mtls' as const });
  const approval = await ops.createApproval(who('carol'), {
    protocolNumber,
    principalInvestigator: 'alice',
    personnel: ['alice'],
    benchmarks: ['site_gated'],
    endpoints: ['vpc-gated'],
    purpose: 'drift test',
    canary: { benchmarkId: 'site_gated', instances: 20 },
  });
  await app.canary.tick();
  const [baseline] = await app.db.query<{ run_id: string }>('SELECT run_id::text AS run_id FROM canary_baselines WHERE approval_id = $1', [approval.approvalId]);
  await executeRun(app.engine, baseline!.run_id);
  await app.canary.tick();
  state.changed = true;
  const own = await ops.requestRun(who('alice'), { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: approval.approvalId, maxInstances: 12 });
  await executeRun(app.engine, own.runId);
  const pending = await until(async () => (await app.canary.checks([approval.approvalId])).find((c) => c.state === 'pending'));
  await executeRun(app.engine, pending.runId);
  await app.canary.tick();
  return { approvalId: approval.approvalId, runId: own.runId };
}
