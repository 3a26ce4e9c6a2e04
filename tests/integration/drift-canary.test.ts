/**
 * Drift under an approval, end to end on the loopback stand-in: an approval names a canary; its
 * baseline runs and pins its instances; the stand-in then answers with another system_fingerprint (and
 * wrong answers); the next call under the approval sees the new fingerprint, which requests the canary
 * run; the canary is compared with the baseline (exact McNemar on exact_match), a drift.check event is
 * recorded, compliance reads the notice from the API the console reads, the approval's runs are marked
 * stale, and a compliance officer's review clears the mark. Runs are executed here (workers: 0), so
 * nothing depends on a scheduler's timing.
 */
import type { App } from '../../src/app';
import { type Caller, Operations } from '../../src/operations';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CanaryService } from '../../src/runs';
import { executeRun } from '../../src/runs/engine';
import { backends } from '../helpers/db';
import { startTestDaemon } from '../helpers/daemon';
import { driftingModel, until } from '../helpers/drift';

jest.setTimeout(240_000);

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

describe.each(backends())('drift canary on %s', (backend) => {
  it('a changed fingerprint triggers the canary, the paired comparison, the audit event, the notice and the stale mark; review clears it', async () => {
    const state = { changed: false };
    const t = await startTestDaemon({ backend, workers: 0, rows: 30, behaviour: driftingModel(state) });
    try {
      const { app } = t;
      const ops = new Operations(app);
      const alice = callerOf(app, 'alice');
      const carol = callerOf(app, 'carol');
      // A canary needs the approval to list its endpoints (it re-runs on each).
      await expect(
        ops.createApproval(carol, {
          protocolNumber: 'IRB-DRIFT-0',
          principalInvestigator: 'alice',
          personnel: ['alice'],
          benchmarks: ['site_gated'],
          purpose: 'drift test',
          canary: { benchmarkId: 'site_gated', instances: 20 },
        }),
      ).rejects.toMatchObject({ code: 'approval.invalid', message: expect.stringContaining('--endpoints') });
      // The canary is schema'd: an unknown field or a sample under k is a 400 naming the field; nothing is recorded.
      const bad = await t.call('carol', 'POST', '/v1/approvals', {
        protocolNumber: 'IRB-DRIFT-BAD',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        benchmarks: ['site_gated'],
        endpoints: ['vpc-gated'],
        purpose: 'p',
        canary: { benchmarkId: 'site_gated', instances: 5 },
      });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.json)).toMatch(/canary\/instances/);
      const unknown = await t.call('carol', 'POST', '/v1/approvals', {
        protocolNumber: 'IRB-DRIFT-BAD',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        benchmarks: ['site_gated'],
        endpoints: ['vpc-gated'],
        purpose: 'p',
        canary: { benchmarkId: 'site_gated', instances: 20, every: '7d' },
      });
      expect(unknown.status).toBe(400);
      expect(JSON.stringify(unknown.json)).toMatch(/every/);
      expect(await app.db.query("SELECT 1 FROM approvals WHERE protocol_number = 'IRB-DRIFT-BAD'")).toEqual([]);
      const approval = await ops.createApproval(carol, {
        protocolNumber: 'IRB-DRIFT-1',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        benchmarks: ['site_gated'],
        endpoints: ['vpc-gated'],
        purpose: 'drift test',
        canary: { benchmarkId: 'site_gated', instances: 20, everyDays: 7, threshold: 0.05 },
      });
      expect(approval.canary).toEqual({ benchmarkId: 'site_gated', instances: 20, everyDays: 7, threshold: 0.05, minDifference: 0.05 });

      // The baseline: a canary run requested for the PI under the approval, executed, its instances pinned.
      // Two processes on one store look at the canaries at once (another daemon's service here): one run.
      const elsewhere = new CanaryService(app.engine, app.approvals, app.fingerprints, app.db, 11);
      await Promise.all([app.canary.tick(), elsewhere.tick()]);
      expect(await app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE approval_id = $1', [approval.approvalId])).toEqual([{ n: 1 }]);
      const [baseline] = await app.db.query<{ run_id: string }>('SELECT run_id::text AS run_id FROM canary_baselines WHERE approval_id = $1', [approval.approvalId]);
      expect(baseline).toBeDefined();
      const baselineRun = await executeRun(app.engine, baseline!.run_id);
      expect(baselineRun).toMatchObject({ status: 'completed', mainScore: 1 });
      await app.canary.tick();
      const [pinned] = await app.db.query<{ n: number }>('SELECT cardinality(instance_keys)::int AS n FROM canary_baselines WHERE approval_id = $1', [approval.approvalId]);
      expect(pinned).toEqual({ n: 20 });
      // Nothing changed and nothing is due: no check.
      await app.canary.tick();
      expect(await app.canary.checks()).toEqual([]);

      // The run's results carry what served it: ids only, days not times, no header outside the allowlist.
      const baseView = await ops.showRun(alice, baseline!.run_id);
      expect(baseView.fingerprints).toEqual([
        expect.objectContaining({ endpointId: 'vpc-gated', model: 'ehrbench-demo-standin', systemFingerprint: 'ehrbench-demo-standin', headers: { 'openai-model': 'standin-v1' } }),
      ]);
      expect(baseView.fingerprints?.[0]?.firstSeenDay).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(baseView.stale).toBe(false);

      // The model behind the endpoint changes. Alice's next run under the approval sees it on its first call.
      state.changed = true;
      const own = await ops.requestRun(alice, { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: approval.approvalId, maxInstances: 12 });
      await executeRun(app.engine, own.runId);
      const pending = await until(async () => (await app.canary.checks()).find((c) => c.state === 'pending'));
      expect(pending).toMatchObject({ trigger: 'fingerprint', endpointId: 'vpc-gated', baselineRunId: baseline!.run_id });
      const canaryRun = await app.engine.store.getRun(pending.runId);
      expect(canaryRun).toMatchObject({ status: 'approved', requested_by: 'alice', approval_id: approval.approvalId, max_instances: 20 });

      // The canary runs on the normal path, then is compared with the baseline on the same 20 instances.
      await executeRun(app.engine, pending.runId);
      await app.canary.tick();
      const [check] = await app.canary.checks();
      expect(check).toMatchObject({ state: 'drift', test: 'mcnemar-exact', pairs: 20, baselineMean: 1, canaryMean: 0.6, reviewedBy: null });
      // HELM's seeded sample holds 8 "yes" notes of the 20: those 8 pairs went from right to wrong, none
      // the other way, so the exact McNemar p = 2 * (1/2)^8.
      expect(check!.pValue).toBeCloseTo(2 / 256, 12);
      expect(check!.notice).toBe('model behind endpoint vpc-gated changed; canary mean 1.00 -> 0.60, p=0.0078');

      // The audit event: its rule, ids and figures only.
      const events = await app.db.query<{ outcome: string; rule: string; detail: Record<string, unknown>; approval_id: string }>(
        "SELECT outcome, rule, detail, approval_id::text AS approval_id FROM audit_events WHERE event_type = 'drift.check' ORDER BY seq",
      );
      expect(events.map((e) => [e.outcome, e.rule])).toEqual([
        ['success', 'drift.baseline-recorded'],
        ['success', 'drift.detected'],
      ]);
      expect(events[1]?.detail).toMatchObject({ drift: true, test: 'mcnemar-exact', pairs: 20, baselineMean: 1, canaryMean: 0.6, trigger: 'fingerprint' });
      expect(JSON.stringify(events)).not.toMatch(/Synthetic note/);

      // The notice compliance reads (the API the console reads); the runs under the approval are stale.
      const notices = await t.call('carol', 'GET', '/v1/drift');
      expect(notices.status).toBe(200);
      expect(notices.json).toEqual([expect.objectContaining({ approvalId: approval.approvalId, state: 'drift', notice: check!.notice })]);
      const shown = await t.call('alice', 'GET', `/v1/runs/${own.runId}`);
      expect(shown.json).toMatchObject({ stale: true });
      expect(shown.json.fingerprints.map((f: { systemFingerprint: string }) => f.systemFingerprint)).toEqual(['fp-after-update']);
      const listed = await t.call('alice', 'GET', '/v1/runs');
      expect(listed.json.filter((r: { stale: boolean }) => r.stale).length).toBe(3);

      // An export of a stale run says so, and states what served it: ids and days, no header.
      const exported = JSON.parse((await ops.requestExport(alice, [own.runId])).preview) as { results: { stale?: boolean; fingerprints?: Record<string, unknown>[] }[] };
      expect(exported.results[0]?.stale).toBe(true);
      expect(exported.results[0]?.fingerprints).toEqual([
        expect.objectContaining({ endpointId: 'vpc-gated', systemFingerprint: 'fp-after-update', firstSeenDay: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) }),
      ]);
      expect(Object.keys(exported.results[0]?.fingerprints?.[0] ?? {})).not.toContain('headers');

      // Only compliance reviews it; the review is audited and clears the mark.
      const refused = await t.call('alice', 'POST', `/v1/approvals/${approval.approvalId}/review-drift`, {});
      expect(refused).toMatchObject({ status: 403, json: { rule: 'rbac.compliance-required' } });
      const reviewed = await t.call('carol', 'POST', `/v1/approvals/${approval.approvalId}/review-drift`, { note: 'vendor update confirmed; re-validation scheduled' });
      expect(reviewed).toMatchObject({ status: 200, json: { approvalId: approval.approvalId, reviewed: 1 } });
      expect((await t.call('alice', 'GET', `/v1/runs/${own.runId}`)).json).toMatchObject({ stale: false });
      const again = await t.call('carol', 'POST', `/v1/approvals/${approval.approvalId}/review-drift`, {});
      expect(again).toMatchObject({ status: 403, json: { rule: 'drift.nothing-to-review' } });
      const reviews = await app.db.query<{ outcome: string; rule: string; actor_principal: string }>(
        "SELECT outcome, rule, actor_principal FROM audit_events WHERE event_type = 'drift.review' ORDER BY seq",
      );
      expect(reviews).toEqual([
        { outcome: 'success', rule: 'drift.reviewed', actor_principal: 'carol' },
        { outcome: 'denied', rule: 'drift.nothing-to-review', actor_principal: 'carol' },
      ]);
      expect((await app.canary.checks())[0]).toMatchObject({ reviewedBy: 'carol' });

      // Its date comes (a clock a week and a day on): the canary re-runs on schedule. The vendor has put
      // the old model back, so the scores match the baseline: stable (no discordant pair, p = 1).
      state.changed = false;
      const later = new CanaryService(app.engine, app.approvals, app.fingerprints, app.db, 11, () => new Date(Date.now() + 8 * 86_400_000));
      await later.tick();
      const scheduled = (await later.checks()).find((c) => c.state === 'pending');
      expect(scheduled).toMatchObject({ trigger: 'schedule' });
      await executeRun(app.engine, scheduled!.runId);
      await later.tick();
      expect((await later.checks())[0]).toMatchObject({ state: 'stable', pairs: 20, baselineMean: 1, canaryMean: 1, pValue: 1, notice: null });
      expect((await ops.showRun(alice, own.runId)).stale).toBe(false);

      // A self-hosted server (fingerprintModels): GET /v1/models once per run, audited before it leaves,
      // and its sha256 joins the fingerprint of every call of the run.
      const endpointsFile = join(t.home.home, 'access-policies', 'endpoints.json');
      const policy = JSON.parse(readFileSync(endpointsFile, 'utf8'));
      policy.endpoints.find((e: { id: string }) => e.id === 'vpc-gated').fingerprintModels = true;
      writeFileSync(endpointsFile, JSON.stringify(policy, null, 2));
      await app.refreshPolicies();
      const selfHosted = await ops.requestRun(alice, { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: approval.approvalId, maxInstances: 11 });
      await executeRun(app.engine, selfHosted.runId);
      const [served] = (await ops.showRun(alice, selfHosted.runId)).fingerprints ?? [];
      expect(served?.modelsSha256).toMatch(/^[0-9a-f]{64}$/);
      const probes = await app.db.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_events WHERE event_type = 'endpoint.call' AND run_id = $1 AND detail->>'purposeOfCall' = 'fingerprint'", [
        selfHosted.runId,
      ]);
      expect(probes).toEqual([{ n: 1 }]);
      // The new fingerprint nudged the canary; let that pass finish before the store closes.
      await app.canary.tick();
    } finally {
      await t.close();
    }
  });

  it('concludes nothing from fewer than k paired instances: no figure, no notice, nothing stale', async () => {
    // Before the change the right answer; after it another fingerprint, and the first instance of the
    // canary run refused for good (HTTP 400, each of its attempts), so 10 of its 11 are scored: under k = 11.
    const state: { changed: boolean; refuse: boolean; refused?: string } = { changed: false, refuse: false };
    const right = driftingModel({ changed: false });
    const t = await startTestDaemon({
      backend,
      workers: 0,
      rows: 30,
      behaviour: (n, prompt) => {
        if (!state.changed) return right(n, prompt);
        if (state.refuse && (state.refused === undefined || state.refused === prompt)) {
          state.refused = prompt;
          return { kind: 'status', status: 400 };
        }
        return { kind: 'answer', text: 'B', systemFingerprint: 'fp-after-update' };
      },
    });
    try {
      const { app } = t;
      const ops = new Operations(app);
      const approval = await ops.createApproval(callerOf(app, 'carol'), {
        protocolNumber: 'IRB-DRIFT-SMALL',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        benchmarks: ['site_gated'],
        endpoints: ['vpc-gated'],
        purpose: 'drift test',
        canary: { benchmarkId: 'site_gated', instances: 11 },
      });
      await app.canary.tick();
      const [baseline] = await app.db.query<{ run_id: string }>('SELECT run_id::text AS run_id FROM canary_baselines WHERE approval_id = $1', [approval.approvalId]);
      await executeRun(app.engine, baseline!.run_id);
      await app.canary.tick();
      state.changed = true;
      const own = await ops.requestRun(callerOf(app, 'alice'), { benchmarkId: 'site_gated', endpointId: 'vpc-gated', approvalId: approval.approvalId, maxInstances: 11 });
      await executeRun(app.engine, own.runId);
      const pending = await until(async () => (await app.canary.checks()).find((c) => c.state === 'pending'));
      state.refuse = true;
      await executeRun(app.engine, pending.runId).catch(() => undefined);
      await app.canary.tick();
      const [check] = await app.canary.checks();
      expect(check).toMatchObject({ state: 'inconclusive', pairs: null, baselineMean: null, canaryMean: null, pValue: null, notice: null });
      const [event] = await app.db.query<{ outcome: string; rule: string; detail: Record<string, unknown> }>(
        "SELECT outcome, rule, detail FROM audit_events WHERE event_type = 'drift.check' AND rule <> 'drift.baseline-recorded'",
      );
      expect(event).toMatchObject({ outcome: 'success', rule: 'drift.inconclusive' });
      expect(event?.detail).not.toHaveProperty('canaryMean');
      expect((await ops.showRun(callerOf(app, 'alice'), own.runId)).stale).toBe(false);
    } finally {
      await t.close();
    }
  });
});
