/**
 * The small stumbles of a hospital's first week (issue 17, item 22), each as the person met it: through
 * the real binary where they typed a command, in-process where the daemon did something.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { startModelServer } from '../../src/demo/model-server';
import { initSitePki } from '../../src/identity/site-pki';
import { Operations } from '../../src/operations';
import { executeRun, requestRun } from '../../src/runs';
import { startDaemon } from '../../src/server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher } from '../helpers/app';
import { tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';
import { ROOT } from '../helpers/paths';

jest.setTimeout(120_000);

const BIN = join(ROOT, 'bin', 'ehrbench.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH, ...env }, timeout: 90_000, encoding: 'utf8' }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const DAY = 86_400_000;

let home: TestHome;
beforeEach(async () => {
  home = await makeHome('pglite');
});
afterEach(async () => {
  await home.cleanup();
});

/** Opens the home's app, does something as a principal of the test site, closes it (the CLI needs the store). */
async function withApp<T>(fn: (app: Awaited<ReturnType<typeof openApp>>, ops: Operations) => Promise<T>): Promise<T> {
  const app = await openApp({ file: home.configFile, env: home.env });
  try {
    return await fn(app, new Operations(app));
  } finally {
    await app.close();
  }
}

const as = (app: Awaited<ReturnType<typeof openApp>>, id: string) => ({
  principal: app.principals().get(id) as NonNullable<ReturnType<ReturnType<typeof app.principals>['get']>>,
  authMethod: 'mtls' as const,
});

describe('approvals', () => {
  it('list and show say expired once the expiry has passed, whatever the stored status', async () => {
    const id = await withApp(async (app, ops) => {
      const a = await ops.createApproval(as(app, 'carol'), {
        protocolNumber: 'IRB-OLD-1',
        principalInvestigator: 'alice',
        personnel: ['alice'],
        tiers: ['approval-required'],
        purpose: 'a study that ended',
        startsAt: new Date(Date.now() - 10 * DAY).toISOString(),
        expiresAt: new Date(Date.now() - DAY).toISOString(),
      });
      return a.approvalId;
    });
    const list = await cli(['approvals', 'list'], home.env);
    expect(list.code).toBe(0);
    const row = list.stdout.split('\n').find((l) => l.startsWith(id)) as string;
    expect(row).toMatch(/IRB-OLD-1\s+expired\s/);
    expect(row).not.toMatch(/\bactive\b/);
    const show = await cli(['approvals', 'show', id], home.env);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/^approval [0-9a-f-]{36}: protocol IRB-OLD-1, expired \(version 1\)/);
  });
});

describe('init', () => {
  it('refuses a different --site-id for an existing directory in one line naming config.json, and rewrites it with --force', async () => {
    const before = readFileSync(home.configFile, 'utf8');
    const refused = await cli(['init', '--home', home.home, '--site-id', 'north-campus'], home.env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `ehrbench: ${home.configFile}: site.id is "test-site", and init keeps an existing configuration; edit site.id there, or run init again with --force to write "north-campus" into it\n`,
    );
    expect(readFileSync(home.configFile, 'utf8')).toBe(before);
    const forced = await cli(['init', '--home', home.home, '--site-id', 'north-campus', '--force'], home.env);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(`updated ${home.configFile}`);
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    expect(config.site.id).toBe('north-campus');
    expect({ ...config, site: { ...config.site, id: 'test-site' } }).toEqual(JSON.parse(before));
    // The same id again is no change and no refusal.
    expect((await cli(['init', '--home', home.home, '--site-id', 'north-campus'], home.env)).code).toBe(0);
  });

  it('prints the next commands to type', async () => {
    const fresh = join(tempDir('init-next'), 'site');
    const r = await cli(['init', '--home', fresh], { HOME: process.env.HOME });
    expect(r.code).toBe(0);
    const next = r.stdout.slice(r.stdout.indexOf('next steps:'));
    expect(next).toContain(`export EHRBENCH_HOME=${fresh}`);
    for (const command of ['npx ehrbench demo', 'npx ehrbench benchmarks list', 'npx ehrbench pki init', 'npx ehrbench serve']) expect(next).toContain(`  ${command} `);
  });
});

describe('refusals', () => {
  it('name every role that may do what was refused', async () => {
    const runId = await withApp(async (app) => (await requestRun(app.engine, { benchmarkId: 'pubmed_qa', endpointId: DEMO_ENDPOINT_ID, requester: researcher, maxInstances: 1 })).run_id);
    // The operating-system account is a researcher and auditor: it sees alice's run, and may not halt it.
    const r = await cli(['runs', 'cancel', runId, '--reason', 'mine now'], home.env);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^ehrbench: denied by rule rbac\.cancel-not-allowed: stopping a run \(cancelling your own, halting another\) needs the researcher role \(own\), or the compliance or admin role; [a-z0-9-]+ holds researcher, auditor\n$/,
    );
  });

  it('audit search refuses an unknown --type, naming the types there are', async () => {
    const r = await cli(['audit', 'search', '--type', 'bogus'], home.env);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')).toHaveLength(2);
    expect(r.stderr).toMatch(/^ehrbench: --type bogus is not an audit event type; one of: daemon\.start, daemon\.stop, .*endpoint\.call, .*breakglass\.end(, [a-z.]+)*\n$/);
    // A search only reads: the store is migrated first, as its owner would.
    expect((await cli(['db', 'migrate'], home.env)).code).toBe(0);
    const ok = await cli(['audit', 'search', '--type', 'endpoint.call'], home.env);
    expect(ok.code).toBe(0);
  });
});

describe('actors', () => {
  it('are spelled one way: pki revoke records the host operator as every other host command does', async () => {
    const r = await cli(['pki', 'revoke', '--principal', 'bob', '--reason', 'left the hospital'], home.env);
    expect(r.code).toBe(0);
    const actors = await withApp((app) => app.db.query<{ actor_principal: string }>("SELECT actor_principal FROM audit_events WHERE event_type = 'pki.revoke'"));
    expect(actors).toEqual([{ actor_principal: `local:${userInfo().username}` }]);
  });
});

describe('the daemon', () => {
  it('records daemon.start only once everything listens: a health port in use is no start', async () => {
    initSitePki(join(home.home, 'pki'));
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const taken = (blocker.address() as { port: number }).port;
    try {
      await withApp(async (app) => {
        await expect(startDaemon(app, { port: 0, healthPort: taken })).rejects.toThrow(String(taken));
        expect(await app.db.query("SELECT seq FROM audit_events WHERE event_type = 'daemon.start'")).toEqual([]);
        // And a start that succeeds is recorded.
        const daemon = await startDaemon(app, { port: 0, healthPort: 0 });
        await daemon.close();
        expect(await app.db.query("SELECT seq FROM audit_events WHERE event_type = 'daemon.start'")).toHaveLength(1);
      });
    } finally {
      blocker.close();
    }
  });
});

describe('the endpoint policy', () => {
  it('refuses a missing tls.caFile when it is loaded, naming the file and the field', async () => {
    const policyFile = join(home.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
    policy.endpoints[0].tls.caFile = '../keys/hospital-ca.pem';
    writeFileSync(policyFile, JSON.stringify(policy));
    const r = await cli(['endpoints', 'list'], home.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `ehrbench: ${policyFile}: /endpoints/0/tls/caFile: ${join(home.home, 'keys', 'hospital-ca.pem')} cannot be read (ENOENT); fix the path (relative to the policy file) or add the file\n`,
    );
  });

  it('says a DNS refusal once: the rule and the endpoint are not repeated in the reason', async () => {
    const policyFile = join(home.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
    policy.endpoints.push({
      id: 'nowhere',
      provider: 'openai-compatible',
      url: 'https://nothing.invalid/v1',
      allowedCidrs: ['10.99.0.0/24'],
      auth: { type: 'none' },
      classification: { inVpc: true, baa: false, maxTier: 'public' },
    });
    writeFileSync(policyFile, JSON.stringify(policy));
    const r = await cli(['endpoints', 'check', 'https://nothing.invalid/v1/chat/completions'], home.env);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^refused by rule egress\.dns\.failed \(endpoint nowhere\): resolving nothing\.invalid failed or gave no answer within \d+ ms\n$/);
  });
});

describe('leaderboard --runs', () => {
  it('refuses to rank models that share no benchmark', async () => {
    const server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
    });
    // A second endpoint on the same stand-in.
    const policyFile = join(home.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(policyFile, 'utf8'));
    policy.endpoints.push({ ...policy.endpoints[0], id: 'demo-two' });
    writeFileSync(policyFile, JSON.stringify(policy));
    try {
      const runs = await withApp(async (app) => {
        const ids: string[] = [];
        for (const [benchmarkId, endpointId] of [
          ['pubmed_qa', DEMO_ENDPOINT_ID],
          ['medec', 'demo-two'],
        ] as const) {
          const run = await requestRun(app.engine, { benchmarkId, endpointId, requester: { ...researcher, principal: localUser(app) }, maxInstances: 4 });
          await executeRun(app.engine, run.run_id);
          ids.push(run.run_id);
        }
        return ids;
      });
      const r = await cli(['leaderboard', '--runs', runs.join(',')], home.env);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        'ehrbench: --runs: demo-loopback and demo-two share no scored benchmark with any other model, and a ranking compares models on the same benchmarks; add runs of the same benchmarks on each endpoint\n',
      );
    } finally {
      await server.close();
    }
  });
});

/** The principal the operating-system account maps to (init's local principal). */
function localUser(app: Awaited<ReturnType<typeof openApp>>): string {
  return app.principals().byLocalUser(userInfo().username)?.id as string;
}
