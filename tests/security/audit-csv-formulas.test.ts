/**
 * Formulas in the audit CSV (issue 27, class 8): a researcher's run purpose of =HYPERLINK(...) reached
 * the purpose column of the trail's CSV as it was, and a compliance officer's spreadsheet opened it as a
 * formula. Through the real paths: run requests and a cancel over mutual TLS, then the CSV the daemon
 * serves (`GET /v1/audit/export?format=csv`, what the console's CSV link and `audit export --server`
 * download) and the one `ehrbench audit export --format csv` writes on the host. Every cell a
 * spreadsheet would read as a formula starts with a single quote; plain numbers stay numbers.
 */
import { parse } from 'csv-parse/sync';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

jest.setTimeout(180_000);

/** Researchers' texts that a spreadsheet evaluates, one per lead OWASP names (and two it does not). */
const PURPOSES = ['=HYPERLINK("http://x","y")', "@SUM(1+1)*cmd|' /C calc'!A0", '+1+1', '-2+3', '\t=1+1', ' =1+1', '\uFF1D1+1'];
const CANCEL_REASON = '=WEBSERVICE("http://x")';

const PLAIN_NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/** What a spreadsheet would evaluate: a cell whose first character, or first after white space, starts a formula. */
function formulaCells(rows: Record<string, string>[]): string[] {
  return rows.flatMap((row) =>
    Object.entries(row)
      .filter(([, v]) => !PLAIN_NUMBER.test(v) && (/^[\t\r\0]/.test(v) || /^[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/.test(v.replace(/^[\s\0-\x1f]*/, ''))))
      .map(([k, v]) => `seq ${row.seq} ${k}: ${JSON.stringify(v)}`),
  );
}

function rowsOf(csv: string): Record<string, string>[] {
  return parse(csv, { columns: true }) as Record<string, string>[];
}

describe.each(backends())('the audit trail CSV neutralises formula cells (%s)', (backend) => {
  let t: TestDaemon;
  const runs = new Map<string, string>(); // run id -> purpose
  let cancelled = '';

  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 0 });
    for (const purpose of PURPOSES) {
      const r = await t.call('alice', 'POST', '/v1/runs', { benchmarkId: 'medec', endpointId: 'demo-loopback', maxInstances: 2, purpose });
      expect(r.status).toBe(200);
      runs.set(r.json.runId, purpose);
    }
    cancelled = [...runs.keys()][0] as string;
    expect((await t.call('alice', 'POST', `/v1/runs/${cancelled}/cancel`, { reason: CANCEL_REASON })).status).toBe(200);
  });
  afterAll(() => t.close());

  /** The purpose and reason cells of the run.request and run.cancel rows, as a spreadsheet gets them. */
  function check(csv: string): void {
    const rows = rowsOf(csv);
    const requests = rows.filter((r) => r.event_type === 'run.request');
    expect(requests.map((r) => [r.run_id, r.purpose]).sort()).toEqual([...runs].map(([id, purpose]) => [id, `'${purpose}`]).sort());
    expect(rows.find((r) => r.event_type === 'run.cancel' && r.run_id === cancelled)?.reason).toBe(`'${CANCEL_REASON}`);
    expect(formulaCells(rows)).toEqual([]);
    // The number column stays a number, and the exact text a spreadsheet opens.
    expect(requests.every((r) => /^\d+$/.test(r.seq as string))).toBe(true);
    expect(csv).toContain(`,"'=HYPERLINK(""http://x"",""y"")",`);
  }

  it('in the CSV the daemon serves to a compliance officer (console link, audit export --server)', async () => {
    const r = await t.call('carol', 'GET', '/v1/audit/export?format=csv');
    expect(r.status).toBe(200);
    expect(typeof r.json).toBe('string');
    check(r.json as string);
  });

  it('in the CSV `ehrbench audit export --format csv` writes on the host', async () => {
    await t.stop(); // the embedded store has one process at a time
    let out = '';
    let err = '';
    const io: Io = { stdout: (s) => void (out += s), stderr: (s) => void (err += s), env: t.home.env };
    process.exitCode = undefined;
    const code = await main(['audit', 'export', '--format', 'csv'], io);
    process.exitCode = undefined;
    expect(code).toBe(0);
    expect(err).toMatch(/^store: [^\n]*\n$/); // the store it read, and nothing else
    check(out);
  });
});
