/**
 * Policy files are recorded before they take effect. Hospital IT edits principals.json (re-read live),
 * endpoints.json, config.json and site-data.json (read at start) on the host; whoever can write them
 * can grant a role, repoint an endpoint, bind a file of notes to a public benchmark or move the
 * witnesses. Every load whose content the trail has not recorded yet becomes a `policy.change` event
 * (the file's sha256 and a short, PHI-free summary: ids added, removed, changed with the names of the
 * changed fields, and a few facts per id such as roles or an endpoint's host) and only then is the new
 * policy handed out. When the event cannot be recorded the new file is not applied: at start the
 * process does not open, on a reload the policy in force stays and the change is tried again.
 * The configuration and the site data file, read only at start, also keep each field's fingerprint
 * (table policy_versions, its digest in the event), so the next start can say which fields changed
 * since (`catalog[dataDirs]`, `benchmarks.pubmed_qa[source]`) rather than list everything again.
 */
import { readFileSync, statSync } from 'node:fs';
import { canonicalHash, sha256Hex } from '../canonical';
import type { Database } from '../db';
import { UserError } from '../errors';
import type { Logger } from '../log';
import type { AuditEventInput, AuditTrail } from './types';

export type PolicyKind = 'principals' | 'endpoints' | 'config' | 'site-data';

/** Kinds read only at start, whose fields are kept (policy_versions) for the next start's comparison. */
const REMEMBERED: readonly PolicyKind[] = ['config', 'site-data'];

/**
 * One id of a policy: a fingerprint per field (what tells a change) and the facts recorded about it
 * when it is added or changed (e.g. roles: "researcher/compliance"). Ids and short tokens only.
 */
export interface PolicyEntry {
  fields: Record<string, string>;
  facts: Record<string, string>;
}
export type PolicySummary = Map<string, PolicyEntry>;

export interface PolicyVersion<T> {
  value: T;
  sha256: string;
  summary: PolicySummary;
}

export interface PolicySource<T> {
  kind: PolicyKind;
  file: string;
  /** Reads and validates the file (throws a one-line UserError when it is not valid). */
  load(file: string): T;
  summarize(value: T): PolicySummary;
}

/** Where a change is recorded and what records it. */
export interface PolicyRecorder {
  db: Database;
  audit: AuditTrail;
}

/**
 * The file's bytes hashed, then loaded, then hashed again: the policy summarised is the one whose
 * sha256 is recorded, unless the file changed in between (then it is read again, or refused).
 */
export function readPolicy<T>(source: PolicySource<T>): PolicyVersion<T> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const before = fileSha256(source.file);
    const value = source.load(source.file);
    if (fileSha256(source.file) === before) return { value, sha256: before, summary: source.summarize(value) };
  }
  throw new UserError('policy.unstable', `${source.file}: the file kept changing while it was read; it was not applied, finish editing it (write a new file and rename it over the old one)`);
}

/** The file's sha256; `absent` for a file that does not exist (a site data file may not, binding nothing). */
function fileSha256(file: string): string {
  try {
    return sha256Hex(readFileSync(file));
  } catch (err) {
    // The loader reports a missing or unreadable file in its own words.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : '';
  }
}

/** The sha256 of the newest policy.change of this kind that a load recorded, if any. */
async function lastRecorded(db: Pick<Database, 'query'>, kind: PolicyKind): Promise<string | undefined> {
  return (await lastEvent(db, kind))?.sha256;
}

type Fields = Record<string, Record<string, string>>;

/** The fields of a version: per id, each field's fingerprint. */
function fieldsOf(summary: PolicySummary): Fields {
  return Object.fromEntries([...summary].map(([id, e]) => [id, e.fields]));
}

/** What the event holds of the kept fields: a row of policy_versions changed since is not used. */
const fieldsDigest = (fields: Fields) => canonicalHash(fields).slice(0, 32);

/**
 * The newest policy.change of this kind: its sha256, and for a remembered kind the version's fields
 * as kept in policy_versions, when their digest is the one the event recorded.
 */
async function lastEvent(db: Pick<Database, 'query'>, kind: PolicyKind): Promise<{ sha256: string; remembered?: Pick<PolicyVersion<unknown>, 'sha256' | 'summary'> } | undefined> {
  const rows = await db.query<{ sha256: string | null; digest: string | null }>(
    "SELECT detail->>'sha256' AS sha256, detail->>'fieldsDigest' AS digest FROM audit_events WHERE event_type = 'policy.change' AND detail->>'policy' = $1 ORDER BY seq DESC LIMIT 1",
    [kind],
  );
  const last = rows[0];
  if (!last?.sha256) return undefined;
  if (!REMEMBERED.includes(kind) || !last.digest) return { sha256: last.sha256 };
  const kept = await db.query<{ fields: Fields }>('SELECT fields FROM policy_versions WHERE kind = $1 AND sha256 = $2', [kind, last.sha256]);
  const fields = kept[0]?.fields;
  if (!fields || fieldsDigest(fields) !== last.digest) return { sha256: last.sha256 };
  const summary: PolicySummary = new Map(Object.entries(fields).map(([id, f]) => [id, { fields: f, facts: {} }]));
  return { sha256: last.sha256, remembered: { sha256: last.sha256, summary } };
}

/**
 * Records `next` unless the trail's newest event of its kind already holds this sha256 (the same
 * file, loaded again by this or another process). Resolves once the event is durable; rejects
 * (AuditUnavailable) when it is not, and then `next` must not be applied. The check is repeated under
 * the chain head's lock, so two processes loading the same new file record it once; the first look
 * takes no lock, so a process whose role may not write the trail can still load an unchanged policy.
 */
export async function recordPolicy<T>(to: PolicyRecorder, kind: PolicyKind, next: PolicyVersion<T>, previous: PolicyVersion<T> | undefined, trigger: 'start' | 'reload'): Promise<void> {
  if ((await lastRecorded(to.db, kind)) === next.sha256) return;
  await to.db.transaction(async (tx) => {
    await tx.query('SELECT seq FROM audit_head WHERE singleton FOR UPDATE');
    const last = await lastEvent(tx, kind);
    if (last?.sha256 === next.sha256) return;
    // At start, a remembered kind compares with the version its last event remembered.
    const before = previous ?? last?.remembered;
    if (REMEMBERED.includes(kind)) {
      await tx.query('INSERT INTO policy_versions (kind, sha256, fields) VALUES ($1, $2, $3::jsonb) ON CONFLICT DO NOTHING', [kind, next.sha256, JSON.stringify(fieldsOf(next.summary))]);
    }
    await to.audit.recordIn(tx, policyChangeEvent(kind, next, before, last?.sha256, trigger));
  });
}

/** Loads a policy file at start and records it when the trail does not hold it yet; then it may be used. */
export async function openPolicy<T>(source: PolicySource<T>, to: PolicyRecorder): Promise<PolicyVersion<T>> {
  const version = readPolicy(source);
  await recordPolicy(to, source.kind, version, undefined, 'start');
  return version;
}

/** The event: the sha256, what changed against `previous` (or every id when there is none), counts. */
export function policyChangeEvent<T>(
  kind: PolicyKind,
  next: PolicyVersion<T>,
  previous: Pick<PolicyVersion<unknown>, 'sha256' | 'summary'> | undefined,
  lastSha256: string | undefined,
  trigger: 'start' | 'reload',
): AuditEventInput {
  const base = previous?.sha256 ?? lastSha256;
  const detail: Record<string, string | number> = { policy: kind, sha256: next.sha256, ...(base ? { previousSha256: base } : {}), trigger, count: next.summary.size };
  let reason: string;
  if (previous) {
    const d = diffSummaries(previous.summary, next.summary);
    Object.assign(
      detail,
      listed('added', d.added),
      listed('removed', d.removed),
      listed(
        'changed',
        d.changed.map((c) => `${c.id}[${c.fields.join('/')}]`),
      ),
    );
    Object.assign(detail, factsOf(next.summary, [...d.added, ...d.changed.map((c) => c.id)]));
    reason = `${kind} policy ${trigger === 'reload' ? 'reloaded' : 'loaded at start, differing from the last recorded one'}: ${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed`;
  } else {
    const ids = [...next.summary.keys()];
    detail.ids = compactList(ids);
    Object.assign(detail, factsOf(next.summary, ids));
    reason = `${kind} policy loaded at ${trigger} with ${ids.length} entries${lastSha256 ? ', differing from the last recorded one' : ''}`;
  }
  if (REMEMBERED.includes(kind)) detail.fieldsDigest = fieldsDigest(fieldsOf(next.summary));
  return { type: 'policy.change', action: 'U', outcome: 'success', rule: 'policy.file.loaded', reason, actor: { principal: 'service:policy', role: 'service', authMethod: 'service' }, detail };
}

export interface PolicyDiff {
  added: string[];
  removed: string[];
  changed: { id: string; fields: string[] }[];
}

export function diffSummaries(before: PolicySummary, after: PolicySummary): PolicyDiff {
  const added = [...after.keys()].filter((id) => !before.has(id));
  const removed = [...before.keys()].filter((id) => !after.has(id));
  const changed: PolicyDiff['changed'] = [];
  for (const [id, entry] of after) {
    const old = before.get(id);
    if (!old) continue;
    const names = [...new Set([...Object.keys(old.fields), ...Object.keys(entry.fields)])].sort();
    const fields = names.filter((f) => old.fields[f] !== entry.fields[f]);
    if (fields.length) changed.push({ id, fields });
  }
  return { added, removed, changed };
}

/** `name` (the list, when not empty) and `nameCount`. */
function listed(name: string, items: string[]): Record<string, string | number> {
  return { ...(items.length ? { [name]: compactList(items) } : {}), [`${name}Count`]: items.length };
}

/** Per fact name, "id=value" for each of `ids` that has it (e.g. roles: "bob=researcher/compliance"). */
function factsOf(summary: PolicySummary, ids: string[]): Record<string, string> {
  const byFact = new Map<string, string[]>();
  for (const id of ids) {
    for (const [fact, value] of Object.entries(summary.get(id)?.facts ?? {})) byFact.set(fact, [...(byFact.get(fact) ?? []), `${id}=${value}`]);
  }
  return Object.fromEntries([...byFact].map(([fact, items]) => [fact, compactList(items)]));
}

/** An audit detail value holds 160 id characters: the list is cut there ("+..."); the counts are whole. */
const MAX_VALUE = 160;

export function compactList(items: string[]): string {
  let out = '';
  for (const raw of items) {
    const item = raw.replace(/[^A-Za-z0-9._:/=@[\]-]/g, '_');
    const next = out ? `${out}+${item}` : item;
    if (next.length > MAX_VALUE - 4) return `${out}+...`.slice(0, MAX_VALUE);
    out = next;
  }
  return out;
}

/**
 * A policy file re-read when it changes, for policies consulted on every request (principals). The
 * file is looked at at most once a second; a new version is recorded, then handed out. `get` never
 * waits for the trail: it returns the version in force, and throws while the file on disk is invalid
 * (as before: an unreadable directory admits no one).
 */
export class LivePolicy<T> {
  private appliedMtimeMs: number;
  private checkedAt: number;
  private pending: Promise<void> | undefined;
  private broken: unknown;

  private constructor(
    private readonly source: PolicySource<T>,
    private readonly to: PolicyRecorder,
    private readonly logger: Logger,
    private version: PolicyVersion<T>,
    mtimeMs: number,
    private readonly clock: () => number,
  ) {
    this.appliedMtimeMs = mtimeMs;
    this.checkedAt = clock();
  }

  /** Loads and records the file (at start); rejects, opening nothing, when it cannot be recorded. */
  static async open<T>(source: PolicySource<T>, to: PolicyRecorder, logger: Logger, clock: () => number = Date.now): Promise<LivePolicy<T>> {
    const mtimeMs = mtimeOf(source.file);
    return new LivePolicy(source, to, logger, await openPolicy(source, to), mtimeMs, clock);
  }

  get(): T {
    this.check();
    if (this.broken) throw this.broken;
    return this.version.value;
  }

  /** Waits for a change being recorded (before the store closes). */
  async settled(): Promise<void> {
    await this.pending;
  }

  /**
   * Looks at the file now rather than within the second, and waits until a new version is recorded
   * and in force (or refused and logged: the version in force stays, as on any look). For a change
   * this process just wrote (a certificate signed through the API), so it holds from the next request.
   */
  async refresh(): Promise<void> {
    await this.pending;
    this.checkedAt = Number.NEGATIVE_INFINITY;
    this.check();
    await this.pending;
  }

  private check(): void {
    const now = this.clock();
    if (this.pending || now - this.checkedAt < 1000) return;
    this.checkedAt = now;
    const mtimeMs = mtimeOf(this.source.file);
    if (mtimeMs === this.appliedMtimeMs && !this.broken) return;
    let next: PolicyVersion<T>;
    try {
      next = readPolicy(this.source);
      this.broken = undefined;
    } catch (err) {
      this.broken = err;
      return;
    }
    if (next.sha256 === this.version.sha256) {
      this.appliedMtimeMs = mtimeMs;
      return;
    }
    this.pending = this.apply(next, mtimeMs).finally(() => (this.pending = undefined));
  }

  /** Record first, then apply; a refusal keeps the version in force and is retried on the next look. */
  private async apply(next: PolicyVersion<T>, mtimeMs: number): Promise<void> {
    try {
      await recordPolicy(this.to, this.source.kind, next, this.version, 'reload');
      this.version = next;
      this.appliedMtimeMs = mtimeMs;
    } catch (err) {
      this.logger.error('policy.change-not-recorded', { file: this.source.file, err });
    }
  }
}

function mtimeOf(file: string): number {
  return statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? -1;
}
