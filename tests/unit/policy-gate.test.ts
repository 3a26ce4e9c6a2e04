/**
 * The policy gate (src/policy/gate.ts), table-driven: every action against the people who may and may
 * not do it, with and without each of its conditions, and the rule each decision names. Written out
 * by hand, so that a change of the table shows up here as a change of who may do what.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ACTIONS, type Action, decide, gateTable, type GateCaller, mayAttempt, type Resource, withRuleTable } from '../../src/policy';
import { GATE_TABLE_BEGIN, GATE_TABLE_END } from '../../src/policy/rule-table';
import { ROOT } from '../helpers/paths';
import { sourceFiles } from '../helpers/source-scan';

const person = (id: string, ...roles: GateCaller['roles']): GateCaller => ({ id, roles });
const alice = person('alice', 'researcher');
const bob = person('bob', 'researcher');
const carol = person('carol', 'compliance');
const dora = person('dora', 'compliance');
const aud = person('aud', 'auditor');
const adam = person('adam', 'admin');
const cleo = person('cleo', 'clinician');
const nobody = person('nobody');

const approvalNaming = (extra: Partial<{ principalInvestigator: string; personnel: string[]; raters: string[] }> = {}) => ({
  approval: { principalInvestigator: 'bob', personnel: ['alice'], raters: ['cleo'], ...extra },
});

/** [action, caller, resource, allowed?, rule, role acted in] */
type Case = [Action, GateCaller, Resource, boolean, string, string | null];

const CASES: Case[] = [
  ['run.request', alice, {}, true, 'rbac.role-held', 'researcher'],
  ['run.request', carol, {}, false, 'rbac.researcher-required', null],
  ['run.request', cleo, {}, false, 'rbac.researcher-required', null],
  ['run.approve', carol, { requestedBy: 'alice' }, true, 'sod.compliance-approval', 'compliance'],
  ['run.approve', person('carol', 'compliance', 'researcher'), { requestedBy: 'carol' }, false, 'sod.approver-is-requester', null],
  ['run.approve', alice, { requestedBy: 'bob' }, false, 'rbac.compliance-required', null],
  ['run.approve', carol, {}, false, 'sod.approver-is-requester', null], // no requester known: fail closed
  ['run.cancel', alice, { requestedBy: 'alice' }, true, 'run.cancel.by-requester', 'researcher'],
  ['run.cancel', alice, { requestedBy: 'bob' }, false, 'rbac.cancel-not-allowed', null],
  ['run.cancel', carol, { requestedBy: 'alice' }, true, 'run.halt.by-officer', 'compliance'],
  ['run.cancel', adam, { requestedBy: 'alice' }, true, 'run.halt.by-officer', 'admin'],
  ['run.cancel', aud, { requestedBy: 'alice' }, false, 'rbac.cancel-not-allowed', null],
  ['run.list', aud, {}, true, 'visibility.run.staff', 'auditor'],
  ['run.list', alice, {}, true, 'visibility.run.own-only', 'researcher'],
  ['run.list', cleo, {}, false, 'rbac.researcher-required', null],
  ['run.read', alice, { requestedBy: 'alice' }, true, 'visibility.run.requester', 'researcher'],
  ['run.read', alice, { requestedBy: 'bob' }, false, 'visibility.run.not-yours', null],
  ['run.read', adam, { requestedBy: 'bob' }, true, 'visibility.run.staff', 'admin'],
  ['run.read', cleo, { requestedBy: 'bob' }, false, 'visibility.run.not-yours', null],
  ['run.figures', aud, { requestedBy: 'alice', tier: 'public' }, true, 'visibility.run-figures.public-tier', 'auditor'],
  ['run.figures', aud, { requestedBy: 'alice', tier: 'private' }, false, 'visibility.run-figures.withheld', null],
  ['run.figures', adam, { requestedBy: 'alice', tier: 'approval-required' }, false, 'visibility.run-figures.withheld', null],
  ['run.figures', alice, { requestedBy: 'alice', tier: 'private' }, true, 'visibility.run-figures.requester', 'researcher'],
  ['run.figures', carol, { requestedBy: 'alice', tier: 'private' }, true, 'visibility.run-figures.compliance', 'compliance'],
  ['run.figures', bob, { requestedBy: 'alice', tier: 'approval-required' }, false, 'visibility.run-figures.withheld', null],
  ['run.instances', bob, { requestedBy: 'alice', tier: 'public' }, true, 'visibility.instances.public-tier', 'researcher'],
  ['run.instances', alice, { requestedBy: 'alice', tier: 'private' }, true, 'visibility.instances.codes-only', 'researcher'],
  ['run.instances', carol, { requestedBy: 'alice', tier: 'approval-required' }, true, 'visibility.instances.codes-only', 'compliance'],
  ['run.instances', aud, { requestedBy: 'alice', tier: 'approval-required' }, false, 'visibility.instances.withheld', null],
  ['run.instances', bob, { requestedBy: 'alice', tier: 'private' }, false, 'visibility.instances.withheld', null],
  ['export.request', alice, {}, true, 'rbac.role-held', 'researcher'],
  ['export.request', carol, {}, false, 'rbac.researcher-required', null],
  ['export.list', aud, {}, true, 'visibility.export.reviewer', 'auditor'],
  ['export.list', alice, {}, true, 'visibility.export.own-only', 'researcher'],
  ['export.list', adam, {}, false, 'rbac.researcher-required', null],
  ['export.read', alice, { requestedBy: 'alice' }, true, 'visibility.export.requester', 'researcher'],
  ['export.read', bob, { requestedBy: 'alice' }, false, 'visibility.export.not-yours', null],
  ['export.read', adam, { requestedBy: 'alice' }, false, 'visibility.export.not-yours', null],
  ['export.read', aud, { requestedBy: 'alice' }, true, 'visibility.export.reviewer', 'auditor'],
  ['export.release', carol, { requestedBy: 'alice' }, true, 'sod.compliance-release', 'compliance'],
  ['export.release', person('rita', 'researcher', 'compliance'), { requestedBy: 'rita' }, false, 'sod.releaser-is-requester', null],
  ['export.release', alice, { requestedBy: 'bob' }, false, 'rbac.compliance-required', null],
  ['export.withdraw', alice, { requestedBy: 'alice' }, true, 'visibility.export.requester', 'researcher'],
  ['export.withdraw', bob, { requestedBy: 'alice' }, false, 'visibility.export.not-yours', null],
  ['export.withdraw', carol, { requestedBy: 'alice' }, true, 'rbac.role-held', 'compliance'],
  ['export.download', aud, { requestedBy: 'alice' }, false, 'visibility.export.not-yours', null],
  ['export.download', carol, { requestedBy: 'alice' }, true, 'rbac.role-held', 'compliance'],
  ['approval.record', carol, { ...approvalNaming(), stoppedBy: [] }, true, 'approval.recorded-by-compliance', 'compliance'],
  ['approval.record', carol, { ...approvalNaming({ personnel: ['carol'] }), stoppedBy: [] }, false, 'sod.approval-recorder-is-personnel', null],
  ['approval.record', carol, { ...approvalNaming({ principalInvestigator: 'carol' }), stoppedBy: [] }, false, 'sod.approval-recorder-is-personnel', null],
  ['approval.record', carol, { ...approvalNaming(), stoppedBy: ['carol'] }, false, 'sod.protocol-suspended-by-recorder', null],
  ['approval.record', carol, approvalNaming(), false, 'sod.protocol-suspended-by-recorder', null], // who stopped it unknown: fail closed
  ['approval.record', alice, { ...approvalNaming(), stoppedBy: [] }, false, 'rbac.compliance-required', null],
  ['approval.suspend', carol, approvalNaming(), true, 'approval.suspend', 'compliance'],
  ['approval.suspend', alice, approvalNaming(), false, 'rbac.compliance-required', null],
  ['approval.close', carol, approvalNaming(), true, 'approval.close', 'compliance'],
  ['approval.close', aud, approvalNaming(), false, 'rbac.compliance-required', null],
  ['approval.review-drift', carol, approvalNaming(), true, 'drift.reviewed', 'compliance'],
  ['approval.review-drift', aud, approvalNaming(), false, 'rbac.compliance-required', null],
  ['approval.review-drift', alice, approvalNaming(), false, 'rbac.compliance-required', null],
  ['approval.reinstate', carol, { ...approvalNaming(), lastSuspendedBy: 'dora' }, true, 'approval.reinstate', 'compliance'],
  ['approval.reinstate', dora, { ...approvalNaming(), lastSuspendedBy: 'dora' }, false, 'sod.reinstate-by-suspender', null],
  ['approval.reinstate', carol, { ...approvalNaming({ personnel: ['carol'] }), lastSuspendedBy: 'dora' }, false, 'sod.approval-recorder-is-personnel', null],
  ['approval.list', aud, {}, true, 'visibility.approval.reviewer', 'auditor'],
  ['approval.list', cleo, {}, true, 'visibility.approval.named-only', 'clinician'],
  ['approval.list', adam, {}, false, 'rbac.researcher-required', null],
  ['approval.read', alice, approvalNaming(), true, 'visibility.approval.named', 'researcher'],
  ['approval.read', cleo, approvalNaming(), true, 'visibility.approval.named', 'clinician'],
  ['approval.read', person('zed', 'researcher'), approvalNaming(), false, 'visibility.approval.not-named', null],
  ['audit.read', aud, {}, true, 'audit.read.api', 'auditor'],
  ['audit.read', adam, {}, false, 'rbac.compliance-required', null],
  ['audit.verify', carol, {}, true, 'audit.verify.api', 'compliance'],
  ['audit.verify', alice, {}, false, 'rbac.compliance-required', null],
  ['metrics.read', adam, {}, true, 'rbac.role-held', 'admin'],
  ['metrics.read', carol, {}, false, 'rbac.admin-required', null],
  ['endpoint.review', adam, {}, true, 'rbac.role-held', 'admin'],
  ['endpoint.review', aud, {}, false, 'rbac.admin-required', null],
  ['calls.read', carol, {}, true, 'rbac.role-held', 'compliance'],
  ['calls.read', alice, {}, false, 'rbac.admin-required', null],
  ['principal.list', carol, {}, false, 'rbac.admin-required', null],
  ['principal.list', adam, {}, true, 'rbac.role-held', 'admin'],
  ['principal.revoke', carol, {}, true, 'pki.revoke.principal', 'compliance'],
  ['principal.revoke', aud, {}, false, 'rbac.compliance-required', null],
  ['certificate.sign', adam, {}, true, 'pki.sign.api', 'admin'],
  ['certificate.sign', carol, {}, false, 'rbac.admin-required', null],
  ['deid.sign-off', carol, {}, true, 'rbac.role-held', 'compliance'],
  ['deid.sign-off', alice, {}, false, 'rbac.compliance-required', null],
  ['study.open', carol, { requestedBy: 'alice' }, true, 'rbac.role-held', 'compliance'],
  ['study.open', alice, { requestedBy: 'alice' }, true, 'study.opened-on-own-runs', 'researcher'],
  ['study.open', alice, { requestedBy: 'bob' }, false, 'study.runs-not-owned', null],
  ['study.open', cleo, { requestedBy: 'cleo' }, false, 'rbac.researcher-required', null],
  ['study.list', cleo, {}, true, 'visibility.study.own-only', 'clinician'],
  ['study.list', aud, {}, true, 'visibility.study.reviewer', 'auditor'],
  ['study.list', adam, {}, false, 'rbac.clinician-required', null],
  ['study.read', alice, { requestedBy: 'alice' }, true, 'visibility.study.opener', 'researcher'],
  ['study.read', bob, { requestedBy: 'alice' }, false, 'visibility.study.not-yours', null],
  ['study.read', cleo, { requestedBy: 'alice' }, false, 'visibility.study.not-yours', null],
  ['study.read', aud, { requestedBy: 'alice' }, true, 'visibility.study.reviewer', 'auditor'],
  ['study.close', carol, { requestedBy: 'alice' }, true, 'rbac.role-held', 'compliance'],
  ['study.close', bob, { requestedBy: 'alice' }, false, 'visibility.study.not-yours', null],
  ['study.rate', cleo, { requestedBy: 'alice', tier: 'private', ...approvalNaming() }, true, 'study.rater-approved', 'clinician'],
  ['study.rate', cleo, { requestedBy: 'alice', tier: 'public', approval: null }, true, 'study.rater-approved', 'clinician'],
  ['study.rate', cleo, { requestedBy: 'alice', tier: 'approval-required', ...approvalNaming({ raters: ['someone-else'] }) }, false, 'study.rater-not-on-approval', null],
  ['study.rate', cleo, { requestedBy: 'alice', tier: 'private', approval: null }, false, 'study.rater-not-on-approval', null],
  ['study.rate', person('cleo', 'clinician', 'researcher'), { requestedBy: 'cleo', tier: 'public', approval: null }, false, 'sod.rater-holds-other-role', null],
  ['study.rate', cleo, { requestedBy: 'alice', tier: 'private', ...approvalNaming({ personnel: ['alice', 'cleo'] }) }, false, 'sod.rater-holds-other-role', null],
  ['study.rate', cleo, { requestedBy: 'alice', tier: 'private' }, false, 'study.rater-not-on-approval', null], // approval unknown: fail closed
  ['study.rate', alice, { requestedBy: 'bob', tier: 'public', approval: null }, false, 'rbac.clinician-required', null],
  ['study.rate', nobody, { requestedBy: 'bob', tier: 'public', approval: null }, false, 'rbac.clinician-required', null],
];

/** The console's pages (.tsx), which ask the gate through the session's `may`. */
function consoleFiles(dir = join(ROOT, 'src', 'console', 'client')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? consoleFiles(join(dir, e.name)) : e.name.endsWith('.tsx') ? [join(dir, e.name)] : []));
}

describe('the policy gate', () => {
  it.each(CASES.map((c, i) => [i, ...c] as const))('case %i: %s by %o', (_i, action, caller, resource, allowed, rule, role) => {
    const d = decide(caller, action, resource);
    expect([d.allowed, d.rule, d.role]).toEqual([allowed, rule, role]);
    expect(d.reason.length).toBeGreaterThan(10);
  });

  it('is tested for every action, allowed and refused', () => {
    for (const action of Object.keys(ACTIONS) as Action[]) {
      const cases = CASES.filter((c) => c[0] === action);
      expect({ action, allowed: cases.some((c) => c[3]), refused: cases.some((c) => !c[3]) }).toEqual({ action, allowed: true, refused: true });
    }
  });

  it('refuses a caller with no role everything but what depends on no role', () => {
    const allowedToNobody = (Object.keys(ACTIONS) as Action[]).filter((a) => decide(nobody, a, { requestedBy: 'nobody', tier: 'public', approval: null }).allowed);
    // Seeing your own thing or public figures depends on no role; none of these acts on anything.
    expect(allowedToNobody.sort()).toEqual(['export.read', 'run.figures', 'run.instances', 'study.close', 'study.read']);
    // The console offers them (each depends on the thing asked for), and nothing else.
    expect(mayAttempt(nobody).sort()).toEqual(['approval.read', 'export.read', 'run.figures', 'run.instances', 'study.close', 'study.read']);
  });

  it("offers in the console (whoami's may) the actions of the caller's roles", () => {
    expect(mayAttempt(cleo)).toEqual(expect.arrayContaining(['study.rate', 'study.list', 'approval.list']));
    expect(mayAttempt(cleo)).not.toContain('run.request');
    expect(mayAttempt(alice)).not.toContain('study.rate');
    expect(mayAttempt(carol)).toEqual(expect.arrayContaining(['run.approve', 'export.release', 'approval.record', 'study.open']));
  });

  it('is asked for every action somewhere outside the gate', () => {
    const text = [...sourceFiles(), ...consoleFiles()]
      .filter((f) => f !== join(ROOT, 'src', 'policy', 'gate.ts'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    // Suspend, reinstate and close are asked as `approval.${change}` (operations' changeApproval).
    const asked = (a: Action) => text.includes(`'${a}'`) || (/^approval\.(suspend|reinstate|close)$/.test(a) && text.includes('`approval.${change}`'));
    expect((Object.keys(ACTIONS) as Action[]).filter((a) => !asked(a))).toEqual([]);
  });

  it('is the table the audit guide shows', () => {
    const readme = readFileSync(join(ROOT, 'audit', 'README.md'), 'utf8');
    const begin = readme.indexOf(GATE_TABLE_BEGIN);
    const end = readme.indexOf(GATE_TABLE_END);
    expect(readme.slice(begin + GATE_TABLE_BEGIN.length, end).trim()).toBe(gateTable());
    expect(withRuleTable(readme)).toBe(readme);
  });
});
