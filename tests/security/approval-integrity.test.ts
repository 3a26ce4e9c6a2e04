/**
 * IRB approvals against insiders with legitimate roles (issue 15, items 4, 6 and 7), over the real
 * daemon (mutual TLS) and through Operations, on PGlite and PostgreSQL:
 *   - a bad date is a 400 naming the field, and the trail never holds a success for an approval (or a
 *     status change) that did not happen: the success is recorded in the transaction of the effect;
 *   - the officer who records an approval may not be its PI or on its personnel;
 *   - the officer who suspended or closed a protocol's approval cannot record a new one for it.
 */
import type { App } from '../../src/app';
import { main } from '../../src/cli/main';
import type { Io } from '../../src/cli/output';
import { type Caller, Operations } from '../../src/operations';
import { backends } from '../helpers/db';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';
import { verifyApp } from '../helpers/audit';

jest.setTimeout(180_000);

function callerOf(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

const base = { principalInvestigator: 'bob', personnel: ['bob'], benchmarks: ['site_gated'], purpose: 'p' };

describe.each(backends())('IRB approvals on %s', (backend) => {
  let t: TestDaemon;
  let ops: Operations;
  beforeAll(async () => {
    t = await startTestDaemon({ backend, workers: 0 });
    ops = new Operations(t.app);
  });
  afterAll(() => t.close());

  async function events(type: string, outcome: string, extra: { protocol?: string; rule?: string } = {}): Promise<number> {
    const rows = await t.app.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM audit_events WHERE event_type = $1 AND outcome = $2 AND ($3::text IS NULL OR irb_protocol = $3) AND ($4::text IS NULL OR rule = $4)',
      [type, outcome, extra.protocol ?? null, extra.rule ?? null],
    );
    return rows[0]?.n ?? 0;
  }
  async function approvalsOf(protocol: string): Promise<number> {
    const rows = await t.app.db.query<{ n: number }>('SELECT count(*)::int AS n FROM approvals WHERE protocol_number = $1', [protocol]);
    return rows[0]?.n ?? 0;
  }

  describe('no success for a failed action (item 4)', () => {
    it('answers an expiry before the start with 400 naming the field, and records nothing', async () => {
      const bad = [
        { startsAt: '2026-06-01T00:00:00Z', expiresAt: '2026-01-01T00:00:00Z' },
        { startsAt: '2026-06-01T00:00:00Z', expiresAt: '2026-06-01T00:00:00Z' },
        // No start: it is now, and this expiry is before it.
        { expiresAt: '2001-01-01T00:00:00Z' },
      ];
      for (const dates of bad) {
        const r = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-DATES', ...dates });
        expect([r.status, r.json.error]).toEqual([400, 'approval.invalid']);
        expect(r.json.message).toMatch(/^expiresAt must be after startsAt/);
      }
      expect(await events('approval.create', 'success', { protocol: 'IRB-DATES' })).toBe(0);
      expect(await approvalsOf('IRB-DATES')).toBe(0);
    });

    it('prints one line naming the field in the CLI, and exits 1', async () => {
      let err = '';
      const io: Io = { stdout: () => undefined, stderr: (s) => void (err += s), env: { PATH: process.env.PATH } };
      const as = ['--server', `https://localhost:${t.daemon.port}`, '--cert', t.ids.carol!.certFile, '--key', t.ids.carol!.keyFile, '--ca', t.caFile];
      const args = ['approvals', 'add', '--protocol', 'IRB-DATES-CLI', '--pi', 'bob', '--personnel', 'bob', '--tiers', 'approval-required', '--purpose', 'p'];
      expect(await main([...args, '--starts', '2026-06-01T00:00:00Z', '--expires', '2026-01-01T00:00:00Z', ...as], io)).toBe(1);
      expect(err).toMatch(/^ehrbench: expiresAt must be after startsAt[^\n]*\n$/);
      expect(await events('approval.create', 'success', { protocol: 'IRB-DATES-CLI' })).toBe(0);
    });

    it('leaves no approval.create success when the insert fails', async () => {
      await t.app.db.exec(`CREATE FUNCTION test_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated failure'; END $$;
        CREATE TRIGGER test_refuse_insert BEFORE INSERT ON approvals FOR EACH ROW EXECUTE FUNCTION test_refuse_write();`);
      try {
        await expect(ops.createApproval(callerOf(t.app, 'carol'), { ...base, protocolNumber: 'IRB-INSERT-FAILS' })).rejects.toThrow();
        const r = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-INSERT-FAILS' });
        expect(r.status).toBe(500);
      } finally {
        await t.app.db.exec('DROP TRIGGER test_refuse_insert ON approvals; DROP FUNCTION test_refuse_write();');
      }
      expect(await events('approval.create', 'success', { protocol: 'IRB-INSERT-FAILS' })).toBe(0);
      expect(await approvalsOf('IRB-INSERT-FAILS')).toBe(0);
    });

    it('leaves no success for a suspension or a closure whose update fails', async () => {
      const carol = callerOf(t.app, 'carol');
      const a = await ops.createApproval(carol, { ...base, protocolNumber: 'IRB-UPDATE-FAILS' });
      await t.app.db.exec(`CREATE FUNCTION test_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated failure'; END $$;
        CREATE TRIGGER test_refuse_update BEFORE UPDATE ON approvals FOR EACH ROW EXECUTE FUNCTION test_refuse_write();`);
      try {
        await expect(ops.changeApproval(carol, a.approvalId, 'suspend', 'review')).rejects.toThrow();
        await expect(ops.changeApproval(carol, a.approvalId, 'close', 'done')).rejects.toThrow();
      } finally {
        await t.app.db.exec('DROP TRIGGER test_refuse_update ON approvals; DROP FUNCTION test_refuse_write();');
      }
      expect(await events('approval.suspend', 'success', { protocol: 'IRB-UPDATE-FAILS' })).toBe(0);
      expect(await events('approval.close', 'success', { protocol: 'IRB-UPDATE-FAILS' })).toBe(0);
      expect((await t.app.approvals.get(a.approvalId))?.status).toBe('active');
    });

    it('keeps a closed approval closed when a reinstatement checked before the closure commits after it', async () => {
      const a = await ops.createApproval(callerOf(t.app, 'carol'), { ...base, protocolNumber: 'IRB-RACE' });
      await ops.changeApproval(callerOf(t.app, 'carol'), a.approvalId, 'suspend', 'review');
      // dave's reinstatement reads the approval as suspended; carol closes it before dave's write.
      const realGet = t.app.approvals.get.bind(t.app.approvals);
      const spy = jest.spyOn(t.app.approvals, 'get').mockImplementationOnce(async (id) => {
        const stale = await realGet(id);
        await ops.changeApproval(callerOf(t.app, 'carol'), id, 'close', 'study stopped');
        return stale;
      });
      try {
        await expect(ops.changeApproval(callerOf(t.app, 'dave'), a.approvalId, 'reinstate', 'resolved')).rejects.toMatchObject({ code: 'approval.changed' });
      } finally {
        spy.mockRestore();
      }
      expect((await t.app.approvals.get(a.approvalId))?.status).toBe('closed');
      expect(await events('approval.grant', 'success', { protocol: 'IRB-RACE' })).toBe(0);
    });

    it('records create and status changes with the approval they made, and the trail verifies', async () => {
      const carol = callerOf(t.app, 'carol');
      const a = await ops.createApproval(carol, { ...base, protocolNumber: 'IRB-RECORDED' });
      await ops.changeApproval(carol, a.approvalId, 'suspend', 'review');
      await ops.changeApproval(callerOf(t.app, 'dave'), a.approvalId, 'reinstate', 'resolved');
      await ops.changeApproval(carol, a.approvalId, 'close', 'study over');
      const rows = await t.app.db.query<{ event_type: string; approval_id: string; actor_principal: string }>(
        "SELECT event_type, approval_id, actor_principal FROM audit_events WHERE irb_protocol = 'IRB-RECORDED' AND outcome = 'success' ORDER BY seq",
      );
      expect(rows.map((r) => `${r.event_type}:${r.actor_principal}:${r.approval_id === a.approvalId}`)).toEqual([
        'approval.create:carol:true',
        'approval.suspend:carol:true',
        'approval.grant:dave:true',
        'approval.close:carol:true',
      ]);
      await t.app.audit.seal();
      expect((await verifyApp(t.app)).findings).toEqual([]);
    });
  });

  describe('self-recorded approvals (item 6)', () => {
    it('refuses a runner who records an approval that covers her own runs', async () => {
      // rita holds the researcher and the compliance roles.
      const asPi = await t.call('rita', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-SELF', principalInvestigator: 'rita', personnel: ['alice'] });
      expect([asPi.status, asPi.json.rule]).toEqual([403, 'sod.approval-recorder-is-personnel']);
      const asStaff = await t.call('rita', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-SELF', principalInvestigator: 'alice', personnel: ['alice', 'rita'] });
      expect([asStaff.status, asStaff.json.rule]).toEqual([403, 'sod.approval-recorder-is-personnel']);
      expect(await events('approval.create', 'denied', { protocol: 'IRB-SELF', rule: 'sod.approval-recorder-is-personnel' })).toBe(2);
      expect(await events('approval.create', 'success', { protocol: 'IRB-SELF' })).toBe(0);
      expect(await approvalsOf('IRB-SELF')).toBe(0);
      const run = await t.call('rita', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', maxInstances: 1 });
      expect([run.status, run.json.rule]).toEqual([403, 'approval.none']);
    });

    it('lets no run use an approval its recorder is named on, even one stored before this rule', async () => {
      // Written to the store directly, as an approval recorded before the rule existed would be.
      const legacy = await t.app.approvals.create({ ...base, protocolNumber: 'IRB-LEGACY', principalInvestigator: 'rita', personnel: ['rita'] }, 'rita');
      const run = await t.call('rita', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', maxInstances: 1, approvalId: legacy.approvalId });
      expect([run.status, run.json.rule]).toEqual([403, 'sod.approval-recorder-is-personnel']);
    });

    it('refuses a reinstatement by an officer the approval names', async () => {
      const a = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-SELF-REINSTATE', principalInvestigator: 'alice', personnel: ['alice', 'rita'] });
      await t.call('carol', 'POST', `/v1/approvals/${a.json.approvalId}/suspend`, { reason: 'finding' });
      const self = await t.call('rita', 'POST', `/v1/approvals/${a.json.approvalId}/reinstate`, { reason: 'resolved' });
      expect([self.status, self.json.rule]).toEqual([403, 'sod.approval-recorder-is-personnel']);
      expect((await t.app.approvals.get(a.json.approvalId))?.status).toBe('suspended');
      expect((await t.call('dave', 'POST', `/v1/approvals/${a.json.approvalId}/reinstate`, { reason: 'resolved' })).json.status).toBe('active');
    });

    it('lets another compliance officer record the same approval, and the run goes ahead', async () => {
      const r = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-SELF', principalInvestigator: 'rita', personnel: ['rita'] });
      expect(r.status).toBe(200);
      const run = await t.call('rita', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', maxInstances: 1, approvalId: r.json.approvalId });
      expect([run.status, run.json.status]).toEqual([200, 'approved']);
    });
  });

  describe('suspension bypass (item 7)', () => {
    for (const change of ['suspend', 'close'] as const) {
      it(`refuses the officer who did "${change}" a new approval for the protocol; a second officer may record it`, async () => {
        const protocol = `IRB-BYPASS-${change}`;
        const first = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: protocol });
        expect((await t.call('carol', 'POST', `/v1/approvals/${first.json.approvalId}/${change}`, { reason: 'finding' })).status).toBe(200);
        const again = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: protocol });
        expect([again.status, again.json.rule]).toEqual([403, 'sod.protocol-suspended-by-recorder']);
        expect(await events('approval.create', 'denied', { protocol, rule: 'sod.protocol-suspended-by-recorder' })).toBe(1);
        expect(await approvalsOf(protocol)).toBe(1);
        // Runs under the protocol stay stopped until a second officer records a new approval.
        const stopped = await t.call('bob', 'POST', '/v1/runs', { benchmarkId: 'site_gated', endpointId: 'vpc-gated', maxInstances: 1, approvalId: first.json.approvalId });
        expect(stopped.status).toBe(403);
        const second = await t.call('dave', 'POST', '/v1/approvals', { ...base, protocolNumber: protocol });
        expect(second.status).toBe(200);
        expect(second.json.createdBy).toBe('dave');
      });
    }

    it('lets the suspender record again once a second officer reinstated the approval', async () => {
      const first = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-REINSTATED' });
      const id = first.json.approvalId;
      await t.call('carol', 'POST', `/v1/approvals/${id}/suspend`, { reason: 'finding' });
      expect((await t.call('dave', 'POST', `/v1/approvals/${id}/reinstate`, { reason: 'resolved' })).json.status).toBe('active');
      const again = await t.call('carol', 'POST', '/v1/approvals', { ...base, protocolNumber: 'IRB-REINSTATED' });
      expect(again.status).toBe(200);
    });
  });
});
