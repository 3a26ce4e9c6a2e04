/**
 * A policy file is recorded before it takes effect (issue 15, item 3): an edit of principals.json
 * (re-read live) or of endpoints.json (read at start) is a `policy.change` event with the file's
 * sha256 and a PHI-free summary of what changed, and a change the trail cannot record is not applied.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, openApp } from '../../src/app';
import { DEMO_ENDPOINT_ID } from '../../src/setup/init';
import { backends } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

const REFUSE_INSERTS = 'CREATE TRIGGER audit_store_down BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refuse_change()';
const STORE_UP = 'DROP TRIGGER IF EXISTS audit_store_down ON audit_events';

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

interface Change {
  seq: number;
  outcome: string;
  rule: string;
  detail: Record<string, string | number>;
}

const changes = (app: App, policy: string) =>
  app.db.query<Change>("SELECT seq, outcome, rule, detail FROM audit_events WHERE event_type = 'policy.change' AND detail->>'policy' = $1 ORDER BY seq", [policy]);

function editJson(file: string, edit: (value: any) => void): void {
  const value = JSON.parse(readFileSync(file, 'utf8'));
  edit(value);
  writeFileSync(file, JSON.stringify(value, null, 2));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Asks for the principals in force until bob holds the compliance role or `ms` pass (the file is
 * looked at once a second). Returns the policy.change events seen at the first moment he did.
 */
async function untilBobIsCompliance(app: App, ms: number): Promise<Change[] | undefined> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
    if (app.principals().get('bob')?.roles.includes('compliance')) return changes(app, 'principals');
  }
  return undefined;
}

describe.each(backends())('policy.change on %s', (backend) => {
  let home: TestHome;
  let principalsFile: string;
  let endpointsFile: string;
  beforeEach(async () => {
    home = await makeHome(backend);
    principalsFile = join(home.home, 'access-policies', 'principals.json');
    endpointsFile = join(home.home, 'access-policies', 'endpoints.json');
  });
  afterEach(() => home.cleanup());

  const open = () => openApp({ file: home.configFile, env: home.env });

  it('records the policies in force at the first start, and nothing again while they stay the same', async () => {
    const app = await open();
    try {
      const [principals] = await changes(app, 'principals');
      expect(principals).toMatchObject({ outcome: 'success', rule: 'policy.file.loaded' });
      expect(principals?.detail).toMatchObject({ policy: 'principals', sha256: sha256(principalsFile), trigger: 'start', count: 8 });
      expect(String(principals?.detail.ids).split('+')).toEqual(expect.arrayContaining(['alice', 'bob', 'carol', 'rita']));
      expect(String(principals?.detail.roles)).toContain('rita=researcher/compliance');
      const [endpoints] = await changes(app, 'endpoints');
      expect(endpoints?.detail).toMatchObject({ policy: 'endpoints', sha256: sha256(endpointsFile), trigger: 'start', count: 1, ids: DEMO_ENDPOINT_ID });
    } finally {
      await app.close();
    }
    const again = await open();
    try {
      expect(await changes(again, 'principals')).toHaveLength(1);
      expect(await changes(again, 'endpoints')).toHaveLength(1);
    } finally {
      await again.close();
    }
  });

  it('records a principals.json edit with its sha256 and what changed before the new role can be used', async () => {
    const app = await open();
    try {
      const [first] = await changes(app, 'principals');
      expect(app.principals().get('bob')?.roles).toEqual(['researcher']);
      editJson(principalsFile, (p) => p.principals.find((x: { id: string }) => x.id === 'bob').roles.push('compliance'));
      const seen = await untilBobIsCompliance(app, 5000);
      expect(seen).toBeDefined();
      const reload = seen?.at(-1);
      expect(seen).toHaveLength(2);
      expect(reload?.detail).toMatchObject({
        policy: 'principals',
        sha256: sha256(principalsFile),
        previousSha256: first?.detail.sha256,
        trigger: 'reload',
        count: 8,
        addedCount: 0,
        removedCount: 0,
        changedCount: 1,
        changed: 'bob[roles]',
        roles: 'bob=researcher/compliance',
      });
      // Ids, role names, counts and hashes only: no display name reaches the trail.
      expect(JSON.stringify(reload)).not.toMatch(/local operator/);
    } finally {
      await app.close();
    }
  });

  it('keeps the principals in force while the trail cannot record their change, and applies them once it can', async () => {
    const app = await open();
    try {
      await app.db.query(REFUSE_INSERTS);
      editJson(principalsFile, (p) => p.principals.find((x: { id: string }) => x.id === 'bob').roles.push('compliance'));
      expect(await untilBobIsCompliance(app, 2500)).toBeUndefined();
      await app.db.query(STORE_UP);
      const seen = await untilBobIsCompliance(app, 5000);
      expect(seen?.at(-1)?.detail).toMatchObject({ sha256: sha256(principalsFile), changed: 'bob[roles]' });
    } finally {
      await app.db.query(STORE_UP);
      await app.close();
    }
  });

  it('records an endpoint repointed in endpoints.json when the policy is loaded', async () => {
    const first = await open();
    const [before] = await changes(first, 'endpoints');
    await first.close();
    const port = home.port + 1;
    editJson(endpointsFile, (p) => (p.endpoints[0].url = `https://localhost:${port}/v1`));
    const app = await open();
    try {
      expect(app.endpoints().get(DEMO_ENDPOINT_ID).url).toBe(`https://localhost:${port}/v1`);
      const recorded = await changes(app, 'endpoints');
      expect(recorded).toHaveLength(2);
      expect(recorded[1]?.detail).toMatchObject({
        policy: 'endpoints',
        sha256: sha256(endpointsFile),
        previousSha256: before?.detail.sha256,
        trigger: 'start',
        count: 1,
        ids: DEMO_ENDPOINT_ID,
        urls: `${DEMO_ENDPOINT_ID}=localhost:${port}`,
        addresses: `${DEMO_ENDPOINT_ID}=127.0.0.1`,
        classification: `${DEMO_ENDPOINT_ID}=public/vpc/development`,
      });
    } finally {
      await app.close();
    }
  });

  it('keeps a large principals file within the limits of an audit event: lists cut, counts whole', async () => {
    editJson(principalsFile, (p) => {
      for (let i = 0; i < 300; i++) p.principals.push({ id: `staff-${String(i).padStart(3, '0')}`, roles: ['researcher'], status: i % 2 ? 'active' : 'disabled' });
    });
    const app = await open();
    try {
      const [start] = await changes(app, 'principals');
      expect(start?.detail.count).toBe(308);
      expect(String(start?.detail.ids)).toMatch(/^[^ ]{1,160}$/);
      expect(String(start?.detail.ids)).toMatch(/\+\.\.\.$/);
      expect(String(start?.detail.status)).toMatch(/^staff-000=disabled\+staff-002=disabled\+/);
    } finally {
      await app.close();
    }
  });

  it('does not start on an endpoints.json change the trail cannot record', async () => {
    await (await open()).close();
    const db = await home.store.open();
    await db.query(REFUSE_INSERTS);
    await db.close();
    editJson(endpointsFile, (p) => (p.endpoints[0].url = `https://localhost:${home.port + 1}/v1`));
    try {
      const opened = await open().catch((err: unknown) => err);
      if (!(opened instanceof Error)) await (opened as App).close();
      expect(opened).toMatchObject({ code: 'audit.unavailable' });
    } finally {
      const again = await home.store.open();
      await again.query(STORE_UP);
      await again.close();
    }
  });
});
