/**
 * Private-tier runs send only de-identified prompts. A site benchmark over a CSV of synthetic EHR notes,
 * with identifiers planted in the text and known identifiers in structured columns, runs through the
 * real engine against the loopback HTTPS model server; every prompt the server received is searched for
 * every planted identifier.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog } from '../../src/catalog';
import { createDeidStage, settingsFrom } from '../../src/deid';
import { approveRun, executeRun, requestRun } from '../../src/runs/engine';
import { researcher, startTestApp, type TestApp } from '../helpers/app';

jest.setTimeout(120_000);

const PRIVATE_ENDPOINT = 'site-private-loopback';

interface Record {
  id: string;
  patient: string;
  name: string;
  daughter: string;
  attending: string;
  mrn: string;
  dob: string;
  address: string;
  phone: string;
  note: string;
}

/** Synthetic patients; every value below is invented. */
const RECORDS: Record[] = [
  {
    id: 'r1',
    patient: 'p-001',
    name: 'Marguerite Hollis',
    daughter: 'Colette Hollis',
    attending: 'Tobias Renwick',
    mrn: '00384157',
    dob: '1994-04-09',
    address: '214 Pellham Road, Framingham, MA 01702',
    phone: '(508) 555-0187',
    note: `Mrs. Hollis is a 93 yo woman (DOB 4/9/1994, MRN 00384157) admitted 3/11/2087 from 214 Pellham Road, Framingham, MA 01702 with CHF. Her daughter Colette (508-555-0187) was updated. Seen by Dr. Renwick. Percocet 5/325 prn, pain 4/10, BP 128/74. Foley in place, MAE. Marguerite asked about discharge on March 17, 2087.`,
  },
  {
    id: 'r2',
    patient: 'p-001',
    name: 'Marguerite Hollis',
    daughter: 'Colette Hollis',
    attending: 'Tobias Renwick',
    mrn: '00384157',
    dob: '1994-04-09',
    address: '214 Pellham Road, Framingham, MA 01702',
    phone: '(508) 555-0187',
    note: `Follow-up 3/24/2087: M. Hollis doing well. HOLLIS, MARGUERITE seen with daughter Colete (sic). Renwick, MD. SSN 031-44-9182 on file. Email colette.hollis@example.net.`,
  },
  {
    id: 'r3',
    patient: 'p-002',
    name: 'Kwame Okonkwo',
    daughter: 'Ama Okonkwo',
    attending: 'Imelda Sayre',
    mrn: 'K4471902',
    dob: '1950-12-02',
    address: '88 Orchard Hill Lane, Amesbury, MA 01913',
    phone: '978-555-0112',
    note: `MICU NURSING NOTE: PT KWAME OKONKWO, 90 YO M, MRN K4471902, ADMITTED 12/2 W/ UROSEPSIS. DAUGHTER AMA AT BEDSIDE, PHONE 978-555-0112. DR SAYRE AWARE. LIVES AT 88 ORCHARD HILL LANE, AMESBURY.`,
  },
];

/** What must never reach the model: each planted identifier, written as the notes write it. */
const PLANTED = [
  'Hollis',
  'HOLLIS',
  'Marguerite',
  'MARGUERITE',
  'Colette',
  'Colete',
  'Renwick',
  '00384157',
  '4/9/1994',
  '3/11/2087',
  '214 Pellham',
  'Pellham Road',
  'Framingham',
  '01702',
  '508-555-0187',
  'March 17, 2087',
  '3/24/2087',
  '031-44-9182',
  'colette.hollis@example.net',
  'KWAME',
  'OKONKWO',
  'K4471902',
  '12/2',
  'AMA ',
  '978-555-0112',
  'SAYRE',
  'ORCHARD HILL',
  'AMESBURY',
  '93 yo',
  '90 YO',
];

/** Whether the identifier occurs as itself (not as part of a longer number or word, as "12/2" in "12/24"). */
function occurs(text: string, id: string): boolean {
  const escaped = id.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![A-Za-z0-9/])${escaped}(?![A-Za-z0-9/])`).test(text);
}

function csv(rows: Record[]): string {
  const cols: (keyof Record)[] = ['id', 'patient', 'name', 'daughter', 'attending', 'mrn', 'dob', 'address', 'phone', 'note'];
  const quote = (v: string) => `"${v.replace(/"/g, '""')}"`;
  return [cols.join(','), ...rows.map((r) => cols.map((c) => quote(r[c])).join(','))].join('\n') + '\n';
}

function writeSiteBenchmark(dir: string, rows: Record[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'notes.csv'), csv(rows));
  writeFileSync(join(dir, 'prompt.txt'), 'Summarise the clinical note in one sentence.\n\nNote:\n{{note}}\n\nSummary:');
  writeFileSync(
    join(dir, 'benchmark.json'),
    JSON.stringify({
      id: 'site_discharge_summaries',
      version: '1.0.0',
      displayName: 'Site discharge summaries (synthetic)',
      category: 'Clinical Note Generation',
      subcategory: 'Documenting Patient Visits',
      tier: 'private',
      dataset: {
        origin: 'shipped',
        files: [{ path: 'notes.csv' }],
        format: 'csv',
        adapter: 'columns',
        columns: {
          id: 'id',
          vars: { note: 'note' },
          reference: 'id',
          subject: 'patient',
          known: { names: ['name', 'daughter', 'attending'], mrns: ['mrn'], dates: ['dob'], addresses: ['address'], phones: ['phone'] },
        },
      },
      prompt: { templateFile: 'prompt.txt', maxTokens: 50 },
      references: 'the record id (the stand-in model does not summarise; scoring is not under test)',
      metrics: { main: 'exact_match' },
      split: 'test',
      lowerIsBetter: false,
    }),
  );
}

/** A second loopback endpoint, classified for private data, pointing at the same test server. */
async function addPrivateEndpoint(t: TestApp): Promise<void> {
  const file = t.app.config.policies.endpoints;
  const policy = JSON.parse(readFileSync(file, 'utf8')) as { endpoints: { id: string; classification: unknown; description?: string }[] };
  const demo = policy.endpoints[0] as { id: string; classification: unknown; description?: string };
  policy.endpoints.push({
    ...demo,
    id: PRIVATE_ENDPOINT,
    description: 'Loopback test endpoint classified for private data',
    classification: { inVpc: true, baa: true, maxTier: 'private', development: false },
  });
  writeFileSync(file, JSON.stringify(policy, null, 2));
  // The allowlist is re-read live: the edit is in force once recorded.
  await t.app.refreshPolicies();
}

/** The real access rules: an IRB approval naming the researcher, and a compliance officer's run approval. */
async function setUp(rows: Record[]): Promise<TestApp> {
  const t = await startTestApp();
  const siteDir = join(t.home.home, 'site-benchmarks');
  writeSiteBenchmark(join(siteDir, 'site_discharge_summaries'), rows);
  // A benchmark folder outside the configured ones (catalog.dirs is read at start): the test's own catalog.
  const catalog = Catalog.load([siteDir]);
  t.app.engine.catalog = () => catalog;
  await addPrivateEndpoint(t);
  await t.app.approvals.create(
    { protocolNumber: 'IRB-DEID-1', principalInvestigator: researcher.principal, personnel: [researcher.principal], benchmarks: ['site_discharge_summaries'], purpose: 'de-identification test' },
    'carol',
  );
  return t;
}

/** Requests the private run as the researcher and has compliance (carol) approve it. */
async function approvedRun(t: TestApp) {
  const run = await requestRun(t.app.engine, { benchmarkId: 'site_discharge_summaries', endpointId: PRIVATE_ENDPOINT, requester: researcher });
  expect(run.status).toBe('requested');
  return approveRun(t.app.engine, run.run_id, { principal: 'carol', role: 'compliance', authMethod: 'mtls' });
}

describe('private runs send only de-identified prompts', () => {
  it('no planted identifier reaches the model server, and the run records its de-identification version', async () => {
    const t = await setUp(RECORDS);
    try {
      const run = await approvedRun(t);
      expect(run.deid_version).toBe(t.app.engine.deid.version);
      expect(run.deid_version).toMatch(/^ehrbench-deid\/[0-9]+:[0-9a-f]{16}$/);
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts).toEqual({ pending: 0, claimed: 0, done: RECORDS.length, blocked: 0, failed: 0 });

      const prompts = t.server.received.map((r) => r.prompt);
      expect(prompts).toHaveLength(RECORDS.length);
      for (const prompt of prompts) {
        for (const id of PLANTED) expect({ id, found: occurs(prompt, id) }).toEqual({ id, found: false });
        // the look-alikes and the template survive
        expect(prompt).toContain('Summarise the clinical note');
      }
      const text = prompts.join('\n');
      expect(text).toContain('5/325');
      expect(text).toContain('4/10');
      expect(text).toContain('128/74');
      expect(text).toContain('Foley');
      expect(text).toContain('90+');
    } finally {
      await t.close();
    }
  });

  it('the same patient gets the same surrogates in every prompt, and dates keep their intervals', async () => {
    const t = await setUp(RECORDS.slice(0, 2));
    try {
      const run = await approvedRun(t);
      await executeRun(t.app.engine, run.run_id);
      const prompts = t.server.received.map((r) => r.prompt);
      // The surrogate for "Hollis" in the record that says "Mrs. Hollis" is the one in the other record.
      const all0 = prompts.join('\n');
      const inFirst = /Mrs\. ([A-Z][a-z]+) is a/.exec(all0)?.[1];
      const inSecond = /: [A-Z]\. ([A-Z][a-z]+) doing well/.exec(all0)?.[1];
      expect(inFirst).toBeDefined();
      expect(inSecond).toBe(inFirst);
      // and in capitals in the same prompt: "HOLLIS, MARGUERITE" became the same surname in capitals
      expect(all0).toContain(`${(inFirst as string).toUpperCase()}, `);
      // admitted 3/11, follow-up 3/24: 13 days apart before and after the shift
      const all = prompts.join('\n');
      const admitted = /admitted (\d{1,2})\/(\d{1,2})\/(\d{4})/.exec(all);
      const followUp = /Follow-up (\d{1,2})\/(\d{1,2})\/(\d{4})/.exec(all);
      expect(admitted && followUp).toBeTruthy();
      const day = (m: RegExpExecArray) => Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2])) / 86_400_000;
      expect(day(followUp as RegExpExecArray) - day(admitted as RegExpExecArray)).toBe(13);
    } finally {
      await t.close();
    }
  });

  it('a prompt that still carries an identifier after replacement is blocked, counted, and never sent; the run goes on', async () => {
    const t = await setUp(RECORDS);
    try {
      // Detectors switched off: only known identifiers are replaced, so the SSN and e-mail of record r2
      // (not known from structured data) are left for the residual scan.
      t.app.engine.deid = createDeidStage(settingsFrom(t.app.config.deid), { detectors: [] });
      const run = await approvedRun(t);
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.status).toBe('completed');
      expect(summary.counts.blocked).toBeGreaterThanOrEqual(1);
      expect(summary.counts.done + summary.counts.blocked).toBe(RECORDS.length);
      const text = t.server.received.map((r) => r.prompt).join('\n');
      expect(text).not.toContain('031-44-9182');
      expect(text).not.toContain('colette.hollis@example.net');
      const blocked = await t.app.db.query<{ item_key: string; outcome_rule: string }>("SELECT item_key, outcome_rule FROM run_items WHERE run_id = $1 AND state = 'blocked'", [run.run_id]);
      expect(blocked.map((b) => b.item_key)).toContain('r2');
      expect(new Set(blocked.map((b) => b.outcome_rule))).toEqual(new Set(['deid.residual-identifier']));
    } finally {
      await t.close();
    }
  });

  it("a name a strong rule took in one record is masked in every record of the run's data, the evidence kept sealed", async () => {
    // No structured identifiers: the name is in the text only, with a cue ("wife") in one record alone.
    const blank = { name: '', daughter: '', attending: '', mrn: '', dob: '', address: '', phone: '' };
    const rows: Record[] = [
      { id: 'q1', patient: 'p-010', ...blank, note: 'NPN: wife Zorbanna called, updated on plan. Pt resting comfortably.' },
      { id: 'q2', patient: 'p-010', ...blank, note: 'Zorbanna brought clothes from home. Afebrile, tolerating diet.' },
      { id: 'q3', patient: 'p-020', ...blank, note: 'Zorbanna brought clothes from home. Afebrile, tolerating diet.' },
    ];
    const t = await setUp(rows);
    try {
      const run = await approvedRun(t);
      const summary = await executeRun(t.app.engine, run.run_id);
      expect(summary.counts.done).toBe(3);
      const prompts = t.server.received.map((r) => r.prompt);
      // every record went out without the name: p-010's from its own records, p-020's from the dataset
      expect(prompts).toHaveLength(3);
      expect(prompts.filter((p) => p.includes('Zorbanna'))).toEqual([]);
      const evidence = await t.app.db.query<{ item_key: string; evidence: string[] | null }>("SELECT item_key, payload->'evidence' AS evidence FROM run_items WHERE run_id = $1 ORDER BY item_key", [
        run.run_id,
      ]);
      expect(evidence.map((e) => [e.item_key, e.evidence])).toEqual([
        ['q1', ['zorbanna']],
        ['q2', ['zorbanna']],
        ['q3', null],
      ]);
      // the dataset's evidence is kept as keyed hashes, and its version is the run's
      const sealed = await t.app.db.query<{ version: string; hashes: string[] }>('SELECT version, hashes FROM run_deid_evidence WHERE run_id = $1', [run.run_id]);
      expect(sealed).toHaveLength(1);
      expect(JSON.stringify(sealed[0])).not.toMatch(/zorbanna/i);
      expect(sealed[0]?.hashes.length).toBeGreaterThan(0);
      const row = await t.app.db.query<{ deid_version: string }>('SELECT deid_version FROM runs WHERE run_id = $1', [run.run_id]);
      expect(row[0]?.deid_version).toMatch(new RegExp(`^ehrbench-deid/\\d+:[0-9a-f]+ ${sealed[0]?.version.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    } finally {
      await t.close();
    }
  });
});
