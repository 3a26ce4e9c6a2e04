/**
 * Acts that say what they do (issue 28), in a real browser through the real daemon: revoking a
 * principal and changing an approval ask in a dialog that names the object and the consequence, with
 * the reason the CLI requires; cancel does nothing. An expired approval reads "expired", as in the CLI.
 * The request form does not let an endpoint be chosen for a tier it refuses, and says why. A running
 * run's bar and counts come from one poll and it gives an estimate of the end; the heat map's rows are
 * "model (endpoint)"; an endpoint without calls says what would make some.
 *
 * Chromium is installed by .ci/run (apt). Without it this file says so in one line and skips, unless
 * EHRBENCH_REQUIRE_BROWSER is set (as .ci/run sets it), where a missing browser fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
if (!HAVE_BROWSER) process.stdout.write(`console acts tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set EHRBENCH_CHROMIUM)\n`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;

jest.setTimeout(180_000);

describeBrowser('acts that say what they do, in the console', () => {
  let t: TestDaemon;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    // Slow answers: a run is seen running, with some instances finished and others not.
    t = await startTestDaemon({ workers: 1, concurrency: 1, rows: 12, behaviour: () => ({ kind: 'answer', text: 'A', latencyMs: 400 }) });
    origin = `https://localhost:${t.daemon.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function as(principal: string): Promise<Page> {
    const p12 = t.ids[principal]!.certFile.replace(/\.pem$/, '.p12');
    const context = await browser.newContext({
      clientCertificates: [{ origin, pfxPath: p12, passphrase: readFileSync(`${p12}.password`, 'utf8').trim() }],
      ignoreHTTPSErrors: true,
    });
    return context.newPage();
  }

  async function open(page: Page, hash: string, heading: RegExp): Promise<void> {
    await page.goto(`${origin}/console/${hash}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  it('asks before revoking: names the principal and what they lose, requires a reason; cancel does nothing', async () => {
    const ivan = await as('ivan');
    await open(ivan, '#/principals', /principals and certificates/i);
    await ivan.getByRole('button', { name: 'revoke every certificate of bob' }).click();
    const dialog = ivan.getByRole('dialog', { name: 'Revoke every certificate of bob?' });
    await expect(dialog.innerText()).resolves.toMatch(/bob \(bob, researcher\) loses access at once/);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect((await t.call('bob', 'GET', '/v1/whoami')).status).toBe(200);
    // No reason, no revocation: the dialog says so and stays open.
    await ivan.getByRole('button', { name: 'revoke every certificate of bob' }).click();
    await dialog.getByRole('button', { name: 'Revoke bob' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'Give a reason' }).waitFor();
    expect((await t.call('bob', 'GET', '/v1/whoami')).status).toBe(200);
    await dialog.getByLabel('Reason').fill('left the study');
    await dialog.getByRole('button', { name: 'Revoke bob' }).click();
    await ivan.getByRole('status').filter({ hasText: 'every certificate of bob' }).waitFor();
    const events = await t.app.db.query<{ reason: string }>("SELECT reason FROM audit_events WHERE event_type = 'pki.revoke' AND outcome = 'success'");
    expect(events.map((e) => e.reason)).toEqual(['left the study']);
    await ivan.close();
  });

  it('shows an expired approval as expired, offers it for no run, and asks a reason to close it', async () => {
    const made = await t.call('carol', 'POST', '/v1/approvals', {
      protocolNumber: 'IRB-OLD-1',
      principalInvestigator: 'alice',
      personnel: ['alice'],
      benchmarks: ['site_gated'],
      purpose: 'an old study',
      startsAt: '2020-01-01T00:00:00Z',
      expiresAt: '2020-06-01T00:00:00Z',
    });
    expect(made.status).toBe(200);
    const carol = await as('carol');
    await open(carol, '#/approvals', /IRB approvals/);
    await carol
      .getByRole('row', { name: /IRB-OLD-1/ })
      .getByText('expired', { exact: true })
      .waitFor();
    await carol.getByRole('link', { name: 'IRB-OLD-1' }).click();
    await carol.getByRole('heading', { name: 'History' }).waitFor();
    await carol.getByText('expired', { exact: true }).first().waitFor();
    await carol.getByRole('button', { name: 'Close' }).click();
    const dialog = carol.getByRole('dialog', { name: 'Close IRB approval IRB-OLD-1?' });
    await expect(dialog.innerText()).resolves.toMatch(/Closing is final/);
    await dialog.getByRole('button', { name: 'Close IRB-OLD-1' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'Give a reason' }).waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await t.app.approvals.get(made.json.approvalId))!.status).toBe('active');
    await carol.close();

    const alice = await as('alice');
    await open(alice, '#/runs/new', /request a run/i);
    await expect(alice.getByLabel('IRB approval', { exact: true }).locator('option', { hasText: 'IRB-OLD-1' }).count()).resolves.toBe(0);
    await alice.close();
  });

  it('does not let an endpoint be chosen for a tier it refuses, and says why', async () => {
    const alice = await as('alice');
    await open(alice, '#/runs/new', /request a run/i);
    await alice.getByLabel('Benchmark', { exact: true }).selectOption('site_private');
    const gated = alice.getByLabel('Endpoint', { exact: true }).locator('option[value="vpc-gated"]');
    await expect(gated.isDisabled()).resolves.toBe(true);
    await expect(gated.innerText()).resolves.toMatch(/not for private data: .*rule endpoint\.tier-ceiling/);
    await expect(alice.getByLabel('Endpoint', { exact: true }).locator('option[value="vpc-private"]').isDisabled()).resolves.toBe(false);
    // A public benchmark: every endpoint may take it.
    await alice.getByLabel('Benchmark', { exact: true }).selectOption('medec');
    await expect(gated.isDisabled()).resolves.toBe(false);
    await alice.close();
  });

  it("requests a run with MedHELM's leaderboard settings in one choice, and the run page says so", async () => {
    const alice = await as('alice');
    await open(alice, '#/runs/new', /request a run/i);
    await alice.getByLabel('Benchmark', { exact: true }).selectOption('medec');
    await alice.getByLabel('Endpoint', { exact: true }).selectOption('demo-loopback');
    await alice.getByLabel('Settings', { exact: true }).selectOption('medhelm-leaderboard');
    await alice.getByRole('button', { name: 'Request the run' }).click();
    await alice.getByRole('heading', { name: /^Run / }).waitFor();
    await expect(alice.getByRole('row', { name: /^Scoring/ }).innerText()).resolves.toMatch(/helm \(preset medhelm-leaderboard\)/);
    const runId = /#\/runs\/([0-9a-f-]+)/.exec(alice.url())?.[1] as string;
    const view = await t.call('alice', 'GET', `/v1/runs/${runId}`);
    expect(view.json).toMatchObject({ preset: 'medhelm-leaderboard', scoring: 'helm', maxInstances: 1000 });
    await t.call('alice', 'POST', `/v1/runs/${runId}/cancel`, { reason: 'the page was what was checked' });
    await alice.close();
  });

  it("draws a running run's bar from its counts, with an estimate of the end; rows of the heat map are model (endpoint)", async () => {
    const r = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 10 });
    expect(r.status).toBe(200);
    const runId = r.json.runId as string;
    const alice = await as('alice');
    await open(alice, `#/runs/${runId}`, /^Run /);
    await alice
      .getByTestId('run-eta')
      .filter({ hasText: /left at the rate so far/ })
      .waitFor({ timeout: 120_000 });
    const said = await alice.getByTestId('run-progress').innerText();
    const [, finished] = /: (\d+) of 10 finished/.exec(said) ?? [];
    expect(Number(finished)).toBeGreaterThan(0);
    await alice
      .getByTestId('run-progress')
      .filter({ hasText: /^completed: 10 of 10 finished/ })
      .waitFor({ timeout: 120_000 });
    // The bar and the table agree: the table's done count is what the bar says finished.
    await expect(alice.getByRole('table', { name: 'Instances by state' }).locator('tbody td').nth(2).innerText()).resolves.toBe('10');
    const svg = await alice.evaluate((id) => fetch(`/v1/pictures/leaderboard.svg?runs=${id}`).then((x) => x.text()), runId);
    expect(svg).toMatch(/>[^<]+ \(demo-loopback\)<\/text>/);
    expect(svg).toContain('one row per endpoint');
    await alice.close();
  });

  it('says what would give an endpoint calls to draw, instead of a bare "No data"', async () => {
    const ivan = await as('ivan');
    await open(ivan, '#/endpoints', /endpoints/i);
    const svg = await ivan.evaluate(() => fetch('/v1/pictures/endpoints/vpc-gated/calls.svg').then((x) => x.text()));
    expect(svg).toContain('once a run uses the endpoint or someone probes it');
    await ivan.close();
  });
});
