/**
 * ehrbench's own metrics and the one-line hooks the engine, the egress guard and the audit trail call.
 * Labels are benchmark ids, endpoint ids, tiers, statuses and rule names: never an instance key, a
 * prompt, a completion or any other text from a dataset (labels.ts enforces it). A hook never throws:
 * a metric must not change what the code it observes does.
 */
import { AUDIT_EVENT_TYPES, type AuditEventType, type AuditOutcome } from '../contracts';
import { TIERS } from '../tiers';
import { DAEMON_VERSION } from '../version';
import { closed, idOf, rule } from './labels';
import { GuardedCounter, GuardedHistogram, METRIC_PREFIX, registry } from './registry';
import { Gauge } from 'prom-client';

/** What a hook needs to know about a run: its benchmark, tier and endpoint; nothing of its data. */
export interface RunScope {
  benchmark: { definition: { id: string } };
  tier: string;
  endpoint: { id: string };
}

export const RUN_FINAL_STATUSES = ['completed', 'failed', 'halted', 'cancelled'] as const;
export type RunFinalStatus = (typeof RUN_FINAL_STATUSES)[number];
export const INSTANCE_OUTCOMES = ['done', 'blocked', 'failed'] as const;
export type InstanceOutcome = (typeof INSTANCE_OUTCOMES)[number];

const tier = closed(TIERS);
const benchmark = idOf('benchmark');
const endpoint = idOf('endpoint');
const yesNo = closed(['true', 'false']);

const runsStarted = new GuardedCounter(`${METRIC_PREFIX}runs_started_total`, 'Run executions started by this process (resumed="true": a worker joining or resuming a running run).', {
  benchmark,
  tier,
  resumed: yesNo,
});
const runsFinished = new GuardedCounter(`${METRIC_PREFIX}runs_finished_total`, 'Runs that reached a final status in this process.', {
  benchmark,
  tier,
  status: closed(RUN_FINAL_STATUSES),
});
const instances = new GuardedCounter(`${METRIC_PREFIX}instances_total`, 'Instances finished by this process, by outcome.', {
  benchmark,
  tier,
  endpoint,
  outcome: closed(INSTANCE_OUTCOMES),
});
const promptsBlocked = new GuardedCounter(`${METRIC_PREFIX}prompts_blocked_total`, 'Prompts not sent because de-identification refused them, by rule.', { benchmark, tier, rule });
const modelCallSeconds = new GuardedHistogram(
  `${METRIC_PREFIX}model_call_duration_seconds`,
  'Latency of successful model calls (all attempts of one call), per endpoint.',
  { endpoint },
  [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120],
);
const modelCallFailures = new GuardedCounter(
  `${METRIC_PREFIX}model_call_failures_total`,
  "Instance attempts that failed on a model or judge call (after the client's retries), by error code; labelled with the run's endpoint.",
  {
    endpoint,
    code: rule,
  },
);
const usageUnderReported = new GuardedCounter(
  `${METRIC_PREFIX}endpoint_usage_under_reported_total`,
  "Calls whose usage the endpoint did not report truthfully (missing, invalid, beyond the request, implausibly low): the call's worst case was charged.",
  { endpoint, purpose: closed(['model', 'judge']), problem: closed(['missing', 'invalid', 'over-request', 'implausibly-low']) },
);
const egressRefusals = new GuardedCounter(`${METRIC_PREFIX}egress_refusals_total`, 'Connections or requests the egress guard refused, by rule.', {
  endpoint,
  rule,
});
const accessDenials = new GuardedCounter(`${METRIC_PREFIX}access_denials_total`, 'Denied requests and actions (audited with outcome "denied"), by audit event type and rule.', {
  event: closed(AUDIT_EVENT_TYPES),
  rule,
});
const auditLagSeconds = new GuardedHistogram(
  `${METRIC_PREFIX}audit_append_lag_seconds`,
  'Time from an audit event being handed to the trail to the commit of its batch (oldest event of the batch).',
  {},
  [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
);
const auditBatchSize = new GuardedHistogram(`${METRIC_PREFIX}audit_batch_size`, 'Audit events committed per batch (group commit).', {}, [1, 2, 5, 10, 25, 50, 100, 250, 500]);
/**
 * Why the daemon refused a TLS handshake (src/server/handshake.ts): a closed set, so a label never
 * carries a name or anything else from a certificate.
 */
export const HANDSHAKE_REFUSAL_REASONS = ['expired', 'not-yet-valid', 'unknown-ca', 'no-certificate', 'bad-certificate', 'handshake-timeout', 'handshake-aborted', 'handshake-failed'] as const;
export type HandshakeRefusalReason = (typeof HANDSHAKE_REFUSAL_REASONS)[number];
const handshakeRefusals = new GuardedCounter(
  `${METRIC_PREFIX}tls_handshake_refusals_total`,
  'TLS handshakes the daemon refused or that failed before a request: a client certificate its client CAs do not verify (expired, of another CA, none) or a broken handshake.',
  { reason: closed(HANDSHAKE_REFUSAL_REASONS) },
);
/**
 * Connections the daemon closed because too many were open (src/server/connections.ts): in total,
 * before the TLS handshake, or with one client certificate, right after it. A closed set of rules.
 */
export const CONNECTION_REFUSAL_RULES = ['daemon.connections-total', 'identity.connections-per-certificate'] as const;
export type ConnectionRefusalRule = (typeof CONNECTION_REFUSAL_RULES)[number];
const connectionRefusals = new GuardedCounter(
  `${METRIC_PREFIX}connection_refusals_total`,
  'Connections the daemon closed before any request because too many were open: in total (server.maxConnections) or with one client certificate (server.maxConnectionsPerCertificate).',
  { rule: closed(CONNECTION_REFUSAL_RULES) },
);
const auditFailures = new GuardedCounter(`${METRIC_PREFIX}audit_append_failures_total`, 'Audit events that could not be recorded (the action they guarded was not performed).', {});

const buildInfo = new Gauge({ name: `${METRIC_PREFIX}build_info`, help: 'The running ehrbench version.', labelNames: ['version'], registers: [registry] });
buildInfo.set({ version: /^[0-9A-Za-z.+-]{1,40}$/.test(DAEMON_VERSION) ? DAEMON_VERSION : '_invalid' }, 1);

/** Runs `fn`, swallowing anything it throws: observing must not change the observed. */
function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // A metric that cannot be recorded is lost; the work it describes goes on.
  }
}

const runLabels = (ctx: RunScope) => ({ benchmark: ctx.benchmark.definition.id, tier: ctx.tier });

export function observeRunStarted(ctx: RunScope, resumed: boolean): void {
  safely(() => runsStarted.inc({ ...runLabels(ctx), resumed }));
}

/** `changed`: whether this process made the transition (several workers may try; one wins). */
export function observeRunFinished(ctx: RunScope, status: RunFinalStatus, changed = true): void {
  if (changed) safely(() => runsFinished.inc({ ...runLabels(ctx), status }));
}

/** An instance finished here; a blocked one also counts as a blocked prompt under its rule. */
export function observeInstance(ctx: RunScope, outcome: InstanceOutcome, blockedBy?: string): void {
  safely(() => {
    instances.inc({ ...runLabels(ctx), endpoint: ctx.endpoint.id, outcome });
    if (outcome === 'blocked') promptsBlocked.inc({ ...runLabels(ctx), rule: blockedBy ?? 'deid.unknown' });
  });
}

export function observeModelCall(endpointId: string, latencyMs: number): void {
  safely(() => modelCallSeconds.observe({ endpoint: endpointId }, latencyMs / 1000));
}

/** A model call failed; `exhausted`: it was the instance's last attempt, so the instance failed. */
export function observeModelCallFailure(ctx: RunScope, code: string, exhausted: boolean): void {
  safely(() => {
    modelCallFailures.inc({ endpoint: ctx.endpoint.id, code });
    if (exhausted) instances.inc({ ...runLabels(ctx), endpoint: ctx.endpoint.id, outcome: 'failed' });
  });
}

/** An endpoint's usage not taken: its worst case charged instead (src/calls/cost.ts chargedUsage). */
export function observeUsageUnderReported(endpointId: string, purpose: 'model' | 'judge', problem: 'missing' | 'invalid' | 'over-request' | 'implausibly-low'): void {
  safely(() => usageUnderReported.inc({ endpoint: endpointId, purpose, problem }));
}

/** What the egress guard reports (src/egress/guard.ts EgressEvent); only refusals are counted. */
export function observeEgressEvent(event: { type: string; endpointId: string; rule?: string }): void {
  if (event.type === 'egress.denied') safely(() => egressRefusals.inc({ endpoint: event.endpointId, rule: event.rule ?? 'egress.unknown' }));
}

/** Every audit event passes here before it is written; denials are counted by rule. */
export function observeAuditEvent(event: { type: AuditEventType; outcome: AuditOutcome; rule?: string }): void {
  // A blocked prompt is a de-identification outcome, counted by observeInstance, not an access denial.
  if (event.outcome === 'denied' && event.type !== 'instance.blocked') {
    safely(() => accessDenials.inc({ event: event.type, rule: event.rule ?? 'access.unnamed-rule' }));
  }
}

/** A batch of audit events committed; `oldestRecordedAt` is the first event's recorded_at. */
export function observeAuditBatch(size: number, oldestRecordedAt: string | undefined, now: Date): void {
  safely(() => {
    auditBatchSize.observe({}, size);
    const lag = oldestRecordedAt ? (now.getTime() - Date.parse(oldestRecordedAt)) / 1000 : Number.NaN;
    if (lag >= 0) auditLagSeconds.observe({}, lag);
  });
}

export function observeAuditFailure(): void {
  safely(() => auditFailures.inc({}));
}

export function observeHandshakeRefusal(reason: HandshakeRefusalReason): void {
  safely(() => handshakeRefusals.inc({ reason }));
}

export function observeConnectionRefusal(rule: ConnectionRefusalRule): void {
  safely(() => connectionRefusals.inc({ rule }));
}
