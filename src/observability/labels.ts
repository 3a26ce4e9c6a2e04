/**
 * What a metric label may carry. Label values end up in Prometheus, its remote storage and every
 * dashboard, far outside the run store, so they are held to the same rule as logs and audit events:
 * never patient text. Each metric declares its labels up front (an allowlist of names), and each
 * label a kind that decides which values pass:
 *   closed    a fixed list written in code (tiers, run statuses, audit event types)
 *   id        a configured id (benchmark, endpoint) matching the id pattern of its schema and, once
 *             the daemon has loaded its catalog and endpoint policy, one of the configured ids
 *   rule      a rule or error code written in code: a dotted lower-case name in a known namespace
 * A value that fails is replaced by "_invalid" (the count is kept, the text is not), and a label that
 * has seen too many distinct values reports "_other": a stray identifier cannot ride along, and a bug
 * that puts instance keys into a label cannot blow up the time series either. Both are counted in
 * ehrbench_metric_label_rejections_total, so they do not go unnoticed.
 */

import { isErrorCode } from '../error-codes';
import { isRule } from '../policy';

/** The id pattern of schemas/benchmark.schema.json (`id`). */
export const BENCHMARK_ID_PATTERN = /^[a-z0-9][a-z0-9_]{0,62}$/;
/** The id pattern of schemas/endpoints.schema.json (`endpoints[].id`). */
export const ENDPOINT_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;
/** A rule or error code: `namespace.name[.name...]`, lower case, digits and dashes. */
export const RULE_PATTERN = /^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*){1,4}$/;
export const MAX_RULE_LENGTH = 80;

/**
 * Namespaces rules and error codes are written under in ehrbench's code. A new concern that names
 * its rules under a new namespace adds it here, or its refusals are counted as "_invalid".
 */
export const RULE_NAMESPACES = [
  'access',
  'approval',
  'audit',
  'breakglass',
  'config',
  'daemon',
  'db',
  'deid',
  'egress',
  'endpoint',
  'export',
  'identity',
  'model',
  'pki',
  'policy',
  'principal',
  'rbac',
  'request',
  'run',
  'sod',
  'tier',
] as const;

/** Distinct values one label may take in one process before further ones report "_other". */
export const MAX_DISTINCT_VALUES = 200;

export const INVALID_VALUE = '_invalid';
export const OVERFLOW_VALUE = '_other';

export type IdKind = 'benchmark' | 'endpoint';

export type LabelKind = { kind: 'closed'; values: readonly string[] } | { kind: 'id'; of: IdKind } | { kind: 'rule' };

export const closed = (values: readonly string[]): LabelKind => ({ kind: 'closed', values });
export const idOf = (of: IdKind): LabelKind => ({ kind: 'id', of });
export const rule: LabelKind = { kind: 'rule' };

const ID_PATTERNS: Record<IdKind, RegExp> = { benchmark: BENCHMARK_ID_PATTERN, endpoint: ENDPOINT_ID_PATTERN };

/**
 * The configured ids, once known (undefined: not known now); until then only the id pattern applies.
 * Read when a label is checked: the catalog and the allowlist are re-read live, and a benchmark
 * bound or an endpoint added while the daemon runs gets its own label.
 */
const configured: Partial<Record<IdKind, () => ReadonlySet<string> | undefined>> = {};

/** The configured ids: given, or read from the policy in force when a label is checked. */
export type ConfiguredIds = Iterable<string> | (() => Iterable<string> | undefined);

function idsOf(ids: ConfiguredIds): () => ReadonlySet<string> | undefined {
  if (typeof ids !== 'function') {
    const fixed = new Set(ids);
    return () => fixed;
  }
  // One set per distinct list (the policy in force changes rarely; labels are checked on every call).
  let last: { from: Iterable<string>; set: ReadonlySet<string> } | undefined;
  return () => {
    const now = ids();
    if (now === undefined) return undefined;
    if (last?.from !== now) last = { from: now, set: new Set(now) };
    return last.set;
  };
}

/**
 * The ids of a live policy (the catalog, the allowlist), one list per version in force; undefined
 * while it has none (a broken file from the start): then only the id pattern applies.
 */
export function liveIds<P>(policy: () => P, ids: (p: P) => string[]): () => string[] | undefined {
  let last: { policy: P; ids: string[] } | undefined;
  return () => {
    let now: P;
    try {
      now = policy();
    } catch {
      return undefined;
    }
    if (last?.policy !== now) last = { policy: now, ids: ids(now) };
    return last.ids;
  };
}

/**
 * Restricts id labels to the ids the deployment configured (the catalog's benchmarks, the endpoint
 * allowlist). Called by the daemon after loading both.
 */
export function restrictIds(ids: { benchmarks?: ConfiguredIds; endpoints?: ConfiguredIds }): void {
  if (ids.benchmarks) configured.benchmark = idsOf(ids.benchmarks);
  if (ids.endpoints) configured.endpoint = idsOf(ids.endpoints);
}

/** What restrictLabelsToPolicies reads of the composition root: the catalog and the allowlist in force. */
export interface LivePolicies {
  catalog(): { list(): { definition: { id: string } }[] };
  endpoints(): { endpoints: { id: string }[] };
}

/** Metric labels name the benchmarks and endpoints in force (both re-read live), no other ids. */
export function restrictLabelsToPolicies(app: LivePolicies): void {
  restrictIds({
    benchmarks: liveIds(
      () => app.catalog(),
      (c) => c.list().map((b) => b.definition.id),
    ),
    endpoints: liveIds(
      () => app.endpoints(),
      (p) => p.endpoints.map((e) => e.id),
    ),
  });
}

/** Forgets configured ids (tests). */
export function clearConfiguredIds(): void {
  delete configured.benchmark;
  delete configured.endpoint;
}

export function validRule(value: string): boolean {
  if (value.length > MAX_RULE_LENGTH || !RULE_PATTERN.test(value)) return false;
  // Registered rules and error codes always pass (jury.*, budget.*, disclosure.* ... are outside the namespaces).
  if (isRule(value) || isErrorCode(value)) return true;
  const namespace = value.slice(0, value.indexOf('.'));
  return (RULE_NAMESPACES as readonly string[]).includes(namespace);
}

/** Whether `value` may be the value of a label of `kind`. */
export function validLabelValue(kind: LabelKind, value: string): boolean {
  switch (kind.kind) {
    case 'closed':
      return kind.values.includes(value);
    case 'id': {
      const known = configured[kind.of]?.();
      return ID_PATTERNS[kind.of].test(value) && (known === undefined || known.has(value));
    }
    case 'rule':
      return validRule(value);
  }
}
