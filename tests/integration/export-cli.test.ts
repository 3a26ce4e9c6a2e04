/**
 * `ehrbench export` and `ehrbench leaderboard --runs` in local mode (the embedded single-user setup),
 * where the operating-system account is a researcher and auditor: it may request and download its
 * exports, never release them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { EXPORT_PUBLIC_KEY_FILE } from '../../src/export';
import { Operations } from '../../src/operations';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { startTestApp } from '../helpers/app';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

describe('export and leaderboard commands', () => {
  it('request, show, refuse a self-release, download, verify; leaderboard from runs', async () => {
    const t = await startTestApp();
    // The commands open the data directory themselves; the test's own app must not hold it.
    await t.app.close();
    const env = t.home.env;
    const cli = async (args: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const io: Io = { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env };
      const code = await main(args, io);
      return { code, stdout: out.join(''), stderr: err.join('') };
    };
    try {
      const runs: { runId: string; mainScore: number }[] = [];
      for (const [benchmark, n] of [
        ['pubmed_qa', 40],
        ['medec', 30],
      ] as const) {
        const r = await cli(['run', '--benchmark', benchmark, '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', String(n), '--json']);
        expect(r.code).toBe(0);
        runs.push(JSON.parse(r.stdout));
      }

      const requested = await cli(['export', 'request', '--runs', runs.map((r) => r.runId).join(','), '--json']);
      expect(requested.code).toBe(0);
      const view = JSON.parse(requested.stdout);
      expect(view.preview.results.map((r: { benchmark: { id: string } }) => r.benchmark.id)).toEqual(['pubmed_qa', 'medec']);

      const shown = await cli(['export', 'show', view.exportId]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain(`export ${view.exportId}: requested`);
      expect(shown.stdout).toMatch(/medec v1\.1\.0 \(public\) on demo-loopback.*n 30-39/);
      expect(shown.stdout).toContain('subgroup errorType:');

      const self = await cli(['export', 'release', view.exportId]);
      expect(self.code).toBe(3);
      expect(self.stderr).toMatch(/^ehrbench: denied by rule rbac\.compliance-required: releasing an export needs the compliance role/);
      expect(self.stderr.trim().split('\n')).toHaveLength(1);

      // A compliance officer releases it (through the daemon in real life; the operation here).
      const app = await openApp({ file: t.home.configFile, env });
      try {
        const carol = app.principals().get('carol');
        await new Operations(app).releaseExport({ principal: carol as NonNullable<typeof carol>, authMethod: 'mtls' }, view.exportId, 'helm');
      } finally {
        await app.close();
      }

      const out = tempDir('export-download');
      const downloaded = await cli(['export', 'download', view.exportId, '--out', out]);
      expect(downloaded.code).toBe(0);
      const bundleFile = join(out, view.exportId, 'bundle.json');
      expect(existsSync(bundleFile)).toBe(true);
      const key = join(t.home.home, 'keys', EXPORT_PUBLIC_KEY_FILE);
      const verified = await cli(['export', 'verify', bundleFile, '--key', key, '--helm', join(out, view.exportId, 'helm')]);
      expect(verified.stderr).toBe('');
      expect(verified.code).toBe(0);
      expect(verified.stdout).toContain(`verifies (export ${view.exportId}, 2 result(s)`);
      expect(JSON.parse(readFileSync(bundleFile, 'utf8')).helm).toHaveLength(2);
      // The folder download wrote is what people are told about: it verifies too, its helm/ with it.
      const folder = await cli(['export', 'verify', join(out, view.exportId), '--key', key]);
      expect([folder.code, folder.stderr]).toEqual([0, '']);
      expect(folder.stdout).toContain(`bundle.json: verifies (export ${view.exportId}, 2 result(s)`);
      expect(folder.stdout).toContain(`HELM files in ${join(out, view.exportId, 'helm')} match`);
      // Its parent holds no bundle: the refusal says which folder to name.
      const parent = await cli(['export', 'verify', out, '--key', key]);
      expect([parent.code, parent.stderr]).toEqual([
        1,
        `ehrbench: ${out}: a folder with no bundle.json; name the export's folder (what "export download --out DIR" wrote: DIR/<export id>) or its bundle.json\n`,
      ]);

      const listed = await cli(['export', 'list', '--json']);
      expect(JSON.parse(listed.stdout).map((v: { exportId: string; state: string }) => [v.exportId, v.state])).toEqual([[view.exportId, 'released']]);

      const board = await cli(['leaderboard', '--runs', runs[0]?.runId as string, '--runs', runs[1]?.runId as string, '--json']);
      expect(board.code).toBe(0);
      const lb = JSON.parse(board.stdout);
      expect(lb.models.map((m: { model: string }) => m.model)).toEqual([DEMO_ENDPOINT_ID]);
      expect(lb.benchmarks.map((b: { id: string }) => b.id)).toEqual(['pubmed_qa', 'medec']);
      expect(lb.models[0].macroAverage).toBeCloseTo(((runs[0]?.mainScore ?? 0) + (runs[1]?.mainScore ?? 0)) / 2, 10);
      expect((await cli(['leaderboard'])).code).toBe(2);
      for (const sub of ['request', 'show', 'list', 'release', 'download', 'verify']) {
        const help = spawnSync(process.execPath, [join(ROOT, 'bin', 'ehrbench.js'), 'export', sub, '--help'], { encoding: 'utf8', env: { PATH: process.env.PATH } });
        expect(help.status).toBe(0);
        expect(help.stdout).toContain(`ehrbench export ${sub}`);
      }
    } finally {
      await t.server.close();
      await t.home.cleanup();
    }
  });
});
