/**
 * Which data a run read (issue 30, HELM #3921: MedCalc-Bench's loader moved to newer data under the same
 * run name): every run records the sha256 of each data file it reads, shows it, and is held to it when it
 * is planned; an export of runs of one benchmark that read different data is refused unless the
 * requester allows it, and the bundle then lists the revisions. And the medhelm-leaderboard preset:
 * HELM's leaderboard settings in one word, recorded with the run, a contradicting setting refused.
 * On every storage backend, through the operations the daemon's routes call.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalHash } from '../../src/canonical';
import type { ExportContent } from '../../src/export';
import { type Caller, Operations } from '../../src/operations';
import { executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { type App, openApp } from '../../src/app';
import { startModelServer } from '../../src/demo/model-server';
import { researcher } from '../helpers/app';
import { startTestDaemon } from '../helpers/daemon';
import { backends } from '../helpers/db';
import { makeHome } from '../helpers/home';

jest.setTimeout(240_000);

const ROWS = 40;
const PUBMED_SHA256 = '8b3276be8942ebbd77f3ddcda12c1749bf0e490045a736fd8438ee40cf37a41d';

/** Synthetic rows; `revision` changes one reference, as a dataset's new release would. */
function rows(revision: number): string {
  const lines = Array.from({ length: ROWS }, (_, i) => `${i + 1},"Synthetic note ${i + 1}: stable.",${(i + revision) % 2 ? 'yes' : 'no'}`);
  return ['id,context,label', ...lines].join('\n') + '\n';
}

/** A site benchmark whose data file is not pinned: only the run's own record says which bytes it read. */
function writeBenchmark(dir: string): string {
  const folder = join(dir, 'site_followup');
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'data.csv'), rows(0));
  writeFileSync(join(folder, 'prompt.txt'), '{{note}}\nIs follow-up needed?\n{{choices}}\nAnswer:');
  writeFileSync(
    join(folder, 'benchmark.json'),
    JSON.stringify({
      id: 'site_followup',
      version: '1.0.0',
      displayName: 'Data revision test',
      category: 'Administration and Workflow',
      subcategory: 'Care Coordination and Planning',
      tier: 'public',
      dataset: { origin: 'shipped', files: [{ path: 'data.csv' }], format: 'csv', adapter: 'columns', columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'] } },
      prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
      references: 'label column',
      metrics: { main: 'exact_match' },
      split: 'test',
      lowerIsBetter: false,
    }),
  );
  return join(folder, 'data.csv');
}

async function startApp(backend: 'pglite' | 'postgres') {
  const home = await makeHome(backend);
  const siteDir = join(home.home, 'site-benchmarks');
  const dataFile = writeBenchmark(siteDir);
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  config.catalog = { dirs: [siteDir] };
  writeFileSync(home.configFile, JSON.stringify(config, null, 2));
  const server = await startModelServer({
    certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
    keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
    port: home.port,
  });
  const app = await openApp({ file: home.configFile, env: home.env });
  return {
    app,
    dataFile,
    async close() {
      await app.close();
      await server.close();
      await home.cleanup();
    },
  };
}

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

async function completedRun(app: App, ops: Operations): Promise<string> {
  const view = await ops.requestRun(callerOf(app, 'alice'), { benchmarkId: 'site_followup', endpointId: DEMO_ENDPOINT_ID });
  expect((await executeRun(app.engine, view.runId)).status).toBe('completed');
  return view.runId;
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => ({ code: 'allowed', message: '' }),
    (e: { rule?: string; code?: string; message: string }) => ({ code: e.rule ?? e.code, message: e.message }),
  );

const sha256Of = (text: string) => createHash('sha256').update(text).digest('hex');

describe.each(backends())('data revisions and the leaderboard preset on %s', (backend) => {
  let t: Awaited<ReturnType<typeof startApp>>;
  let ops: Operations;

  beforeAll(async () => {
    t = await startApp(backend);
    ops = new Operations(t.app);
  });

  afterAll(async () => {
    await t?.close();
  });

  it("records the sha256 of the shipped file a run read, and shows it with the run (PubMedQA's pinned ori_pqal.json)", async () => {
    const view = await ops.requestRun(callerOf(t.app, 'alice'), { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, maxInstances: 3 });
    const files = [{ name: 'ori_pqal.json', sha256: PUBMED_SHA256 }];
    expect(view.data).toEqual({ sha256: canonicalHash({ files }), files });
    expect(view.preset).toBeNull();
  });

  it('records an unpinned file as hashed at request, and refuses to plan the run on a file changed since', async () => {
    const run = await requestRun(t.app.engine, { benchmarkId: 'site_followup', endpointId: DEMO_ENDPOINT_ID, requester: researcher });
    expect(run.spec.data?.files).toEqual([{ name: 'data.csv', sha256: sha256Of(rows(0)) }]);
    writeFileSync(t.dataFile, rows(1));
    try {
      expect(await failure(executeRun(t.app.engine, run.run_id))).toMatchObject({ code: 'dataset.hash-mismatch' });
    } finally {
      writeFileSync(t.dataFile, rows(0));
    }
  });

  it('refuses an export of runs of two versions of one benchmark (other prompts), unless allowed', async () => {
    const alice = callerOf(t.app, 'alice');
    const older = await completedRun(t.app, ops);
    const newer = await completedRun(t.app, ops);
    // As the release before this benchmark's prompts changed recorded its run.
    await t.app.db.query("UPDATE runs SET benchmark_version = '0.9.0' WHERE run_id = $1", [older]);
    const refused = await failure(ops.requestExport(alice, [older, newer]));
    expect(refused.code).toBe('export.benchmark-versions-differ');
    expect(refused.message).toContain(`run ${older} version 0.9.0, run ${newer} version 1.0.0`);
    const allowed = await ops.requestExport(alice, [older, newer], { allowMixedData: true });
    expect(allowed.state).toBe('requested');
  });

  it("refuses an export of runs scored by another scorer version, naming the pin; allowed, the bundle carries each run's pins and what differs", async () => {
    const alice = callerOf(t.app, 'alice');
    const older = await completedRun(t.app, ops);
    const newer = await completedRun(t.app, ops);
    const pins = (await ops.showRun(alice, newer)).pins;
    expect(pins.scorer).toMatch(/^[0-9a-f]{64}$/);
    // As a release whose exact-match scorer changed recorded its run.
    const oldScorer = '0'.repeat(64);
    await t.app.db.query(`UPDATE runs SET spec = jsonb_set(spec, '{pins,scorer}', to_jsonb($2::text)) WHERE run_id = $1`, [older, oldScorer]);
    const refused = await failure(ops.requestExport(alice, [older, newer]));
    expect(refused.code).toBe('export.pins-differ');
    expect(refused.message).toContain(`site_followup: runs that were scored by different scorer versions: scorer (run ${older} 000000000000, run ${newer} ${pins.scorer.slice(0, 12)})`);
    const allowed = await ops.requestExport(alice, [older, newer], { allowMixedData: true });
    const content = JSON.parse(allowed.preview) as ExportContent;
    expect(content.mixedPins).toEqual([{ benchmarkId: 'site_followup', differs: ['scorer'] }]);
    expect(content.results.map((r) => r.pins)).toEqual([{ ...pins, scorer: oldScorer }, pins]);
  });

  it('refuses an export of runs of one benchmark that read different data, unless allowed; the bundle then lists both revisions', async () => {
    const alice = callerOf(t.app, 'alice');
    const before = await completedRun(t.app, ops);
    writeFileSync(t.dataFile, rows(1));
    const after = await completedRun(t.app, ops);
    writeFileSync(t.dataFile, rows(0));
    const [a, b] = await Promise.all([ops.showRun(alice, before), ops.showRun(alice, after)]);
    expect(a.data?.sha256).not.toBe(b.data?.sha256);

    const refused = await failure(ops.requestExport(alice, [before, after]));
    expect(refused.code).toBe('export.data-revisions-differ');
    expect(refused.message).toContain(`run ${before} data ${a.data?.sha256.slice(0, 12)}`);
    expect(refused.message).toContain('--allow-mixed-data');

    const allowed = await ops.requestExport(alice, [before, after], { allowMixedData: true });
    const content = JSON.parse(allowed.preview) as ExportContent;
    expect(content.mixedDataRevisions).toEqual([
      {
        benchmarkId: 'site_followup',
        runs: [
          { runId: before, revision: a.data?.sha256 },
          { runId: after, revision: b.data?.sha256 },
        ],
      },
    ]);
    // The release rebuilds the same content (the allowance is the stored content's) and signs it.
    const released = await ops.releaseExport(callerOf(t.app, 'carol'), allowed.exportId, 'bundle');
    expect(released.export.state).toBe('released');
  });

  it('does not refuse on a run whose data revision is unknown (recorded before revisions were) alone', async () => {
    const alice = callerOf(t.app, 'alice');
    const older = await completedRun(t.app, ops);
    const newer = await completedRun(t.app, ops);
    await t.app.db.query(`UPDATE runs SET spec = spec - 'data' WHERE run_id = $1::uuid`, [older]);
    expect((await ops.showRun(alice, older)).data).toBeNull();
    const requested = await ops.requestExport(alice, [older, newer]);
    expect((JSON.parse(requested.preview) as ExportContent).mixedDataRevisions).toBeUndefined();
  });

  it("applies MedHELM's leaderboard settings with --preset medhelm-leaderboard, records the preset, and refuses a setting that contradicts it naming both", async () => {
    const alice = callerOf(t.app, 'alice');
    const view = await ops.requestRun(alice, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard' });
    expect([view.preset, view.maxInstances, view.sample, view.scoring]).toEqual(['medhelm-leaderboard', 1000, { method: 'helm', seed: 0, maxInstances: 1000 }, 'helm']);
    const run = await t.app.engine.store.getRun(view.runId);
    // HELM's max tokens and temperature for MedCalc-Bench (medhelm_run_specs.py: max_tokens=10; temperature 0).
    expect([run?.spec.maxTokens, run?.spec.temperature, run?.spec.preset]).toEqual([10, 0, 'medhelm-leaderboard']);
    // Asking for what the preset sets anyway is not a contradiction.
    const same = await ops.requestRun(alice, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard', maxInstances: 1000, scoring: 'helm', sample: 'helm' });
    expect(same.preset).toBe('medhelm-leaderboard');

    const scoring = await failure(ops.requestRun(alice, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard', scoring: 'corrected' }));
    expect(scoring.code).toBe('run.preset-conflict');
    expect(scoring.message).toContain('--preset medhelm-leaderboard sets --scoring (scoring) to helm, and the request asks for corrected');
    const cap = await failure(ops.requestRun(alice, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard', maxInstances: 50 }));
    expect(cap).toMatchObject({ code: 'run.preset-conflict', message: expect.stringContaining('--max-instances (maxInstances) to 1000, and the request asks for 50') });
    const sample = await failure(ops.requestRun(alice, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard', sample: 'first' }));
    expect(sample).toMatchObject({ code: 'run.preset-conflict', message: expect.stringContaining('--sample (sample) to helm, and the request asks for first') });
  });
});

describe('the run request API', () => {
  it('takes preset medhelm-leaderboard, refuses another, and answers every run with its data revision and preset', async () => {
    const t = await startTestDaemon();
    try {
      const ok = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard' });
      expect(ok.status).toBe(200);
      expect([ok.json.preset, ok.json.maxInstances, ok.json.scoring, ok.json.data?.files]).toEqual([
        'medhelm-leaderboard',
        1000,
        'helm',
        [{ name: 'test_data.csv', sha256: 'c2d23097f8bdb7ae4a77dbf4a5a767335df7303998d7c7664a73a29fd8e2b31a' }],
      ]);
      const conflict = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'medhelm-leaderboard', scoring: 'corrected' });
      expect([conflict.status, conflict.json.error]).toEqual([400, 'run.preset-conflict']);
      expect(conflict.json.message).toContain('--preset medhelm-leaderboard sets --scoring (scoring) to helm');
      const unknown = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, preset: 'helm-lite' });
      expect(unknown.status).toBe(400);
    } finally {
      await t.close();
    }
  });
});
