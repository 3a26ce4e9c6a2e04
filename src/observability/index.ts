/**
 * Prometheus metrics: counters and histograms per process, gauges read from the store at scrape time,
 * label values checked against allowlists (never patient text), and the loopback listener.
 */
export {
  observeAuditBatch,
  observeAuditEvent,
  observeAuditFailure,
  observeConnectionRefusal,
  observeEgressEvent,
  observeHandshakeRefusal,
  observeInstance,
  observeModelCall,
  observeModelCallFailure,
  observeUsageUnderReported,
  observeRunFinished,
  observeRunStarted,
  INSTANCE_OUTCOMES,
  RUN_FINAL_STATUSES,
  HANDSHAKE_REFUSAL_REASONS,
  CONNECTION_REFUSAL_RULES,
} from './metrics';
export type { ConnectionRefusalRule, HandshakeRefusalReason, InstanceOutcome, RunFinalStatus, RunScope } from './metrics';
export { enableProcessMetrics, metricsText, registry, resetMetrics } from './registry';
export { forgetStore, observeStore } from './store-gauges';
export { clearConfiguredIds, liveIds, restrictIds, restrictLabelsToPolicies, validLabelValue, validRule, BENCHMARK_ID_PATTERN, ENDPOINT_ID_PATTERN, RULE_NAMESPACES } from './labels';
export { LOOPBACK, startLocalListener } from './listener';
