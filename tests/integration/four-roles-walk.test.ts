/**
 * The first week of a deployment as one scripted walk of the four roles (issue 17, "Done when"), each
 * step a command of the README typed into the real binary, on the real daemon (mutual TLS) with the
 * loopback test endpoints: hospital IT sets up the data directory, the site PKI and a test endpoint
 * and starts the daemon; the compliance officer records an IRB approval; the researcher requests a
 * private run; the officer approves it (her own request's approval is refused); the run completes; the
 * auditor reviews the trail; the researcher requests an export, the officer releases it, the
 * researcher downloads it; and the bundle and the trail are verified offline. The private benchmark's
 * records are synthetic, and none of their text may appear in anything printed.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

// About 45 processes of the real binary one after another: 60-90 s on two busy cores, more when the
// other jest worker is heavy too.
jest.setTimeout(300_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');
/** The text of the private benchmark's records: nothing printed may hold any of it. */
const RECORD_TEXT = ['knee stiffness after gardening', 'counselled on stretching', 'information to withhold'];

/**
 * A port the walk listens on only much later (the model's is written into the policy by init): a random
 * free one below the ephemeral range, not the first free one of a sequence other test processes walk too.
 */
async function quietPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('four roles on the daemon, through the real binary', () => {
  const dir = tempDir('four-roles');
  const home = join(dir, 'home');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, EHRBENCH_HOME: home };
  const printed: string[] = [];
  const background: ChildProcess[] = [];

  function cli(args: string[], cwd = dir): Promise<Result> {
    return new Promise((resolve) => {
      execFile(process.execPath, [BIN, ...args], { cwd, env, timeout: 60_000, encoding: 'utf8' }, (err, stdout, stderr) => {
        printed.push(stdout, stderr);
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });
  }

  /** A command in the foreground of its own terminal (demo-server, serve): resolves once it says it listens. */
  function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; output: () => string }> {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env });
    background.push(child);
    let output = '';
    return new Promise((resolve, reject) => {
      const onData = (d: Buffer) => {
        output += d.toString();
        if (ready.test(output)) resolve({ child, output: () => output });
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.on('exit', (code) => reject(new Error(`${args[0]} exited ${code}: ${output}`)));
    });
  }

  const stop = (child: ChildProcess) => new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : (child.once('exit', resolve), child.kill('SIGTERM'))));

  afterAll(async () => {
    for (const child of background) await stop(child);
  });

  it('init, PKI, endpoint, approval, private run, audit review over --server, export release and offline verify', async () => {
    const modelPort = await quietPort();
    const daemonPort = await quietPort();

    // ---- Hospital IT (admin), on the host.
    const init = await cli(['init', '--test-endpoints', '--demo-port', String(modelPort), '--site-id', 'walk-site']);
    expect([init.code, init.stderr]).toEqual([0, '']);
    expect(init.stdout).toContain('test endpoints: test-public, test-approval-required, test-private (TEST: loopback stand-in, never real data)');
    expect(init.stdout).toMatch(/next steps:\n(.*\n)*  npx ehrbench pki init /);

    const pki = await cli(['pki', 'init']);
    expect(pki.code).toBe(0);
    expect(pki.stdout).toMatch(/site CA fingerprint \(sha256\): [0-9a-f]{64}/);

    // The researcher's key is made on her machine; IT signs her request (pki sign --csr).
    const csr = spawnSync('openssl', ['req', '-new', '-newkey', 'rsa:3072', '-nodes', '-keyout', 'rhea.key.pem', '-out', 'rhea.csr', '-subj', '/CN=rhea'], { cwd: dir, encoding: 'utf8' });
    expect(csr.status).toBe(0);
    const signed = await cli(['pki', 'sign', '--csr', 'rhea.csr', '--principal', 'rhea', '--role', 'researcher', '--out', 'rhea.pem']);
    expect(signed.code).toBe(0);
    expect(signed.stdout).toContain('their key stays where the request was made');
    // The others by the convenience route (pki issue): two compliance officers (one also a researcher),
    // an auditor and an admin.
    const issued: Record<string, { certFile: string; keyFile: string }> = {};
    for (const [principal, role] of [
      ['cora', 'compliance'],
      ['dora', 'compliance'],
      ['dora', 'researcher'],
      ['audie', 'auditor'],
      ['ivan', 'admin'],
    ] as const) {
      const r = await cli(['pki', 'issue', '--principal', principal, '--role', role, '--json']);
      expect(r.code).toBe(0);
      issued[principal] = JSON.parse(r.stdout);
    }
    const principals = JSON.parse(readFileSync(join(home, 'access-policies', 'principals.json'), 'utf8')).principals as { id: string; roles: string[] }[];
    expect(principals.find((p) => p.id === 'dora')?.roles).toEqual(['compliance', 'researcher']);

    // The site's private data: a synthetic extract bound in site-data.json, checked before anything runs.
    const rows = Array.from(
      { length: 24 },
      (_, i) => `Does the note hold information to withhold from parents?,"Adolescent seen for knee stiffness after gardening, visit ${i + 1}; counselled on stretching.",${i % 3 ? 'B' : 'A'}`,
    );
    writeFileSync(join(home, 'conf.csv'), ['prompt,context,label', ...rows].join('\n') + '\n');
    writeFileSync(join(home, 'site-data.json'), JSON.stringify({ benchmarks: { shc_conf_med: { source: { type: 'csv', path: 'conf.csv' } } } }));
    const check = await cli(['benchmarks', 'check', 'shc_conf_med']);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('shc_conf_med: ready to run (nothing was run)');

    // The daemon's port, in the config IT keeps.
    const config = JSON.parse(readFileSync(join(home, 'config.json'), 'utf8'));
    config.server = { port: daemonPort, pollSeconds: 0.2 };
    writeFileSync(join(home, 'config.json'), JSON.stringify(config, null, 2));

    // The ward's own model: a non-test endpoint IT adds by hand (here the stand-in plays the hospital's
    // vLLM on loopback). Runs on a test endpoint are never exported (export.test-endpoint), so the run the
    // researcher exports goes here.
    const endpointsFile = join(home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(endpointsFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
    const { test: _test, ...standIn } = policy.endpoints.find((e) => e.id === 'test-private') as Record<string, unknown>;
    policy.endpoints.push({ ...standIn, id: 'ward-vllm', description: 'the ward vLLM (in this walk: the stand-in on loopback)' });
    writeFileSync(endpointsFile, JSON.stringify(policy, null, 2));

    // The test endpoint: the stand-in in the foreground, the URL checked against the allowlist, a probe.
    const model = await start(['demo-server'], /listening on https:\/\/localhost:\d+\/v1 for endpoints .*test-private/);
    const url = `https://localhost:${modelPort}/v1`;
    const allowed = await cli(['endpoints', 'check', url]);
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(/^allowed by rule egress\.allowlisted-endpoint/);
    const probe = await cli(['endpoints', 'probe', 'test-private']);
    expect([probe.code, probe.stderr.replace(/^store: .*\n/m, '')]).toEqual([0, '']);

    const serve = await start(['serve'], /ehrbench daemon listening on https:\/\/127\.0\.0\.1:\d+ \(mutual TLS\)/);
    expect(serve.output()).toMatch(/endpoint\.test-configured endpointId=test-private/);

    const server = ['--server', `https://localhost:${daemonPort}`, '--ca', join(home, 'pki', 'ca.pem')];
    const as = (who: string) => [
      ...server,
      ...(who === 'rhea' ? ['--cert', 'rhea.pem', '--key', 'rhea.key.pem'] : ['--cert', issued[who]?.certFile as string, '--key', issued[who]?.keyFile as string]),
    ];
    const admin = await cli(['whoami', ...as('ivan')]);
    expect([admin.code, admin.stdout]).toEqual([0, 'ivan: admin via mtls\n']);
    // The built daemon serves its console's pages (what a browser with ivan's certificate loads).
    const browser = new Agent({ connect: { ca: readFileSync(join(home, 'pki', 'ca.pem'), 'utf8'), cert: readFileSync(issued.ivan!.certFile), key: readFileSync(issued.ivan!.keyFile) } });
    const page = await fetch(`https://localhost:${daemonPort}/console/`, { dispatcher: browser });
    expect([page.status, await page.text()]).toEqual([200, expect.stringContaining('<script type="module" src="/console/app.js"></script>')]);
    // Read to its end: an unread body holds its connection, and close() waits for it.
    const app = await fetch(`https://localhost:${daemonPort}/console/app.js`, { dispatcher: browser });
    expect([app.status, (await app.arrayBuffer()).byteLength > 0]).toEqual([200, true]);
    await browser.close();

    // ---- The compliance officer records the IRB approval (naming the test endpoint, as test endpoints need).
    const approval = await cli([
      'approvals',
      'add',
      '--protocol',
      'IRB-2026-017',
      '--pi',
      'rhea',
      '--personnel',
      'rhea,dora',
      '--benchmarks',
      'shc_conf_med',
      '--endpoints',
      'test-private,ward-vllm',
      '--purpose',
      'smoke test of the private tier before a real model is connected',
      ...as('cora'),
    ]);
    expect(approval.code).toBe(0);
    expect(approval.stdout).toMatch(/^approval [0-9a-f-]{36} recorded for protocol IRB-2026-017 \(active\)/);

    // ---- The researcher requests a private run: it waits for an officer.
    const requested = await cli(['runs', 'request', '--benchmark', 'shc_conf_med', '--endpoint', 'ward-vllm', '--purpose', 'smoke test', '--json', ...as('rhea')]);
    expect(requested.code).toBe(0);
    const run = JSON.parse(requested.stdout) as { runId: string; status: string; tier: string; irbProtocol: string; testEndpoint: boolean };
    expect(run).toMatchObject({ status: 'requested', tier: 'private', irbProtocol: 'IRB-2026-017', testEndpoint: false });
    const selfApprove = await cli(['runs', 'approve', run.runId, ...as('rhea')]);
    expect(selfApprove.code).toBe(3);
    expect(selfApprove.stderr).toBe('ehrbench: denied by rule rbac.compliance-required: approving a run needs the compliance role; rhea holds researcher\n');

    // An officer who is also a researcher may not approve her own request.
    const own = await cli(['runs', 'request', '--benchmark', 'shc_conf_med', '--endpoint', 'test-private', '--json', ...as('dora')]);
    expect(own.code).toBe(0);
    const ownRun = JSON.parse(own.stdout) as { runId: string };
    const ownApproval = await cli(['runs', 'approve', ownRun.runId, '--json', ...as('dora')]);
    expect(ownApproval.code).toBe(3);
    expect(JSON.parse(ownApproval.stderr)).toEqual({
      error: 'policy.denied',
      message: 'denied by rule sod.approver-is-requester: the requester of a run may not approve it',
      rule: 'sod.approver-is-requester',
    });

    // ---- The officer approves the researcher's run; the daemon's workers run it to the end.
    const approved = await cli(['runs', 'approve', run.runId, ...as('cora')]);
    expect([approved.code, approved.stdout]).toEqual([0, `run ${run.runId} approved by cora\n`]);
    const watched = await cli(['runs', 'watch', run.runId, ...as('rhea')]);
    expect(watched.code).toBe(0);
    expect(watched.stdout).toMatch(/shc_conf_med\s+private\s+24\s+exact_match\s+[0-9.]+\s+0\s+0\s+completed\s+/);
    const listed = await cli(['runs', 'list', '--json', ...as('cora')]);
    expect((JSON.parse(listed.stdout) as { runId: string; status: string; approvedBy: string | null }[]).map((r) => [r.runId, r.status, r.approvedBy]).sort()).toEqual(
      [
        [run.runId, 'completed', 'cora'],
        [ownRun.runId, 'requested', null],
      ].sort(),
    );

    // ---- The auditor reviews the trail over --server, with no shell on the host.
    const tail = await cli(['audit', 'tail', '-n', '50', ...as('audie')]);
    expect(tail.code).toBe(0);
    expect(tail.stdout).toMatch(/run\.complete\s+success\s+run\.all-instances-finished/);
    const approvals = await cli(['audit', 'search', '--type', 'run.approve', '--json', ...as('audie')]);
    expect(approvals.code).toBe(0);
    expect((JSON.parse(approvals.stdout) as { outcome: string; rule: string; actor_principal: string }[]).map((e) => [e.actor_principal, e.outcome, e.rule]).sort()).toEqual(
      [
        ['cora', 'success', 'sod.compliance-approval'],
        ['dora', 'denied', 'sod.approver-is-requester'],
      ].sort(),
    );
    // The researcher's attempt is recorded as a refused access, under its rule.
    const refusals = await cli(['audit', 'search', '--type', 'access.denied', '--actor', 'rhea', '--json', ...as('audie')]);
    expect((JSON.parse(refusals.stdout) as { rule: string; reason: string }[]).map((e) => [e.rule, e.reason])).toEqual([
      ['rbac.compliance-required', 'approving a run needs the compliance role; rhea holds researcher'],
    ]);
    const remoteVerify = await cli(['audit', 'verify', ...as('audie')]);
    expect(remoteVerify.code).toBe(0);
    expect(remoteVerify.stdout).toMatch(/^audit trail intact: \d+ events/);
    // A researcher may not read the trail.
    const notAuditor = await cli(['audit', 'tail', ...as('rhea')]);
    expect(notAuditor.code).toBe(3);
    expect(notAuditor.stderr).toBe('ehrbench: denied by rule rbac.compliance-required: reading the audit trail needs the compliance or auditor role; rhea holds researcher\n');

    // ---- Export: the researcher requests it, may not release it, the officer does, the researcher downloads it.
    const exportReq = await cli(['export', 'request', '--runs', run.runId, '--json', ...as('rhea')]);
    expect(exportReq.code).toBe(0);
    const exportId = (JSON.parse(exportReq.stdout) as { exportId: string }).exportId;
    const review = await cli(['export', 'show', exportId, ...as('cora')]);
    expect([review.code, review.stderr]).toEqual([0, '']);
    expect(review.stdout).toMatch(new RegExp(`^export ${exportId}: requested`));
    expect(review.stdout).toMatch(/shc_conf_med v1\.1\.0 \(private\) on ward-vllm .*n 20-29/);
    const selfRelease = await cli(['export', 'release', exportId, ...as('rhea')]);
    expect(selfRelease.code).toBe(3);
    expect(selfRelease.stderr).toMatch(/^ehrbench: denied by rule rbac\.compliance-required: releasing an export needs the compliance role/);
    const released = await cli(['export', 'release', exportId, ...as('cora')]);
    expect(released.code).toBe(0);
    expect(released.stdout).toMatch(new RegExp(`^export ${exportId} released by cora; bundle sha256 [0-9a-f]{64}`));
    const downloaded = await cli(['export', 'download', exportId, '--out', 'downloads', ...as('rhea')]);
    expect(downloaded.code).toBe(0);
    const bundle = join(dir, 'downloads', exportId, 'bundle.json');
    expect(existsSync(bundle)).toBe(true);

    // ---- Offline: the bundle anywhere, with the site's public key and no database; the trail on the host.
    const verified = await cli(['export', 'verify', bundle, '--key', join(home, 'keys', 'export-signing.pub.pem')], tempDir('elsewhere'));
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(`verifies (export ${exportId}, 1 result(s)`);
    const tampered = join(dir, 'tampered.json');
    writeFileSync(tampered, readFileSync(bundle, 'utf8').replace('"shc_conf_med"', '"shc_conf_mex"'));
    expect((await cli(['export', 'verify', tampered, '--key', join(home, 'keys', 'export-signing.pub.pem')])).code).not.toBe(0);

    // The daemon stops cleanly (the embedded store is then free for the host's own verification).
    expect(await stop(serve.child)).toBe(0);
    expect(serve.output()).toContain('ehrbench daemon stopping: finishing requests, releasing work, sealing the audit trail');
    const hostVerify = await cli(['audit', 'verify']);
    expect(hostVerify.code).toBe(0);
    expect(hostVerify.stdout).toMatch(/^audit trail intact: \d+ events .*row MACs checked/);
    await stop(model.child);

    // No record text in anything a person saw: the commands' output, the daemon's, its log, the bundle.
    const everything = [...printed, serve.output(), model.output(), readFileSync(join(home, 'logs', 'ehrbench.log'), 'utf8'), readFileSync(bundle, 'utf8')].join('\n');
    for (const text of RECORD_TEXT) expect(everything).not.toContain(text);
  });
});
