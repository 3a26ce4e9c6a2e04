/**
 * `ehrbench report --run ID | --export ID --html FILE` through the real binary: one self-contained
 * HTML file with no script and no external reference. A run's report comes through the same operation
 * and visibility rule as `runs show` (locally and with --server): the main score for its requester,
 * the withholding rule and no figure for an auditor. An export's report holds only what the released
 * bundle holds, verified first: a changed bundle or another key is refused and nothing is written.
 * Neither ever holds an instance's text.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { type Bundle, EXPORT_PUBLIC_KEY_FILE, loadExportSigningKey, signBundle } from '../../src/export';
import { validateModelCard } from '../../src/report';
import { Operations } from '../../src/operations';
import { DEMO_ENDPOINT_ID } from '../../src/setup';
import { startTestApp, type TestApp } from '../helpers/app';
import { type Identity, startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { tempDir } from '../helpers/db';
import { packetUnsigned } from '../helpers/packet-bundle';
import { ROOT } from '../helpers/paths';

jest.setTimeout(240_000);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The binary, asynchronously: the loopback model server (and the daemon) live in this process. */
function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'bin', 'ehrbench.js'), ...args],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 120_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Every question and the start of every context of PubMedQA: the instance text a report must never hold. */
const PUBMED_TEXT: string[] = (() => {
  const data = JSON.parse(readFileSync(join(ROOT, 'datasets', 'pubmed_qa', 'ori_pqal.json'), 'utf8')) as Record<string, { QUESTION: string; CONTEXTS: string[] }>;
  return Object.values(data).flatMap((d) => [d.QUESTION, (d.CONTEXTS[0] ?? '').slice(0, 60)]);
})();

/** The first sentence of each of the first MEDEC notes (the CSV's Text column starts each record). */
const MEDEC_TEXT: string[] = (() => {
  const csv = readFileSync(join(ROOT, 'datasets', 'medec', 'MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv'), 'utf8');
  return [...csv.matchAll(/\nms-test-\d+,"([^."]{20,200})\./g)].slice(0, 200).map((m) => m[1] as string);
})();

function expectSelfContained(html: string): void {
  expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
  // No script, no fetch of anything: no URL, no protocol-relative reference, no src, no url(), no import.
  for (const re of [/https?:/i, /\/\//, /\bsrc\s*=/i, /\bhref\s*=/i, /url\(/i, /@import/i, /@font-face/i, /<script/i, /<link/i, /<iframe/i, /<object/i, /<embed/i, /<img/i, /\bon[a-z]+\s*=/i]) {
    expect([String(re), re.test(html)]).toEqual([String(re), false]);
  }
  expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
}

function expectNoInstanceText(html: string): void {
  expect(PUBMED_TEXT.length).toBeGreaterThan(1500);
  expect(MEDEC_TEXT.length).toBeGreaterThan(100);
  expect(PUBMED_TEXT.filter((s) => s.length > 10 && html.includes(s))).toEqual([]);
  expect(MEDEC_TEXT.filter((s) => html.includes(s))).toEqual([]);
}

function leftovers(dir: string): string[] {
  return readdirSync(dir).filter((f) => f.includes('.partial'));
}

describe('report in local mode', () => {
  let t: TestApp;
  let env: NodeJS.ProcessEnv;
  const runs: { runId: string; mainScore: number; promptTokens: number }[] = [];
  let exportId: string;
  const out = tempDir('report');

  beforeAll(async () => {
    t = await startTestApp();
    // The binary opens the data directory itself; the test's own app must not hold it.
    await t.app.close();
    env = { EHRBENCH_HOME: t.home.home, ...(t.home.env.EHRBENCH_DATABASE_URL ? { EHRBENCH_DATABASE_URL: t.home.env.EHRBENCH_DATABASE_URL } : {}) };
    for (const [benchmark, n] of [
      ['pubmed_qa', 20],
      ['medec', 30],
    ] as const) {
      const r = await cli(['run', '--benchmark', benchmark, '--endpoint', DEMO_ENDPOINT_ID, '--max-instances', String(n), '--json'], env);
      expect(r.code).toBe(0);
      runs.push(JSON.parse(r.stdout));
    }
    const requested = await cli(['export', 'request', '--runs', runs.map((r) => r.runId).join(','), '--json'], env);
    expect(requested.code).toBe(0);
    exportId = JSON.parse(requested.stdout).exportId;
    // A compliance officer releases it (through the daemon in real life; the operation here).
    const app = await openApp({ file: t.home.configFile, env: t.home.env });
    try {
      const carol = app.principals().get('carol');
      await new Operations(app).releaseExport({ principal: carol as NonNullable<typeof carol>, authMethod: 'mtls' }, exportId, 'bundle');
    } finally {
      await app.close();
    }
  });
  afterAll(async () => {
    await t.server.close();
    await t.home.cleanup();
  });

  it('--run writes one self-contained page with the main score and the progress picture, and no instance text', async () => {
    const file = join(out, 'run.html');
    const r = await cli(['report', '--run', runs[0]!.runId, '--html', file], env);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toBe(`wrote report to ${file}\n`);
    const html = readFileSync(file, 'utf8');
    expectSelfContained(html);
    expect(html).toContain(`exact_match: ${runs[0]!.mainScore.toFixed(3)}`);
    // The interval of the main metric, as `runs show` gives it.
    const shown = JSON.parse((await cli(['runs', 'show', runs[0]!.runId, '--json'], env)).stdout) as { aggregates: { metric: string; ci95?: { low: number; high: number } }[] };
    const ci = shown.aggregates.find((a) => a.metric === 'exact_match')?.ci95;
    expect(ci).toEqual({ low: expect.any(Number), high: expect.any(Number) });
    expect(html).toContain(`(95% interval ${ci!.low.toFixed(3)} to ${ci!.high.toFixed(3)})`);
    expect(html).toContain('<svg role="img"');
    expect(html).toContain('done 20');
    expect(html).toContain('pubmed_qa v1.1.0');
    expectNoInstanceText(html);
    expect(statSync(file).mode & 0o077).toBe(0o040); // 0640: the figures are the requester's
  });

  it('refuses to replace an existing file unless --force, and leaves no partial file', async () => {
    const file = join(out, 'existing.html');
    writeFileSync(file, 'keep me');
    const r = await cli(['report', '--run', runs[0]!.runId, '--html', file], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: ${file} already exists; pass --force to replace it, or name another file\n`);
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    const forced = await cli(['report', '--run', runs[0]!.runId, '--html', file, '--force'], env);
    expect(forced.code).toBe(0);
    expect(readFileSync(file, 'utf8')).toContain(runs[0]!.runId);
    const missing = await cli(['report', '--run', runs[0]!.runId, '--html', join(out, 'no-such-dir', 'r.html')], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^ehrbench: .*r\.html: the report cannot be written \(ENOENT\); check the folder exists and is writable\n$/);
    expect(leftovers(out)).toEqual([]);
  });

  it('has --help like every command', async () => {
    const r = await cli(['report', '--help'], env);
    expect(r.code).toBe(0);
    for (const option of ['--run', '--export', '--html', '--model-card', '--force', '--public-key', '--server']) expect(r.stdout).toContain(option);
  });

  it('asks for exactly one of --run and --export', async () => {
    for (const args of [
      ['report', '--html', join(out, 'x.html')],
      ['report', '--run', 'a', '--export', 'b', '--html', join(out, 'x.html')],
    ]) {
      const r = await cli(args, env);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe('ehrbench: give either --run ID or --export ID; see --help\n');
    }
    expect((await cli(['report', '--run', 'no-such-run', '--html', join(out, 'x.html')], env)).stderr).toBe('ehrbench: run no-such-run does not exist or is not yours\n');
    expect(existsSync(join(out, 'x.html'))).toBe(false);
  });

  it("--export holds the bundle's figures and pictures, and nothing from the run store", async () => {
    const file = join(out, 'export.html');
    const r = await cli(['report', '--export', exportId, '--html', file], env);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const html = readFileSync(file, 'utf8');
    expectSelfContained(html);
    expectNoInstanceText(html);
    const bundleText = (await (async () => {
      const app = await openApp({ file: t.home.configFile, env: t.home.env });
      try {
        return (await app.db.query<{ bundle: string }>('SELECT bundle FROM exports WHERE export_id = $1', [exportId]))[0]!.bundle;
      } finally {
        await app.close();
      }
    })()) as string;
    const bundle = JSON.parse(bundleText);
    expect(html).toContain(exportId);
    expect(html).toContain(bundle.signature.keyFingerprint);
    for (const res of bundle.results) {
      const main = res.metrics.find((m: { name: string }) => m.name === res.mainMetric);
      expect(html).toContain(`${res.mainMetric}: ${main.value.toFixed(3)}`);
      expect(html).toContain(`${res.n.low}-${res.n.high}`);
      if (main.ci95) expect(html).toContain(`${main.ci95.low.toFixed(3)} to ${main.ci95.high.toFixed(3)}`);
    }
    // The pictures of several results: heat map, per-category scores, cost against win rate.
    expect(html.match(/<svg role="img"/g)).toHaveLength(3);
    expect(html).toContain('Released main-metric values per benchmark');
    // Not the run store's exact figures: token totals are released to the nearest thousand.
    for (const run of runs) expect(html).not.toContain(String(run.promptTokens));
    // Not the endpoint's URL (the bundle names the endpoint only).
    const endpoints = JSON.parse(readFileSync(join(t.home.home, 'access-policies', 'endpoints.json'), 'utf8'));
    const demo = endpoints.endpoints.find((e: { id: string }) => e.id === DEMO_ENDPOINT_ID);
    expect(html).not.toContain(String(demo.baseUrl ?? demo.url).replace(/^https?:\/\//, ''));
  });

  it('refuses a bundle signed by another key, and a changed bundle, in one line, writing nothing', async () => {
    const other = join(out, 'other.pub.pem');
    writeFileSync(other, generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const file = join(out, 'refused.html');
    const wrongKey = await cli(['report', '--export', exportId, '--html', file, '--public-key', other], env);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(
      new RegExp(`^ehrbench: export ${exportId}: the bundle does not verify \\(signature: signed by key [0-9a-f]+\\.\\.\\., not by the given key [0-9a-f]+\\.\\.\\.\\); no report was written\\n$`),
    );
    expect(existsSync(file)).toBe(false);
    const key = join(t.home.home, 'keys', EXPORT_PUBLIC_KEY_FILE);
    expect((await cli(['report', '--export', exportId, '--html', file, '--public-key', key], env)).code).toBe(0);

    const app = await openApp({ file: t.home.configFile, env: t.home.env });
    try {
      await app.db.transaction(async (tx) => {
        await tx.query('ALTER TABLE exports DISABLE TRIGGER USER');
        await tx.query(`UPDATE exports SET bundle = replace(bundle, '"releasedBy":"carol"', '"releasedBy":"carla"') WHERE export_id = $1`, [exportId]);
        await tx.query('ALTER TABLE exports ENABLE TRIGGER USER');
      });
    } finally {
      await app.close();
    }
    const altered = join(out, 'altered.html');
    const r = await cli(['report', '--export', exportId, '--html', altered], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`ehrbench: export ${exportId}: the bundle does not verify (signature: does not verify; the bundle was changed after signing); no report was written\n`);
    expect(existsSync(altered)).toBe(false);
    expect(leftovers(out)).toEqual([]);
  });

  it('--model-card: refused for an export without a packet (no file of either kind); with a packet, the card and the report are written', async () => {
    const html = join(out, 'card-report.html');
    const card = join(out, 'card.xml');
    const usage = await cli(['report', '--run', runs[0]!.runId, '--model-card', card], env);
    expect([usage.code, usage.stderr]).toEqual([2, 'ehrbench: --model-card needs --export ID: a model card comes from an export with an evidence packet; see --help\n']);

    // The export as released: verified, but with no packet. The last test changed it; sign it again as released.
    // The store is opened and closed around each change: the binary needs it to itself.
    const setBundle = async (change: (b: Record<string, unknown>) => void): Promise<Bundle> => {
      const app = await openApp({ file: t.home.configFile, env: t.home.env });
      try {
        const { signature: _old, ...unsigned } = JSON.parse((await app.db.query<{ bundle: string }>('SELECT bundle FROM exports WHERE export_id = $1', [exportId]))[0]!.bundle);
        change(unsigned);
        const { text } = signBundle(unsigned, loadExportSigningKey(join(t.home.home, 'keys')));
        await app.db.transaction(async (tx) => {
          await tx.query('ALTER TABLE exports DISABLE TRIGGER USER');
          await tx.query('UPDATE exports SET bundle = $2 WHERE export_id = $1', [exportId, text]);
          await tx.query('ALTER TABLE exports ENABLE TRIGGER USER');
        });
        return JSON.parse(text) as Bundle;
      } finally {
        await app.close();
      }
    };
    await setBundle(() => undefined);
    const none = await cli(['report', '--export', exportId, '--html', html, '--model-card', card], env);
    expect([none.code, none.stderr]).toEqual([1, `ehrbench: export ${exportId} has no evidence packet; request one with "ehrbench export request --packet" to write a model card\n`]);
    expect([existsSync(html), existsSync(card)]).toEqual([false, false]);

    const bundle = await setBundle((b) => {
      const { packet } = packetUnsigned('Answer <b>clinic</b> questions & triage');
      const first = (b.results as Bundle['results'])[0]!;
      b.packet = {
        ...packet!,
        model: { endpointId: first.model.endpointId, provider: first.model.provider, deployment: first.model.deployment, model: first.model.model },
        approval: { ...packet!.approval, protocol: (b.irbProtocol as string | null) ?? 'IRB-DEMO-1', benchmarks: [first.benchmark.id] },
        evidence: [{ figure: '/results/0/metrics', auditSeq: 1 }],
      };
    });
    const r = await cli(['report', '--export', exportId, '--html', html, '--model-card', card, '--json'], env);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout)).toEqual({ path: html, modelCard: card, exportId });
    const xml = readFileSync(card, 'utf8');
    await expect(validateModelCard(xml)).resolves.toBeUndefined();
    expect(xml).toContain('<IntendedUseAndWorkflow>Answer &lt;b&gt;clinic&lt;/b&gt; questions &amp; triage');
    const main = bundle.results[0]!.metrics.find((m) => m.name === bundle.results[0]!.mainMetric)!;
    if ('value' in main) expect(xml).toContain(`"estimate":${main.value}`);
    const page = readFileSync(html, 'utf8');
    expectSelfContained(page);
    expect(page).toContain('<h2>Evidence packet</h2>');
    expect(page).toContain('<blockquote>Answer &lt;b&gt;clinic&lt;/b&gt; questions &amp; triage</blockquote>');
    for (const text of [xml, page]) expectNoInstanceText(text);
    expect(leftovers(out)).toEqual([]);
  });
});

describe('report with --server', () => {
  let t: TestDaemon;
  let privateRun: string;
  let as: (who: string) => string[];
  const out = tempDir('report-remote');
  const env = () => ({ EHRBENCH_HOME: tempDir('no-home') });

  async function waitForRun(runId: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      const r = await t.call('alice', 'GET', `/v1/runs/${runId}`);
      if (['completed', 'failed', 'halted', 'cancelled'].includes(r.json.status)) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error('run did not finish');
  }

  beforeAll(async () => {
    t = await startTestDaemon({ workers: 1, rows: 12 });
    as = (who) => {
      const id = t.ids[who] as Identity;
      return ['--server', `https://localhost:${t.daemon.port}`, '--cert', id.certFile, '--key', id.keyFile, '--ca', t.caFile];
    };
    const approval = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-REPORT-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_private'],
      purpose: 'report test',
    });
    expect(approval.status).toBe(200);
    const requested = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_private', endpointId: 'vpc-private', approvalId: approval.json.approvalId });
    privateRun = requested.json.runId;
    expect((await t.call('dave', 'POST', `/v1/runs/${privateRun}/approve`, {})).status).toBe(200);
    await waitForRun(privateRun);
  });
  afterAll(() => t.close());

  it("shows the requester her private run's figures", async () => {
    const shown = (await t.call('alice', 'GET', `/v1/runs/${privateRun}`)).json;
    expect(shown.status).toBe('completed');
    const file = join(out, 'alice.html');
    const r = await cli(['report', '--run', privateRun, '--html', file, ...as('alice')], env());
    expect([r.code, r.stderr]).toEqual([0, '']);
    const html = readFileSync(file, 'utf8');
    expectSelfContained(html);
    expect(html).toContain(`exact_match: ${(shown.mainScore as number).toFixed(3)}`);
    expect(html).toContain('done 12');
    expect(html).not.toContain('Synthetic note');
  });

  it('gives an auditor the rule that withholds the figures, and no figure', async () => {
    const file = join(out, 'erin.html');
    const r = await cli(['report', '--run', privateRun, '--html', file, ...as('erin')], env());
    expect(r.code).toBe(0);
    const html = readFileSync(file, 'utf8');
    expectSelfContained(html);
    expect(html).toContain('withheld from you (rule <code>visibility.run-figures.withheld</code>)');
    expect(html).toContain('Counts withheld from you (rule visibility.run-figures.withheld)');
    for (const figure of ['exact_match:', 'done 12', 'Prompt tokens', 'Estimated cost', 'data-series']) expect([figure, html.includes(figure)]).toEqual([figure, false]);
    // Metadata stays: what run, whose, which tier.
    expect(html).toContain(privateRun);
    expect(html).toContain('site_private');
  });

  it("reads a released export's bundle over the daemon, verified with the site's public key", async () => {
    const pub = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 12 });
    await waitForRun(pub.json.runId);
    const requested = await t.call('alice', 'POST', '/v1/exports', { runIds: [pub.json.runId] });
    expect(requested.status).toBe(200);
    const id = requested.json.exportId as string;
    expect((await t.call('carol', 'POST', `/v1/exports/${id}/release`, { format: 'bundle' })).status).toBe(200);
    const file = join(out, 'export.html');
    const noKey = await cli(['report', '--export', id, '--html', file, ...as('alice')], env());
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toBe("ehrbench: report --export with --server needs the site's export-signing.pub.pem: --public-key FILE; see --help\n");
    const r = await cli(['report', '--export', id, '--html', file, '--public-key', join(t.home.home, 'keys', EXPORT_PUBLIC_KEY_FILE), ...as('alice')], env());
    expect([r.code, r.stderr]).toEqual([0, '']);
    const html = readFileSync(file, 'utf8');
    expectSelfContained(html);
    expectNoInstanceText(html);
    expect(html).toContain(id);
    // One result: no ranking pictures.
    expect(html).not.toContain('<svg');
    const downloads = await t.app.db.query<{ actor_principal: string }>("SELECT actor_principal FROM audit_events WHERE rule = 'export.download' AND export_id = $1", [id]);
    expect(downloads.map((d) => d.actor_principal)).toEqual(['alice']);
  });
});
