/**
 * Who may do what, as one decision: `decide(caller, action, resource)`. The daemon's API, the CLI's
 * local mode and the console all ask it (the console through `whoami`'s `may` list, then the API
 * again on every request), so a rule holds whichever way a request arrives.
 *
 * The decision is a table, read top to bottom: an action lists rows of (roles, conditions, rule). The
 * first row whose role the caller holds and whose conditions all hold allows the action, under that
 * row's rule and in that role (the role the audit trail records). No row: denied. A refusal names the
 * most specific rule it can: the `otherwise` rule of the first condition that failed for a role the
 * caller holds (separation of duties, say), else the action's own `deny` rule. Deny by default: an
 * action not in the table does not compile, a condition whose facts are missing is false.
 *
 * The table is generated into audit/README.md (`npm run docs:rules`) and tests/unit/policy-gate.test.ts
 * checks every action against every role, with and without each condition.
 */
import type { Tier } from '../tiers';
import { allow, type Decision, deny } from './decision';
import { PRINCIPAL_ROLES, type PrincipalRole } from './roles';
import { RULES, type RuleId } from './rules';

/** The caller, as far as a decision needs: who, and which roles they hold. */
export interface GateCaller {
  id: string;
  roles: readonly PrincipalRole[];
}

/** What a decision may need to know of the thing acted on; a fact left out makes its conditions false. */
export interface Resource {
  /** Who requested the run or export, or opened the rating study. */
  requestedBy?: string;
  tier?: Tier;
  /** The people the IRB approval the resource is bound to names; null: bound to none. */
  approval?: { principalInvestigator: string; personnel: readonly string[]; raters?: readonly string[] } | null;
  /** The officer who last suspended the approval (reinstating it). */
  lastSuspendedBy?: string | null;
  /** The officers who suspended or closed an approval of the same protocol that is still stopped. */
  stoppedBy?: readonly string[];
}

interface Condition {
  meaning: string;
  holds: (caller: GateCaller, resource: Resource) => boolean;
}

const ehr = (tier: Tier | undefined) => tier === 'approval-required' || tier === 'private';
const namedOn = (caller: GateCaller, r: Resource) => !!r.approval && (r.approval.principalInvestigator === caller.id || r.approval.personnel.includes(caller.id));

export const CONDITIONS = {
  own: { meaning: 'the caller requested it (a run, an export) or opened it (a rating study)', holds: (c, r) => r.requestedBy !== undefined && r.requestedBy === c.id },
  'not-own': { meaning: 'the caller did not request it', holds: (c, r) => r.requestedBy !== undefined && r.requestedBy !== c.id },
  'public-tier': { meaning: 'its data are of the public tier', holds: (_c, r) => r.tier === 'public' },
  'ehr-tier': { meaning: 'its data are of the approval-required or private tier', holds: (_c, r) => ehr(r.tier) },
  'not-named-on-approval': {
    meaning: 'the caller is neither the PI nor on the personnel of the IRB approval concerned',
    holds: (c, r) => r.approval !== undefined && !namedOn(c, r),
  },
  'named-on-approval': {
    meaning: 'the IRB approval names the caller (PI, personnel or rater)',
    holds: (c, r) => namedOn(c, r) || !!r.approval?.raters?.includes(c.id),
  },
  'rater-on-approval': {
    meaning: "public data, or the IRB approval of the study's runs names the caller among its clinician raters",
    holds: (c, r) => r.tier === 'public' || (ehr(r.tier) && !!r.approval?.raters?.includes(c.id)),
  },
  'not-last-suspender': { meaning: 'the caller is not the officer who suspended the approval', holds: (c, r) => r.lastSuspendedBy !== undefined && r.lastSuspendedBy !== c.id },
  'not-protocol-stopper': {
    meaning: 'the caller suspended or closed no approval of the protocol that is still stopped',
    holds: (c, r) => r.stoppedBy !== undefined && !r.stoppedBy.includes(c.id),
  },
} as const satisfies Record<string, Condition>;

export type ConditionId = keyof typeof CONDITIONS;

interface Row {
  /** The roles that may; 'anyone' for a row decided by its conditions alone (the requester of a run, whatever role). */
  roles: readonly PrincipalRole[] | 'anyone';
  when?: readonly { condition: ConditionId; otherwise?: RuleId }[];
  rule: RuleId;
}

interface ActionEntry {
  meaning: string;
  rows: readonly Row[];
  /** The refusal when no row's role is held (or a condition without an `otherwise` fails). */
  deny: RuleId;
}

const STAFF: readonly PrincipalRole[] = ['compliance', 'auditor', 'admin'];
const REVIEWERS: readonly PrincipalRole[] = ['compliance', 'auditor'];
const own = { condition: 'own' } as const;

export const ACTIONS = {
  // Runs.
  'run.request': { meaning: 'requesting a run', rows: [{ roles: ['researcher'], rule: 'rbac.role-held' }], deny: 'rbac.researcher-required' },
  'run.approve': {
    meaning: 'approving a run',
    rows: [{ roles: ['compliance'], when: [{ condition: 'not-own', otherwise: 'sod.approver-is-requester' }], rule: 'sod.compliance-approval' }],
    deny: 'rbac.compliance-required',
  },
  'run.cancel': {
    meaning: 'stopping a run (cancelling your own, halting another)',
    rows: [
      { roles: ['researcher'], when: [own], rule: 'run.cancel.by-requester' },
      { roles: ['compliance', 'admin'], rule: 'run.halt.by-officer' },
    ],
    deny: 'rbac.cancel-not-allowed',
  },
  'run.list': {
    meaning: 'listing runs (staff every run, a researcher their own)',
    rows: [
      { roles: STAFF, rule: 'visibility.run.staff' },
      { roles: ['researcher'], rule: 'visibility.run.own-only' },
    ],
    deny: 'rbac.researcher-required',
  },
  'run.read': {
    meaning: "reading a run's metadata",
    rows: [
      { roles: STAFF, rule: 'visibility.run.staff' },
      { roles: ['researcher'], when: [own], rule: 'visibility.run.requester' },
    ],
    deny: 'visibility.run.not-yours',
  },
  'run.figures': {
    meaning: "seeing a run's exact figures (counts, scores, usage)",
    rows: [
      { roles: 'anyone', when: [{ condition: 'public-tier' }], rule: 'visibility.run-figures.public-tier' },
      { roles: 'anyone', when: [own], rule: 'visibility.run-figures.requester' },
      { roles: ['compliance'], rule: 'visibility.run-figures.compliance' },
    ],
    deny: 'visibility.run-figures.withheld',
  },
  'run.instances': {
    meaning: "seeing a run's instances one by one",
    rows: [
      { roles: 'anyone', when: [{ condition: 'public-tier' }], rule: 'visibility.instances.public-tier' },
      { roles: 'anyone', when: [own, { condition: 'ehr-tier' }], rule: 'visibility.instances.codes-only' },
      { roles: ['compliance'], when: [{ condition: 'ehr-tier' }], rule: 'visibility.instances.codes-only' },
    ],
    deny: 'visibility.instances.withheld',
  },

  // Exports.
  'export.request': { meaning: 'requesting an export', rows: [{ roles: ['researcher'], rule: 'rbac.role-held' }], deny: 'rbac.researcher-required' },
  'export.list': {
    meaning: 'listing exports (compliance and auditors every one, a researcher their own)',
    rows: [
      { roles: REVIEWERS, rule: 'visibility.export.reviewer' },
      { roles: ['researcher'], rule: 'visibility.export.own-only' },
    ],
    deny: 'rbac.researcher-required',
  },
  'export.read': {
    meaning: 'reading an export and its preview',
    rows: [
      { roles: REVIEWERS, rule: 'visibility.export.reviewer' },
      { roles: 'anyone', when: [own], rule: 'visibility.export.requester' },
    ],
    deny: 'visibility.export.not-yours',
  },
  'export.release': {
    meaning: 'releasing an export',
    rows: [{ roles: ['compliance'], when: [{ condition: 'not-own', otherwise: 'sod.releaser-is-requester' }], rule: 'sod.compliance-release' }],
    deny: 'rbac.compliance-required',
  },
  'export.withdraw': {
    meaning: 'withdrawing an export',
    rows: [
      { roles: ['researcher'], when: [own], rule: 'visibility.export.requester' },
      { roles: ['compliance'], rule: 'rbac.role-held' },
    ],
    deny: 'visibility.export.not-yours',
  },
  'export.download': {
    meaning: 'downloading an export',
    rows: [
      { roles: ['researcher'], when: [own], rule: 'visibility.export.requester' },
      { roles: ['compliance'], rule: 'rbac.role-held' },
    ],
    deny: 'visibility.export.not-yours',
  },

  // IRB approvals.
  'approval.record': {
    meaning: 'recording an IRB approval',
    rows: [
      {
        roles: ['compliance'],
        when: [
          { condition: 'not-named-on-approval', otherwise: 'sod.approval-recorder-is-personnel' },
          { condition: 'not-protocol-stopper', otherwise: 'sod.protocol-suspended-by-recorder' },
        ],
        rule: 'approval.recorded-by-compliance',
      },
    ],
    deny: 'rbac.compliance-required',
  },
  'approval.suspend': { meaning: 'suspending an IRB approval', rows: [{ roles: ['compliance'], rule: 'approval.suspend' }], deny: 'rbac.compliance-required' },
  'approval.close': { meaning: 'closing an IRB approval', rows: [{ roles: ['compliance'], rule: 'approval.close' }], deny: 'rbac.compliance-required' },
  'approval.reinstate': {
    meaning: 'reinstating an IRB approval',
    rows: [
      {
        roles: ['compliance'],
        when: [
          { condition: 'not-last-suspender', otherwise: 'sod.reinstate-by-suspender' },
          { condition: 'not-named-on-approval', otherwise: 'sod.approval-recorder-is-personnel' },
        ],
        rule: 'approval.reinstate',
      },
    ],
    deny: 'rbac.compliance-required',
  },
  'approval.review-drift': {
    meaning: "reviewing an IRB approval's detected drift (its results are no longer stale)",
    rows: [{ roles: ['compliance'], rule: 'drift.reviewed' }],
    deny: 'rbac.compliance-required',
  },
  'approval.list': {
    meaning: 'listing IRB approvals (compliance and auditors every one, others those that name them)',
    rows: [
      { roles: REVIEWERS, rule: 'visibility.approval.reviewer' },
      { roles: ['researcher', 'clinician'], rule: 'visibility.approval.named-only' },
    ],
    deny: 'rbac.researcher-required',
  },
  'approval.read': {
    meaning: 'reading an IRB approval and its history',
    rows: [
      { roles: REVIEWERS, rule: 'visibility.approval.reviewer' },
      { roles: 'anyone', when: [{ condition: 'named-on-approval' }], rule: 'visibility.approval.named' },
    ],
    deny: 'visibility.approval.not-named',
  },

  // The audit trail and the daemon's health.
  'audit.read': { meaning: 'reading the audit trail', rows: [{ roles: REVIEWERS, rule: 'audit.read.api' }], deny: 'rbac.compliance-required' },
  'audit.verify': { meaning: 'verifying the audit trail', rows: [{ roles: REVIEWERS, rule: 'audit.verify.api' }], deny: 'rbac.compliance-required' },
  'metrics.read': { meaning: 'reading metrics', rows: [{ roles: ['admin', 'auditor'], rule: 'rbac.role-held' }], deny: 'rbac.admin-required' },
  'endpoint.review': {
    meaning: "reviewing the endpoints in the console (the allowlist itself is listed to every principal; this is the admin's page)",
    rows: [{ roles: ['admin'], rule: 'rbac.role-held' }],
    deny: 'rbac.admin-required',
  },
  'calls.read': { meaning: 'reading the calls to an endpoint', rows: [{ roles: ['admin', 'compliance', 'auditor'], rule: 'rbac.role-held' }], deny: 'rbac.admin-required' },

  // People and certificates.
  'principal.list': { meaning: 'listing principals', rows: [{ roles: ['admin'], rule: 'rbac.role-held' }], deny: 'rbac.admin-required' },
  'principal.revoke': { meaning: 'revoking a principal', rows: [{ roles: ['compliance', 'admin'], rule: 'pki.revoke.principal' }], deny: 'rbac.compliance-required' },
  'certificate.sign': { meaning: 'signing a certificate request', rows: [{ roles: ['admin'], rule: 'pki.sign.api' }], deny: 'rbac.admin-required' },

  // Rating studies: clinicians rate a blinded sample of a jury benchmark's answers.
  'study.open': {
    meaning: 'opening a rating study (a researcher on their own runs)',
    rows: [
      { roles: ['compliance'], rule: 'rbac.role-held' },
      { roles: ['researcher'], when: [{ condition: 'own', otherwise: 'study.runs-not-owned' }], rule: 'study.opened-on-own-runs' },
    ],
    deny: 'rbac.researcher-required',
  },
  'study.list': {
    meaning: 'listing rating studies (compliance and auditors every one, a researcher those they opened, a clinician those they may rate)',
    rows: [
      { roles: REVIEWERS, rule: 'visibility.study.reviewer' },
      { roles: ['researcher', 'clinician'], rule: 'visibility.study.own-only' },
    ],
    deny: 'rbac.clinician-required',
  },
  'study.read': {
    meaning: "reading a rating study's progress and agreement (never one clinician's ratings)",
    rows: [
      { roles: ['compliance'], rule: 'visibility.study.reviewer' },
      { roles: 'anyone', when: [own], rule: 'visibility.study.opener' },
      { roles: ['auditor'], rule: 'visibility.study.reviewer' },
    ],
    deny: 'visibility.study.not-yours',
  },
  'study.close': {
    meaning: 'closing a rating study',
    rows: [
      { roles: ['compliance'], rule: 'rbac.role-held' },
      { roles: 'anyone', when: [own], rule: 'visibility.study.opener' },
    ],
    deny: 'visibility.study.not-yours',
  },
  'study.rate': {
    meaning: "rating a study's blinded items",
    rows: [
      {
        roles: ['clinician'],
        when: [
          { condition: 'rater-on-approval', otherwise: 'study.rater-not-on-approval' },
          { condition: 'not-named-on-approval', otherwise: 'sod.rater-holds-other-role' },
          { condition: 'not-own', otherwise: 'sod.rater-holds-other-role' },
        ],
        rule: 'study.rater-approved',
      },
    ],
    deny: 'rbac.clinician-required',
  },

  // Governance evidence: the privacy office's de-identification sign-off, cited by evidence packets.
  'deid.sign-off': {
    meaning: "recording the privacy office's de-identification sign-off figures",
    rows: [{ roles: ['compliance'], rule: 'rbac.role-held' }],
    deny: 'rbac.compliance-required',
  },
} as const satisfies Record<string, ActionEntry>;

export type Action = keyof typeof ACTIONS;

/** A decision of the gate: the rule, and the role the caller acts in when allowed (null when denied). */
export type GateDecision = Decision & { action: Action; role: PrincipalRole | null };

/** May `caller` do `action` on `resource`? Always a decision that names its rule. */
export function decide(caller: GateCaller, action: Action, resource: Resource = {}): GateDecision {
  const entry: ActionEntry = ACTIONS[action];
  let refusal: { rule: RuleId; reason: string } | undefined;
  for (const row of entry.rows) {
    const role = roleFor(caller, row);
    if (role === undefined) continue;
    const failed = (row.when ?? []).find((w) => !(CONDITIONS[w.condition] as Condition).holds(caller, resource));
    if (!failed) return { ...allow(row.rule, `${entry.meaning}: ${describeRow(row)}`), action, role: role ?? null };
    if (failed.otherwise && !refusal) refusal = { rule: failed.otherwise, reason: RULES[failed.otherwise] };
  }
  if (refusal) return { ...deny(refusal.rule, refusal.reason), action, role: null };
  return { ...deny(entry.deny, `${entry.meaning} needs ${whoMay(entry)}; ${caller.id} holds ${caller.roles.join(', ') || 'no role'}`), action, role: null };
}

/**
 * The actions whose table names a role the caller holds (or anyone), whatever the resource: what the
 * console offers. The API decides again, with the resource, on every request.
 */
export function mayAttempt(caller: GateCaller): Action[] {
  return (Object.keys(ACTIONS) as Action[]).filter((a) => (ACTIONS[a] as ActionEntry).rows.some((row) => row.roles === 'anyone' || row.roles.some((r) => caller.roles.includes(r))));
}

/**
 * The role a row lets the caller act in: the first of its roles the caller holds; for an 'anyone' row
 * the caller's first role (null for a caller with none). Undefined: the row is not the caller's.
 */
function roleFor(caller: GateCaller, row: Row): PrincipalRole | null | undefined {
  if (row.roles === 'anyone') return caller.roles[0] ?? null;
  return row.roles.find((r) => caller.roles.includes(r));
}

function describeRow(row: Row): string {
  const who = row.roles === 'anyone' ? 'anyone' : oneOf(row.roles);
  const when = (row.when ?? []).map((w) => w.condition);
  return when.length ? `${who}, when ${when.join(' and ')}` : who;
}

/** "the compliance role", "the researcher role (own), or the compliance or admin role": who the action's rows let. */
function whoMay(entry: ActionEntry): string {
  const rows = entry.rows.filter((row) => row.roles !== 'anyone');
  if (!rows.length) return 'a condition no role grants';
  return rows.map((row) => `the ${oneOf(row.roles as readonly string[])} role${scope(row)}`).join(', or ');
}

/** The conditions that narrow a row without a refusal of their own ("own"), as the denial names them. */
function scope(row: Row): string {
  const narrowing = (row.when ?? []).filter((w) => !w.otherwise).map((w) => w.condition);
  return narrowing.length ? ` (${narrowing.join(', ')})` : '';
}

function oneOf(roles: readonly string[]): string {
  return roles.length <= 1 ? (roles[0] ?? '') : `${roles.slice(0, -1).join(', ')} or ${roles.at(-1)}`;
}

/** The markdown table of the gate, for audit/README.md: one row per (action, row). */
export function gateTable(): string {
  const lines = ['| Action | Who | When | Allowed under | Otherwise |', '|---|---|---|---|---|'];
  for (const [action, e] of Object.entries(ACTIONS) as [Action, ActionEntry][]) {
    e.rows.forEach((row, i) => {
      const who = row.roles === 'anyone' ? 'anyone' : row.roles.join(', ');
      const when = (row.when ?? []).map((w) => `${w.condition}${w.otherwise ? ` (else \`${w.otherwise}\`)` : ''}`).join('; ') || '-';
      lines.push(`| ${i === 0 ? `\`${action}\`: ${e.meaning.replace(/\|/g, '\\|')}` : ''} | ${who} | ${when} | \`${row.rule}\` | ${i === e.rows.length - 1 ? `\`${e.deny}\`` : ''} |`);
    });
  }
  const conditions = Object.entries(CONDITIONS).map(([id, c]) => `| \`${id}\` | ${c.meaning} |`);
  return [...lines, '', '| Condition | Holds when |', '|---|---|', ...conditions].join('\n');
}

export { PRINCIPAL_ROLES, type PrincipalRole };
