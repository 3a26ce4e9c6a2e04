/**
 * The console in a real browser: Debian's Chromium driven by playwright-core, through the real daemon
 * (mutual TLS, each person's PKCS#12 client certificate as `pki issue` writes it). The four roles do
 * their work on the pages: a compliance officer records an IRB approval, a researcher requests a
 * private run, the officer approves it (and cannot approve her own), the run completes, the officer
 * releases its export; a researcher sees no approval or release queue; a forged cross-site POST is
 * refused. Every page is saved as a screenshot under test-artifacts/console, and checked with
 * axe-core (WCAG 2 A and AA) and for Content-Security-Policy violations.
 *
 * Chromium is installed by .ci/run (apt). Without it this file says so in one line and skips, unless
 * EHRBENCH_REQUIRE_BROWSER is set (as .ci/run sets it), where a missing browser fails.
 */
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import forge from 'node-forge';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
if (!HAVE_BROWSER) process.stdout.write(`console browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set EHRBENCH_CHROMIUM)\n`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;

const ARTIFACTS = join(ROOT, 'test-artifacts', 'console');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

jest.setTimeout(240_000);

/** A certification request made where its key stays (here: the test). */
function certificateRequest(commonName: string): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()) as forge.pki.rsa.PrivateKey;
  const csr = forge.pki.createCertificationRequest();
  csr.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  csr.setSubject([{ name: 'commonName', value: commonName }]);
  csr.sign(key, forge.md.sha256.create());
  return forge.pki.certificationRequestToPem(csr);
}

describeBrowser('the console in Chromium', () => {
  let t: TestDaemon;
  let browser: Browser;
  let origin: string;
  const contexts = new Map<string, BrowserContext>();
  const cspViolations: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    t = await startTestDaemon({ rows: 12, workers: 2 });
    origin = `https://localhost:${t.daemon.port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A browser profile holding one principal's certificate, as the person would import it. */
  async function as(principal: string): Promise<Page> {
    let context = contexts.get(principal);
    if (!context) {
      const id = t.ids[principal]!;
      const p12 = id.certFile.replace(/\.pem$/, '.p12');
      context = await browser.newContext({
        clientCertificates: [{ origin, pfxPath: p12, passphrase: readFileSync(`${p12}.password`, 'utf8').trim() }],
        // The site CA is not in Chromium's store here; the daemon's certificate is still real and mutual TLS is.
        ignoreHTTPSErrors: true,
        viewport: { width: 1280, height: 900 },
      });
      contexts.set(principal, context);
    }
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) cspViolations.push(`${principal}: ${m.text()}`);
    });
    return page;
  }

  async function open(page: Page, hash: string, heading: RegExp): Promise<void> {
    await page.goto(`${origin}/console/${hash}`);
    try {
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    } catch (err) {
      // Say what the page showed instead (still loading, an error, another page): a bare timeout did not.
      const shown = await page
        .locator('#app')
        .innerText({ timeout: 2000 })
        .catch(() => '(unreadable)');
      throw new Error(`${hash}: no heading ${heading} after ${(err as Error).message.split('\n')[0]}; the page at ${page.url()} shows: ${shown.replace(/\s+/g, ' ').slice(0, 400)}`);
    }
  }

  /** A screenshot for people to look at, and the accessibility check of what it shows. */
  async function record(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
    await page.evaluate(AXE);
    const violations = (await page.evaluate(`axe.run(document, { runOnly: ['wcag2a', 'wcag2aa'] }).then(r => r.violations.map(v => v.id + ': ' + v.nodes.length))`)) as string[];
    expect({ page: name, violations }).toEqual({ page: name, violations: [] });
  }

  /** Every picture on the page was served and drawn (an image the daemon refused would show as broken). */
  async function picturesDrawn(page: Page, count: number): Promise<void> {
    const images = page.locator('img.picture');
    await page.waitForFunction((n) => document.querySelectorAll('img.picture').length === n, count);
    const results = await images.evaluateAll((all: HTMLImageElement[]) =>
      Promise.all(
        all.map((img) =>
          img.decode().then(
            () => `${img.naturalWidth > 0}`,
            () => fetch(img.src).then(async (r) => `${img.src} ${r.status} ${await r.text()}`),
          ),
        ),
      ),
    );
    expect(results).toEqual(Array(count).fill('true'));
  }

  const storeRuns = async () => (await t.app.engine.store.listRuns(1000)).length;

  it('shows who I am and only the menu of my roles; a researcher has no approval or release queue', async () => {
    const alice = await as('alice');
    await open(alice, '#/', /what needs my attention/i);
    await expect(alice.getByTestId('who').textContent()).resolves.toMatch(/alice.*researcher/);
    const menu = await alice.getByRole('navigation', { name: 'Pages' }).getByRole('link').allTextContents();
    expect(menu).toEqual(['Home', 'My runs', 'Request a run', 'Rating studies', 'Health']);
    await record(alice, 'home-researcher');
    await alice.goto(`${origin}/console/#/queue/releases`);
    await expect(alice.getByRole('alert').textContent()).resolves.toMatch(/not for your roles: the policy lets none of them do export\.release/);
    // The API refuses it too: the page only hides what the policy forbids.
    const runs = await alice.evaluate(() => fetch('/v1/audit/events').then((r) => r.status));
    expect(runs).toBe(403);
    await alice.close();
  });

  it('walks an approval, a private run, its approval, its release: each through the pages', async () => {
    // The compliance officer records the IRB approval.
    const carol = await as('carol');
    await open(carol, '#/approvals', /IRB approvals/);
    await carol.getByLabel('Protocol number', { exact: true }).fill('IRB-CONSOLE-1');
    await carol.getByLabel('Principal investigator', { exact: true }).fill('alice');
    await carol.getByLabel('Personnel', { exact: true }).fill('alice, rita');
    await carol.getByLabel('Benchmarks', { exact: true }).fill('site_private');
    // no tier is ticked unless the officer ticks one: the approval covers the benchmark named, no other
    await expect(carol.getByRole('checkbox', { name: 'every private benchmark' }).isChecked()).resolves.toBe(false);
    await expect(carol.getByRole('checkbox', { name: 'every approval-required benchmark' }).isChecked()).resolves.toBe(false);
    await carol.getByLabel('Endpoints', { exact: true }).fill('vpc-private');
    await carol.getByLabel('Purpose', { exact: true }).fill('console walk');
    await carol.getByRole('button', { name: 'Record the approval' }).click();
    await carol.getByRole('status').filter({ hasText: 'IRB-CONSOLE-1 recorded' }).waitFor();
    await carol.getByRole('link', { name: 'IRB-CONSOLE-1' }).waitFor();
    const stored = (await t.app.approvals.list()).find((a) => a.protocolNumber === 'IRB-CONSOLE-1')!;
    expect({ benchmarks: stored.benchmarks, tiers: stored.tiers }).toEqual({ benchmarks: ['site_private'], tiers: [] });
    // a tier is granted only when ticked, and then shown as what it is
    await carol.getByLabel('Protocol number', { exact: true }).fill('IRB-CONSOLE-TIER');
    await carol.getByLabel('Principal investigator', { exact: true }).fill('bob');
    await carol.getByLabel('Personnel', { exact: true }).fill('bob');
    await carol.getByRole('checkbox', { name: 'every private benchmark' }).check();
    await carol.getByLabel('Purpose', { exact: true }).fill('a whole tier');
    await carol.getByRole('button', { name: 'Record the approval' }).click();
    await carol.getByRole('status').filter({ hasText: 'IRB-CONSOLE-TIER recorded' }).waitFor();
    const tier = (await t.app.approvals.list()).find((a) => a.protocolNumber === 'IRB-CONSOLE-TIER')!;
    expect({ benchmarks: tier.benchmarks, tiers: tier.tiers }).toEqual({ benchmarks: [], tiers: ['private'] });
    await carol
      .getByRole('row', { name: /IRB-CONSOLE-TIER/ })
      .getByText('every private benchmark (tier)')
      .waitFor();
    await record(carol, 'approvals');
    await carol.getByRole('link', { name: 'IRB-CONSOLE-1' }).click();
    await carol.getByRole('heading', { name: 'History' }).waitFor();
    await expect(carol.getByRole('cell', { name: 'create' }).count()).resolves.toBeGreaterThan(0);
    await record(carol, 'approval-detail');

    // The researcher requests a private run with it; the form shows the schema's refusal first.
    const alice = await as('alice');
    await open(alice, '#/runs/new', /request a run/i);
    await alice.getByLabel('Instances', { exact: true }).fill('0');
    await alice.getByRole('button', { name: 'Request the run' }).click();
    await expect(alice.getByRole('alert').first().textContent()).resolves.toMatch(/benchmarkId: required|must/);
    expect(await storeRuns()).toBe(0);
    await alice.getByLabel('Benchmark', { exact: true }).selectOption('site_private');
    await alice.getByLabel('Endpoint', { exact: true }).selectOption('vpc-private');
    const approval = alice.getByLabel('IRB approval', { exact: true });
    await approval.selectOption((await approval.locator('option', { hasText: 'IRB-CONSOLE-1' }).getAttribute('value'))!);
    await alice.getByLabel('Purpose', { exact: true }).fill('console walk');
    await alice.getByLabel('Instances', { exact: true }).fill('8');
    await record(alice, 'request-run');
    await alice.getByRole('button', { name: 'Request the run' }).click();
    await alice.getByRole('heading', { level: 1, name: /^Run / }).waitFor();
    const runId = alice.url().split('#/runs/')[1]!;
    await alice.getByText('awaiting approval').first().waitFor();
    await record(alice, 'run-awaiting-approval');

    // Rita, researcher and officer, requests one herself and may not approve it: the page shows the rule.
    const own = await t.call('rita', 'POST', '/v1/runs', {
      benchmarkId: 'site_private',
      endpointId: 'vpc-private',
      approvalId: (await t.app.approvals.list()).find((a) => a.protocolNumber === 'IRB-CONSOLE-1')!.approvalId,
      maxInstances: 2,
    });
    expect(own.status).toBe(200);
    const rita = await as('rita');
    await open(rita, '#/queue/runs', /awaiting approval/i);
    await rita.getByRole('button', { name: `approve run ${own.json.runId.slice(0, 8)}` }).click();
    await rita
      .getByRole('dialog')
      .getByRole('button', { name: `Approve run ${own.json.runId.slice(0, 8)}` })
      .click();
    // The refusal names its rule once (the message's own "denied by rule ...:" is not repeated).
    const refusal = (await rita.getByRole('alert').textContent())!;
    expect(refusal).toMatch(/rule sod\.approver-is-requester/);
    expect(refusal.split('sod.approver-is-requester')).toHaveLength(2);
    await record(rita, 'run-approvals-self-refused');
    expect((await t.call('rita', 'GET', `/v1/runs/${own.json.runId}`)).json.status).toBe('requested');

    // The officer approves the researcher's run; it completes; the researcher's page follows it live.
    await open(carol, '#/', /what needs my attention/i);
    // Alice's run and Rita's own: both await an officer.
    await carol.getByTestId('approval-queue-count').filter({ hasText: /^2$/ }).waitFor();
    await record(carol, 'home-compliance');
    await open(carol, '#/queue/runs', /awaiting approval/i);
    // the officer sees how the approval covers each run: here it names the benchmark
    await carol.locator(`tr[data-run="${runId}"]`).getByTestId('run-approval-coverage').filter({ hasText: 'IRB-CONSOLE-1: benchmark named' }).waitFor();
    await record(carol, 'run-approvals');
    // Approving is two steps: the dialog names the run, its data and where it goes; cancel does nothing.
    await carol.getByRole('button', { name: `approve run ${runId.slice(0, 8)}` }).click();
    const approveDialog = carol.getByRole('dialog', { name: `Approve run ${runId.slice(0, 8)}?` });
    await expect(approveDialog.innerText()).resolves.toMatch(/site_private \(private data\), at most 8 instances, requested by alice, is sent to .*vpc-private.* under IRB-CONSOLE-1: benchmark named/);
    await record(carol, 'run-approve-confirm');
    await approveDialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await t.call('alice', 'GET', `/v1/runs/${runId}`)).json.status).toBe('requested');
    await carol.getByRole('button', { name: `approve run ${runId.slice(0, 8)}` }).click();
    await approveDialog.getByRole('button', { name: `Approve run ${runId.slice(0, 8)}` }).click();
    await carol.getByRole('status').filter({ hasText: 'approved' }).waitFor();
    await alice.getByText('completed', { exact: true }).first().waitFor({ timeout: 120_000 });
    await alice.getByRole('heading', { name: 'Scores' }).waitFor();
    // The bar and the counts table are drawn from the same counts: the bar says 8 of 8 finished.
    await alice.getByTestId('run-progress').filter({ hasText: 'completed: 8 of 8 finished' }).waitFor();
    await record(alice, 'run-completed');
    await open(alice, '#/runs', /my runs/i);
    await alice.getByRole('checkbox', { name: `compare run ${runId.slice(0, 8)}` }).check();
    await alice.getByRole('heading', { name: 'Chosen runs compared' }).waitFor();
    await picturesDrawn(alice, 3);
    await record(alice, 'my-runs');

    // The researcher asks for an export; the officer reviews the preview and releases it.
    await open(alice, `#/runs/${runId}`, /^Run /);
    await alice.getByRole('button', { name: 'Request an export of this run' }).click();
    await alice.getByRole('heading', { level: 1, name: /^Export / }).waitFor();
    const exportId = alice.url().split('#/exports/')[1]!;
    await open(carol, '#/queue/releases', /release queue/i);
    // The queue carries what a release is triaged by: tier, benchmark, IRB, model, size, suppressed figures.
    const queued = carol.locator(`tr[data-export="${exportId}"]`);
    await expect(queued.innerText()).resolves.toMatch(/private\s+site_private 1\.0\.0\s+IRB-CONSOLE-1\s+.*vpc-private/);
    await expect(queued.getByTestId('suppressed-count').innerText()).resolves.toMatch(/^\d+$/);
    await record(carol, 'release-queue');
    await carol.getByRole('link', { name: `Review ${exportId.slice(0, 8)}` }).click();
    await carol.getByRole('heading', { name: 'What a release signs' }).waitFor();
    await record(carol, 'export-preview');
    await carol.getByRole('button', { name: 'Release this export (sign it)' }).click();
    await carol
      .getByRole('dialog')
      .getByRole('button', { name: `Release ${exportId.slice(0, 8)}` })
      .click();
    await carol.getByRole('status').filter({ hasText: 'export released' }).waitFor();
    const released = await t.call('alice', 'GET', `/v1/exports/${exportId}`);
    expect(released.json).toMatchObject({ state: 'released', releasedBy: 'carol', requestedBy: 'alice' });

    // The auditor reviews it: the run's timeline, the chain's health, verify now.
    const erin = await as('erin');
    await open(erin, `#/audit/run/${runId}`, /audit timeline/i);
    await erin.getByText('approved', { exact: true }).first().waitFor();
    await erin.getByText('export released', { exact: true }).first().waitFor();
    // Alice fetching the released bundle reads as a download by her, not as a release by a researcher.
    await t.call('alice', 'GET', `/v1/exports/${exportId}/files`);
    await erin.reload();
    await erin.getByRole('listitem').filter({ hasText: 'export downloaded by alice (researcher)' }).first().waitFor();
    await expect(
      erin
        .getByRole('listitem')
        .filter({ hasText: /released by alice/ })
        .count(),
    ).resolves.toBe(0);
    await record(erin, 'audit-run-timeline');
    await open(erin, '#/audit', /audit review/i);
    await erin.getByRole('button', { name: 'Verify now' }).click();
    await expect(erin.getByTestId('verify-result').textContent()).resolves.toMatch(/^Verified/);
    await erin.getByLabel('Outcome').selectOption('denied');
    await erin.getByRole('button', { name: 'Search' }).click();
    await erin.getByRole('cell', { name: 'sod.approver-is-requester' }).first().waitFor();
    await record(erin, 'audit-review');
    // What the search matches, downloaded as CSV: the trail's columns, the refused approval in it.
    const [csv] = await Promise.all([erin.waitForEvent('download'), erin.getByRole('link', { name: 'CSV' }).click()]);
    const csvText = readFileSync((await csv.path())!, 'utf8');
    expect(csvText.split('\n')[0]).toMatch(/seq/);
    expect(csvText).toContain('sod.approver-is-requester');
    expect(csvText).not.toContain('Synthetic note');
    // Newest first by default, a picker of event types, model calls hidden on request, paging back.
    await erin.getByLabel('Outcome').selectOption('');
    await erin.getByLabel('Type').selectOption('endpoint.call');
    await erin.getByLabel('At most').fill('3');
    await erin.getByRole('button', { name: 'Search' }).click();
    await erin.getByTestId('audit-page').filter({ hasText: 'newest first' }).waitFor();
    await erin.waitForFunction(() => document.querySelectorAll('[data-testid=audit-events] tbody tr').length === 3);
    expect(new Set(await erin.getByTestId('audit-events').locator('tbody tr td:nth-child(3)').allInnerTexts())).toEqual(new Set(['endpoint.call']));
    const firstPage = (await erin.getByTestId('audit-events').locator('tbody tr td:first-child').allInnerTexts()).map(Number);
    expect(firstPage).toEqual([...firstPage].sort((a, b) => b - a));
    await erin.getByRole('button', { name: 'Older events' }).click();
    await erin.waitForFunction((top) => Number(document.querySelector('[data-testid=audit-events] tbody tr td')?.textContent) < top, firstPage[2]!);
    await erin.getByLabel('Type').selectOption('');
    await erin.getByLabel('At most').fill('200');
    await erin.getByRole('checkbox', { name: 'Hide model calls' }).check();
    await erin.getByRole('button', { name: 'Search' }).click();
    await erin.getByTestId('audit-page').filter({ hasText: 'model calls hidden' }).waitFor();
    await expect(erin.getByRole('cell', { name: 'endpoint.call', exact: true }).count()).resolves.toBe(0);
    await record(erin, 'audit-review-newest');
    // The auditor's home: the chain's state and the last verification (who, when, what it found).
    await open(erin, '#/', /what needs my attention/i);
    await erin
      .getByTestId('chain-state')
      .filter({ hasText: /^verified$/ })
      .waitFor();
    await expect(erin.getByTestId('chain-last-verify').innerText()).resolves.toMatch(/by erin: verified$/);
    await record(erin, 'home-auditor');

    // The admin's pages.
    const ivan = await as('ivan');
    await open(ivan, '#/endpoints', /endpoints/i);
    await ivan.getByRole('button', { name: 'show calls over time for vpc-private' }).click();
    await picturesDrawn(ivan, 1);
    await record(ivan, 'endpoints');
    await open(ivan, '#/principals', /principals and certificates/i);
    await ivan.getByRole('cell', { name: /researcher, compliance/ }).waitFor();
    await record(ivan, 'principals');
    // The admin signs a request whose key stays with its holder; the new principal is listed at once.
    await ivan.getByLabel('Principal', { exact: true }).fill('nora');
    await ivan.getByLabel('Role', { exact: true }).selectOption('researcher');
    await ivan.getByLabel('Validity (days)').fill('30');
    await ivan.getByLabel('Certificate request (PEM)').fill(certificateRequest('nora'));
    await ivan.getByRole('button', { name: 'Sign the request' }).click();
    await ivan.getByRole('heading', { name: 'Certificate for nora' }).waitFor();
    expect(new X509Certificate((await ivan.locator('#signed-pem').textContent())!).subject).toMatch(/^CN=nora$/m);
    const [saved] = await Promise.all([ivan.waitForEvent('download'), ivan.getByRole('button', { name: 'Download the certificate' }).click()]);
    expect(saved.suggestedFilename()).toBe('nora.pem');
    await ivan.getByRole('cell', { name: /nora/ }).first().waitFor();
    await record(ivan, 'principals-signed');
    await open(ivan, '#/health', /health/i);
    await record(ivan, 'health');
  });

  it('refuses a forged cross-site POST that carries the certificate, and audits the refusal', async () => {
    // Another site the researcher visits: its page posts to the daemon; the browser sends the certificate.
    const evil: Server = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      // A link to the console is fine (the hospital's intranet has one): it opens the page, nothing else.
      if (req.url === '/link') return void res.end(`<!doctype html><html><body><a href="${origin}/console/#/runs">the console</a></body></html>`);
      res.end(`<!doctype html><html><body><form id="f" method="POST" action="${origin}/v1/runs" enctype="text/plain">
        <input name='{"benchmarkId":"site_gated","endpointId":"vpc-gated","x":"' value='"}'></form>
        <script>fetch("${origin}/v1/runs", { method: "POST", mode: "no-cors", credentials: "include", headers: { "content-type": "text/plain" },
          body: JSON.stringify({ benchmarkId: "medec", endpointId: "demo-loopback", maxInstances: 1 }) }).finally(() => document.getElementById("f").submit());</script></body></html>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const before = await storeRuns();
      const alice = await as('alice');
      // Both forgeries (the fetch, then the form it submits) settled before the page is left: leaving
      // earlier interrupts the form's navigation. The fetch's answer may be withheld from the other site
      // by the browser (the daemon's Cross-Origin-Resource-Policy: Chromium then reports the request as
      // failed), so a request that failed counts as settled, with what the browser said.
      const settled: string[] = [];
      const forged = (url: string, method: string) => url.startsWith(`${origin}/v1/runs`) && method === 'POST';
      const bothSettled = new Promise<void>((resolve) => {
        alice.on('response', (r) => {
          if (forged(r.url(), r.request().method()) && settled.push(String(r.status())) === 2) resolve();
        });
        alice.on('requestfailed', (r) => {
          if (forged(r.url(), r.method()) && settled.push(r.failure()?.errorText ?? 'failed') === 2) resolve();
        });
      });
      await alice.goto(`http://127.0.0.1:${(evil.address() as { port: number }).port}/`);
      await bothSettled;
      // The form's navigation has its answer; the page is left only once it shows it (its load).
      await alice.waitForURL((u) => u.href.startsWith(`${origin}/v1/runs`));
      // The fetch: refused (403), or its answer withheld by CORP; the form's navigation shows the 403.
      expect(settled).toHaveLength(2);
      expect(settled[0]).toMatch(/^(403|net::ERR_BLOCKED_BY_RESPONSE\.NotSameOrigin)$/);
      expect(settled[1]).toBe('403');
      await alice.goto(`http://127.0.0.1:${(evil.address() as { port: number }).port}/link`);
      await alice.getByRole('link', { name: 'the console' }).click();
      await alice.getByRole('heading', { level: 1, name: /my runs/i }).waitFor();
      // Neither forgery made a run: whatever the browser showed the other site, the daemon refused both.
      expect(await storeRuns()).toBe(before);
      const denied = await t.app.db.query<{ rule: string }>("SELECT rule FROM audit_events WHERE event_type = 'access.denied' AND actor_principal = 'alice' AND rule LIKE 'console.%'");
      expect(denied.map((d) => d.rule)).toContain('console.cross-site');
      await alice.close();
    } finally {
      // A listening server left open keeps jest from exiting after a failure.
      evil.close();
    }
  });

  it('a browser without a client certificate gets no page: the daemon closes the connection after the handshake', async () => {
    // What the README tells a person who opens the console before importing their certificate.
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    try {
      const page = await context.newPage();
      const failure = await page.goto(`${origin}/console/`).then(
        () => 'loaded',
        (err: Error) => err.message.split('\n')[0] as string,
      );
      expect(failure).toMatch(/net::ERR_(CONNECTION_CLOSED|EMPTY_RESPONSE|CONNECTION_RESET|SOCKET_NOT_CONNECTED|BAD_SSL_CLIENT_AUTH_CERT)/);
    } finally {
      await context.close();
    }
  });

  it('loaded no page with a Content-Security-Policy violation', () => {
    expect(cspViolations).toEqual([]);
  });
});
