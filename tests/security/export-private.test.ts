/**
 * A private run's results leave only as a released, signed, schema-closed bundle, through the real
 * mTLS daemon: who may request, see, release and download; the approval re-checked at release; the
 * bundle verified offline (library and CLI, no database); and no instance key, prediction or prompt
 * fragment of the run anywhere in what leaves (canary records).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deidentifiedPrompt } from '../../src/calls';
import { EXPORT_PUBLIC_KEY_FILE, loadExportPublicKey, verifyBundle } from '../../src/export';
import { backends, tempDir } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';

jest.setTimeout(240_000);

const ROWS = 40;

/** Synthetic records full of canary markers: ids, names and numbers that must never leave. */
function canaryCsv(): string {
  const rows = Array.from(
    { length: ROWS },
    (_, i) => `pt-canary-${7100 + i},"CANARY note ${i}: Zelda Quixote-Marsh, MRN 88${4000 + i}, seen 2023-02-${String(1 + (i % 28)).padStart(2, '0')}; wound healing.",${i % 2 ? 'yes' : 'no'}`,
  );
  return ['id,context,label', ...rows].join('\n') + '\n';
}

async function waitForRun(t: TestDaemon, runId: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    if (['completed', 'failed', 'halted', 'cancelled'].includes(r.json.status)) return r.json.status;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('run did not finish');
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

describe.each(backends())('private results leave only as a released bundle (%s)', (backend) => {
  it('request, review, release once by another person, verify anywhere, nothing instance-level inside', async () => {
    const t = await startTestDaemon({
      backend,
      workers: 1,
      rows: ROWS,
      // Some predictions carry a canary so a leak of model outputs would show.
      behaviour: (n) => ({ kind: 'answer', text: n % 3 === 0 ? `no, CANARY-PREDICTION-${n}-Quixote` : 'A' }),
    });
    try {
      writeFileSync(join(t.home.home, 'site-benchmarks', 'site_private', 'data.csv'), canaryCsv());
      // The canaries here are planted in predictions and instance data to test the export door, not
      // de-identification (deid-run and phi-canary test that), so the stage passes prompts through.
      t.app.engine.deid = { version: 'test-passthrough', apply: (_ctx, _instance, prompt) => ({ ok: true, prompt: deidentifiedPrompt(prompt), spans: 0 }) };

      const approval = await t.call('carol', 'POST', '/v1/approvals', {
        protocolNumber: 'IRB-PRIV-7',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        benchmarks: ['site_private'],
        purpose: 'private export test',
      });
      expect(approval.status).toBe(200);
      const approvalId = approval.json.approvalId as string;
      const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId });
      expect(requested.json.status).toBe('requested');
      const runId = requested.json.runId as string;
      expect((await t.call('dave', 'POST', `/v1/runs/${runId}/approve`, {})).status).toBe(200);
      expect(await waitForRun(t, runId)).toBe('completed');

      // Before any release, an auditor and an admin see the run's metadata, never its exact n or scores.
      for (const who of ['erin', 'ivan']) {
        const seen = await t.call(who, 'GET', `/v1/runs/${runId}`);
        expect(seen.json).toMatchObject({ runId, status: 'completed', tier: 'private', counts: null, instanceCount: null, mainScore: null, aggregates: null, promptTokens: null });
        expect(seen.json.withheld).toBe('visibility.run-figures.withheld');
        const listed = (await t.call(who, 'GET', '/v1/runs')).json as { runId: string; counts: unknown; mainScore: unknown }[];
        expect(listed.find((r) => r.runId === runId)).toMatchObject({ counts: null, mainScore: null });
      }
      expect((await t.call('carol', 'GET', `/v1/runs/${runId}`)).json.counts).toMatchObject({ done: ROWS });

      // Request: only the researcher, only the schema's fields.
      expect((await t.call('alice', 'POST', '/v1/exports', { runIds: [runId], note: 'x' })).status).toBe(400);
      expect((await t.call('bob', 'POST', '/v1/exports', { runIds: [runId] })).json).toMatchObject({ rule: 'export.run-not-owned' });
      const exp = await t.call('alice', 'POST', '/v1/exports', { runIds: [runId] });
      expect(exp.status).toBe(200);
      const exportId = exp.json.exportId as string;

      // Review: compliance and auditors see the preview; another researcher does not.
      expect((await t.call('bob', 'GET', `/v1/exports/${exportId}`)).status).toBe(404);
      const review = await t.call('carol', 'GET', `/v1/exports/${exportId}`);
      expect(review.status).toBe(200);
      expect((await t.call('erin', 'GET', `/v1/exports/${exportId}`)).json.preview).toBe(review.json.preview);

      // Release: not the requester, not an auditor, and not while the approval is suspended.
      expect((await t.call('alice', 'POST', `/v1/exports/${exportId}/release`, {})).json).toMatchObject({ rule: 'rbac.compliance-required' });
      expect((await t.call('erin', 'POST', `/v1/exports/${exportId}/release`, {})).json).toMatchObject({ rule: 'rbac.compliance-required' });
      expect((await t.call('carol', 'POST', `/v1/approvals/${approvalId}/suspend`, { reason: 'audit' })).status).toBe(200);
      expect((await t.call('dave', 'POST', `/v1/exports/${exportId}/release`, {})).json).toMatchObject({ rule: 'export.approval-inactive' });
      expect((await t.call('dave', 'POST', `/v1/approvals/${approvalId}/reinstate`, { reason: 'resolved' })).status).toBe(200);
      const released = await t.call('carol', 'POST', `/v1/exports/${exportId}/release`, { format: 'helm' });
      expect(released.status).toBe(200);
      expect(released.json.export).toMatchObject({ state: 'released', releasedBy: 'carol', requestedBy: 'alice' });
      const again = await t.call('dave', 'POST', `/v1/exports/${exportId}/release`, {});
      expect(again.status).toBe(403);
      expect(again.json).toMatchObject({ rule: 'export.already-released' });

      // Download: the requester gets the same bytes; an auditor gets nothing.
      const download = await t.call('alice', 'GET', `/v1/exports/${exportId}/files`);
      expect(download.json.bundle).toBe(released.json.files.bundle);
      expect((await t.call('erin', 'GET', `/v1/exports/${exportId}/files`)).status).toBe(404);

      // Verifies with the public key alone.
      const bundleText = download.json.bundle as string;
      const pubFile = join(t.app.config.keysDir, EXPORT_PUBLIC_KEY_FILE);
      const report = verifyBundle(bundleText, loadExportPublicKey(pubFile));
      expect(report).toMatchObject({ ok: true, problems: [] });
      const bundle = JSON.parse(bundleText);
      expect(bundle).toMatchObject({ tier: 'private', irbProtocol: 'IRB-PRIV-7', requestedBy: 'alice', releasedBy: 'carol' });
      expect(bundle.results[0]).toMatchObject({ runId, n: { low: 40, high: 49 }, deidVersion: 'test-passthrough' });

      // ... and with the CLI on a machine with no ehrbench data directory at all.
      const elsewhere = tempDir('recipient');
      const file = join(elsewhere, 'bundle.json');
      writeFileSync(file, bundleText);
      const env = { PATH: process.env.PATH, HOME: elsewhere, EHRBENCH_HOME: join(elsewhere, 'none') };
      const ok = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'export', 'verify', file, '--key', pubFile], { encoding: 'utf8', env });
      expect(ok.status).toBe(0);
      expect(ok.stdout).toContain(`verifies (export ${exportId}`);
      writeFileSync(file, bundleText.replace('"releasedBy":"carol"', '"releasedBy":"dave"'));
      const bad = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'export', 'verify', file, '--key', pubFile], { encoding: 'utf8', env });
      expect(bad.status).toBe(1);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
      expect(bad.stderr).toMatch(/does not verify: signature: does not verify/);

      // Nothing instance-level in anything that left, nor in the daemon's own copy on disk.
      const items = await t.app.db.query<{ item_key: string; prediction: string | null }>('SELECT item_key, prediction FROM run_items WHERE run_id = $1', [runId]);
      expect(items).toHaveLength(ROWS);
      const prompts = t.server.received.map((r) => r.prompt);
      expect(prompts).toHaveLength(ROWS);
      const outputs = [
        bundleText,
        review.json.preview as string,
        ...(released.json.files.helm as { runSpec: string; stats: string }[]).flatMap((h) => [h.runSpec, h.stats]),
        ...filesUnder(t.app.config.export.dir).map((f) => readFileSync(f, 'utf8')),
      ];
      expect(outputs.length).toBeGreaterThanOrEqual(5);
      const leaksIn = (out: string): string[] => {
        const leaks: string[] = [];
        for (const i of items) {
          if (out.includes(i.item_key)) leaks.push(`key ${i.item_key}`);
          if (i.prediction && i.prediction.length > 3 && out.includes(i.prediction)) leaks.push(`prediction ${i.prediction}`);
        }
        for (const p of prompts) {
          for (let at = 0; at + 12 <= p.length; at++) if (out.includes(p.slice(at, at + 12))) leaks.push(`prompt fragment ${JSON.stringify(p.slice(at, at + 12))}`);
        }
        for (const marker of ['CANARY', 'Quixote', 'Zelda', 'MRN', 'pt-canary', '2023-02']) if (out.includes(marker)) leaks.push(`marker ${marker}`);
        return leaks;
      };
      // The scan does find instance data where it is (a control), and finds none in what left.
      expect(leaksIn(JSON.stringify(items.slice(0, 3)))).not.toEqual([]);
      expect(leaksIn(`x${prompts[5]?.slice(20, 40)}x`)).not.toEqual([]);
      const leaks = outputs.flatMap(leaksIn);
      expect(leaks).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
