/**
 * `ehrbench runs instances ID` through the real binary: against a real daemon (--server, mutual TLS)
 * and in local mode (the embedded store). A public run's instances with their text and scores, in a
 * compact table that says how to get the next page, filtered (--failed, --wrong, --metric) and whole
 * with --json; an EHR tier's failed instances by ordinal, state and code only, refused to an auditor
 * under the rule and to another researcher as not his run; a bad flag is one line and exit 2.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Behaviour } from '../../src/demo/model-server';
import { DEMO_ENDPOINT_ID } from '../../src/setup';
import { startTestApp, type TestApp } from '../helpers/app';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { addOpenBenchmark, finishedRuns } from '../helpers/instance-runs';
import { ROOT } from '../helpers/paths';

jest.setTimeout(240_000);

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The binary, asynchronously: the loopback model server (and the daemon) live in this process. */
function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'ehrbench.js'), ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 120_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Every answer is "A" (yes); the prompt of note 3 is refused, so that instance fails for good. */
function behaviour(_n: number, prompt: string): Behaviour {
  if (prompt.includes('Synthetic note 3:')) return { kind: 'status', status: 400, body: '{"error":{"message":"bad request"}}' };
  return { kind: 'answer', text: 'A' };
}

/** The rows of the table (after its header and rule), as their cells. */
function rows(stdout: string): string[][] {
  const lines = stdout.split('\n');
  const header = lines.findIndex((l) => l.startsWith('#'));
  expect(header).toBeGreaterThan(0);
  return lines
    .slice(header + 2)
    .filter((l) => /^\d+ {2}/.test(l))
    .map((l) => l.split(/ {2,}/));
}

describe('runs instances against the daemon', () => {
  let t: TestDaemon;
  let publicRun: string;
  let privateRun: string;
  const as = (who: string) => ['--server', `https://localhost:${t.daemon.port}`, '--cert', t.ids[who]!.certFile, '--key', t.ids[who]!.keyFile, '--ca', t.caFile];
  const instances = (who: string, runId: string, ...flags: string[]) => cli(['runs', 'instances', runId, ...flags, ...as(who)], t.home.env);

  beforeAll(async () => {
    t = await startTestDaemon({
      behaviour,
      rows: 6,
      // A public benchmark on the synthetic notes (labels no, yes, no, yes, no, yes; the model says yes).
      prepare: (_home, config) => addOpenBenchmark(config),
    });
    const requested = await cli(['runs', 'request', '--benchmark', 'site_open', '--endpoint', 'demo-loopback', '--json', ...as('alice')], t.home.env);
    expect(requested.code).toBe(0);
    ({ publicRun, privateRun } = await finishedRuns(t, JSON.parse(requested.stdout).runId, 'IRB-INST-CLI'));
  });
  afterAll(() => t?.close());

  it("prints a public run's instances as a table: state, score, code and the start of prompt, prediction and reference", async () => {
    const r = await instances('alice', publicRun);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(`run ${publicRun}: site_open (public), all instances, score: exact_match`);
    expect(lines[1]).toMatch(/^#\s+state\s+score\s+code\s+prompt\s+prediction\s+reference$/);
    const table = rows(r.stdout);
    expect(table.map((c) => c[0])).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(table[0]).toEqual(['0', 'done', '0.000', '-', 'Synthetic note 1: stable vital signs, f…', 'A', 'no']);
    expect(table[1]).toEqual(['1', 'done', '1.000', '-', expect.stringMatching(/^Synthetic note 2: /), 'A', 'yes']);
    expect(table[2]).toEqual(['2', 'failed', '-', expect.stringMatching(/^model\./), expect.stringMatching(/^Synthetic note 3: /), '-', 'no']);
    // Long text is cut to a line, and the cut is marked.
    for (const row of table) expect(row[4]!.length).toBeLessThanOrEqual(40);
    expect(lines.at(-2)).toBe('6 shown; last page; --json for whole texts');
  });

  it('filters with --failed, --wrong (or both) and --metric; --json gives the whole texts', async () => {
    expect(rows((await instances('alice', publicRun, '--failed')).stdout).map((c) => [c[0], c[1]])).toEqual([['2', 'failed']]);
    const wrong = await instances('alice', publicRun, '--wrong');
    expect(wrong.stdout.split('\n')[0]).toBe(`run ${publicRun}: site_open (public), wrong (exact_match below full marks) instances, score: exact_match`);
    expect(rows(wrong.stdout).map((c) => c[0])).toEqual(['0', '4']);
    expect(rows((await instances('alice', publicRun, '--failed', '--wrong')).stdout).map((c) => c[0])).toEqual(['0', '2', '4']);
    expect((await instances('alice', publicRun, '--metric', 'exact_match')).code).toBe(0);

    const json = await instances('alice', publicRun, '--json');
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout);
    expect(page).toMatchObject({ view: 'text', rule: 'visibility.instances.public-tier', nextAfter: null });
    expect(page.instances[0].prompt).toMatch(/^Synthetic note 1: stable vital signs, follow up in clinic\.\nIs follow-up needed\?\n/);
  });

  it('pages: says how to get the next page, and that page follows on', async () => {
    const first = await instances('alice', publicRun, '--limit', '4');
    expect(rows(first.stdout).map((c) => c[0])).toEqual(['0', '1', '2', '3']);
    const hint = first.stdout.trimEnd().split('\n').at(-1)!;
    expect(hint).toMatch(new RegExp(`^4 shown; next page: (npx )?ehrbench runs instances ${publicRun} --limit 4 --after 3; --json for whole texts$`));
    const second = await instances('alice', publicRun, '--limit', '4', '--after', '3');
    expect(rows(second.stdout).map((c) => c[0])).toEqual(['4', '5']);
    expect(second.stdout).toContain('2 shown; last page');
    const none = await instances('alice', publicRun, '--after', '5');
    expect(none.stdout).toContain('no instance after ordinal 5 matches');
  });

  it('refuses a metric the run does not have, naming its metrics, and bad flags in one line (exit 2)', async () => {
    const unknown = await instances('alice', publicRun, '--metric', 'rouge_l');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^ehrbench: run [0-9a-f-]+ has no metric "rouge_l"; its metrics: exact_match \(HTTP 400\)\n$/);
    for (const flags of [
      ['--limit', '0'],
      ['--limit', '501'],
      ['--limit', 'many'],
      ['--after', '-2'],
      ['--metric', '<img src=x>'],
    ]) {
      const r = await instances('alice', publicRun, ...flags);
      expect([flags.join(' '), r.code, r.stdout]).toEqual([flags.join(' '), 2, '']);
      expect(r.stderr).toMatch(/^ehrbench: --(limit|after|metric) must be [^\n]+\n$/);
    }
  });

  it("prints an EHR tier's failed instances by ordinal, state and code only, to the requester and compliance", async () => {
    for (const who of ['alice', 'carol']) {
      const r = await instances(who, privateRun);
      expect([who, r.code, r.stderr]).toEqual([who, 0, '']);
      const lines = r.stdout.split('\n');
      expect(lines[0]).toMatch(
        new RegExp(`^run ${privateRun}: site_private \\(private\\), failed and blocked instances only, codes only \\(rule visibility\\.instances\\.codes-only\\): private data: .*never shown`),
      );
      expect(lines[1]).toMatch(/^#\s+state\s+code$/);
      expect(rows(r.stdout)).toEqual([['2', 'failed', expect.stringMatching(/^model\./)]]);
      expect(r.stdout).not.toMatch(/Synthetic|vital|follow/);
      const json = JSON.parse((await instances(who, privateRun, '--json')).stdout);
      expect(json.instances).toEqual([{ ordinal: 2, state: 'failed', errorCode: expect.stringMatching(/^model\./) }]);
    }
    const wrong = await instances('alice', privateRun, '--wrong');
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(/^ehrbench: denied by rule visibility\.instances\.codes-only: /);
  });

  it('refuses an auditor under the rule, and tells a researcher who is not the requester that the run is not his', async () => {
    const erin = await instances('erin', privateRun);
    expect(erin.code).toBe(3);
    expect(erin.stderr).toMatch(/^ehrbench: denied by rule visibility\.instances\.withheld: seeing a run's instances one by one needs the compliance role \(ehr-tier\); erin holds auditor\n$/);
    const bob = await instances('bob', privateRun);
    expect(bob.code).toBe(1);
    expect(bob.stderr).toBe(`ehrbench: run ${privateRun} does not exist or is not yours (HTTP 404)\n`);
    expect(bob.stdout).toBe('');
  });
});

describe('runs instances in local mode', () => {
  let t: TestApp;
  let env: NodeJS.ProcessEnv;
  let runId: string;

  beforeAll(async () => {
    t = await startTestApp();
    // The binary opens the data directory itself; the test's own app must not hold it.
    await t.app.close();
    env = { EHRBENCH_HOME: t.home.home, ...(t.home.env.EHRBENCH_DATABASE_URL ? { EHRBENCH_DATABASE_URL: t.home.env.EHRBENCH_DATABASE_URL } : {}) };
    const r = await cli(['run', '--benchmark', 'medec', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '5', '--sample', 'first', '--json'], env);
    expect(r.code).toBe(0);
    runId = JSON.parse(r.stdout).runId;
  });
  afterAll(async () => {
    await t.server.close();
    await t.home.cleanup();
  });

  it("shows a shipped public benchmark's instances from the embedded store, with the same table and paging", async () => {
    const json = await cli(['runs', 'instances', runId, '--json'], env);
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout);
    expect(page).toMatchObject({ view: 'text', benchmarkId: 'medec', metric: 'medec_error_flag_accuracy', prompts: 'rebuilt' });
    expect(page.instances).toHaveLength(5);
    for (const i of page.instances) {
      expect(i.prompt.length).toBeGreaterThan(100);
      expect(typeof i.prediction).toBe('string');
      expect(i.references.length).toBeGreaterThan(0);
    }
    const table = await cli(['runs', 'instances', runId, '--limit', '2'], env);
    expect([table.code, table.stderr]).toEqual([0, '']);
    const shown = rows(table.stdout);
    expect(shown.map((c) => c[0])).toEqual(['0', '1']);
    // The table's prompt is the start of the instance's prompt, on one line.
    expect(page.instances[0].prompt.replace(/\s+/g, ' ').startsWith(shown[0]![4]!.replace(/…$/, ''))).toBe(true);
    expect(table.stdout).toMatch(new RegExp(`2 shown; next page: (npx )?ehrbench runs instances ${runId} --limit 2 --after 1; --json for whole texts\\n$`));
  });

  it('records the read in the trail, without text', async () => {
    const r = await cli(['audit', 'search', '--type', 'instance.read', '--json'], env);
    expect(r.code).toBe(0);
    const events = JSON.parse(r.stdout) as { outcome: string; rule: string; detail: Record<string, unknown> }[];
    expect(events.length).toBeGreaterThanOrEqual(2);
    expect(events[0]).toMatchObject({ outcome: 'success', rule: 'visibility.instances.public-tier', detail: { count: 5, view: 'text' } });
  });
});
