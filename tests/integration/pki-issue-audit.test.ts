/**
 * `ehrbench pki issue` records its pki.issue event before it writes a certificate, key or bundle
 * (no audit record, no action), and leaves nothing half-written when the files cannot be written.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openApp } from '../../src/app';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { initSitePki, prepareClientCertificate, writeClientCertificate } from '../../src/identity/site-pki';
import { problems, verifyApp } from '../helpers/audit';
import { makeHome, type TestHome } from '../helpers/home';

const REFUSE_INSERTS = `CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()`;

function capture(env: NodeJS.ProcessEnv): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (t) => void (out += t), stderr: (t) => void (err += t), env, out: () => out, err: () => err };
}

async function cli(home: TestHome, args: string[]) {
  const io = capture(home.env);
  process.exitCode = undefined;
  const code = await main(args, io);
  process.exitCode = undefined;
  return { code, stdout: io.out(), stderr: io.err() };
}

let home: TestHome;
let pkiDir: string;
let principalsFile: string;
const clientsDir = () => join(pkiDir, 'clients');
/** Every entry of the clients folder, hidden temporary files included. */
const clientFiles = () => (existsSync(clientsDir()) && statSync(clientsDir()).isDirectory() ? readdirSync(clientsDir()).sort() : []);

async function withDb<T>(fn: (app: Awaited<ReturnType<typeof openApp>>) => Promise<T>): Promise<T> {
  const app = await openApp({ file: home.configFile, env: home.env });
  try {
    return await fn(app);
  } finally {
    await app.close();
  }
}

const pkiEvents = (principal: string) =>
  withDb((app) =>
    app.db.query<{ outcome: string; rule: string; detail: Record<string, unknown> }>(
      "SELECT outcome, rule, detail FROM audit_events WHERE event_type = 'pki.issue' AND detail->>'principal' = $1 ORDER BY seq",
      [principal],
    ),
  );

beforeAll(async () => {
  home = await makeHome();
  pkiDir = join(home.home, 'pki');
  principalsFile = join(home.home, 'access-policies', 'principals.json');
  initSitePki(pkiDir);
});
afterAll(() => home.cleanup());

describe('ehrbench pki issue', () => {
  it('writes no file and maps no one when the audit trail cannot record the pki.issue event', async () => {
    const principalsBefore = readFileSync(principalsFile, 'utf8');
    const filesBefore = clientFiles();
    await withDb((app) => app.db.query(REFUSE_INSERTS));
    try {
      const r = await cli(home, ['pki', 'issue', '--principal', 'zed', '--role', 'researcher']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/^store: embedded at [^\n]+\nehrbench: the audit trail cannot record events \([^\n]*\); the action was not performed\n$/);
      expect(r.stdout).toBe('');
      expect(clientFiles()).toEqual(filesBefore);
      expect(readFileSync(principalsFile, 'utf8')).toBe(principalsBefore);
    } finally {
      await withDb((app) => app.db.query('DROP TRIGGER IF EXISTS audit_store_down ON audit_events'));
    }
    expect(await pkiEvents('zed')).toEqual([]);
  });

  it('records the pki.issue event and writes the certificate, key and bundle', async () => {
    const r = await cli(home, ['pki', 'issue', '--principal', 'yuri', '--role', 'researcher', '--json']);
    // Only which store holds the pki.issue event (pki commands name it).
    expect(r.stderr).toBe(`store: embedded at ${home.store.embeddedDir}\n`);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { certFile: string; keyFile: string; p12File: string; p12PasswordFile: string; serial: string };
    for (const f of [out.certFile, out.keyFile, out.p12File, out.p12PasswordFile]) expect(existsSync(f)).toBe(true);
    expect(statSync(out.keyFile).mode & 0o777).toBe(0o600);
    expect(clientFiles().filter((f) => f.startsWith('.'))).toEqual([]);
    const events = await pkiEvents('yuri');
    expect(events).toEqual([{ outcome: 'success', rule: 'pki.issue.host-operator', detail: { principal: 'yuri', serial: out.serial, days: 365 } }]);
    const principals = JSON.parse(readFileSync(principalsFile, 'utf8')) as { principals: { id: string; certificates?: unknown[] }[] };
    expect(principals.principals.find((p) => p.id === 'yuri')?.certificates).toHaveLength(1);
    expect(await withDb(async (app) => problems(await verifyApp(app)))).toEqual([]);
  });

  it('records the failure and leaves no file when the files cannot be written after the event', async () => {
    const principalsBefore = readFileSync(principalsFile, 'utf8');
    // The clients folder cannot be created: a plain file stands where it should be.
    const moved = join(pkiDir, 'clients.away');
    mkdirSync(clientsDir(), { recursive: true });
    renameSync(clientsDir(), moved);
    writeFileSync(clientsDir(), 'not a folder');
    try {
      const r = await cli(home, ['pki', 'issue', '--principal', 'xena', '--role', 'researcher']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/^store: embedded at [^\n]+\nehrbench: [^\n]*xena[^\n]*\n$/);
      expect(r.stderr).not.toMatch(/details withheld/);
      expect(readFileSync(principalsFile, 'utf8')).toBe(principalsBefore);
    } finally {
      rmSync(clientsDir());
      renameSync(moved, clientsDir());
    }
    expect((await pkiEvents('xena')).map((e) => [e.outcome, e.rule])).toEqual([
      ['success', 'pki.issue.host-operator'],
      ['failed', 'pki.write-failed'],
    ]);
  });

  it('removes the files of an issuance written before a later one failed', () => {
    const before = clientFiles();
    const prepared = prepareClientCertificate(pkiDir, 'wendy', 'researcher');
    let writes = 0;
    const failing = (path: string, data: string | Buffer, mode: number) => {
      if (++writes === 3) throw Object.assign(new Error('disk full'), { code: 'ENOSPC' });
      writeFileSync(path, data, { mode, flag: 'wx' });
    };
    expect(() => writeClientCertificate(prepared, failing)).toThrow('disk full');
    expect(writes).toBe(3);
    expect(clientFiles()).toEqual(before);
    // The same issuance written whole: every file is there, no temporary one is left.
    const issued = writeClientCertificate(prepared);
    expect(clientFiles()).toEqual([...before, ...[issued.certFile, issued.keyFile, issued.p12File, issued.p12PasswordFile].map((f) => f.slice(clientsDir().length + 1))].sort());
    expect(readFileSync(issued.p12PasswordFile, 'utf8')).toBe(`${prepared.p12Password}\n`);
  });
});
