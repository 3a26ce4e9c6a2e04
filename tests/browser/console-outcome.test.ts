/**
 * The console says what happened to a run in the words of `runs show` (src/runs/outcome.ts), in a real
 * browser through the real daemon: with the endpoint down a run is "failed", names its cause by code
 * and count, and offers no export; a run whose instances partly failed is "completed with failures",
 * names the cause, and offers the export of what it has. The runs list shows the same labels.
 *
 * Chromium is installed by .ci/run (apt). Without it this file says so in one line and skips, unless
 * EHRBENCH_REQUIRE_BROWSER is set (as .ci/run sets it), where a missing browser fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Behaviour } from '../../src/demo/model-server';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
if (!HAVE_BROWSER) process.stdout.write(`console outcome tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set EHRBENCH_CHROMIUM)\n`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;

jest.setTimeout(180_000);

/** The loopback model: refuses every call, or the calls of one prompt only. */
let mode: 'down' | 'one-prompt-fails' = 'down';
const failing = new Set<string>();
function behaviour(_n: number, prompt: string): Behaviour {
  const refuse: Behaviour = { kind: 'status', status: 400, body: '{"error":{"message":"bad request"}}' };
  if (mode === 'down') return refuse;
  if (failing.size === 0) failing.add(prompt);
  return failing.has(prompt) ? refuse : { kind: 'answer', text: 'A' };
}

describeBrowser("a run's outcome in the console", () => {
  let t: TestDaemon;
  let browser: Browser;
  let page: Page;
  let origin: string;

  beforeAll(async () => {
    t = await startTestDaemon({ behaviour, workers: 1 });
    origin = `https://localhost:${t.daemon.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const p12 = t.ids.alice!.certFile.replace(/\.pem$/, '.p12');
    const context = await browser.newContext({
      clientCertificates: [{ origin, pfxPath: p12, passphrase: readFileSync(`${p12}.password`, 'utf8').trim() }],
      ignoreHTTPSErrors: true,
    });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** Requests a public run of six instances as the researcher and waits until it has ended. */
  async function finishedRun(): Promise<string> {
    const r = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 6 });
    expect(r.status).toBe(200);
    const runId = r.json.runId as string;
    for (;;) {
      const s = await t.call('alice', 'GET', `/v1/runs/${runId}`);
      if (!['requested', 'approved', 'running'].includes(s.json.status)) return runId;
      await new Promise((resolve) => setTimeout(resolve, 100)); // a poll interval, not a deadline
    }
  }

  async function openRun(runId: string): Promise<void> {
    await page.goto(`${origin}/console/#/runs/${runId}`);
    await page.getByTestId('run-outcome').waitFor();
  }

  it('with the endpoint down: failed, the cause by code and count, no export offered', async () => {
    mode = 'down';
    const runId = await finishedRun();
    await openRun(runId);
    const status = page.getByRole('row', { name: /^Status/ });
    await expect(status.locator('span.status-bad').innerText()).resolves.toBe('failed');
    await expect(page.getByTestId('run-outcome').innerText()).resolves.toMatch(/^no instance finished \(6 failed, 0 blocked\): there are no results/);
    await expect(page.getByTestId('run-causes').innerText()).resolves.toMatch(/^failed: endpoint demo-loopback: model\.[a-z-]+ \(.+\): 6 instances$/);
    await expect(page.getByRole('button', { name: /export/i }).count()).resolves.toBe(0);

    await page.goto(`${origin}/console/#/runs`);
    const row = page.getByRole('row', { name: new RegExp(runId.slice(0, 8)) });
    await expect(row.locator('span.status-bad').innerText()).resolves.toBe('failed');
  });

  it('with one prompt failing: completed with failures, the cause named, the export of what it has offered', async () => {
    mode = 'one-prompt-fails';
    const runId = await finishedRun();
    await openRun(runId);
    const status = page.getByRole('row', { name: /^Status/ });
    await expect(status.locator('span.status-warn').innerText()).resolves.toBe('completed with failures');
    await expect(page.getByTestId('run-outcome').innerText()).resolves.toMatch(/^5 of 6 instances done, 1 failed for good: the scores cover the done ones only/);
    await expect(page.getByTestId('run-causes').innerText()).resolves.toMatch(/^failed: endpoint demo-loopback: model\.[a-z-]+ \(.+\): 1 instance$/);
    await expect(page.getByRole('button', { name: 'Request an export of this run' }).count()).resolves.toBe(1);
    // what the run scored with, and on which data: the same as the API says
    const view = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    await expect(page.getByRole('row', { name: /^Scoring/ }).innerText()).resolves.toMatch(/corrected/);
    await expect(page.getByRole('row', { name: /^Data revision/ }).innerText()).resolves.toContain(`sha256 ${(view.json.data.sha256 as string).slice(0, 16)}`);
  });
});
