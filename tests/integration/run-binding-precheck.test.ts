/**
 * A run request checks a site benchmark's binding as `ehrbench benchmarks check` does, before any run
 * row exists (issue 17, item 15): a bad binding is refused in one line naming the file, the field and
 * the rule, `runs list` is unchanged, and the refusal is in the audit trail; a good binding still runs.
 * Through the real binary, in local mode (the daemon's POST /v1/runs calls the same operation).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { startModelServer } from '../../src/demo/model-server';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
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

/** Synthetic MedQA-style questions (no patient data), one JSON object a line. */
const question = (i: number, withAnswer = true) =>
  JSON.stringify({ id: `q${i}`, question: `Synthetic question ${i}: which option is first?`, options: ['alpha', 'beta', 'gamma', 'delta'], ...(withAnswer ? { answer: 'A' } : {}) });
const GOOD = [1, 2, 3].map((i) => question(i)).join('\n') + '\n';
const NO_ANSWER = [1, 2, 3].map((i) => question(i, false)).join('\n') + '\n';

/** An in-VPC endpoint (the same loopback server) for site-bound data, which is at least approval-required. */
const SITE_ENDPOINT = 'site-vpc';

let home: TestHome;
beforeEach(async () => {
  home = await makeHome('pglite');
  // Data the site binds is EHR data (SECURITY T50): the local researcher needs an IRB approval and an in-VPC endpoint.
  const endpointsFile = join(home.home, 'access-policies', 'endpoints.json');
  const policy = JSON.parse(readFileSync(endpointsFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
  policy.endpoints.push({ ...policy.endpoints[0], id: SITE_ENDPOINT, classification: { inVpc: true, baa: false, maxTier: 'approval-required', development: false } });
  writeFileSync(endpointsFile, JSON.stringify(policy, null, 2));
  const local = (JSON.parse(readFileSync(join(home.home, 'access-policies', 'principals.json'), 'utf8')) as { principals: { id: string }[] }).principals[0]?.id as string;
  const app = await openApp({ file: home.configFile, env: home.env });
  try {
    await app.approvals.create({ protocolNumber: 'IRB-MEDQA-1', principalInvestigator: local, personnel: [local], benchmarks: ['med_qa'], purpose: 'binding pre-flight' }, 'carol');
  } finally {
    await app.close();
  }
});
afterEach(async () => {
  await home.cleanup();
});

function bind(source: Record<string, unknown>): string {
  const file = join(home.home, 'site-data.json');
  writeFileSync(file, JSON.stringify({ benchmarks: { med_qa: { source: { type: 'jsonl', path: 'med_qa.jsonl', ...source } } } }));
  return file;
}

const request = () => cli(['runs', 'request', '--benchmark', 'med_qa', '--endpoint', SITE_ENDPOINT, '--max-instances', '2', '--json'], home.env);

async function runIds(): Promise<string[]> {
  const r = await cli(['runs', 'list', '--json'], home.env);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { runId: string }[]).map((x) => x.runId);
}

describe('a run request of a site-bound benchmark', () => {
  it('is refused before a run exists when the binding fails the pre-flight, naming the file, the field and the rule, and audited', async () => {
    const data = join(home.home, 'med_qa.jsonl');
    writeFileSync(data, NO_ANSWER);
    bind({});
    const missing = await request();
    expect(missing.code).toBe(1);
    const err = JSON.parse(missing.stderr) as { error: string; message: string };
    expect(err.error).toBe('dataset.missing-column');
    expect(err.message).toBe(
      `benchmark med_qa: no run requested (rule run.binding-invalid): ${data}: record 1 has no column "answer" (a required column) [dataset.missing-column]; "npx ehrbench benchmarks check med_qa" shows every check`,
    );

    // A file that differs from its pin: named with the field to fix.
    writeFileSync(data, GOOD);
    bind({ sha256: createHash('sha256').update('another file').digest('hex') });
    const changed = await cli(['runs', 'request', '--benchmark', 'med_qa', '--endpoint', SITE_ENDPOINT], home.env);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toMatch(
      /^ehrbench: benchmark med_qa: no run requested \(rule run\.binding-invalid\): .*med_qa\.jsonl: content differs from the sha256 pinned for benchmark med_qa; .*\[dataset\.hash-mismatch\]/,
    );
    expect(changed.stderr.split('\n')).toHaveLength(2);

    expect(await runIds()).toEqual([]);
    const audit = await cli(['audit', 'search', '--type', 'run.request', '--json'], home.env);
    expect(audit.code).toBe(0);
    const events = (JSON.parse(audit.stdout) as { outcome: string; rule: string; reason: string }[]).map((e) => [e.outcome, e.rule, e.reason]);
    expect(events).toEqual([
      ['denied', 'run.binding-invalid', "the columns check of the benchmark's data binding failed (dataset.missing-column)"],
      ['denied', 'run.binding-invalid', "the sha256 check of the benchmark's data binding failed (dataset.hash-mismatch)"],
    ]);
    // No record text in what was printed or audited.
    for (const out of [missing.stderr, changed.stderr, audit.stdout]) expect(out).not.toMatch(/Synthetic question|alpha|gamma/);
  });

  it('still runs when the binding is good, pinned or not', async () => {
    writeFileSync(join(home.home, 'med_qa.jsonl'), GOOD);
    bind({ sha256: createHash('sha256').update(GOOD).digest('hex') });
    const server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
    });
    try {
      // On the public demo endpoint site-bound data is refused by tier.
      const onDemo = await cli(['run', '--benchmark', 'med_qa', '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', '2', '--json'], home.env);
      expect(onDemo.code).toBe(3);
      expect(JSON.parse(onDemo.stderr)).toMatchObject({ error: 'policy.denied', rule: 'endpoint.tier-ceiling' });
      const r = await cli(['run', '--benchmark', 'med_qa', '--endpoint', SITE_ENDPOINT, '--max-instances', '2', '--json'], home.env);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', counts: { done: 2, failed: 0 } });
      bind({});
      const unpinned = await request();
      expect(unpinned.code).toBe(0);
      expect(JSON.parse(unpinned.stdout)).toMatchObject({ status: 'approved' });
      expect(await runIds()).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});
