/**
 * Differencing across cells, whatever they are called: a released cell is compared with every other
 * released cell of its benchmark (the ledger, the other runs of the export, the other subgroup fields
 * of its own run) by the instances it covers. The attack: the whole cohort of a 21-instance run is
 * released, then the "north" cell of a bigger run (20 of those 21 instances); both together give away
 * the 21st instance's score.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { startModelServer } from '../../src/demo/model-server';
import type { ExportContent, SubgroupCell } from '../../src/export';
import { type Caller, Operations } from '../../src/operations';
import { executeRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { backends } from '../helpers/db';
import { makeHome } from '../helpers/home';

jest.setTimeout(240_000);

const ROWS = 60;

/**
 * Two public site benchmarks on synthetic notes. site_wards: rows 1-20 in ward north, 21-60 south.
 * site_shifts adds a second field, shift: day (rows 1-21, one more than north), evening (22-40), night (41-60).
 */
function writeBenchmarks(dir: string): void {
  const benchmarks = [
    { id: 'site_wards', subgroups: [{ field: 'ward', values: ['north', 'south'] }] },
    {
      id: 'site_shifts',
      subgroups: [
        { field: 'ward', values: ['north', 'south'] },
        { field: 'shift', values: ['day', 'evening', 'night'] },
      ],
    },
  ];
  for (const b of benchmarks) {
    const folder = join(dir, b.id);
    mkdirSync(folder, { recursive: true });
    const rows = Array.from(
      { length: ROWS },
      (_, i) => `${i + 1},"Synthetic note ${i + 1}: stable.",${i % 2 ? 'yes' : 'no'},${i < 20 ? 'north' : 'south'},${i < 21 ? 'day' : i < 40 ? 'evening' : 'night'}`,
    );
    writeFileSync(join(folder, 'data.csv'), ['id,context,label,ward,shift', ...rows].join('\n') + '\n');
    writeFileSync(join(folder, 'prompt.txt'), '{{note}}\nIs follow-up needed?\n{{choices}}\nAnswer:');
    writeFileSync(
      join(folder, 'benchmark.json'),
      JSON.stringify({
        id: b.id,
        version: '1.0.0',
        displayName: `Differencing test ${b.id}`,
        category: 'Administration and Workflow',
        subcategory: 'Care Coordination and Planning',
        tier: 'public',
        dataset: {
          origin: 'shipped',
          files: [{ path: 'data.csv' }],
          format: 'csv',
          adapter: 'columns',
          columns: { id: 'id', vars: { note: 'context' }, reference: 'label', choices: ['yes', 'no'], extra: { ward: 'ward', shift: 'shift' } },
        },
        prompt: { templateFile: 'prompt.txt', maxTokens: 1 },
        references: 'label column',
        metrics: { main: 'exact_match' },
        split: 'test',
        lowerIsBetter: false,
        subgroups: b.subgroups,
      }),
    );
  }
}

async function startApp(backend: 'pglite' | 'postgres') {
  const home = await makeHome(backend);
  const siteDir = join(home.home, 'site-benchmarks');
  writeBenchmarks(siteDir);
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

async function completedRun(app: App, ops: Operations, benchmarkId: string, maxInstances: number): Promise<string> {
  // The first N rows, not HELM's seeded sample: the cohorts below are chosen by row number.
  const view = await ops.requestRun(callerOf(app, 'alice'), { benchmarkId, endpointId: DEMO_ENDPOINT_ID, maxInstances, sample: 'first' });
  expect((await executeRun(app.engine, view.runId)).status).toBe('completed');
  return view.runId;
}

const rule = (p: Promise<unknown>) =>
  p.then(
    () => 'allowed',
    (e: { rule?: string; code?: string }) => e.rule ?? e.code,
  );

const cellsOf = (content: ExportContent, field: string) =>
  (content.results[0]?.subgroups.find((s) => s.field === field)?.cells ?? []).map((c: SubgroupCell) => [c.label, 'suppressed' in c ? c.suppressed : `${c.n.low}-${c.n.high}`]);

describe.each(backends())('differencing across cell names (%s)', (backend) => {
  it('refuses a subgroup cell that differs by one instance from a released whole cohort, in the ledger and within one export', async () => {
    const t = await startApp(backend);
    try {
      const { app } = t;
      const ops = new Operations(app);
      const alice = callerOf(app, 'alice');
      const small = await completedRun(app, ops, 'site_wards', 21);
      const big = await completedRun(app, ops, 'site_wards', ROWS);

      // Within one export: the whole 21 of one run and the north 20 of the other.
      const together = await rule(ops.requestExport(alice, [small, big]));
      expect(together).toBe('disclosure.differencing');

      // The 21-instance run alone: its north cell (20) is hidden with the south one (1), the whole cohort released.
      const first = await ops.requestExport(alice, [small]);
      expect(cellsOf(JSON.parse(first.preview), 'ward')).toEqual([
        ['north', 'complementary'],
        ['south', '<k'],
      ]);
      await ops.releaseExport(callerOf(app, 'carol'), first.exportId, 'bundle');

      // The 60-instance run releases north (rows 1-20), one instance away from the released 21.
      const refused = await ops.requestExport(alice, [big]).catch((e: { rule?: string; message: string }) => e);
      expect(refused).toMatchObject({ rule: 'disclosure.differencing' });
      expect((refused as { message: string }).message).toMatch(/subgroup ward=north.*export [0-9a-f-]{36}/);
      const denied = await app.db.query<{ rule: string }>("SELECT rule FROM audit_events WHERE event_type = 'export.deny' ORDER BY seq");
      expect(denied.map((d) => d.rule)).toEqual(['disclosure.differencing', 'disclosure.differencing']);
    } finally {
      await t.close();
    }
  });

  it('hides a cell of one field that differs from a cell of another field of the same run by fewer than k, and still refuses what the ledger holds', async () => {
    const t = await startApp(backend);
    try {
      const { app } = t;
      const ops = new Operations(app);
      const alice = callerOf(app, 'alice');
      const run = await completedRun(app, ops, 'site_shifts', ROWS);
      const requested = await ops.requestExport(alice, [run]);
      const content = JSON.parse(requested.preview) as ExportContent;
      // north (rows 1-20) and day (rows 1-21) differ by one: north is hidden, then south complementarily.
      expect(cellsOf(content, 'ward')).toEqual([
        ['north', 'differencing'],
        ['south', 'complementary'],
      ]);
      expect(cellsOf(content, 'shift')).toEqual([
        ['day', '20-29'],
        ['evening', '11-19'],
        ['night', '20-29'],
      ]);
      await ops.releaseExport(callerOf(app, 'carol'), requested.exportId, 'bundle');
      // The same run's released cells, as the ledger has them, are not refused again (identical cohorts).
      const again = await ops.requestExport(alice, [await completedRun(app, ops, 'site_shifts', ROWS)]);
      expect(again.state).toBe('requested');
      // A run of 20 (rows 1-20): its whole cohort is one instance from the released "day" cell.
      expect(await rule(ops.requestExport(alice, [await completedRun(app, ops, 'site_shifts', 20)]))).toBe('disclosure.differencing');
    } finally {
      await t.close();
    }
  });
});
