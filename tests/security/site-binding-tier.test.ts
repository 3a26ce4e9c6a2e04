/**
 * A site-data binding is what a benchmark reads (issue 27, class 2). Binding a file of notes to a
 * shipped public benchmark sent names, MRNs and SSNs verbatim to a non-VPC endpoint, with no approval
 * and no de-identification, and editing site-data.json recorded nothing. Now data the site binds holds
 * a run to at least approval-required (IRB approval, de-identification, in-VPC endpoints), a binding
 * may declare private and never public, and every load of site-data.json and config.json that the
 * trail lacks is a policy.change (sha256, what changed) recorded before it takes effect.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { type ModelServer, startModelServer } from '../../src/demo/model-server';
import { PolicyDenied } from '../../src/errors';
import { approveRun, executeRun, requestRun } from '../../src/runs/engine';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { researcher } from '../helpers/app';
import { backends } from '../helpers/db';
import { failure } from '../helpers/errors';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

const VPC_ENDPOINT = 'site-vpc-loopback';
const carol = { principal: 'carol', role: 'compliance' as const, authMethod: 'mtls' as const };

/** Invented patients: what must never reach an endpoint verbatim. */
const NAME = 'Rosalind Featherstonehaugh';
const MRN = 'MRN 77120934';
const SSN = '531-88-2047';
const NOTES = [
  `Ms. ${NAME} (${MRN}, SSN ${SSN}) is a 54 yo woman seen for CKD. Creatinine 1.9 mg/dL, weight 71 kg.`,
  `Mr. Bartholomew Quennell, ${MRN.replace('77120934', '55019283')}, 61 yo, creatinine 1.2 mg/dL, weight 88 kg.`,
];

/** The notes in MedCalc-Bench's own columns, as a site would export them. */
function notesCsv(): string {
  const header = ['Row Number', 'Patient Note', 'Question', 'Ground Truth Answer', 'Category', 'Output Type', 'Calculator ID', 'Lower Limit', 'Upper Limit'];
  const q = (v: string) => `"${v.replace(/"/g, '""')}"`;
  const rows = NOTES.map((note, i) => [String(i + 1), note, 'What is the creatinine clearance?', '40', 'lab', 'decimal', '2', '38', '42'].map(q).join(','));
  return `${header.join(',')}\n${rows.join('\n')}\n`;
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

interface Change {
  detail: Record<string, string | number>;
  reason: string;
}

const changes = (app: App, policy: string) => app.db.query<Change>("SELECT detail, reason FROM audit_events WHERE event_type = 'policy.change' AND detail->>'policy' = $1 ORDER BY seq", [policy]);

describe.each(backends())('site-supplied data on %s', (backend) => {
  let home: TestHome;
  let server: ModelServer;
  let siteData: string;
  beforeEach(async () => {
    home = await makeHome(backend);
    server = await startModelServer({
      certPem: readFileSync(join(home.home, 'keys', 'demo-model-server.pem'), 'utf8'),
      keyPem: readFileSync(join(home.home, 'keys', 'demo-model-server.key.pem'), 'utf8'),
      port: home.port,
      record: true,
    });
    writeFileSync(join(home.home, 'notes.csv'), notesCsv());
    siteData = join(home.home, 'site-data.json');
    // An in-VPC endpoint classified for private data beside the demo one (public, development).
    const endpointsFile = join(home.home, 'access-policies', 'endpoints.json');
    const policy = JSON.parse(readFileSync(endpointsFile, 'utf8')) as { endpoints: Record<string, unknown>[] };
    policy.endpoints.push({
      ...policy.endpoints[0],
      id: VPC_ENDPOINT,
      description: 'loopback, classified private',
      classification: { inVpc: true, baa: true, maxTier: 'private', development: false },
    });
    writeFileSync(endpointsFile, JSON.stringify(policy, null, 2));
  });
  afterEach(async () => {
    await server.close();
    await home.cleanup();
  });

  const open = () => openApp({ file: home.configFile, env: home.env });
  const bind = (binding: Record<string, unknown>) => writeFileSync(siteData, JSON.stringify({ benchmarks: { medcalc_bench: { source: { type: 'csv', path: 'notes.csv' }, ...binding } } }));

  it('a file of notes bound to a shipped public benchmark makes it approval-required: refused on a public endpoint, with no approval, nothing sent', async () => {
    bind({});
    const app = await open();
    try {
      const b = app.catalog().get('medcalc_bench');
      expect(b.definition.tier).toBe('public');
      expect([b.dataTier, b.tier]).toEqual(['approval-required', 'approval-required']);
      const onPublic = await failure(requestRun(app.engine, { benchmarkId: 'medcalc_bench', endpointId: DEMO_ENDPOINT_ID, requester: researcher }));
      expect(onPublic).toBeInstanceOf(PolicyDenied);
      expect((onPublic as PolicyDenied).rule).toBe('endpoint.tier-ceiling');
      const unapproved = await failure(requestRun(app.engine, { benchmarkId: 'medcalc_bench', endpointId: VPC_ENDPOINT, requester: researcher }));
      expect((unapproved as PolicyDenied).rule).toBe('approval.none');
      expect(server.received).toHaveLength(0);
    } finally {
      await app.close();
    }
  });

  it('under an IRB approval, on an in-VPC endpoint, its prompts are de-identified: no name, MRN or SSN reaches the endpoint', async () => {
    bind({});
    const app = await open();
    try {
      await app.approvals.create({ protocolNumber: 'IRB-SITE-1', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['medcalc_bench'], purpose: 'site data' }, 'carol');
      const run = await requestRun(app.engine, { benchmarkId: 'medcalc_bench', endpointId: VPC_ENDPOINT, requester: researcher });
      expect(run.tier).toBe('approval-required');
      expect(run.deid_version).toBe(app.engine.deid.version);
      const summary = await executeRun(app.engine, run.run_id);
      expect(summary.counts.done + summary.counts.blocked).toBe(NOTES.length);
      const sent = server.received.map((r) => r.prompt).join('\n');
      expect(server.received.length).toBeGreaterThan(0);
      for (const id of ['Featherstonehaugh', 'Rosalind', '77120934', SSN, 'Quennell', '55019283']) expect({ id, sent: sent.includes(id) }).toEqual({ id, sent: false });
      expect(sent).toContain('creatinine');
    } finally {
      await app.close();
    }
  });

  it('a binding may declare its data private (a compliance officer approves each run), never public', async () => {
    bind({ tier: 'private' });
    const app = await open();
    try {
      expect(app.catalog().get('medcalc_bench').tier).toBe('private');
      await app.approvals.create({ protocolNumber: 'IRB-SITE-2', principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['medcalc_bench'], purpose: 'site data' }, 'carol');
      const run = await requestRun(app.engine, { benchmarkId: 'medcalc_bench', endpointId: VPC_ENDPOINT, requester: researcher });
      expect([run.tier, run.status]).toEqual(['private', 'requested']);
      expect((await approveRun(app.engine, run.run_id, carol)).status).toBe('approved');
    } finally {
      await app.close();
    }
    // A site data file that is refused opens the store all the same; the catalog is what refuses.
    const catalogOfNew = async () => {
      const fresh = await open();
      try {
        return await failure(Promise.resolve().then(() => fresh.catalog()));
      } finally {
        await fresh.close();
      }
    };
    bind({ tier: 'public' });
    const err = await catalogOfNew();
    expect(err.message).toMatch(/site-data\.json: \/benchmarks\/medcalc_bench\/tier: must be one of "approval-required", "private"/);
    writeFileSync(siteData, JSON.stringify({ benchmarks: { medcalc_bench: { tier: 'private' } } }));
    expect((await catalogOfNew()).message).toMatch(/\/benchmarks\/medcalc_bench\/tier: a tier is that of site-supplied data, and this binding supplies none/);
  });

  it('records site-data.json and config.json as policy.change before they take effect, naming what changed and no path', async () => {
    const first = await open();
    try {
      const [config] = await changes(first, 'config');
      expect(config?.detail).toMatchObject({ policy: 'config', sha256: sha256(home.configFile), trigger: 'start' });
      expect(String(config?.detail.ids).split('+')).toEqual(expect.arrayContaining(['site', 'database', 'audit']));
      const [site] = await changes(first, 'site-data');
      // No site data file yet: recorded as absent, binding nothing.
      expect(site?.detail).toMatchObject({ policy: 'site-data', sha256: 'absent', count: 0 });
    } finally {
      await first.close();
    }

    bind({});
    const config = JSON.parse(readFileSync(home.configFile, 'utf8'));
    config.catalog = { ...config.catalog, dataDirs: ['site-data-folder'] };
    config.audit = { ...config.audit, witnessDirs: ['witness-b'] };
    writeFileSync(home.configFile, JSON.stringify(config, null, 2));
    const second = await open();
    try {
      const site = (await changes(second, 'site-data')).at(-1);
      expect(site?.detail).toMatchObject({
        policy: 'site-data',
        sha256: sha256(siteData),
        previousSha256: 'absent',
        added: 'benchmarks.medcalc_bench',
        data: 'benchmarks.medcalc_bench=csv',
        tierAtLeast: 'benchmarks.medcalc_bench=approval-required',
      });
      const configChange = (await changes(second, 'config')).at(-1);
      // init writes no catalog section: it is added; the witness folders changed.
      expect(configChange?.detail).toMatchObject({ sha256: sha256(home.configFile), added: 'catalog', addedCount: 1, changed: 'audit[witnessDirs]', changedCount: 1 });
      expect(configChange?.reason).toBe('config policy loaded at start, differing from the last recorded one: 1 added, 0 removed, 1 changed');
      const all = JSON.stringify([...(await changes(second, 'site-data')), ...(await changes(second, 'config'))]);
      for (const word of ['notes.csv', 'site-data-folder', 'witness-b', home.home]) expect(all).not.toContain(word);
    } finally {
      await second.close();
    }

    // A binding changed: its field named, once; the same files again record nothing.
    bind({ tier: 'private' });
    const third = await open();
    await third.close();
    const fourth = await open();
    try {
      const sites = await changes(fourth, 'site-data');
      expect(sites).toHaveLength(3);
      expect(sites.at(-1)?.detail).toMatchObject({ changed: 'benchmarks.medcalc_bench[tier]', tierAtLeast: 'benchmarks.medcalc_bench=private' });
      expect(await changes(fourth, 'config')).toHaveLength(2);
    } finally {
      await fourth.close();
    }
  });

  it('does not start on a site-data.json change the trail cannot record, and applies it once it can', async () => {
    await (await open()).close();
    const db = await home.store.open();
    await db.query('CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()');
    await db.close();
    bind({});
    try {
      const opened = await open().catch((err: unknown) => err);
      if (!(opened instanceof Error)) await (opened as App).close();
      expect(opened).toMatchObject({ code: 'audit.unavailable' });
    } finally {
      const up = await home.store.open();
      await up.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events');
      await up.close();
    }
    const again = await open();
    try {
      expect((await changes(again, 'site-data')).at(-1)?.detail).toMatchObject({ sha256: sha256(siteData) });
      expect(again.catalog().get('medcalc_bench').tier).toBe('approval-required');
    } finally {
      await again.close();
    }
  });
});
