/**
 * Output stability (`--repeat K`, issue 32): K runs of one sample on one endpoint, and how often their
 * answers and scores agreed. The loopback stand-in answers each prompt the same way twice and, on its
 * third asking, changes its answer for about half of the prompts (as an endpoint sampling at a
 * temperature above 0 would): the figures must count exactly those.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { type ModelServer, startModelServer } from '../../src/demo/model-server';
import { makeHome, type TestHome } from '../helpers/home';
import { type Caller, Operations, type StabilityView } from '../../src/operations';
import { standInAnswer } from '../../src/demo/model-server';
import { executeRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import type { App } from '../../src/app';
import { startTestApp, type TestApp } from '../helpers/app';
import { backends } from '../helpers/db';

jest.setTimeout(180_000);

const INSTANCES = 14;
const unstable = (prompt: string) => createHash('sha256').update(prompt).digest()[0]! % 2 === 0;

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => ({ code: 'allowed', message: '' }),
    (e: { rule?: string; code?: string; message: string }) => ({ code: e.rule ?? e.code, message: e.message }),
  );

describe.each(backends())('output stability of a repeat group on %s', (backend) => {
  let t: TestApp;
  const asked = new Map<string, number>();

  beforeAll(async () => {
    t = await startTestApp({
      backend,
      behaviour: (_n, prompt) => {
        const times = (asked.get(prompt) ?? 0) + 1;
        asked.set(prompt, times);
        const usual = standInAnswer(prompt);
        // Third asking of an unstable prompt: another of the three PubMedQA answers than the usual one.
        const other = ['A', 'B', 'C'].find((l) => l !== usual) ?? 'A';
        return { kind: 'answer', text: times === 3 && unstable(prompt) ? other : usual };
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('runs K runs of one sample, counts the instances whose answers and scores agreed, and the spread of the run means', async () => {
    const ops = new Operations(t.app);
    const alice = callerOf(t.app, 'alice');
    const first = await ops.requestRun(alice, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, maxInstances: INSTANCES, repeat: 3 });
    expect(first.repeat).toMatchObject({ index: 1, of: 3 });
    const runIds = first.repeat?.runIds ?? [];
    expect(runIds).toHaveLength(3);
    expect(runIds[0]).toBe(first.runId);
    for (const id of runIds) expect((await executeRun(t.app.engine, id)).status).toBe('completed');

    // What the stand-in did: every prompt asked three times; the unstable ones answered otherwise once.
    const prompts = [...asked.keys()];
    expect(prompts).toHaveLength(INSTANCES);
    expect([...asked.values()].every((n) => n === 3)).toBe(true);
    const changed = prompts.filter(unstable).length;
    expect(changed).toBeGreaterThan(0);
    expect(changed).toBeLessThan(INSTANCES);

    const s: StabilityView = await ops.stability(alice, runIds[1] as string);
    expect(s).toMatchObject({ groupId: first.repeat?.groupId, benchmarkId: 'pubmed_qa', repeats: 3, complete: true, instances: INSTANCES, temperature: 0 });
    expect(s.exactAgreement?.count).toBe(INSTANCES - changed);
    expect(s.exactAgreement?.rate).toBeCloseTo((INSTANCES - changed) / INSTANCES, 12);
    expect(s.exactAgreement?.ci95.low).toBeLessThan(s.exactAgreement?.rate as number);
    // A changed answer from one wrong letter to another keeps its score: score agreement is at least answer agreement.
    expect(s.scoreAgreement?.count).toBeGreaterThanOrEqual(INSTANCES - changed);
    expect(s.scoreAgreement?.count).toBeLessThanOrEqual(INSTANCES);

    // Each run's mean over the common instances is its main score (all of them finished every instance).
    const views = await Promise.all(runIds.map((id) => ops.showRun(alice, id)));
    const means = views.map((v) => v.mainScore as number);
    expect(s.runs.map((r) => r.commonMean)).toEqual(means.map((m) => expect.closeTo(m, 12)));
    const mean = means.reduce((a, x) => a + x, 0) / 3;
    const sd = Math.sqrt(means.reduce((a, x) => a + (x - mean) ** 2, 0) / 2);
    expect(s.spread?.sd).toBeCloseTo(sd, 12);
    expect(s.spread?.min).toBe(Math.min(...means));
    expect(s.spread?.max).toBe(Math.max(...means));
    // The first two runs answered alike everywhere, so they scored alike.
    expect(means[0]).toBe(means[1]);

    // Another researcher sees none of it; a run requested alone has no group; K out of range is refused.
    expect((await failure(ops.stability(callerOf(t.app, 'bob'), first.runId))).code).not.toBe('allowed');
    const alone = await ops.requestRun(alice, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, maxInstances: 2 });
    expect(alone.repeat).toBeNull();
    expect((await failure(ops.stability(alice, alone.runId))).code).toBe('run.not-repeated');
    for (const k of [1, 11, 2.5]) expect((await failure(ops.requestRun(alice, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, repeat: k }))).code).toBe('run.invalid');
  });
});

describe('ehrbench run --repeat in local mode', () => {
  let home: TestHome;
  let server: ModelServer | undefined;

  beforeAll(async () => {
    home = await makeHome('pglite');
    server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
    });
  });

  afterAll(async () => {
    await server?.close();
    await home?.cleanup();
  });

  const cli = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const io: Io = { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env: home.env };
    const code = await main([...args, '--config', home.configFile], io);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };

  it('runs the group one run after another and prints its stability; runs stability says it again', async () => {
    const ran = await cli(['run', '--benchmark', 'pubmed_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '5', '--repeat', '2']);
    expect(ran.code).toBe(0);
    // The stand-in is deterministic: the same answer every time.
    expect(ran.stderr).toMatch(
      /repeat group [0-9a-f-]{36}: pubmed_qa on \S+, 2 runs at temperature 0\n {2}instances finished in every run: 5\n {2}same answer every time: 100\.0% \(5 of the instances; 95% CI/,
    );
    const listed = await cli(['runs', 'list', '--json']);
    const runId = (JSON.parse(listed.stdout) as { runId: string }[])[0]?.runId ?? '';
    const again = await cli(['runs', 'stability', runId, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ repeats: 2, complete: true, instances: 5, exactAgreement: { count: 5, rate: 1 }, spread: { sd: 0 } });
    const refused = await cli(['run', '--benchmark', 'pubmed_qa', '--endpoint', DEMO_ENDPOINT_ID, '--repeat', '1']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toBe('ehrbench: repeat must be a whole number from 2 to 10 (runs of the same sample on the same endpoint), not 1\n');
  });
});
