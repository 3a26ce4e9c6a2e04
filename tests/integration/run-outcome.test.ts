/**
 * A daemon run says what happened, as a local run does: with the endpoint down it ends `failed`, not
 * "completed" in green; `runs show` names the cause by code and count, `runs watch` exits 5, the API
 * offers no export; a run whose instances partly failed is "completed with failures". Through the real
 * binary against a real daemon, on both stores.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Behaviour } from '../../src/demo/model-server';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';

jest.setTimeout(180_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 120_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** What the loopback model does: refuse every call, refuse the calls of one prompt, or answer. */
let mode: 'down' | 'one-prompt-fails' | 'up' = 'up';
const failing = new Set<string>();
function behaviour(_n: number, prompt: string): Behaviour {
  if (mode === 'down') return { kind: 'status', status: 400, body: '{"error":{"message":"bad request"}}' };
  if (mode === 'one-prompt-fails') {
    if (failing.size === 0) failing.add(prompt);
    if (failing.has(prompt)) return { kind: 'status', status: 400, body: '{"error":{"message":"bad request"}}' };
  }
  return { kind: 'answer', text: 'A' };
}

describe.each(backends())('what a daemon run says happened (%s)', (backend) => {
  let t: TestDaemon;
  beforeAll(async () => {
    t = await startTestDaemon({ backend, behaviour, workers: 1 });
  });
  afterAll(async () => t?.close());

  const as = (who: string) => ['--server', `https://localhost:${t.daemon.port}`, '--cert', t.ids[who]!.certFile, '--key', t.ids[who]!.keyFile, '--ca', t.caFile];

  async function requestAndWatch(): Promise<{ runId: string; watched: { code: number | null; stdout: string; stderr: string } }> {
    const req = await cli(['runs', 'request', '--benchmark', 'medec', '--endpoint', 'demo-loopback', '--max-instances', '6', '--json', ...as('alice')], t.home.env);
    expect(req.code).toBe(0);
    const runId = JSON.parse(req.stdout).runId as string;
    const watched = await cli(['runs', 'watch', runId, '--interval', '0.2', ...as('alice')], t.home.env);
    // However it ended, a run one daemon executed from start to end was started once.
    const starts = await t.app.db.query("SELECT seq FROM audit_events WHERE run_id = $1 AND event_type = 'run.start'", [runId]);
    expect(starts).toHaveLength(1);
    return { runId, watched };
  }

  it('with the endpoint down: failed, the cause named by code and count, watch exits 5, no export', async () => {
    mode = 'down';
    const { runId, watched } = await requestAndWatch();
    expect(watched.code).toBe(5);
    expect(watched.stdout).toMatch(new RegExp(`\\bfailed\\s+${runId}`));
    expect(watched.stderr).toMatch(/^ {2}failed: endpoint demo-loopback: model\.[a-z-]+ \(.+\): 6 instances$/m);
    expect(watched.stderr).toContain(`ehrbench: run ${runId} failed: no instance finished (6 failed, 0 blocked): there are no results`);

    const shown = await cli(['runs', 'show', runId, ...as('alice')], t.home.env);
    expect(shown.code).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines[0]).toMatch(/, failed \(run\.no-instance-finished\)$/);
    expect(lines[1]).toMatch(/^ {2}no instance finished \(6 failed, 0 blocked\)/);
    expect(lines[2]).toMatch(/^ {2}failed: endpoint demo-loopback: model\.[a-z-]+ \(.+\): 6 instances$/);

    // The API says the same, and the export the console offered is refused.
    const api = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    expect(api.json).toMatchObject({ status: 'failed', errorCode: 'run.no-instance-finished', outcome: { kind: 'failed', hasResults: false, success: false } });
    const exported = await t.call('alice', 'POST', '/v1/exports', { runIds: [runId] });
    expect(exported.status).toBeGreaterThanOrEqual(400);
    expect(exported.json).toMatchObject({ error: 'policy.denied', rule: 'export.run-not-completed' });

    // The trail records a failure, not a completion.
    const events = await t.app.db.query<{ event_type: string; outcome: string; rule: string }>('SELECT event_type, outcome, rule FROM audit_events WHERE run_id = $1 ORDER BY seq', [runId]);
    expect(events.map((e) => e.event_type)).not.toContain('run.complete');
    expect(events.at(-1)).toMatchObject({ event_type: 'run.fail', outcome: 'failed', rule: 'run.no-instance-finished' });
  });

  it('with one prompt refused: completed with failures, its cause counted, watch exits 5, results kept', async () => {
    mode = 'one-prompt-fails';
    failing.clear();
    const { runId, watched } = await requestAndWatch();
    expect(watched.code).toBe(5);
    expect(watched.stdout).toMatch(new RegExp(`completed with failures\\s+${runId}`));
    expect(watched.stderr).toMatch(/^ {2}failed: endpoint demo-loopback: model\.[a-z-]+ \(.+\): 1 instance$/m);
    const api = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    expect(api.json).toMatchObject({ status: 'completed', counts: { done: 5, failed: 1 }, outcome: { kind: 'completed-with-failures', hasResults: true, success: false } });
    expect(api.json.outcome.causes).toEqual([expect.objectContaining({ state: 'failed', instances: 1 })]);
  });

  it('refuses a budget that cannot be enforced when the approval is recorded or the run requested, naming endpoint and setting', async () => {
    // vpc-gated has no price in export.prices: a budget on it could never be charged.
    const named = await cli(
      [
        'approvals',
        'add',
        '--protocol',
        'IRB-UNPRICED-1',
        '--pi',
        'alice',
        '--personnel',
        'alice',
        '--benchmarks',
        'site_gated',
        '--endpoints',
        'vpc-gated',
        '--budget',
        '5',
        '--purpose',
        'p',
        ...as('carol'),
      ],
      t.home.env,
    );
    expect(named.code).toBe(3);
    expect(named.stderr).toMatch(/^ehrbench: denied by rule budget\.no-price: .*endpoint vpc-gated has no price in the config \(export\.prices\).*\n$/);
    const open = await cli(
      ['approvals', 'add', '--protocol', 'IRB-UNPRICED-2', '--pi', 'alice', '--personnel', 'alice', '--benchmarks', 'site_gated', '--budget', '5', '--purpose', 'p', '--json', ...as('carol')],
      t.home.env,
    );
    expect(open.code).toBe(0);
    const approvalId = JSON.parse(open.stdout).approvalId as string;
    const req = await cli(['runs', 'request', '--benchmark', 'site_gated', '--endpoint', 'vpc-gated', '--approval', approvalId, ...as('alice')], t.home.env);
    expect(req.code).toBe(3);
    expect(req.stderr).toMatch(/^ehrbench: denied by rule budget\.no-price: approval IRB-UNPRICED-2 has a budget, and endpoint vpc-gated has no price in the config \(export\.prices\)/);
    expect(await t.app.db.query("SELECT 1 FROM runs WHERE benchmark_id = 'site_gated'")).toEqual([]);
  });

  it('with the endpoint up: completed, watch exits 0', async () => {
    mode = 'up';
    const { runId, watched } = await requestAndWatch();
    expect(watched.code).toBe(0);
    expect(watched.stderr).not.toMatch(/^ {2}(failed|blocked): /m);
    expect(watched.stdout).toMatch(new RegExp(`completed\\s+${runId}`));
    const completions = await t.app.db.query("SELECT seq FROM audit_events WHERE run_id = $1 AND event_type = 'run.complete'", [runId]);
    expect(completions).toHaveLength(1);
  });
});
