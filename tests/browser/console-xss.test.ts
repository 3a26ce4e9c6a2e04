/**
 * Script and markup an insider can write, shown by the console in Chromium as text and as nothing
 * else (SECURITY T42). Every string an insider controls that a page may show is planted with a payload
 * that sets a global marker of its own should it ever run: principals' display names, an endpoint's
 * model, deployment and description, a site benchmark's display name and description, approval
 * titles and purposes, run purposes, suspension and revocation reasons, a certificate's common name
 * that an identity refusal quotes, ids in the page's address, a query string, and what is typed into
 * the audit search, the approval form and the certificate form.
 *
 * Each role's pages (ROUTES: one row per page, so a new page, such as the instance views and rating
 * pages planned for this round, is covered by adding its row; a route of main.tsx that no row opens
 * fails the first test) are opened twice: with the Content-Security-Policy as the daemon sends it,
 * and with the header taken off by the test's own interception (playwright's route), so the escaping
 * is shown to hold without the policy behind it. On every page: no marker set, no dialog, no policy
 * violation, no page error, no element or handler attribute of a payload inserted at any moment (a
 * MutationObserver installed before the first script), each planted string shown as literal text
 * where the page shows it, and no bidirectional control left in what is shown: a right-to-left
 * override in a name is written out as [U+202E] (ui.tsx `visible`), so "rita\u202Elive" cannot pass
 * for "ritaevil" in a list or a <select>.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { prepareClientCertificate } from '../../src/identity/site-pki';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { ROOT } from '../helpers/paths';
import { pageState, type PageState, watchForInjection } from '../helpers/injection';

const CHROMIUM = process.env.EHRBENCH_CHROMIUM ?? '/usr/bin/chromium';
const HAVE_BROWSER = existsSync(CHROMIUM);
if (!HAVE_BROWSER && process.env.EHRBENCH_REQUIRE_BROWSER) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) or set EHRBENCH_CHROMIUM`);
if (!HAVE_BROWSER) process.stdout.write(`console script-injection tests skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set EHRBENCH_CHROMIUM)\n`);
const describeBrowser = HAVE_BROWSER ? describe : describe.skip;

jest.setTimeout(60_000);

/**
 * What an insider writes, by where it is planted. `live`: it runs when a page parses it as HTML (the
 * test proves it does, with the policy off), so its marker would be set; the others are the kinds that
 * need a template engine or a click on a link made of it, and are held by the element checks.
 */
const PLANTED = {
  aliceName: { where: 'principals.json: alice displayName', text: '<script>window.__xss_aliceName=1</script>Alice', live: true },
  bobName: { where: 'principals.json: bob displayName', text: 'javascript:window.__xss_bobName=1', live: false },
  carolName: { where: 'principals.json: carol displayName', text: '<img src=x onerror="window.__xss_carolName=1">Carol', live: true },
  daveName: { where: 'principals.json: dave displayName', text: "{{constructor.constructor('window.__xss_daveName=1')()}}", live: false },
  erinName: { where: 'principals.json: erin displayName', text: '<svg onload="window.__xss_erinName=1">Erin', live: true },
  ivanName: { where: 'principals.json: ivan displayName', text: '"><iframe srcdoc="<script>parent.__xss_ivanName=1</script>">Ivan', live: true },
  ritaName: { where: 'principals.json: rita displayName (right-to-left override)', text: 'rita\u202Elive', live: false },
  benchName: { where: 'site benchmark site_xss: displayName', text: '<img src=x onerror=window.__xss_benchName=1>', live: true },
  benchDescription: { where: 'site benchmark site_xss: description', text: '<script>window.__xss_benchDescription=1</script>', live: true },
  benchRtl: { where: 'site benchmark site_rtl (private): displayName reading "public"', text: 'Readmission notes \u202Ecilbup', live: false },
  endpointModel: {
    where: 'endpoints.json: vpc-xss model (a run on it completes; its export is refused, as the bundle schema holds model names to a pattern)',
    text: '<img src=x onerror=window.__xss_endpointModel=1>',
    live: true,
  },
  endpointDeployment: { where: 'endpoints.json: vpc-deploy deployment', text: '<svg><script>window.__xss_endpointDeployment=1</script></svg>', live: true },
  endpointDescription: { where: 'endpoints.json: vpc-xss description', text: '"><img src=x onerror="window.__xss_endpointDescription=1">', live: true },
  approvalTitle: { where: 'approval IRB-XSS-1: title', text: '<script>window.__xss_approvalTitle=1</script>IRB title', live: true },
  approvalHiddenPurpose: { where: 'approval IRB-XSS-1: purpose', text: '<img src=x onerror="window.__xss_approvalHiddenPurpose=1">', live: true },
  approvalPurpose: { where: 'approval IRB-XSS-2: purpose (no title)', text: '"><iframe srcdoc="<script>parent.__xss_approvalPurpose=1</script>">', live: true },
  approvalRtl: { where: 'approval IRB-XSS-RTL: title (isolate and override)', text: 'Sepsis cohort \u2067\u202Edesolc\u202C\u2069', live: false },
  runPurpose: { where: "alice's and bob's runs: purpose", text: '<svg onload=window.__xss_runPurpose=1>', live: true },
  suspendReason: { where: 'approval IRB-XSS-4: suspension reason', text: '<img src=x onerror="window.__xss_suspendReason=1">', live: true },
  revokeReason: { where: "dave's revocation: reason", text: '<img src=x onerror=window.__xss_revokeReason=1>', live: true },
  certificateName: { where: "a site-CA certificate's common name, quoted by the identity refusal", text: '<img src=x onerror=window.__xss_certificateName=1>', live: true },
  urlRun: { where: 'address: #/runs/<id>', text: "{{constructor.constructor('window.__xss_urlRun=1')()}}", live: false },
  urlApproval: { where: 'address: #/approvals/<id>', text: '<svg onload=window.__xss_urlApproval=1>', live: true },
  urlExport: { where: 'address: #/exports/<id>', text: 'javascript:window.__xss_urlExport=1', live: false },
  urlTimeline: { where: 'address: #/audit/run/<id>', text: '"><img src=x onerror=window.__xss_urlTimeline=1>', live: true },
  query: { where: 'address: a query string (#/runs?compare=, #/audit?actor=, /console/?actor=)', text: '<img src=x onerror=window.__xss_query=1>', live: true },
  auditFilter: { where: 'typed into the audit search (actor, rule)', text: '<img src=x onerror="window.__xss_auditFilter=1">', live: true },
  approvalForm: { where: "typed into the officer's approval form (title, purpose, data use agreement)", text: '"><img src=x onerror=window.__xss_approvalForm=1>', live: true },
  csr: { where: "typed into the admin's certificate request", text: '<script>window.__xss_csr=1</script><img src=x onerror=window.__xss_csr=1>', live: true },
} as const;
type Placement = keyof typeof PLANTED;
const text = (p: Placement): string => PLANTED[p].text;

/** The bidirectional controls the console writes out (the rule the console is held to, said again here). */
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;
const writtenOut = (s: string) => s.replace(BIDI, (c) => `[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}]`);
/** What the page should show of a planted string. */
const shown = (p: Placement) => writtenOut(text(p));

type Who = 'alice' | 'carol' | 'erin' | 'ivan';
const NAME: Record<Who, Placement> = { alice: 'aliceName', carol: 'carolName', erin: 'erinName', ivan: 'ivanName' };

/** Ids of what the test planted, for the routes' :run, :xrun, :queued, :export, :approval and :suspended. */
interface Ids {
  run: string;
  xrun: string;
  queued: string;
  export: string;
  approval: string;
  suspended: string;
}

interface Route {
  who: Who;
  /** The address after /console/; :run, :xrun, :queued, :export, :approval and :suspended are the planted records' ids. */
  path: string;
  heading: RegExp;
  /** Planted strings this page shows (besides the viewer's own display name in the header). */
  shows?: Placement[];
  /** Other words the page shows once its data is in (so the checks run on a page that rendered the records). */
  words?: (ids: Ids) => string[];
  /** The page shows an API refusal (an id in the address that is no id, a search the API refuses). */
  refusal?: boolean;
  /** The part of the address whose first 8 characters the heading repeats (an id taken from the address). */
  headingId?: number;
  /** What a person does on the page before it is checked. */
  act?: (page: Page, ids: Ids) => Promise<void>;
}

const short = (id: string) => id.slice(0, 8);

/** The search is refused: its filter would go into the audit record of the read, whose detail holds plain values only. */
async function typeIntoAuditSearch(page: Page): Promise<void> {
  await page.getByText('Recorded').first().waitFor();
  // The type is a picker of the trail's event types now: nothing can be typed into it.
  for (const field of ['Actor', 'Rule']) await page.getByLabel(field, { exact: true }).fill(text('auditFilter'));
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByRole('alert').filter({ hasText: 'audit event' }).waitFor();
}

/**
 * Every page of every role, as main.tsx routes them. A page added to the console gets a row here (the
 * instance views and rating pages of this round will: none is in main.tsx yet); one that shows
 * per-instance data names the planted strings it shows in `shows`.
 */
const ROUTES: Route[] = [
  // researcher
  { who: 'alice', path: '#/', heading: /what needs my attention/i, words: (ids) => [short(ids.run)] },
  { who: 'alice', path: '#/runs', heading: /my runs/i, words: (ids) => [short(ids.run), 'completed'] },
  {
    who: 'alice',
    path: '#/runs/new',
    heading: /request a run/i,
    shows: ['benchName', 'benchRtl', 'approvalTitle', 'approvalPurpose', 'approvalRtl'],
    act: async (page) => {
      await page.getByLabel('Benchmark', { exact: true }).selectOption('site_rtl');
      await page.getByLabel('Benchmark', { exact: true }).selectOption('site_xss');
      await page.getByLabel('Endpoint', { exact: true }).selectOption('vpc-xss');
    },
  },
  { who: 'alice', path: '#/runs/:run', heading: /^Run /, words: () => ['completed', 'Scores'] },
  {
    who: 'alice',
    path: '#/runs/:xrun',
    heading: /^Run /,
    words: () => ['completed', 'vpc-xss'],
    act: async (page) => {
      // The export of a run whose endpoint's model is a payload is refused, and the refusal is shown.
      await page.getByRole('button', { name: 'Request an export of this run' }).click();
      await page.getByRole('alert').filter({ hasText: 'cannot be represented in a bundle' }).waitFor();
    },
  },
  { who: 'alice', path: '#/exports/:export', heading: /^Export /, words: () => ['What a release signs', 'vpc-private'] },
  { who: 'alice', path: '#/approvals', heading: /IRB approvals/, words: () => ['IRB-XSS-1', 'IRB-XSS-2'] },
  { who: 'alice', path: '#/approvals/:approval', heading: /IRB approval IRB-XSS-1/, words: () => ['History'] },
  { who: 'alice', path: '#/health', heading: /^Health$/, words: () => ['Ready'] },
  { who: 'alice', path: '#/studies', heading: /^Rating studies$/, words: () => ['Open a rating study', 'No rating study yet.'] },
  { who: 'alice', path: '#/studies/:run', heading: /^Rating study$/, refusal: true },
  { who: 'alice', path: `#/rate/${text('urlRun')}`, heading: /^Not for your roles$/ },
  { who: 'alice', path: `#/runs/${text('urlRun')}`, heading: /^Run /, refusal: true, headingId: 1 },
  { who: 'alice', path: `#/approvals/${text('urlApproval')}`, heading: /IRB approval/, refusal: true },
  { who: 'alice', path: `#/exports/${text('urlExport')}`, heading: /^Export /, refusal: true, headingId: 1 },
  { who: 'alice', path: `#/runs?compare=${text('query')}`, heading: /my runs/i, words: (ids) => [short(ids.run)] },
  // compliance
  { who: 'carol', path: '#/', heading: /what needs my attention/i, words: () => ['Runs awaiting approval'] },
  { who: 'carol', path: '#/runs', heading: /^Runs$/, words: (ids) => [short(ids.run), short(ids.queued)] },
  { who: 'carol', path: '#/runs/:run', heading: /^Run /, words: () => ['completed', 'Scores'] },
  { who: 'carol', path: '#/runs/:queued', heading: /^Run /, words: () => ['awaiting approval', 'Approve this run'] },
  {
    who: 'carol',
    path: '#/approvals',
    heading: /IRB approvals/,
    words: () => ['IRB-XSS-1', 'IRB-XSS-4'],
    act: async (page) => {
      await page.getByLabel('Protocol number', { exact: true }).fill('IRB-XSS-FORM');
      await page.getByLabel('Title', { exact: true }).fill(text('approvalForm'));
      await page.getByLabel('Principal investigator', { exact: true }).fill('alice');
      await page.getByLabel('Personnel', { exact: true }).fill('alice');
      await page.getByLabel('Benchmarks', { exact: true }).fill('site_xss');
      await page.getByLabel('Purpose', { exact: true }).fill(text('approvalForm'));
      await page.getByLabel('Data use agreement', { exact: true }).fill(text('approvalForm'));
      await page.getByRole('button', { name: 'Record the approval' }).click();
      await page.getByRole('alert').filter({ hasText: /duaId/ }).waitFor();
    },
  },
  { who: 'carol', path: '#/approvals/:approval', heading: /IRB approval IRB-XSS-1/, words: () => ['History'] },
  { who: 'carol', path: '#/approvals/:suspended', heading: /IRB approval IRB-XSS-4/, words: () => ['suspend'] },
  { who: 'carol', path: '#/queue/runs', heading: /awaiting approval/i, words: () => ['IRB-XSS-1', 'vpc-xss'] },
  { who: 'carol', path: '#/queue/releases', heading: /release queue/i, words: (ids) => [`Review ${short(ids.export)}`] },
  { who: 'carol', path: '#/exports/:export', heading: /^Export /, words: () => ['Release this export (sign it)', 'vpc-private'] },
  { who: 'carol', path: '#/runs/:xrun', heading: /^Run /, words: () => ['completed', 'vpc-xss'] },
  { who: 'carol', path: '#/audit', heading: /audit review/i, words: () => ['recording'], act: typeIntoAuditSearch, refusal: true },
  { who: 'carol', path: `#/audit?actor=${text('query')}`, heading: /audit review/i, words: () => ['recording', 'Recorded'] },
  { who: 'carol', path: `?actor=${text('query')}#/audit`, heading: /audit review/i, words: () => ['recording', 'Recorded'] },
  { who: 'carol', path: '#/audit/run/:run', heading: /audit timeline/i, words: () => ['approved', 'export requested'] },
  { who: 'carol', path: `#/audit/run/${text('urlTimeline')}`, heading: /audit timeline/i, refusal: true, headingId: 2 },
  { who: 'carol', path: '#/health', heading: /^Health$/, words: () => ['Ready'] },
  // auditor
  { who: 'erin', path: '#/', heading: /what needs my attention/i, words: () => ['Daemon'] },
  { who: 'erin', path: '#/runs', heading: /^Runs$/, words: (ids) => [short(ids.run)] },
  { who: 'erin', path: '#/runs/:run', heading: /^Run /, words: () => ['withheld'] },
  { who: 'erin', path: '#/approvals', heading: /IRB approvals/, words: () => ['IRB-XSS-1'] },
  { who: 'erin', path: '#/approvals/:approval', heading: /IRB approval IRB-XSS-1/, words: () => ['History'] },
  { who: 'erin', path: '#/audit', heading: /audit review/i, words: () => ['recording'], act: typeIntoAuditSearch, refusal: true },
  { who: 'erin', path: '#/audit/run/:run', heading: /audit timeline/i, words: () => ['approved'] },
  { who: 'erin', path: '#/health', heading: /^Health$/, words: () => ['Prometheus'] },
  // admin
  { who: 'ivan', path: '#/', heading: /what needs my attention/i, words: () => ['Daemon'] },
  { who: 'ivan', path: '#/runs', heading: /^Runs$/, words: (ids) => [short(ids.run)] },
  {
    who: 'ivan',
    path: '#/endpoints',
    heading: /^Endpoints$/,
    shows: ['endpointModel', 'endpointDeployment'],
    act: async (page) => {
      await page.getByRole('button', { name: 'show calls over time for vpc-xss' }).click();
      await page.waitForFunction(() => {
        const img = document.querySelector<HTMLImageElement>('img.picture');
        return !!img && img.complete && img.naturalWidth > 0;
      });
    },
  },
  {
    who: 'ivan',
    path: '#/principals',
    heading: /principals and certificates/i,
    shows: ['aliceName', 'bobName', 'carolName', 'daveName', 'erinName', 'ritaName'],
    words: () => ['revoked'],
    act: async (page) => {
      await page.getByLabel('Principal', { exact: true }).fill('nora');
      await page.getByLabel('Role', { exact: true }).selectOption('researcher');
      await page.getByLabel('Certificate request (PEM)').fill(text('csr'));
      await page.getByRole('button', { name: 'Sign the request' }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: /certificate signing request/ })
        .waitFor();
    },
  },
  { who: 'ivan', path: '#/health', heading: /^Health$/, words: () => ['Prometheus'] },
];

/** A route's name in the test list: planted strings by their name, not their text. */
function label(r: Route): string {
  let path = r.path;
  for (const [key, p] of Object.entries(PLANTED)) path = path.split(p.text).join(`<${key}>`);
  return `${r.who} ${path}`;
}

type Mode = 'on' | 'off';

describeBrowser('script and markup an insider planted, in the console in Chromium', () => {
  let t: TestDaemon;
  let browser: Browser;
  let origin: string;
  let ids: Ids;
  let stranger: { pfx: Buffer; passphrase: string };
  const contexts = new Map<string, BrowserContext>();

  beforeAll(async () => {
    t = await startTestDaemon({
      rows: 4,
      workers: 2,
      prepare: (home, config) => {
        const policies = join(home.home, 'access-policies');
        const principalsFile = join(policies, 'principals.json');
        const principals = JSON.parse(readFileSync(principalsFile, 'utf8')) as { principals: { id: string; displayName?: string }[] };
        const names: Record<string, Placement> = { alice: 'aliceName', bob: 'bobName', carol: 'carolName', dave: 'daveName', erin: 'erinName', ivan: 'ivanName', rita: 'ritaName' };
        for (const p of principals.principals) if (names[p.id]) p.displayName = text(names[p.id]!);
        writeFileSync(principalsFile, JSON.stringify(principals, null, 2));

        const endpointsFile = join(policies, 'endpoints.json');
        const endpoints = JSON.parse(readFileSync(endpointsFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
        const demo = endpoints.endpoints[0]!;
        const classification = { inVpc: true, baa: true, maxTier: 'private' };
        const withoutModel = { ...demo };
        delete withoutModel.model;
        endpoints.endpoints.push(
          { ...demo, id: 'vpc-xss', description: text('endpointDescription'), model: text('endpointModel'), classification },
          { ...withoutModel, id: 'vpc-deploy', deployment: text('endpointDeployment'), classification },
        );
        writeFileSync(endpointsFile, JSON.stringify(endpoints, null, 2));

        // Two more site benchmarks, each in its own folder with its own files (the files a benchmark names lie inside it).
        const siteDir = (config.catalog as { dirs: string[] }).dirs[0]!;
        for (const [id, tier, displayName, description] of [
          ['site_xss', 'approval-required', text('benchName'), text('benchDescription')],
          ['site_rtl', 'private', text('benchRtl'), 'a private benchmark whose name reads "public"'],
        ] as const) {
          const folder = join(siteDir, id);
          cpSync(join(siteDir, 'site_private'), folder, { recursive: true });
          const definition = JSON.parse(readFileSync(join(folder, 'benchmark.json'), 'utf8')) as Record<string, unknown>;
          writeFileSync(join(folder, 'benchmark.json'), JSON.stringify({ ...definition, id, tier, displayName, description }));
        }
      },
    });
    origin = `https://localhost:${t.daemon.port}`;

    // What the officer, the researchers and the admin write through the API.
    const ok = async (who: string, method: string, path: string, body?: unknown) => {
      const r = await t.call(who, method, path, body);
      if (r.status !== 200) throw new Error(`${who} ${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
      return r.json;
    };
    const approval = (protocolNumber: string, fields: Record<string, unknown>) =>
      ok('carol', 'POST', '/v1/approvals', { protocolNumber, principalInvestigator: 'alice', personnel: ['alice'], tiers: [], ...fields });
    const a1 = await approval('IRB-XSS-1', {
      title: text('approvalTitle'),
      personnel: ['alice', 'bob'],
      benchmarks: ['site_private'],
      endpoints: ['vpc-private', 'vpc-xss'],
      purpose: text('approvalHiddenPurpose'),
    });
    await approval('IRB-XSS-2', { benchmarks: ['site_xss'], purpose: text('approvalPurpose') });
    await approval('IRB-XSS-RTL', { title: text('approvalRtl'), benchmarks: ['site_rtl'], purpose: 'an approval whose title reads "closed"' });
    const a4 = await approval('IRB-XSS-4', { principalInvestigator: 'bob', personnel: ['bob'], benchmarks: ['site_private'], purpose: 'to be suspended' });
    await ok('carol', 'POST', `/v1/approvals/${a4.approvalId}/suspend`, { reason: text('suspendReason') });
    await ok('ivan', 'POST', '/v1/principals/dave/revoke', { reason: text('revokeReason') });

    const request = { benchmarkId: 'site_private', approvalId: a1.approvalId, purpose: text('runPurpose'), maxInstances: 4 };
    const run = await ok('alice', 'POST', '/v1/runs', { ...request, endpointId: 'vpc-private' });
    const xrun = await ok('alice', 'POST', '/v1/runs', { ...request, endpointId: 'vpc-xss' });
    const queued = await ok('bob', 'POST', '/v1/runs', { ...request, endpointId: 'vpc-xss', maxInstances: 2 });
    for (const r of [run, xrun]) await ok('carol', 'POST', `/v1/runs/${r.runId}/approve`, {});
    const deadline = Date.now() + 90_000;
    for (const r of [run, xrun]) {
      for (let status = ''; status !== 'completed';) {
        status = (await ok('alice', 'GET', `/v1/runs/${r.runId}`)).status;
        if (status === 'failed' || status === 'cancelled' || Date.now() > deadline) throw new Error(`the planted run ${r.runId} is ${status}, not completed`);
        if (status !== 'completed') await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const exported = await ok('alice', 'POST', '/v1/exports', { runIds: [run.runId] });
    ids = { run: run.runId, xrun: xrun.runId, queued: queued.runId, export: exported.exportId, approval: a1.approvalId, suspended: a4.approvalId };

    // A certificate of the site CA whose common name is a payload, mapped to nobody: the refusal quotes it.
    const made = prepareClientCertificate(join(t.home.home, 'pki'), text('certificateName'), 'researcher');
    stranger = { pfx: made.p12, passphrase: made.p12Password };

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A browser profile of one person (or the stranger's certificate), with the policy as served or taken off. */
  async function contextOf(mode: Mode, who: Who | 'stranger'): Promise<BrowserContext> {
    const key = `${mode}:${who}`;
    let context = contexts.get(key);
    if (context) return context;
    let certificate: { origin: string; pfx?: Buffer; pfxPath?: string; passphrase: string };
    if (who === 'stranger') certificate = { origin, ...stranger };
    else {
      const p12 = t.ids[who]!.certFile.replace(/\.pem$/, '.p12');
      certificate = { origin, pfxPath: p12, passphrase: readFileSync(`${p12}.password`, 'utf8').trim() };
    }
    context = await browser.newContext({ clientCertificates: [certificate], ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
    await context.addInitScript(watchForInjection);
    if (mode === 'off') {
      // Test-only: the document arrives without its Content-Security-Policy, so only the escaping stands.
      // Only the console's document is taken (the policy of a page is its document's); the rest goes by untouched.
      await context.route(/\/console\/(\?[^#]*)?$/, async (route) => {
        if (route.request().resourceType() !== 'document') return route.continue();
        const response = await route.fetch();
        const headers = { ...response.headers() };
        delete headers['content-security-policy'];
        return route.fulfill({ response, headers });
      });
    }
    contexts.set(key, context);
    return context;
  }

  type Noise = { dialogs: string[]; refused: string[]; errors: string[] };
  const tabs = new Map<string, { page: Page; noise: Noise }>();

  /**
   * The person's tab, on a blank document, and what it says from now on besides its content: dialogs,
   * policy refusals in the console, uncaught errors. One tab per person and mode (a new renderer per
   * page made the test twice as slow); each visit still loads the console as a new document.
   */
  async function openPage(mode: Mode, who: Who | 'stranger') {
    const key = `${mode}:${who}`;
    let tab = tabs.get(key);
    if (!tab) {
      const page = await (await contextOf(mode, who)).newPage();
      const made: { page: Page; noise: Noise } = { page, noise: { dialogs: [], refused: [], errors: [] } };
      page.on('dialog', (d) => {
        made.noise.dialogs.push(`${d.type()}: ${d.message()}`);
        void d.dismiss();
      });
      page.on('console', (m) => {
        if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text())) made.noise.refused.push(m.text());
      });
      page.on('pageerror', (e) => made.noise.errors.push(e.message));
      tabs.set(key, (tab = made));
    }
    await tab.page.goto('about:blank');
    tab.noise = { dialogs: [], refused: [], errors: [] };
    return tab;
  }

  /** The policy header of the document, as the browser received it, is what the mode says. */
  function expectPolicy(mode: Mode, headers: Record<string, string>): void {
    if (mode === 'on') expect(headers['content-security-policy']).toMatch(/script-src 'self'/);
    else expect(headers['content-security-policy']).toBeUndefined();
  }

  /** Nothing of any payload ran or was made, and what is shown has no bidirectional control left in it. */
  function expectHeld(where: string, state: PageState, noise: Noise): void {
    const { text: _text, markers, ...rest } = state;
    // A marker set names where its payload was planted.
    const ran = markers.map((m) => `${m}: ${PLANTED[m.replace(/^__xss_/, '') as Placement]?.where ?? 'unknown'}`);
    expect({ where, ran, ...rest, ...noise }).toEqual({ where, ran: [], inserted: [], violations: [], bidi: [], dialogs: [], refused: [], errors: [] });
  }

  it('has a row in ROUTES for every page main.tsx routes to and every menu entry', () => {
    const main = readFileSync(join(ROOT, 'src', 'console', 'client', 'main.tsx'), 'utf8');
    const parts = ROUTES.map((r) =>
      r.path
        .slice(r.path.indexOf('#') + 1)
        .split('?')[0]!
        .split('/')
        .filter(Boolean),
    );
    const firsts = [...main.matchAll(/case '([\w-]+)':/g)].map((m) => m[1]!);
    const seconds = [...main.matchAll(/parts\[1\] === '([\w-]+)'/g)].map((m) => m[1]!);
    const menu = [...main.matchAll(/href: '(#\/[^']*)'/g)].map((m) => m[1]!);
    expect(firsts.length).toBeGreaterThan(5);
    expect(firsts.filter((f) => !parts.some((p) => p[0] === f))).toEqual([]);
    expect(seconds.filter((s) => !parts.some((p) => p[1] === s))).toEqual([]);
    expect(menu.filter((href) => !ROUTES.some((r) => r.path === href))).toEqual([]);
    // Every role the console knows is a viewer here.
    expect([...new Set(ROUTES.map((r) => r.who))].sort()).toEqual(['alice', 'carol', 'erin', 'ivan']);
  });

  it('holds the ids an insider types to their patterns, so no payload is stored in one', async () => {
    const approval = { protocolNumber: 'IRB-XSS-IDS', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['site_private'], tiers: [], purpose: 'ids' };
    const refused = async (who: string, path: string, body: Record<string, unknown>) => {
      const r = await t.call(who, 'POST', path, body);
      return `${r.status} ${r.json.error}`;
    };
    const payload = text('approvalForm');
    expect(await refused('carol', '/v1/approvals', { ...approval, protocolNumber: payload })).toBe('400 request.invalid');
    expect(await refused('carol', '/v1/approvals', { ...approval, duaId: payload })).toBe('400 request.invalid');
    expect(await refused('carol', '/v1/approvals', { ...approval, personnel: [payload] })).toBe('400 request.invalid');
    expect(await refused('carol', '/v1/approvals', { ...approval, endpoints: [payload] })).toBe('400 request.invalid');
    expect(await refused('alice', '/v1/runs', { benchmarkId: payload, endpointId: 'vpc-xss' })).toBe('400 request.invalid');
    expect(await refused('ivan', '/v1/certificates', { principal: payload, role: 'researcher', days: 30, csr: text('csr') })).toBe('400 request.invalid');
  });

  describe.each<[string, Mode]>([
    ['as served', 'on'],
    ['taken off by the test', 'off'],
  ])('with the Content-Security-Policy %s', (_name, mode) => {
    it(mode === 'on' ? 'the policy stops every live payload, parsed as a document' : 'without the policy, every live payload runs when parsed as a document (so its marker would show)', async () => {
      const page = await (await contextOf(mode, 'alice')).newPage();
      const response = await page.goto(`${origin}/console/#/health`);
      expectPolicy(mode, await response!.allHeaders());
      await page.getByRole('heading', { level: 1, name: /^Health$/ }).waitFor();
      // Each payload is the whole of a frame's document (srcdoc: parsed as HTML, under the page's policy), its marker renamed.
      const live = Object.values(PLANTED)
        .filter((p) => p.live)
        .map((p) => p.text.replace(/(window|parent)\.__xss_/g, 'top.__canary_'));
      await page.evaluate((docs) => {
        for (const doc of docs) {
          const frame = document.createElement('iframe');
          frame.srcdoc = doc;
          document.body.append(frame);
        }
      }, live);
      const canaries = [...new Set(live.map((h) => h.match(/__canary_\w+/)![0]))];
      const ran = () => page.evaluate(() => Object.keys(window).filter((k) => k.startsWith('__canary_')));
      if (mode === 'off') {
        await page
          .waitForFunction((names) => names.every((n) => (window as unknown as Record<string, unknown>)[n] === 1), canaries, { timeout: 10_000 })
          .catch(async () => {
            const done = await ran();
            throw new Error(`these payloads did not run without the policy: ${canaries.filter((c) => !done.includes(c)).join(', ')}`);
          });
      } else {
        // Every payload's frame reports at least one refused script or handler; none ran.
        await page.waitForFunction((n) => (window as unknown as { __xssWatch: { violations: string[] } }).__xssWatch.violations.length >= n, live.length);
        expect(await ran()).toEqual([]);
      }
      // The watch saw the frames go in: what the visits find nothing of, it would have seen.
      expect(await page.evaluate(() => (window as unknown as { __xssWatch: { inserted: string[] } }).__xssWatch.inserted.filter((i) => i === '<iframe srcdoc>').length)).toBe(live.length);
      await page.close();
    });

    it.each(ROUTES.map((r) => [label(r), r] as const))('%s', async (name, route) => {
      const { page, noise } = await openPage(mode, route.who);
      const path = route.path.replace(/:(run|xrun|queued|export|approval|suspended)\b/g, (_m, k: keyof Ids) => ids[k]);
      const response = await page.goto(`${origin}/console/${path}`);
      expectPolicy(mode, await response!.allHeaders());
      await page.getByRole('heading', { level: 1, name: route.heading }).waitFor();
      if (route.act) await route.act(page, ids);
      if (route.refusal) await page.getByRole('alert').first().waitFor();

      const expected = [NAME[route.who], ...(route.shows ?? [])].map(shown);
      expected.push(...(route.words?.(ids) ?? []));
      if (route.headingId !== undefined) {
        // The heading repeats the id as the address holds it (the browser percent-encodes <, >, " and spaces).
        const hash = new URL(page.url()).hash.replace(/^#/, '').split('?')[0]!;
        expected.push(short(hash.split('/').filter(Boolean)[route.headingId]!));
      }
      // Loaded: what it should show is there and, unless it shows a refusal (which leaves "Loading" beside it), nothing is loading.
      const shows = ({ want, refusal }: { want: string[]; refusal: boolean }) => {
        const all = document.body.textContent ?? '';
        return want.every((w) => all.includes(w)) && (refusal || !/Loading [^…]*…/.test(all));
      };
      try {
        // Polled every 100 ms rather than every frame: each poll reads the page's whole text.
        await page.waitForFunction(shows, { want: expected, refusal: !!route.refusal }, { timeout: 20_000, polling: 100 });
      } catch {
        const state = await page.evaluate(pageState);
        const missing = expected.filter((e) => !state.text.includes(e));
        throw new Error(`${mode}: ${name} does not show ${JSON.stringify(missing)}; it shows: ${state.text.replace(/\s+/g, ' ').slice(0, 1200)}`);
      }
      expectHeld(`${mode}: ${name}`, await page.evaluate(pageState), noise);
    });

    it("shows as text a certificate's common name that an identity refusal quotes", async () => {
      const { page, noise } = await openPage(mode, 'stranger');
      const response = await page.goto(`${origin}/console/`);
      expect(response!.status()).toBe(403);
      // JSON, never HTML: a browser shows it as text whatever it quotes.
      expect(response!.headers()['content-type']).toMatch(/^application\/json/);
      await page.waitForFunction((want) => (document.body?.textContent ?? '').includes(want), `certificate ${text('certificateName')} is not mapped`);
      expectHeld(`${mode}: stranger /console/`, await page.evaluate(pageState), noise);
    });
  });
});
