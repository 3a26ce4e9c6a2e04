/**
 * A clinician rates a blinded sample in the console, in Debian's Chromium through the real daemon
 * (mutual TLS). The four roles and a clinician: the admin signs the clinician's certificate request
 * through the API (a clinician's key never leaves her machine), the researcher's jury run completes,
 * she opens a rating study on the Rating studies page (with Zou's planner), the clinician rates every
 * item with the keyboard (digits score, Enter saves) without ever seeing a run, model or endpoint, and
 * the researcher and the compliance officer read the study's progress and agreement. Screenshots and
 * axe-core (WCAG 2 A and AA) as in console.test.ts. Skips without Chromium unless EHRBENCH_REQUIRE_BROWSER.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import forge from 'node-forge';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { addJudges, juryBehaviour } from '../helpers/jury-app';
import { ROOT } from '../helpers/paths';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;
const ARTIFACTS = join(ROOT, 'test-artifacts', 'console');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const ANSWER_CANARY = 'RATE-ME-ANSWER';

jest.setTimeout(240_000);

describeBrowser('a clinician rates in the console', () => {
  let t: TestDaemon;
  let browser: Browser;
  let origin: string;
  let runId: string;
  const cleoKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  let cleoCert: string;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    t = await startTestDaemon({
      rows: 6,
      workers: 1,
      behaviour: juryBehaviour(() => `ASSESSMENT AND PLAN ${ANSWER_CANARY}: knee pain, ibuprofen.`),
      prepare: (home) => addJudges(home.home),
    });
    origin = `https://localhost:${t.daemon.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });

    // The admin signs the clinician's certification request: only its public key reaches the daemon.
    const key = forge.pki.privateKeyFromPem(cleoKey) as forge.pki.rsa.PrivateKey;
    const csr = forge.pki.createCertificationRequest();
    csr.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
    csr.setSubject([{ name: 'commonName', value: 'cleo' }]);
    csr.sign(key, forge.md.sha256.create());
    const signed = await t.call('ivan', 'POST', '/v1/certificates', { principal: 'cleo', role: 'clinician', days: 30, csr: forge.pki.certificationRequestToPem(csr) });
    expect(signed.status).toBe(200);
    cleoCert = (signed.json as { certificatePem: string }).certificatePem;

    // A completed run of a jury benchmark, requested by the researcher.
    const run = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'aci_bench', endpointId: 'demo-loopback', maxInstances: 3, sample: 'first' });
    expect(run.status).toBe(200);
    runId = (run.json as { runId: string }).runId;
    for (;;) {
      const shown = await t.call('alice', 'GET', `/v1/runs/${runId}`);
      const status = (shown.json as { status: string }).status;
      if (status === 'completed') break;
      if (['failed', 'cancelled', 'halted'].includes(status)) throw new Error(`the jury run ended ${status}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function as(principal: string): Promise<Page> {
    const dir = join(t.home.home, 'browser-certs');
    mkdirSync(dir, { recursive: true });
    const pem = (name: string, text: string) => {
      const p = join(dir, `${principal}-${name}.pem`);
      writeFileSync(p, text);
      return p;
    };
    const id = t.ids[principal];
    const certPath = id ? id.certFile : pem('cert', cleoCert);
    const keyPath = id ? id.keyFile : pem('key', cleoKey);
    const context = await browser.newContext({ clientCertificates: [{ origin, certPath, keyPath }], ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
    return context.newPage();
  }

  async function record(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    await page.evaluate(AXE);
    const violations = (await page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] }).then(r => r.violations.map(v => v.id + ': ' + v.nodes.length))`)) as string[];
    expect({ page: name, violations }).toEqual({ page: name, violations: [] });
  }

  it('opens a study, rates it blinded with the keyboard, and shows the agreement', async () => {
    // The researcher opens the study on the page, the planner beside the form.
    const alice = await as('alice');
    await alice.goto(`${origin}/console/#/studies`);
    await alice.getByRole('heading', { level: 1, name: 'Rating studies' }).waitFor();
    await alice.getByTestId('plan-result').filter({ hasText: 'Rate at least' }).waitFor();
    await alice.getByLabel('Title', { exact: true }).fill('Knee notes');
    await alice.getByRole('checkbox').first().check();
    await alice.getByLabel('Instances per run').fill('3');
    await alice.getByLabel('Clinicians per item').fill('1');
    await record(alice, 'studies-researcher');
    await alice.getByRole('button', { name: 'Open the study' }).click();
    await alice.getByText(/Opened study [0-9a-f-]+: 3 items/).waitFor();

    // The clinician: the menu offers Rating studies; the study is blinded; the items come one at a time.
    const cleo = await as('cleo');
    await cleo.goto(`${origin}/console/#/studies`);
    await cleo.getByRole('heading', { level: 1, name: 'Rating studies' }).waitFor();
    const menu = await cleo.getByRole('navigation', { name: 'Pages' }).getByRole('link').allTextContents();
    expect(menu).toEqual(['Home', 'Rating studies', 'Health']);
    await cleo.getByRole('link', { name: 'Rate Knee notes' }).click();
    await cleo.getByRole('heading', { level: 1, name: 'Rate answers' }).waitFor();
    for (let i = 0; i < 3; i++) {
      await cleo.getByText(`Item ${i + 1} of 3.`).waitFor();
      const shown = await cleo.locator('#app').innerText();
      expect(shown).toContain(ANSWER_CANARY);
      for (const hidden of [runId, runId.slice(0, 8), 'demo-loopback', 'judge-gpt', 'aci_bench']) expect(shown).not.toContain(hidden);
      if (i === 0) await record(cleo, 'rate-clinician');
      // Keyboard only: the first criterion has the focus; each digit scores one and moves on; Enter saves.
      await cleo.keyboard.press(String(2 + i));
      await cleo.keyboard.press('4');
      await cleo.keyboard.press('5');
      await cleo.keyboard.press('Enter');
    }
    await cleo.getByTestId('rate-finished').waitFor();

    // The researcher and the compliance officer see progress and agreement (aggregates only).
    for (const who of ['alice', 'carol']) {
      const page = await as(who);
      await page.goto(`${origin}/console/#/studies`);
      await page.getByRole('link', { name: 'Agreement of Knee notes' }).click();
      await page.getByTestId('study-progress').filter({ hasText: '3 of 3 items rated by 1 clinicians' }).waitFor();
      await page.getByTestId('agreement').waitFor();
      expect(await page.locator('#app').innerText()).not.toContain('cleo');
      await record(page, `study-${who}`);
    }
  });
});
