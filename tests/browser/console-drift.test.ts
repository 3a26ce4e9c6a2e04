/**
 * Drift in the console, in a real browser through the real daemon: a compliance officer sees the notice
 * of an approval whose canary drifted on the IRB approvals page, in the API's words, and marks it
 * reviewed with a reason; the notice goes and the approval's runs are no longer stale. A researcher
 * named on the approval sees the notice without the button.
 *
 * Chromium is installed by .ci/run (apt). Without it this file says so in one line and skips, unless
 * EHRBENCH_REQUIRE_BROWSER is set (as .ci/run sets it), where a missing browser fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { driftedApproval, driftingModel } from '../helpers/drift';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
if (!HAVE_BROWSER) process.stdout.write(`console drift tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set EHRBENCH_CHROMIUM)\n`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;

jest.setTimeout(180_000);

describeBrowser('drift notices in the console', () => {
  let t: TestDaemon;
  let browser: Browser;
  let origin: string;
  // The stand-in's answers follow this state: the helper changes the model behind the endpoint through it.
  const state = { changed: false };

  beforeAll(async () => {
    t = await startTestDaemon({ workers: 0, rows: 30, behaviour: driftingModel(state) });
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

  it('shows compliance the notice and lets them mark it reviewed; the runs are no longer stale', async () => {
    const { approvalId, runId } = await driftedApproval(t, state, 'IRB-DRIFT-UI');
    expect((await t.call('alice', 'GET', `/v1/runs/${runId}`)).json.stale).toBe(true);

    const alice = await as('alice');
    await alice.goto(`${origin}/console/#/approvals`);
    const aliceNotices = alice.getByTestId('drift-notices');
    await aliceNotices.getByText('model behind endpoint vpc-gated changed; canary mean 1.00 -> 0.60, p=0.0078').waitFor();
    expect(await aliceNotices.getByRole('button', { name: 'Mark reviewed' }).count()).toBe(0);
    await alice.close();

    const carol = await as('carol');
    await carol.goto(`${origin}/console/#/approvals`);
    const notices = carol.getByTestId('drift-notices');
    await notices.getByText('IRB-DRIFT-UI', { exact: true }).waitFor();
    await notices.getByRole('button', { name: 'Mark reviewed' }).click();
    const dialog = carol.getByRole('dialog', { name: 'Review the drift of IRB-DRIFT-UI?' });
    await dialog.getByLabel('Reason').fill('vendor update confirmed');
    await dialog.getByRole('button', { name: 'Reviewed IRB-DRIFT-UI' }).click();
    await carol.getByRole('status').filter({ hasText: 'drift reviewed' }).waitFor();
    expect((await t.call('alice', 'GET', `/v1/runs/${runId}`)).json.stale).toBe(false);
    const [review] = await t.app.db.query<{ actor_principal: string; approval_id: string }>(
      "SELECT actor_principal, approval_id::text AS approval_id FROM audit_events WHERE event_type = 'drift.review' AND outcome = 'success'",
    );
    expect(review).toEqual({ actor_principal: 'carol', approval_id: approvalId });
    await carol.close();
  });
});
