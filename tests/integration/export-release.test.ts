/**
 * The release workflow through the operations (the same code the daemon's routes call), on every
 * storage backend: request -> preview -> release -> verify, with the refusals that matter.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readWitness, WITNESS_FILE } from '../../src/audit';
import { canonicalJson } from '../../src/canonical';
import { type Bundle, type ExportContent, EXPORT_PUBLIC_KEY_FILE, ExportService, helmFileProblems, loadExportPublicKey, verifyBundle, writeExportFiles } from '../../src/export';
import { type Caller, Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import type { App } from '../../src/app';
import { startTestApp } from '../helpers/app';
import { backends, tempDir } from '../helpers/db';

jest.setTimeout(240_000);

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

/** The first N instances (not HELM's sample): the subgroup sizes below are those of the first rows. */
async function completedRun(app: App, ops: Operations, who: string, benchmarkId: string, maxInstances: number): Promise<string> {
  const view = await ops.requestRun(callerOf(app, who), { benchmarkId, endpointId: DEMO_ENDPOINT_ID, maxInstances, sample: 'first' });
  const summary = await executeRun(app.engine, view.runId);
  expect(summary.status).toBe('completed');
  return view.runId;
}

function preview(view: { preview: string }): ExportContent {
  return JSON.parse(view.preview) as ExportContent;
}

const rule = (p: Promise<unknown>) =>
  p.then(
    () => 'allowed',
    (e: { rule?: string; code?: string }) => e.rule ?? e.code,
  );

describe.each(backends())('export release workflow on %s', (backend) => {
  it('releases a public run once: suppressed subgroups, signed bundle, HELM files, the release sealed in the audit trail first', async () => {
    const t = await startTestApp({ backend });
    try {
      const { app } = t;
      const ops = new Operations(app);
      const runId = await completedRun(app, ops, 'alice', 'medcalc_bench', 200);

      const requested = await ops.requestExport(callerOf(app, 'alice'), [runId]);
      expect(requested.state).toBe('requested');
      const content = preview(requested);
      const result = content.results[0];
      // MedCalc's first 200 rows: physical 80, lab 79, risk 40, severity 1 (and no diagnosis/date/dosage).
      expect(result?.n).toEqual({ low: 200, high: 209 });
      const cells = result?.subgroups[0]?.cells.map((c) => ('suppressed' in c ? [c.label, c.suppressed] : [c.label, `${c.n.low}-${c.n.high}`]));
      expect(cells).toEqual([
        ['lab', '70-79'],
        ['physical', '80-89'],
        ['risk', 'complementary'],
        ['severity', '<k'],
        ['diagnosis', '0-0'],
        ['date', '0-0'],
        ['dosage', '0-0'],
      ]);
      // The severity instance cannot be recovered as total minus the released cells.
      expect(JSON.stringify(result?.subgroups)).not.toMatch(/"label":"(risk|severity)","n"/);

      // Who may see and who may release.
      expect((await ops.showExport(callerOf(app, 'erin'), requested.exportId)).preview).toBe(requested.preview);
      expect(await rule(ops.showExport(callerOf(app, 'bob'), requested.exportId))).toBe('export.not-found');
      expect(await rule(ops.releaseExport(callerOf(app, 'alice'), requested.exportId, 'bundle'))).toBe('rbac.compliance-required');
      expect(await rule(ops.releaseExport(callerOf(app, 'erin'), requested.exportId, 'bundle'))).toBe('rbac.compliance-required');

      const released = await ops.releaseExport(callerOf(app, 'carol'), requested.exportId, 'helm');
      expect(released.export.state).toBe('released');
      expect(released.export.releasedBy).toBe('carol');
      const path = released.files.path as string;
      const text = readFileSync(join(path, 'bundle.json'), 'utf8');
      expect(text).toBe(released.files.bundle);

      const publicKey = loadExportPublicKey(join(app.config.keysDir, EXPORT_PUBLIC_KEY_FILE));
      expect(verifyBundle(text, publicKey)).toMatchObject({ ok: true, problems: [] });
      const bundle = JSON.parse(text) as Bundle;
      // Exactly what was reviewed, plus the release fields.
      const { format: _f, schemaVersion: _v, createdOn, releasedBy: _r, daemonVersion: _d, auditCheckpoint, helm, signature: _s, ...signedContent } = bundle;
      expect(canonicalJson(signedContent)).toBe(requested.preview);
      expect(createdOn).toMatch(/^\d{4}-\d{2}-\d{2}$/);

      // The release event is in the trail and the named checkpoint (signed, witnessed) covers it.
      const [event] = await app.db.query<{ seq: number }>("SELECT seq FROM audit_events WHERE event_type = 'export.release' AND outcome = 'success' AND export_id = $1", [requested.exportId]);
      expect(Number(event?.seq)).toBe(auditCheckpoint.releaseEventSeq);
      const [cp] = await app.db.query<{ seq: number; head_hash: string; key_fingerprint: string }>('SELECT seq, head_hash, key_fingerprint FROM audit_checkpoints WHERE checkpoint_id = $1', [
        auditCheckpoint.checkpointId,
      ]);
      expect(Number(cp?.seq)).toBe(auditCheckpoint.seq);
      expect(auditCheckpoint.seq).toBeGreaterThanOrEqual(auditCheckpoint.releaseEventSeq);
      expect(cp?.head_hash).toBe(auditCheckpoint.headHash);
      const [head] = await app.db.query<{ row_hash: string }>('SELECT row_hash FROM audit_events WHERE seq = $1', [auditCheckpoint.seq]);
      expect(head?.row_hash).toBe(auditCheckpoint.headHash);

      // HELM: run_spec.json without paths, the benchmark's HELM group and the model; trial-mean stats.
      expect(helm).toHaveLength(1);
      const helmDir = join(path, 'helm');
      expect(helmFileProblems(helm, helmDir)).toEqual([]);
      const [runDir] = readdirSync(helmDir);
      const runSpec = JSON.parse(readFileSync(join(helmDir, runDir as string, 'run_spec.json'), 'utf8'));
      expect(runSpec.groups).toEqual(['medcalc_bench']);
      expect(runSpec.adapter_spec.model).toBe('ehrbench-demo-standin');
      expect(runSpec.adapter_spec.model_deployment).toBe('ehrbench-demo-standin');
      expect(runSpec.scenario_spec.args).toEqual({});
      expect(JSON.stringify(runSpec)).not.toMatch(/datasets|\.csv|\.json|[A-Za-z]:\\|"\/|home|tmp/);
      const stats = JSON.parse(readFileSync(join(helmDir, runDir as string, 'stats.json'), 'utf8')) as {
        name: { name: string; split: string };
        count: number;
        min: number;
        max: number;
        mean: number;
        stddev: number;
      }[];
      const main = stats.find((s) => s.name.name === 'medcalc_bench_accuracy');
      const released0 = result?.metrics.find((m) => m.name === 'medcalc_bench_accuracy') as { value: number };
      expect(main).toMatchObject({ name: { name: 'medcalc_bench_accuracy', split: 'test' }, count: 1, min: released0.value, max: released0.value, mean: released0.value, stddev: 0 });
      expect(stats.find((s) => s.name.name === 'num_instances')?.mean).toBe(200);

      // Released once; the second attempt is refused and audited.
      expect(await rule(ops.releaseExport(callerOf(app, 'dave'), requested.exportId, 'bundle'))).toBe('export.already-released');
      const denials = await app.db.query<{ rule: string }>("SELECT rule FROM audit_events WHERE event_type = 'export.deny' AND export_id = $1", [requested.exportId]);
      expect(denials.map((d) => d.rule)).toContain('export.already-released');

      // The requester downloads the same bytes.
      const again = await ops.downloadExport(callerOf(app, 'alice'), requested.exportId);
      expect(again.bundle).toBe(text);
      expect(await rule(ops.downloadExport(callerOf(app, 'erin'), requested.exportId))).toBe('export.not-found');
    } finally {
      await t.close();
    }
  });

  it('refuses self-release, runs of others and runs not completed', async () => {
    const t = await startTestApp({ backend });
    try {
      const { app } = t;
      const ops = new Operations(app);
      // rita is researcher and compliance officer: she may release exports, never her own.
      const ritaRun = await completedRun(app, ops, 'rita', 'pubmed_qa', 30);
      const ritaExport = await ops.requestExport(callerOf(app, 'rita'), [ritaRun]);
      expect(await rule(ops.releaseExport(callerOf(app, 'rita'), ritaExport.exportId, 'bundle'))).toBe('sod.releaser-is-requester');
      expect((await ops.showExport(callerOf(app, 'rita'), ritaExport.exportId)).state).toBe('requested');

      expect(await rule(ops.requestExport(callerOf(app, 'alice'), [ritaRun]))).toBe('export.run-not-owned');
      const pending = await ops.requestRun(callerOf(app, 'alice'), { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, maxInstances: 20 });
      expect(await rule(ops.requestExport(callerOf(app, 'alice'), [pending.runId]))).toBe('export.run-not-completed');
      expect(await rule(ops.requestExport(callerOf(app, 'carol'), [ritaRun]))).toBe('rbac.researcher-required');

      const denials = await app.db.query<{ rule: string; actor_principal: string }>("SELECT rule, actor_principal FROM audit_events WHERE event_type IN ('export.deny', 'access.denied') ORDER BY seq");
      expect(denials.map((d) => `${d.actor_principal}:${d.rule}`)).toEqual([
        'rita:sod.releaser-is-requester',
        'alice:export.run-not-owned',
        'alice:export.run-not-completed',
        'carol:rbac.researcher-required',
      ]);
      // A run with fewer than k instances exports only suppression markers.
      const tiny = await completedRun(app, ops, 'alice', 'pubmed_qa', 7);
      const small = preview(await ops.requestExport(callerOf(app, 'alice'), [tiny]));
      expect(small.results[0]).toMatchObject({ n: { suppressed: '<k' }, subgroups: [], usage: null });
      expect(small.results[0]?.metrics.map((m) => ('suppressed' in m ? m.suppressed : 'released'))).toEqual(['<k', '<k', '<k', '<k']);
    } finally {
      await t.close();
    }
  });

  it('refuses an export whose cohort differs from a released one by fewer than k instances', async () => {
    const t = await startTestApp({ backend });
    try {
      const { app } = t;
      const ops = new Operations(app);
      const alice = callerOf(app, 'alice');
      const a = await completedRun(app, ops, 'alice', 'pubmed_qa', 60);
      const b = await completedRun(app, ops, 'alice', 'pubmed_qa', 61);
      const same = await completedRun(app, ops, 'alice', 'pubmed_qa', 60);
      const far = await completedRun(app, ops, 'alice', 'pubmed_qa', 80);

      // Within one export: 60 and 61 instances would give away the 61st.
      expect(await rule(ops.requestExport(alice, [a, b]))).toBe('disclosure.differencing');
      const first = await ops.requestExport(alice, [a]);
      await ops.releaseExport(callerOf(app, 'carol'), first.exportId, 'bundle');
      // Against the ledger of released cohorts.
      expect(await rule(ops.requestExport(alice, [b]))).toBe('disclosure.differencing');
      // The same cohort again (another model, say) and one that differs by 20 are fine.
      const again = await ops.requestExport(alice, [same]);
      await ops.releaseExport(callerOf(app, 'dave'), again.exportId, 'bundle');
      const wider = await ops.requestExport(alice, [far]);
      await ops.releaseExport(callerOf(app, 'carol'), wider.exportId, 'bundle');

      // A request made before a close cohort was released is refused at release time.
      const late = await completedRun(app, ops, 'alice', 'pubmed_qa', 100);
      const lateExport = await ops.requestExport(alice, [late]);
      const closer = await completedRun(app, ops, 'alice', 'pubmed_qa', 105);
      const closerExport = await ops.requestExport(alice, [closer]);
      await ops.releaseExport(callerOf(app, 'carol'), closerExport.exportId, 'bundle');
      expect(await rule(ops.releaseExport(callerOf(app, 'dave'), lateExport.exportId, 'bundle'))).toBe('disclosure.differencing');
      expect((await ops.showExport(callerOf(app, 'dave'), lateExport.exportId)).state).toBe('requested');

      // The ledger holds hashes, never instance keys.
      const keys = await app.db.query<{ item_key: string }>('SELECT item_key FROM run_items WHERE run_id = $1', [a]);
      const ledger = await app.db.query<{ key_hash: string }>('SELECT key_hash FROM export_ledger');
      expect(ledger.length).toBeGreaterThan(0);
      const stored = new Set(ledger.map((l) => l.key_hash));
      for (const k of keys) expect(stored.has(k.item_key)).toBe(false);
      expect(ledger.every((l) => /^[0-9a-f]{64}$/.test(l.key_hash))).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('leaves no partial bundle when the disk fills up, audits the failure, and keeps the release downloadable', async () => {
    const t = await startTestApp({ backend });
    try {
      const { app } = t;
      const ops = new Operations(app);
      const runId = await completedRun(app, ops, 'alice', 'pubmed_qa', 30);
      const requested = await ops.requestExport(callerOf(app, 'alice'), [runId]);
      // A disk that takes half of the bundle and then reports ENOSPC.
      const full = new ExportService(app, {
        writeFile: (path, data) => {
          writeFileSync(path, data.slice(0, data.length / 2));
          throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        },
      });
      const carol = await ops.require(callerOf(app, 'carol'), 'export.release', { requestedBy: requested.requestedBy });
      const err = await full.release(carol, requested.exportId, 'bundle').catch((e: unknown) => e as { code: string; message: string });
      expect(err).toMatchObject({ code: 'export.write-failed' });
      expect((err as { message: string }).message).toMatch(/ENOSPC.*nothing partial was left.*export download/);
      const dir = app.config.export.dir;
      expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
      const events = await app.db.query<{ outcome: string; rule: string }>("SELECT outcome, rule FROM audit_events WHERE event_type = 'export.release' AND export_id = $1 ORDER BY seq", [
        requested.exportId,
      ]);
      expect(events).toEqual([
        { outcome: 'success', rule: 'sod.compliance-release' },
        { outcome: 'failed', rule: 'export.write-failed' },
      ]);
      const files = await ops.downloadExport(callerOf(app, 'alice'), requested.exportId);
      const out = tempDir('export-out');
      const written = writeExportFiles(out, files);
      expect(verifyBundle(readFileSync(join(written, 'bundle.json'), 'utf8'), loadExportPublicKey(join(app.config.keysDir, EXPORT_PUBLIC_KEY_FILE))).ok).toBe(true);
      // Written once: the same folder is never overwritten.
      expect(() => writeExportFiles(out, files)).toThrow(/already exists/);
    } finally {
      await t.close();
    }
  });

  it('seals a checkpoint covering the newest event, or names the one that already does', async () => {
    const t = await startTestApp({ backend });
    try {
      const { app } = t;
      await app.audit.record({ type: 'audit.verify', action: 'E', outcome: 'success', rule: 'test' as never, actor: { principal: 'erin', role: 'auditor', authMethod: 'mtls' } });
      const first = await app.audit.sealCovering();
      const [head] = await app.db.query<{ seq: number; row_hash: string }>('SELECT seq, row_hash FROM audit_head');
      expect(first).toEqual({ checkpointId: expect.any(Number), seq: Number(head?.seq), headHash: head?.row_hash, keyFingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(await app.audit.sealCovering()).toEqual(first);
      const witness = readWitness(join(app.config.audit.witnessDirs[0] as string, WITNESS_FILE));
      expect(witness.statement).toMatchObject({ checkpointId: first?.checkpointId, seq: first?.seq, headHash: first?.headHash });
      await app.audit.record({ type: 'audit.verify', action: 'E', outcome: 'success', rule: 'test' as never, actor: { principal: 'erin', role: 'auditor', authMethod: 'mtls' } });
      const second = await app.audit.sealCovering();
      expect(second?.checkpointId).toBe((first?.checkpointId ?? 0) + 1);
      expect(second?.seq).toBe((first?.seq ?? 0) + 1);
    } finally {
      await t.close();
    }
  });
});
