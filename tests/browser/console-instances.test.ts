/**
 * The Instances section of a run's page, in Chromium through the real daemon (SECURITY T58): a public
 * run's prompts, predictions, references and scores, filtered (failed, wrong) and paged; an EHR tier's
 * failed instances by position, state and code, with the sentence that says why no text is shown; an
 * auditor told the instances are withheld. Dataset and model text is shown as text: a prompt and a
 * prediction carrying `<img src=x onerror=...>` and `<script>` markup appear literally, no element of
 * theirs is inserted, nothing of theirs runs, and the Content-Security-Policy records no violation
 * (the watch of tests/helpers/injection.ts, as in console-xss).
 *
 * Chromium is installed by .ci/run (apt). Without it this file says so in one line and skips, unless
 * EHRBENCH_REQUIRE_BROWSER is set (as .ci/run sets it), where a missing browser fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Behaviour } from '../../src/demo/model-server';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { addOpenBenchmark, finishedRuns } from '../helpers/instance-runs';
import { pageState, watchForInjection } from '../helpers/injection';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
if (!HAVE_BROWSER) process.stdout.write(`console instances tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set EHRBENCH_CHROMIUM)\n`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;

jest.setTimeout(180_000);

/** Markup in a record of the public dataset (note 2) and in the model's answer to it. */
const PROMPT_MARKUP = '<img src=x onerror=window.__xss_prompt=1><script>window.__xss_prompt_script=1</script>';
const PREDICTION_MARKUP = '<img src=x onerror=window.__xss_prediction=1>';
const ROWS = 25;

/** Note 2 is answered with markup, note 3 is refused (it fails for good), every other note with "A" (yes). */
function behaviour(_n: number, prompt: string): Behaviour {
  if (prompt.includes('Synthetic note 3:')) return { kind: 'status', status: 400, body: '{"error":{"message":"bad request"}}' };
  if (prompt.includes('Synthetic note 2:')) return { kind: 'answer', text: PREDICTION_MARKUP };
  return { kind: 'answer', text: 'A' };
}

describeBrowser("a run's instances in the console", () => {
  let t: TestDaemon;
  let browser: Browser;
  let origin: string;
  let publicRun: string;
  let privateRun: string;
  const pages = new Map<string, Page>();

  beforeAll(async () => {
    t = await startTestDaemon({
      behaviour,
      rows: 4,
      workers: 1,
      // A public benchmark of 25 synthetic notes; note 2 carries markup.
      prepare: (_home, config) => {
        const notes = Array.from({ length: ROWS }, (_, i) => `${i + 1},"Synthetic note ${i + 1}: ${i === 1 ? PROMPT_MARKUP : 'stable vital signs.'}",${i % 2 ? 'yes' : 'no'}`);
        addOpenBenchmark(config, ['id,context,label', ...notes].join('\n') + '\n');
      },
    });
    origin = `https://localhost:${t.daemon.port}`;
    const pub = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'site_open', endpointId: 'demo-loopback' });
    expect(pub.status).toBe(200);
    ({ publicRun, privateRun } = await finishedRuns(t, pub.json.runId, 'IRB-INST-UI'));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** The person's tab, with the injection watch installed before the console's first script. */
  async function tabOf(who: string): Promise<Page> {
    const known = pages.get(who);
    if (known) return known;
    const p12 = t.ids[who]!.certFile.replace(/\.pem$/, '.p12');
    const context = await browser.newContext({ clientCertificates: [{ origin, pfxPath: p12, passphrase: readFileSync(`${p12}.password`, 'utf8').trim() }], ignoreHTTPSErrors: true });
    await context.addInitScript(watchForInjection);
    const page = await context.newPage();
    pages.set(who, page);
    return page;
  }

  async function openRun(who: string, runId: string): Promise<Page> {
    const page = await tabOf(who);
    // From a blank document: the console loads anew (a change of the hash alone would not load a document).
    await page.goto('about:blank');
    const response = await page.goto(`${origin}/console/#/runs/${runId}`);
    expect((await response!.allHeaders())['content-security-policy']).toMatch(/script-src 'self'/);
    await page.getByRole('heading', { name: 'Instances' }).waitFor();
    return page;
  }

  const ordinals = (page: Page) =>
    page
      .getByTestId('instances')
      .locator('tbody tr')
      .evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-ordinal'))));

  /** Nothing of any markup ran or was inserted, and the policy recorded no violation. */
  async function expectNothingRan(page: Page): Promise<void> {
    const { text: _text, bidi: _bidi, ...state } = await page.evaluate(pageState);
    expect(state).toEqual({ markers: [], inserted: [], violations: [] });
  }

  it("shows a public run's instances with their text and scores, markup as literal text", async () => {
    const page = await openRun('alice', publicRun);
    await page.getByTestId('instances').waitFor();
    expect(await ordinals(page)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    await expect(page.getByTestId('instances-said').innerText()).resolves.toMatch(/^Public data: each instance with its prompt, prediction, references and scores/);
    const second = page.locator('tr[data-ordinal="1"]');
    await expect(second.locator('[data-field="prompt"]').innerText()).resolves.toContain(`Synthetic note 2: ${PROMPT_MARKUP}`);
    await expect(second.locator('[data-field="prediction"]').innerText()).resolves.toBe(PREDICTION_MARKUP);
    await expect(second.locator('[data-field="reference"]').innerText()).resolves.toBe('yes');
    await expect(second.locator('td').nth(2).innerText()).resolves.toBe('0.000');
    await expect(page.locator('tr[data-ordinal="2"] td').nth(3).innerText()).resolves.toMatch(/^model\./);
    // The markup is text in the page's DOM: no <img> or <script> of it exists.
    expect(await page.locator('#main img, #main script').count()).toBe(0);
    await expectNothingRan(page);
  });

  it('filters failed and wrong instances, and pages', async () => {
    const page = await openRun('alice', publicRun);
    await page.getByTestId('instances').waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.waitForFunction(() => document.querySelector('tr[data-ordinal="20"]') !== null);
    expect(await ordinals(page)).toEqual([20, 21, 22, 23, 24]);
    expect(await page.getByRole('button', { name: 'Next page' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.waitForFunction(() => document.querySelector('tr[data-ordinal="0"]') !== null);

    await page.getByLabel('Failed or blocked').check();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="instances"] tbody tr').length === 1);
    expect(await ordinals(page)).toEqual([2]);
    await page.getByLabel('Failed or blocked').uncheck();
    await page.getByRole('checkbox', { name: /Wrong/ }).check();
    // Wrong: the labels "no" answered yes (notes 1, 5, 7...), and note 2 answered with markup.
    await page.waitForFunction(
      () => document.querySelector('[data-testid="instances"] tbody tr[data-ordinal="0"]') !== null && document.querySelectorAll('[data-testid="instances"] tbody tr').length < 20,
    );
    expect(await ordinals(page)).toEqual([0, 1, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24]);
    await expectNothingRan(page);
  });

  it("shows an EHR tier's failed instances by code only, and says why no text is shown", async () => {
    const page = await openRun('alice', privateRun);
    await page.getByTestId('instances').waitFor();
    await expect(page.getByTestId('instances-withheld').innerText()).resolves.toMatch(/^Text is withheld: this run is on private data/);
    const rows = await page.getByTestId('instances').locator('tbody tr').allInnerTexts();
    expect(rows).toEqual([expect.stringMatching(/^2\tfailed\tmodel\./)]);
    const section = await page.locator('section[aria-labelledby="instances-heading"]').innerText();
    expect(section).not.toMatch(/Synthetic|vital signs/);
    // No filter that reads scores is offered.
    expect(await page.getByRole('checkbox', { name: /Wrong/ }).count()).toBe(0);
    await expectNothingRan(page);
  });

  it('tells an auditor the instances of an EHR tier run are withheld', async () => {
    const page = await openRun('erin', privateRun);
    await expect(page.getByTestId('instances-withheld').innerText()).resolves.toMatch(/withheld from you: only its requester and compliance officers/);
    expect(await page.getByTestId('instances').count()).toBe(0);
  });
});
