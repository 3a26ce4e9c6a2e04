/**
 * A restore must not bring a suspended IRB approval back active (issue 29). Every approval change is
 * written, in its own transaction before it commits, to the ledger in the witness folders; a store that
 * lost a suspension or closure (an older backup) gets it back, audited, before a process that acts
 * does anything, with the officer who made it still in its history (so that officer still cannot
 * reinstate it); a reinstatement is never re-applied; a change that cannot reach the ledger is not
 * made. On both stores.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { APPROVAL_LEDGER_FILE } from '../../src/access';
import { type App, openApp } from '../../src/app';
import { type Caller, Operations } from '../../src/operations';
import { backends, tempDir } from '../helpers/db';
import { makeHome, type TestHome } from '../helpers/home';

jest.setTimeout(120_000);

function as(app: App, id: string): Caller {
  const principal = app.principals().get(id);
  if (!principal) throw new Error(`no principal ${id}`);
  return { principal, authMethod: 'mtls' };
}

/**
 * What an older backup holds for this approval: the version before its last change, in `status`, and
 * its history without that change (a restore does not fire the history's append-only trigger).
 */
async function restoreOlder(app: App, approvalId: string, status: 'active' | 'suspended'): Promise<void> {
  await app.db.query('UPDATE approvals SET status = $2, version = version - 1 WHERE approval_id = $1::uuid', [approvalId, status]);
  await app.db.query('ALTER TABLE approval_history DISABLE TRIGGER approval_history_no_update');
  await app.db.query('DELETE FROM approval_history h USING approvals a WHERE a.approval_id = $1::uuid AND h.approval_id = a.approval_id AND h.version > a.version', [approvalId]);
  await app.db.query('ALTER TABLE approval_history ENABLE TRIGGER approval_history_no_update');
}

describe.each(backends())('approval changes outlive a restore (%s)', (backend) => {
  let home: TestHome;
  beforeAll(async () => {
    home = await makeHome(backend);
  });
  afterAll(() => home.cleanup());

  const record = async (app: App, protocolNumber: string) =>
    new Operations(app).createApproval(as(app, 'carol'), { protocolNumber, principalInvestigator: 'alice', personnel: ['alice'], benchmarks: ['medec'], purpose: 'p' });

  it('a suspension is in the ledger; a store that lost it is suspended again, audited, and its suspender still cannot reinstate it', async () => {
    let app = await openApp({ file: home.configFile, env: home.env });
    const approval = await record(app, 'IRB-RESTORE-1');
    await new Operations(app).changeApproval(as(app, 'carol'), approval.approvalId, 'suspend', 'consent form withdrawn');
    const ledger = readFileSync(join(home.home, 'audit', APPROVAL_LEDGER_FILE), 'utf8')
      .trim()
      .split('\n');
    expect(ledger.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ approvalId: approval.approvalId, change: 'suspend', changedBy: 'carol' })]);
    await restoreOlder(app, approval.approvalId, 'active');
    expect((await app.approvals.get(approval.approvalId))?.status).toBe('active');
    await app.close();

    app = await openApp({ file: home.configFile, env: home.env });
    try {
      expect((await app.approvals.get(approval.approvalId))?.status).toBe('suspended');
      const events = await app.db.query<{ rule: string; actor_principal: string }>(
        "SELECT rule, actor_principal FROM audit_events WHERE approval_id = $1 AND event_type = 'approval.suspend' ORDER BY seq",
        [approval.approvalId],
      );
      expect(events).toEqual([
        { rule: 'approval.suspend', actor_principal: 'carol' },
        { rule: 'approval.stop-reapplied', actor_principal: 'service:ehrbench' },
      ]);
      await expect(new Operations(app).changeApproval(as(app, 'carol'), approval.approvalId, 'reinstate', 'x')).rejects.toThrow(/sod\.reinstate-by-suspender/);
    } finally {
      await app.close();
    }
  });

  it('never re-applies a reinstatement: an approval the store holds suspended stays suspended', async () => {
    let app = await openApp({ file: home.configFile, env: home.env });
    const approval = await record(app, 'IRB-RESTORE-2');
    await new Operations(app).changeApproval(as(app, 'carol'), approval.approvalId, 'suspend', 'audit');
    await new Operations(app).changeApproval(as(app, 'dave'), approval.approvalId, 'reinstate', 'cleared');
    // An older backup: the approval as it was while suspended.
    await restoreOlder(app, approval.approvalId, 'suspended');
    await app.close();
    app = await openApp({ file: home.configFile, env: home.env });
    try {
      expect((await app.approvals.get(approval.approvalId))?.status).toBe('suspended');
    } finally {
      await app.close();
    }
  });

  it('an approval an older release suspended (in the store only) goes into the ledger at the next start, so a later restore cannot undo it', async () => {
    let app = await openApp({ file: home.configFile, env: home.env });
    const approval = await record(app, 'IRB-RESTORE-4');
    // The older release's suspension: the store only, no ledger line.
    await app.db.query("UPDATE approvals SET status = 'suspended', version = version + 1, updated_by = 'dave' WHERE approval_id = $1::uuid", [approval.approvalId]);
    await app.db.query("INSERT INTO approval_history (approval_id, version, change, snapshot, changed_by) VALUES ($1::uuid, 2, 'suspend', '{}'::jsonb, 'dave')", [approval.approvalId]);
    await app.close();
    const lines = () =>
      readFileSync(join(home.home, 'audit', APPROVAL_LEDGER_FILE), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { approvalId: string });
    expect(lines().filter((l) => l.approvalId === approval.approvalId)).toEqual([]);

    app = await openApp({ file: home.configFile, env: home.env });
    expect(lines().filter((l) => l.approvalId === approval.approvalId)).toEqual([expect.objectContaining({ version: 2, change: 'suspend', changedBy: 'dave' })]);
    await restoreOlder(app, approval.approvalId, 'active');
    await app.close();
    app = await openApp({ file: home.configFile, env: home.env });
    try {
      expect((await app.approvals.get(approval.approvalId))?.status).toBe('suspended');
    } finally {
      await app.close();
    }
  });

  it('a change that cannot be written outside the store is not made, naming the file', async () => {
    const app = await openApp({ file: home.configFile, env: home.env });
    try {
      const approval = await record(app, 'IRB-RESTORE-3');
      const notAFolder = join(tempDir('ledger'), 'witness');
      writeFileSync(notAFolder, 'a file where the witness folder should be');
      app.config.audit.witnessDirs.push(notAFolder);
      await expect(new Operations(app).changeApproval(as(app, 'carol'), approval.approvalId, 'suspend', 'x')).rejects.toThrow(
        `${join(notAFolder, APPROVAL_LEDGER_FILE)}: the approval change cannot be written outside the store`,
      );
      app.config.audit.witnessDirs.pop();
      expect((await app.approvals.get(approval.approvalId))?.status).toBe('active');
    } finally {
      await app.close();
    }
  });
});
