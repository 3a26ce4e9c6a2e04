/**
 * `runs show` says which data a run read, and `leaderboard --runs` refuses to rank runs of one benchmark
 * that read different data unless --allow-mixed-data is given, and then says so (issue 30; HELM #3921).
 * In local mode (the embedded single-user setup), two endpoints on the loopback stand-in, a site
 * benchmark whose data file changes between the two runs as a dataset's new release would.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { startModelServer } from '../../src/demo/model-server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(180_000);

const rows = (revision: number) => ['id,context,label', ...Array.from({ length: 20 }, (_, i) => `${i + 1},"Synthetic note ${i + 1}.",${(i + revision) % 2 ? 'yes' : 'no'}`)].join('\n') + '\n';

function siteBenchmark(home: TestHome): string {
  const folder = join(home.home, 'site-benchmarks', 'site_followup');
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
  const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
  config.catalog = { dirs: [join(home.home, 'site-benchmarks')] };
  writeFileSync(home.configFile, JSON.stringify(config, null, 2));
  // A second endpoint on the same stand-in.
  const policyFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
  policy.endpoints.push({ ...policy.endpoints[0], id: 'demo-two' });
  writeFileSync(policyFile, JSON.stringify(policy));
  return join(folder, 'data.csv');
}

describe('data revisions in runs show and leaderboard --runs', () => {
  let home: TestHome;
  let server: Awaited<ReturnType<typeof startModelServer>>;

  beforeAll(async () => {
    home = await makeHome('pglite');
  });

  afterAll(async () => {
    await server?.close();
    await home?.cleanup();
  });

  const cli = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: Io = { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env: home.env };
    const code = await main(args, io);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };

  it("shows each run's data, refuses to rank runs of one benchmark on different data, and says so when allowed", async () => {
    const dataFile = siteBenchmark(home);
    server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
    });
    const first = await cli(['run', '--config', home.configFile, '--benchmark', 'site_followup', '--endpoint', DEMO_ENDPOINT_ID, '--json']);
    expect(first.code).toBe(0);
    writeFileSync(dataFile, rows(1));
    const second = await cli(['run', '--config', home.configFile, '--benchmark', 'site_followup', '--endpoint', 'demo-two', '--json']);
    expect(second.code).toBe(0);
    const [a, b] = [JSON.parse(first.stdout).runId as string, JSON.parse(second.stdout).runId as string];

    const shown = await cli(['runs', 'show', a, '--config', home.configFile]);
    expect(shown.code).toBe(0);
    const fileSha = createHash('sha256').update(rows(0)).digest('hex');
    expect(shown.stdout).toMatch(/\n {2}data: revision [0-9a-f]{64}\n {4}data\.csv sha256 ([0-9a-f]{64})\n/);
    expect(shown.stdout).toContain(`    data.csv sha256 ${fileSha}\n`);
    const revision = (text: string) => (/data: revision ([0-9a-f]{64})/.exec(text)?.[1] ?? '').slice(0, 12);
    const revA = revision(shown.stdout);
    const revB = revision((await cli(['runs', 'show', b, '--config', home.configFile])).stdout);
    expect(revA).not.toBe(revB);

    const refused = await cli(['leaderboard', '--runs', `${a},${b}`, '--config', home.configFile]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `ehrbench: runs of site_followup read different data (site_followup: run ${a} data ${revA}, run ${b} data ${revB}), so their scores are not comparable; compare runs of one data revision, or say --allow-mixed-data (API: allowMixedData) to compare them anyway, and the output says so\n`,
    );

    const allowed = await cli(['leaderboard', '--runs', `${a},${b}`, '--allow-mixed-data', '--config', home.configFile]);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toContain(
      `Compared across data revisions (--allow-mixed-data): these runs of one benchmark read different data\n  site_followup: run ${a} data ${revA}, run ${b} data ${revB}\n`,
    );
    const json = await cli(['leaderboard', '--runs', `${a},${b}`, '--allow-mixed-data', '--json', '--config', home.configFile]);
    expect(JSON.parse(json.stdout).dataRevisions.mixed).toHaveLength(1);

    // A release that changes the benchmark's prompts moves its version: runs of two versions on the same
    // data are held to the same rule.
    const definition = join(home.home, 'site-benchmarks', 'site_followup', 'benchmark.json');
    writeFileSync(definition, readFileSync(definition, 'utf8').replace('"version":"1.0.0"', '"version":"1.1.0"'));
    const third = await cli(['run', '--config', home.configFile, '--benchmark', 'site_followup', '--endpoint', DEMO_ENDPOINT_ID, '--json']);
    expect(third.code).toBe(0);
    const c = JSON.parse(third.stdout).runId as string;
    const versions = await cli(['leaderboard', '--runs', `${b},${c}`, '--config', home.configFile]);
    expect(versions.code).toBe(1);
    expect(versions.stderr).toContain(`runs of site_followup ran different versions of it (site_followup: run ${b} version 1.0.0, run ${c} version 1.1.0)`);
    const versionsAllowed = await cli(['leaderboard', '--runs', `${b},${c}`, '--allow-mixed-data', '--config', home.configFile]);
    expect(versionsAllowed.code).toBe(0);
    expect(versionsAllowed.stdout).toContain(
      `Compared across benchmark versions (--allow-mixed-data): these runs of one benchmark ran other prompts or scoring\n  site_followup: run ${b} version 1.0.0, run ${c} version 1.1.0\n`,
    );

    // The same version and data with another prompt template (a site edited prompt.txt in place): the
    // template pin differs, and the refusal names it.
    writeFileSync(join(home.home, 'site-benchmarks', 'site_followup', 'prompt.txt'), '{{note}}\nDoes this patient need follow-up?\n{{choices}}\nAnswer:');
    const fourth = await cli(['run', '--config', home.configFile, '--benchmark', 'site_followup', '--endpoint', 'demo-two', '--json']);
    expect(fourth.code).toBe(0);
    const d = JSON.parse(fourth.stdout).runId as string;
    const pinsOf = async (id: string) => {
      const shownRun = await cli(['runs', 'show', id, '--config', home.configFile]);
      const pin = (kind: string) => new RegExp(`\n {4}${kind}: ([0-9a-f]{64}|unknown|none \\(no jury\\))\n`).exec(shownRun.stdout)?.[1];
      return { dataset: pin('dataset'), definition: pin('definition'), template: pin('template'), scorer: pin('scorer'), judges: pin('judges') };
    };
    const [pinsC, pinsD] = [await pinsOf(c), await pinsOf(d)];
    expect(pinsC.template).toMatch(/^[0-9a-f]{64}$/);
    expect(pinsD.template).not.toBe(pinsC.template);
    expect({ ...pinsD, template: '' }).toEqual({ ...pinsC, template: '' });
    expect(pinsC.judges).toBe('none (no jury)');
    const templates = await cli(['leaderboard', '--runs', `${c},${d}`, '--config', home.configFile]);
    expect(templates.code).toBe(1);
    expect(templates.stderr).toContain(
      `ehrbench: site_followup: runs that used different prompt templates: template (run ${c} ${pinsC.template?.slice(0, 12)}, run ${d} ${pinsD.template?.slice(0, 12)}): their scores are not comparable`,
    );
    const templatesAllowed = await cli(['leaderboard', '--runs', `${c},${d}`, '--allow-mixed-data', '--json', '--config', home.configFile]);
    expect(templatesAllowed.code).toBe(0);
    expect(JSON.parse(templatesAllowed.stdout).mixedPins).toEqual([{ benchmarkId: 'site_followup', differs: ['template'] }]);

    const contradicted = await cli(['run', '--config', home.configFile, '--benchmark', 'medcalc_bench', '--endpoint', DEMO_ENDPOINT_ID, '--preset', 'medhelm-leaderboard', '--scoring', 'corrected']);
    expect(contradicted.code).toBe(1);
    expect(contradicted.stderr).toContain('--preset medhelm-leaderboard sets --scoring (scoring) to helm, and the request asks for corrected; leave --scoring out, or drop the preset');
  });
});
