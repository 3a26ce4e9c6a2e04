/**
 * The evidence packet end to end through the mTLS daemon (issue 32): a researcher runs a private
 * benchmark twice under one approval (--repeat 2), the privacy office has recorded its de-identification
 * sign-off, and `export request --packet` gathers intended use, stability, the sign-off and the audit
 * event of every figure into the bundle; released by compliance, it verifies offline, renders as HTML
 * and as a CHAI model card that validates against CHAI's schema. A packet of runs under two approvals
 * (or none) is refused by rule.
 */
import { COMMITTEE_FIELDS, EXPORT_PUBLIC_KEY_FILE, type ExportContent, loadExportPublicKey, verifyBundle } from '../../src/export';
import { type Caller, Operations } from '../../src/operations';
import { exportReportHtml, modelCard, verifiedBundle } from '../../src/report';
import type { App } from '../../src/app';
import { tailRecords } from '../../src/audit';
import { join } from 'node:path';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { driftedApproval, driftingModel } from '../helpers/drift';

jest.setTimeout(240_000);

const ROWS = 30;
const INTENDED = 'Draft discharge follow-up flags for clinician review on the medicine wards; never shown to patients.';

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

async function waitForRun(t: TestDaemon, runId: string): Promise<string> {
  for (let i = 0; i < 1200; i++) {
    const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    if (['completed', 'failed', 'halted', 'cancelled'].includes(r.json.status)) return r.json.status;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('run did not finish');
}

describe.each(backends())('the evidence packet (%s)', (backend) => {
  let t: TestDaemon;
  afterAll(async () => {
    await t?.close();
  });

  it('gathers one model under one approval into the signed bundle, with the audit event of every figure, and renders it', async () => {
    t = await startTestDaemon({ backend, workers: 1, rows: ROWS });
    const approval = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-EVID-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_private'],
      purpose: INTENDED,
    });
    expect(approval.status).toBe(200);
    const approvalId = approval.json.approvalId as string;
    // The privacy office's sign-off, as `deid eval --record` records it.
    const signOff = await new Operations(t.app).recordDeidSignOff(callerOf(t.app, 'carol'), {
      deidVersion: t.app.engine.deid.version ?? 'none',
      goldSha256: 'a'.repeat(64),
      documents: 120,
      goldSpans: 412,
      recall: 0.9731,
      precision: 0.9012,
      withKnown: false,
      heldOut: true,
    });

    const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId, repeat: 2 });
    expect(requested.status).toBe(200);
    const runIds = requested.json.repeat.runIds as string[];
    expect(runIds).toHaveLength(2);
    for (const id of runIds) expect((await t.call('dave', 'POST', `/v1/runs/${id}/approve`, {})).status).toBe(200);
    for (const id of runIds) expect(await waitForRun(t, id)).toBe('completed');

    // A public run bound to no approval cannot join the packet: one model under one approval.
    const loose = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'pubmed_qa', endpointId: 'vpc-private', maxInstances: 11 });
    expect(await waitForRun(t, loose.json.runId)).toBe('completed');
    const mixed = await t.call('alice', 'POST', '/v1/exports', { runIds: [...runIds, loose.json.runId], packet: true });
    expect(mixed.status).toBe(403);
    expect(mixed.json).toMatchObject({ rule: 'export.packet-scope' });

    const requestedExport = await t.call('alice', 'POST', '/v1/exports', { runIds, packet: true });
    expect(requestedExport.json.message ?? '').toBe('');
    expect(requestedExport.status).toBe(200);
    const exportId = requestedExport.json.exportId as string;
    const preview = JSON.parse(requestedExport.json.preview) as ExportContent;
    const packet = preview.packet;
    expect(packet).toMatchObject({
      kind: 'ehrbench.evidence-packet.v1',
      model: { endpointId: 'vpc-private' },
      approval: { approvalId, protocol: 'IRB-EVID-1', intendedUse: INTENDED, benchmarks: ['site_private'] },
      drift: [],
    });
    // What served both runs: the stand-in's one model and fingerprint, by day.
    expect(packet?.fingerprints).toEqual([
      {
        endpointId: 'vpc-private',
        model: 'ehrbench-demo-standin',
        systemFingerprint: 'ehrbench-demo-standin',
        firstSeenOn: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        lastSeenOn: expect.any(String),
      },
    ]);
    // The stand-in answers a prompt the same way every time: both runs agree everywhere.
    expect(packet?.stability).toEqual([
      {
        benchmarkId: 'site_private',
        metric: 'exact_match',
        repeats: 2,
        instances: { low: 30, high: 39 },
        exactAgreement: { value: 1, ci95: expect.objectContaining({ high: 1 }) },
        scoreSpread: { sd: 0, min: expect.any(Number), max: expect.any(Number) },
      },
    ]);
    const spread = packet?.stability[0]?.scoreSpread as { min: number; max: number };
    expect(spread.min).toBe(spread.max);
    // The sign-off at the resolution of its span count's range (410-419: steps of 1/200), rounded down.
    expect(packet?.deid).toEqual({
      gold: { evaluatedOn: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/), recall: 0.97, precision: 0.9, phiInstances: { low: 410, high: 419 } },
      residualBlocked: { low: 0, high: 0 },
    });
    // Every figure names the audit event it came from.
    const seqOf = async (type: string, runId: string) => (await tailRecords(t.app.db, 1, { type, runId }))[0]?.seq;
    expect(packet?.evidence).toEqual(
      expect.arrayContaining([
        { figure: '/results/0', auditSeq: await seqOf('run.complete', runIds[0] as string) },
        { figure: '/results/1', auditSeq: await seqOf('run.complete', runIds[1] as string) },
        { figure: '/packet/stability/0', auditSeq: expect.any(Number) },
        { figure: '/packet/deid/gold', auditSeq: signOff.seq },
      ]),
    );
    expect(packet?.committeeFields).toEqual([...COMMITTEE_FIELDS]);

    // Released by compliance like any export; verifies offline; renders.
    const released = await t.call('dave', 'POST', `/v1/exports/${exportId}/release`, {});
    expect(released.status).toBe(200);
    const bundleText = released.json.files.bundle as string;
    const key = loadExportPublicKey(join(t.app.config.keysDir, EXPORT_PUBLIC_KEY_FILE));
    expect(verifyBundle(bundleText, key)).toMatchObject({ ok: true, problems: [] });
    const bundle = verifiedBundle(bundleText, key, exportId);
    const html = exportReportHtml(bundle);
    expect(html).toContain('<h2>Evidence packet</h2>');
    expect(html).toContain('Draft discharge follow-up flags for clinician review');
    const xml = await modelCard(bundle);
    expect(xml).toContain('Draft discharge follow-up flags for clinician review');
    expect(xml).toContain('vpc-private');
  });
});

describe.each(backends())('the evidence packet of an approval whose canary drifted (%s)', (backend) => {
  let t: TestDaemon;
  afterAll(async () => {
    await t?.close();
  });

  it('states what served the run, the canary comparison and its audit event, and the review once made', async () => {
    const state = { changed: false };
    t = await startTestDaemon({ backend, workers: 0, rows: 30, behaviour: driftingModel(state) });
    const { approvalId, runId } = await driftedApproval(t, state, 'IRB-DRIFT-PKT');
    const [check] = await t.app.canary.checks([approvalId]);
    expect(check?.state).toBe('drift');

    const requested = await t.call('alice', 'POST', '/v1/exports', { runIds: [runId], packet: true });
    expect(requested.status).toBe(200);
    const content = JSON.parse(requested.json.preview) as ExportContent;
    expect(content.results[0]?.stale).toBe(true);
    const packet = content.packet;
    expect(packet?.fingerprints.map((f) => f.systemFingerprint)).toContain('fp-after-update');
    expect(packet?.drift).toEqual([
      {
        on: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        benchmarkId: 'site_gated',
        metric: 'exact_match',
        test: 'exact-mcnemar',
        instances: { low: 20, high: 29 },
        baseline: check?.baselineMean,
        canary: check?.canaryMean,
        pValue: Math.round((check?.pValue as number) * 1000) / 1000,
        threshold: 0.05,
        minDifference: 0.05,
        outcome: 'changed',
        reviewedOn: null,
      },
    ]);
    const [driftEvent] = await tailRecords(t.app.db, 1, { type: 'drift.check', outcome: 'success', rule: 'drift.detected' });
    expect(packet?.evidence).toContainEqual({ figure: '/packet/drift/0', auditSeq: driftEvent?.seq });

    // Released and rendered: the card carries the comparison; the page says it changed.
    const released = await t.call('dave', 'POST', `/v1/exports/${requested.json.exportId}/release`, {});
    expect(released.status).toBe(200);
    const key = loadExportPublicKey(join(t.app.config.keysDir, EXPORT_PUBLIC_KEY_FILE));
    const bundle = verifiedBundle(released.json.files.bundle as string, key, requested.json.exportId as string);
    expect(exportReportHtml(bundle)).toContain('Drift under the approval');
    expect(await modelCard(bundle)).toContain('site_gated');

    // Once compliance has reviewed the drift, a new packet says when.
    expect((await t.call('carol', 'POST', `/v1/approvals/${approvalId}/review-drift`, { note: 'vendor update confirmed' })).status).toBe(200);
    const after = await t.call('alice', 'POST', '/v1/exports', { runIds: [runId], packet: true });
    const reviewed = (JSON.parse(after.json.preview) as ExportContent).packet?.drift[0];
    expect(reviewed?.reviewedOn).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});
